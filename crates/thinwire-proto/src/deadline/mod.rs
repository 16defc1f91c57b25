//! Deadline delivery: messages that must arrive within a deadline with a target probability.
//!
//! A deadline message is cut into `k` data shards plus Reed-Solomon recovery shards (any `k`
//! distinct shards rebuild it). The deadline is divided into stages of about one round trip;
//! at the start of every stage the sender counts the shards the receiver acknowledged, and
//! sends `a >= q` shards for the `q` still missing, where `a` comes from a policy precomputed
//! by a constrained Markov decision process ([`crate::policy::deadline`]). Acknowledgements of shards are
//! never delayed; there is no minimum RTO and no backoff: each message has its own stage timer.
//!
//! ```text
//! SendMode::Deadline ─► shards (k data + r recovery) ─► stage 1: a1 = policy(k, I, p, 1, k) shards
//!                          acks ─► q missing at stage end ─► stage 2: a2 = policy(k, I, p, 2, q) ...
//! receiver: any k shards ─► decode ─► Event::Message { deadline: Some(status) }
//! ```

mod recv;
mod send;

use std::time::Duration;

pub(crate) use recv::{DeadlineReceiver, ShardOutcome};
pub(crate) use send::{DeadlineSender, ShardRef, StageContext};

/// How many recovery shards a deadline message adds per stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParityMode {
    /// The CMDP policy: the fewest shards that meet the target success rate.
    Adaptive,
    /// Always `n` recovery shards more than are missing, in every stage (fixed FEC).
    Fixed(u8),
    /// Exactly the missing shards each stage: retransmission only, no parity.
    None,
}

/// Options of a deadline message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeadlineOptions {
    /// The message should arrive within this time of the send call.
    pub deadline: Duration,
    /// Wanted probability of arriving in time, e.g. 0.999.
    pub target: f64,
    /// How parity is chosen.
    pub parity: ParityMode,
    /// Data shard size in bytes (the message is cut into `ceil(len / shard_size)` shards, at most
    /// 64). `None`: the transport's `deadline_shard_size`.
    pub shard_size: Option<usize>,
}

impl DeadlineOptions {
    /// Adaptive parity for `deadline` and `target`.
    pub fn new(deadline: Duration, target: f64) -> Self {
        Self {
            deadline,
            target,
            parity: ParityMode::Adaptive,
            shard_size: None,
        }
    }

    /// Whether the options can be met at all: a deadline above zero and a target strictly
    /// between 0 and 1.
    pub fn is_valid(&self) -> bool {
        !self.deadline.is_zero() && self.target > 0.0 && self.target < 1.0
    }
}

/// How a delivered deadline message fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineStatus {
    /// The message's deadline.
    pub deadline: Duration,
    /// Estimated time from the sender's send call to delivery: the sender-reported age of the
    /// last shard used plus half the smoothed RTT.
    pub age: Duration,
    /// Whether `age` exceeds `deadline`.
    pub late: bool,
}
