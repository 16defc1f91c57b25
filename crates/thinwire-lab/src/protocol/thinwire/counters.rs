//! thinwire's connection counters in a simulation, by side.

use std::ops::AddAssign;

use thinwire_proto::ConnectionCounters;

/// The connection counters of thinwire endpoints (the core's
/// [`ConnectionCounters`]), summed over every connection each side had,
/// closed ones included: the clients' endpoints in `client`, the server's in
/// `server`. The side that sends the messages counts the losses, timeouts,
/// retransmissions, copies, bundling and repairs; the side that acknowledges
/// them counts the ACK repeats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThinwireCounters {
    /// The clients' endpoints.
    pub client: ConnectionCounters,
    /// The server's endpoints.
    pub server: ConnectionCounters,
}

impl ThinwireCounters {
    /// Both sides summed.
    pub fn total(&self) -> ConnectionCounters {
        let mut t = self.client;
        t += self.server;
        t
    }

    /// The total when some message went through deadline delivery (one was
    /// queued or decoded), `None` otherwise.
    pub fn with_deadline(&self) -> Option<ConnectionCounters> {
        let t = self.total();
        (t.deadline.messages_sent > 0 || t.deadline.delivered > 0).then_some(t)
    }
}

impl AddAssign for ThinwireCounters {
    fn add_assign(&mut self, rhs: Self) {
        self.client += rhs.client;
        self.server += rhs.server;
    }
}
