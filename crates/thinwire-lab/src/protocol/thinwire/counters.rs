//! Deadline-delivery counters, and the last read of a connection's counters.

use thinwire_proto::ConnectionStats;

/// Deadline-delivery counters of thinwire endpoints (summed over
/// connections; sender-side counts come from the sending endpoint,
/// receiver-side counts from the receiving one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeadlineCounters {
    /// Deadline messages queued by senders.
    pub messages: u64,
    /// Deadline messages whose shards the receiver acknowledged.
    pub completed: u64,
    /// Deadline messages the sender gave up (four deadlines without completion).
    pub abandoned: u64,
    /// Recovery (parity) shards sent: proactive parity and repairs alike (a
    /// stage resending for missing shards sends fresh recovery shards while
    /// any are left).
    pub parity_shards: u64,
    /// Payload bytes of recovery shards.
    pub parity_bytes: u64,
    /// Payload bytes sent again after a loss (repeated shards and ordinary
    /// retransmissions).
    pub retransmitted_bytes: u64,
    /// Deadline messages decoded by receivers.
    pub delivered: u64,
    /// Deadline messages decoded after their deadline, by the receiver's
    /// estimate.
    pub late: u64,
}

impl DeadlineCounters {
    fn from_stats(s: &ConnectionStats) -> Self {
        DeadlineCounters {
            messages: s.deadline_messages_sent,
            completed: s.deadline_completed,
            abandoned: s.deadline_abandoned,
            parity_shards: s.parity_shards,
            parity_bytes: s.payload_bytes_parity,
            retransmitted_bytes: s.payload_bytes_retransmitted,
            delivered: s.deadline_delivered,
            late: s.deadline_late,
        }
    }

    /// Adds `other` to these counters.
    pub fn add(&mut self, other: &DeadlineCounters) {
        self.messages += other.messages;
        self.completed += other.completed;
        self.abandoned += other.abandoned;
        self.parity_shards += other.parity_shards;
        self.parity_bytes += other.parity_bytes;
        self.retransmitted_bytes += other.retransmitted_bytes;
        self.delivered += other.delivered;
        self.late += other.late;
    }
}

/// Last read of a connection's counters.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Snapshot {
    pub(super) payload: u64,
    pub(super) deadline: DeadlineCounters,
}

impl Snapshot {
    pub(super) fn of(s: &ConnectionStats) -> Self {
        Snapshot {
            payload: s.payload_bytes_sent(),
            deadline: DeadlineCounters::from_stats(s),
        }
    }
}
