//! A FlowClose waits for its flow's data: the closing gateway sends a FlowFin (how many
//! reliable Data frames of the flow it pushed into the trunk) just before the FlowClose, both
//! on the ordered control channel. Data travels on the unordered data channel and can arrive
//! after them; the receiving gateway then holds the close until that many reliable frames of
//! the flow are in, or [`CLOSE_WAIT`] has passed (a peer that announces frames it never sends
//! cannot keep a flow open).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use thinwire_proto::ConnectionHandle;

use super::flow::FlowKey;

/// Longest a FlowClose waits for its flow's data.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A flow whose FlowFin announced more reliable frames than have arrived.
#[derive(Debug)]
struct Drain {
    sent: u64,
    close: Option<(u64, Vec<u8>)>,
    until: Instant,
}

/// The flows waiting for their data before they close (at most one entry per open flow).
#[derive(Debug, Default)]
pub(crate) struct Drains {
    map: HashMap<FlowKey, Drain>,
}

impl Drains {
    /// A FlowFin for `flow`, of which `received` reliable frames have arrived.
    pub(crate) fn fin(&mut self, now: Instant, flow: FlowKey, sent: u64, received: u64) {
        if received < sent {
            let until = now + CLOSE_WAIT;
            self.map.insert(
                flow,
                Drain {
                    sent,
                    close: None,
                    until,
                },
            );
        }
    }

    /// A FlowClose for `flow`: `None` if it must wait (kept here), else the close back.
    pub(crate) fn close(&mut self, flow: FlowKey, close: (u64, Vec<u8>)) -> Option<(u64, Vec<u8>)> {
        match self.map.get_mut(&flow) {
            Some(d) => {
                d.close = Some(close);
                None
            }
            None => Some(close),
        }
    }

    /// `received` reliable frames of `flow` are in: its close, if it waited and may go now.
    pub(crate) fn data(&mut self, flow: FlowKey, received: u64) -> Option<(u64, Vec<u8>)> {
        let d = self.map.get_mut(&flow)?;
        if received < d.sent {
            return None;
        }
        self.map.remove(&flow)?.close
    }

    /// Closes whose wait is over at `now`.
    pub(crate) fn expired(&mut self, now: Instant) -> Vec<(FlowKey, (u64, Vec<u8>))> {
        let due: Vec<FlowKey> = self
            .map
            .iter()
            .filter(|(_, d)| d.close.is_some() && d.until <= now)
            .map(|(&f, _)| f)
            .collect();
        let mut out: Vec<_> = due
            .into_iter()
            .filter_map(|f| Some((f, self.map.remove(&f)?.close?)))
            .collect();
        out.sort_unstable_by_key(|(f, _)| *f);
        out
    }

    /// When the first waiting close gives up.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.map
            .values()
            .filter(|d| d.close.is_some())
            .map(|d| d.until)
            .min()
    }

    /// The flow ended anyway.
    pub(crate) fn remove(&mut self, flow: FlowKey) {
        self.map.remove(&flow);
    }

    /// A trunk ended: its flows' waits with it.
    pub(crate) fn remove_trunk(&mut self, trunk: ConnectionHandle) {
        self.map.retain(|k, _| k.trunk != trunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(id: u32) -> FlowKey {
        FlowKey {
            trunk: ConnectionHandle(0),
            id,
        }
    }

    #[test]
    fn a_close_waits_for_the_announced_frames_or_gives_up() {
        let now = Instant::now();
        let mut d = Drains::default();
        // all in already: nothing waits
        d.fin(now, k(1), 3, 3);
        assert_eq!(
            d.close(k(1), (7, b"bye".to_vec())),
            Some((7, b"bye".to_vec()))
        );
        // two frames short
        d.fin(now, k(2), 5, 3);
        assert_eq!(d.close(k(2), (7, b"bye".to_vec())), None);
        assert_eq!(d.data(k(2), 4), None);
        assert_eq!(d.data(k(2), 5), Some((7, b"bye".to_vec())));
        assert_eq!(d.poll_timeout(), None);
        // never comes: the close goes after CLOSE_WAIT
        d.fin(now, k(3), 9, 0);
        assert_eq!(d.close(k(3), (1, Vec::new())), None);
        assert_eq!(d.poll_timeout(), Some(now + CLOSE_WAIT));
        assert!(d.expired(now + CLOSE_WAIT / 2).is_empty());
        assert_eq!(d.expired(now + CLOSE_WAIT), vec![(k(3), (1, Vec::new()))]);
        // data before the close: the FlowFin entry goes once complete, the close then passes
        d.fin(now, k(4), 2, 1);
        assert_eq!(d.data(k(4), 2), None);
        assert_eq!(d.close(k(4), (0, Vec::new())), Some((0, Vec::new())));
    }
}
