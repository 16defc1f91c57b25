//! Prefetch hints for one connection (see [`crate::prefetch`]): what receiving or sending a
//! packet reads, stage by stage.

use super::Connection;
use crate::prefetch::Hint;

/// Channels hinted, the first ones (a game's few; a connection may have up to 64).
const CHANNELS: usize = 4;

impl Connection {
    /// Hints the memory this connection's next packet reads beyond its main structure (which
    /// the caller hinted at stage 0): at stage 1 the parts the structure points to, at stage
    /// 2 what those point to (the box of packets in flight, the ends of the send queues and
    /// windows). `receiving`: the packet comes in (its opening key), else it goes out (its
    /// sealing key).
    pub(crate) fn prefetch(&self, hint: Hint, stage: u8, receiving: bool) {
        let flow = self.flow.unpacked();
        if stage >= 2 {
            if let Some(f) = flow {
                f.recovery.sent.prefetch(hint);
            }
            self.active.prefetch(hint, stage);
            for c in self.send.iter().take(CHANNELS) {
                c.msgs.prefetch(hint);
            }
            return;
        }
        if let Some(f) = flow {
            hint.value(f);
        }
        self.active.prefetch(hint, stage);
        if let Some(k) = &self.keys {
            k.prefetch(hint, receiving);
        }
        if !self.send.is_empty() {
            hint.value(&self.send[..self.send.len().min(CHANNELS)]);
        }
        if !self.recv.is_empty() {
            hint.value(&self.recv[..self.recv.len().min(CHANNELS)]);
        }
        self.stats.prefetch(hint);
        // the newest event, next to where a delivered message goes (nothing when the
        // application has taken them all)
        let (a, b) = self.events.as_slices();
        if let Some(e) = b.last().or(a.last()) {
            hint.value(e);
        }
    }
}
