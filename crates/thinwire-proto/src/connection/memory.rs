//! What a connection holds of its endpoint's memory budget, and the close of a connection
//! that held more than its fair share for too long (the endpoint decides that: see
//! `endpoint/budget.rs`).

use std::time::Instant;

use super::{Connection, State};
use crate::error::{DisconnectReason, PeerError, CLOSE_MEMORY_BUDGET};
use crate::event::Event;

/// Memory-budget bytes a message queued for sending costs beyond its payload: a reliable one's
/// slot in the send window and its fragment states, an unreliable one's entry in the send
/// queue (the same charge for both, so the budget does not depend on the class).
pub(crate) const SEND_MESSAGE_OVERHEAD: usize = 64;

impl Connection {
    /// Bytes of the endpoint's memory budget this connection holds: `(received, queued)`.
    /// Received: what the peer sent that is held, its channels' buffers for order and
    /// reassembly, the keys and sequence numbers they remember, and deadline shards under
    /// decoding. Queued: the messages queued for sending that the peer has not acknowledged.
    pub(crate) fn held_bytes(&self) -> (usize, usize) {
        let recv: usize = self.recv.iter().map(|c| c.held_bytes()).sum();
        let deadline = self.deadline.as_ref().map_or(0, |d| d.rx.held_bytes());
        let send: usize = self
            .send
            .iter()
            .map(|c| c.queued_bytes + c.held_messages() * SEND_MESSAGE_OVERHEAD)
            .sum();
        (recv + deadline, send)
    }

    /// Most keys each latest-value channel of this connection remembers: the connection's
    /// `max_latest_keys` shared evenly.
    pub(super) fn latest_keys_per_channel(&self) -> usize {
        let latest = self.channels.iter().filter(|k| k.has_key()).count().max(1);
        (self.config.max_latest_keys / latest).max(1)
    }

    /// Closes the connection at once because its peer made it hold `held` bytes it sent, over
    /// its fair share `share` of the endpoint's memory budget, for longer than the grace
    /// period. The
    /// application is told why ([`PeerError::OverMemoryBudget`]), the peer gets a CLOSE with
    /// [`CLOSE_MEMORY_BUDGET`], and everything the connection buffered is released now rather
    /// than when draining ends.
    pub(crate) fn close_over_budget(&mut self, now: Instant, held: usize, share: usize) {
        let reason = DisconnectReason::Peer(PeerError::OverMemoryBudget { held, share });
        match self.state {
            State::Established | State::Closing { .. } => {
                self.events.push_back(Event::Disconnected { reason });
                self.enter_draining(now, None, CLOSE_MEMORY_BUDGET, b"memory budget".to_vec());
            }
            // no keys yet: nothing to tell the peer
            State::AwaitingChallenge | State::AwaitingAccept => self.finish(reason),
            State::Draining { .. } | State::Closed => return,
        }
        self.release_buffers();
        self.update_timers();
    }

    /// Writes `frames` as this connection's next packet, sealed under its keys, into `buf`;
    /// returns where it goes. Nothing is recorded as sent: what a hostile peer, which holds
    /// its keys, can send (attack tests only).
    #[cfg(any(test, feature = "testing", feature = "fuzzing"))]
    pub(crate) fn seal_raw(
        &mut self,
        frames: &[u8],
        buf: &mut Vec<u8>,
    ) -> Option<std::net::SocketAddr> {
        buf.clear();
        let pn = self.write_header(buf)?;
        let header_len = buf.len();
        buf.extend_from_slice(frames);
        self.flow.next_pn += 1;
        self.seal(pn, header_len, buf);
        Some(self.remote)
    }

    /// Drops what the channels hold (a draining connection neither sends data nor takes it).
    fn release_buffers(&mut self) {
        self.send = Box::default();
        self.recv = Box::default();
        self.active.release_send();
        self.deadline = None;
    }
}
