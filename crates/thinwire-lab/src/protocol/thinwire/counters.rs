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

/// Declares [`RecoveryCounters`] from one list of `ConnectionStats` field names, so that the
/// struct, its names, the copy from the statistics and the sum cannot drift apart.
macro_rules! recovery_counters {
    ($($(#[doc = $doc:literal])* $field:ident,)*) => {
        /// Loss-recovery counters of thinwire endpoints (the `ConnectionStats`
        /// fields of the same names, summed over connections). Losses, timeouts,
        /// retransmissions, copies, bundling and repairs are counted by the side that
        /// sends the messages; ACK repeats by the side that acknowledges them.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        pub struct RecoveryCounters {
            $($(#[doc = $doc])* pub $field: u64,)*
        }

        impl RecoveryCounters {
            /// The counters' names, in the order of [`Self::named`]: the named
            /// counters are `tw_{side}_{name}` (see
            /// [`crate::protocol::SimEndpoint::add_counters`]).
            pub const NAMES: [&'static str; RECOVERY_COUNT] = [$(stringify!($field)),*];

            /// The counters of one connection.
            pub fn from_stats(s: &ConnectionStats) -> Self {
                RecoveryCounters { $($field: s.$field,)* }
            }

            /// The counters from named values: `value(name)` for every name of
            /// [`Self::NAMES`] (0 when it gives none); `None` when it knows none of
            /// them.
            pub fn from_named(mut value: impl FnMut(&str) -> Option<u64>) -> Option<Self> {
                let mut r = Self::default();
                let mut any = false;
                $(
                    if let Some(v) = value(stringify!($field)) {
                        r.$field = v;
                        any = true;
                    }
                )*
                any.then_some(r)
            }

            /// `(name, value)` for every counter, in the order of [`Self::NAMES`].
            pub fn named(&self) -> [(&'static str, u64); RECOVERY_COUNT] {
                [$((stringify!($field), self.$field)),*]
            }

            /// Adds `other` to these counters.
            pub fn add(&mut self, other: &RecoveryCounters) {
                $(self.$field += other.$field;)*
            }
        }
    };
}

/// How many counters [`RecoveryCounters`] has.
const RECOVERY_COUNT: usize = 12;

recovery_counters! {
    /// Packets declared lost.
    packets_lost,
    /// Losses declared after a single indication (thin-stream fast retransmit).
    thin_fast_losses,
    /// Retransmission timeouts that fired.
    rto_expirations,
    /// Packets declared lost that were acknowledged afterwards (a lost ACK).
    spurious_losses,
    /// Retransmission timeouts found spurious because the acknowledgement was
    /// only late.
    spurious_timeouts,
    /// Message frames retransmitted after a loss.
    frames_retransmitted,
    /// Extra copies of message fragments sent by the repair policy.
    repair_copies,
    /// Payload bytes of those copies.
    payload_bytes_copies,
    /// Fragments acknowledged through a retransmission within their channel's
    /// repair target.
    repairs_in_time,
    /// Fragments acknowledged through a retransmission after it.
    repairs_late,
    /// ACK-only packets sent a second time.
    ack_repeats,
    /// Message frames sent again by redundant bundling.
    frames_bundled,
}

impl RecoveryCounters {
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
