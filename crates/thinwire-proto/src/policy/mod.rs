//! How many packets to send: the two delivery policies of thinwire, and the one cache of their
//! solutions.
//!
//! Both are the same kind of problem, a finite-horizon constrained Markov decision process after
//! Pangolin (Zhang et al., CoNEXT 2011): a message gets up to `I` *stages* (transmission rounds);
//! a policy says how much to send in each; it must arrive by the last stage with probability
//! `target` (miss probability at most `1 - target`) at the least expected number of packets
//! sent. The two models differ in what a stage and a loss are:
//!
//! | | [`deadline`] | [`repair`] |
//! |---|---|---|
//! | used by | deadline messages ([`DeadlineOptions`](crate::DeadlineOptions), [`ParityMode::Adaptive`](crate::ParityMode)) | reliable channels while thin ([`RepairTarget`](repair::RepairTarget)) |
//! | message | `k` packets of an erasure code, `1..=`[`deadline::MAX_PACKETS`] | one packet |
//! | stage | one round trip, `1..=`[`deadline::MAX_STAGES`] | one thin-stream retransmission timeout ([`thin_rto`](crate::thin_rto)), `1..=`[`repair::MAX_STAGES`] |
//! | loss | independent, `p <= `[`deadline::MAX_LOSS`] | first copy `p`, later copies `r` (bursts), lost ACKs; each `<= `[`repair::MAX_LOSS`] |
//! | state | (stage, packets still missing) | stage (the message is still unacknowledged) |
//! | solver | Lagrangian dynamic programme over the states ([`deadline::Policy::solve`]) | enumeration of every copies vector ([`repair::RepairPolicy::solve`]) |
//! | stored as | [`deadline::PolicyTables`]: every `(k, I, loss %)` for one target | one [`repair::RepairPolicy`] per model |
//!
//! They share no solver: with one packet the state space collapses to the stage number, small
//! enough to enumerate exactly, while `k` packets need the dynamic programme. What they share is
//! the constraint (a target strictly between 0 and 1, a miss budget of `1 - target`) and the
//! cache: [`PolicyCache`] keeps every policy an endpoint solved, keyed by the model parameters
//! it was solved for, and may be shared between endpoints (the same parameters always give the
//! same policy).
//!
//! `thinwire policy` prints a deadline policy, `thinwire policy repair` a repair policy.

mod cache;
pub mod deadline;
pub mod repair;

pub use cache::PolicyCache;

/// Whether `target` is a success probability a policy can be solved for: strictly between 0
/// and 1 (NaN is not).
pub(crate) fn is_target(target: f64) -> bool {
    target > 0.0 && target < 1.0
}

/// The miss-probability budget `1 - target` of both models: a policy meets its target when its
/// probability of missing the last stage is at most this.
pub(crate) fn miss_budget(target: f64) -> f64 {
    1.0 - target
}
