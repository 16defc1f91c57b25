//! Deadline-delivery and loss-recovery counters, and the last read of a
//! connection's counters.

use thinwire_proto::ConnectionStats;

use crate::protocol::Counters;

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

/// Loss-recovery counters of thinwire endpoints (the `ConnectionStats`
/// fields of the same names, summed over connections). Losses, timeouts,
/// retransmissions, copies, bundling and repairs are counted by the side that
/// sends the messages; ACK repeats by the side that acknowledges them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecoveryCounters {
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Losses declared after a single indication (thin-stream fast retransmit).
    pub thin_fast_losses: u64,
    /// Retransmission timeouts that fired.
    pub rto_expirations: u64,
    /// Packets declared lost that were acknowledged afterwards (a lost ACK).
    pub spurious_losses: u64,
    /// Retransmission timeouts found spurious because the acknowledgement was
    /// only late.
    pub spurious_timeouts: u64,
    /// Message frames retransmitted after a loss.
    pub frames_retransmitted: u64,
    /// Extra copies of message fragments sent by the repair policy.
    pub repair_copies: u64,
    /// Payload bytes of those copies.
    pub payload_bytes_copies: u64,
    /// Fragments acknowledged through a retransmission within their channel's
    /// repair target.
    pub repairs_in_time: u64,
    /// Fragments acknowledged through a retransmission after it.
    pub repairs_late: u64,
    /// ACK-only packets sent a second time.
    pub ack_repeats: u64,
    /// Message frames sent again by redundant bundling.
    pub frames_bundled: u64,
}

impl RecoveryCounters {
    /// The counters' names, in the order of [`Self::named`]: the named
    /// counters are `tw_{side}_{name}` (see
    /// [`crate::protocol::SimEndpoint::add_counters`]).
    pub const NAMES: [&'static str; 12] = [
        "packets_lost",
        "thin_fast_losses",
        "rto_expirations",
        "spurious_losses",
        "spurious_timeouts",
        "frames_retransmitted",
        "repair_copies",
        "payload_bytes_copies",
        "repairs_in_time",
        "repairs_late",
        "ack_repeats",
        "frames_bundled",
    ];

    /// The counters of one connection.
    pub fn from_stats(s: &ConnectionStats) -> Self {
        RecoveryCounters {
            packets_lost: s.packets_lost,
            thin_fast_losses: s.thin_fast_losses,
            rto_expirations: s.rto_expirations,
            spurious_losses: s.spurious_losses,
            spurious_timeouts: s.spurious_timeouts,
            frames_retransmitted: s.frames_retransmitted,
            repair_copies: s.repair_copies,
            payload_bytes_copies: s.payload_bytes_copies,
            repairs_in_time: s.repairs_in_time,
            repairs_late: s.repairs_late,
            ack_repeats: s.ack_repeats,
            frames_bundled: s.frames_bundled,
        }
    }

    /// The counters from named values: `value(name)` for every name of
    /// [`Self::NAMES`] (0 when it gives none); `None` when it knows none of
    /// them.
    pub fn from_named(mut value: impl FnMut(&str) -> Option<u64>) -> Option<Self> {
        let mut v = [0u64; 12];
        let mut any = false;
        for (x, name) in v.iter_mut().zip(Self::NAMES) {
            if let Some(n) = value(name) {
                *x = n;
                any = true;
            }
        }
        any.then(|| Self::from_values(v))
    }

    /// The counters of a simulation, server and client endpoints summed, from
    /// its named counters `tw_server_{name}` and `tw_client_{name}`; `None`
    /// when it has none (protocols other than thinwire).
    pub fn from_sim_counters(counters: &Counters) -> Option<Self> {
        Self::from_named(|name| {
            let sides = ["server", "client"].map(|side| counters.get(&format!("tw_{side}_{name}")));
            sides
                .iter()
                .any(Option::is_some)
                .then(|| sides.iter().flatten().map(|v| **v as u64).sum())
        })
    }

    /// `(name, value)` for every counter, in the order of [`Self::NAMES`].
    pub fn named(&self) -> [(&'static str, u64); 12] {
        let v = self.values();
        std::array::from_fn(|i| (Self::NAMES[i], v[i]))
    }

    /// Adds `other` to these counters.
    pub fn add(&mut self, other: &RecoveryCounters) {
        let (a, b) = (self.values(), other.values());
        *self = Self::from_values(std::array::from_fn(|i| a[i] + b[i]));
    }

    fn values(&self) -> [u64; 12] {
        [
            self.packets_lost,
            self.thin_fast_losses,
            self.rto_expirations,
            self.spurious_losses,
            self.spurious_timeouts,
            self.frames_retransmitted,
            self.repair_copies,
            self.payload_bytes_copies,
            self.repairs_in_time,
            self.repairs_late,
            self.ack_repeats,
            self.frames_bundled,
        ]
    }

    fn from_values(v: [u64; 12]) -> Self {
        let [packets_lost, thin_fast_losses, rto_expirations, spurious_losses, spurious_timeouts, frames_retransmitted, repair_copies, payload_bytes_copies, repairs_in_time, repairs_late, ack_repeats, frames_bundled] =
            v;
        RecoveryCounters {
            packets_lost,
            thin_fast_losses,
            rto_expirations,
            spurious_losses,
            spurious_timeouts,
            frames_retransmitted,
            repair_copies,
            payload_bytes_copies,
            repairs_in_time,
            repairs_late,
            ack_repeats,
            frames_bundled,
        }
    }
}

/// Last read of a connection's counters.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Snapshot {
    pub(super) payload: u64,
    pub(super) deadline: DeadlineCounters,
    pub(super) recovery: RecoveryCounters,
}

impl Snapshot {
    pub(super) fn of(s: &ConnectionStats) -> Self {
        Snapshot {
            payload: s.payload_bytes_sent(),
            deadline: DeadlineCounters::from_stats(s),
            recovery: RecoveryCounters::from_stats(s),
        }
    }
}
