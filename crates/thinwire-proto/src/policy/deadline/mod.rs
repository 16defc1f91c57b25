//! The deadline policy: how many packets of an erasure-coded message (data shards, or parity
//! standing in for them) to send in each round trip so that the message arrives before its
//! deadline with a target probability, at the least expected cost. Deadline delivery
//! ([`crate::DeadlineOptions`], [`crate::ParityMode::Adaptive`]) looks it up at every stage
//! through the endpoint's [`PolicyCache`](super::PolicyCache); the shards themselves are
//! Reed-Solomon coded by the deadline sender.
//!
//! The approach follows Pangolin: C. Zhang, C. Huang, P. A. Chou, J. Li, S. Mehrotra,
//! K. W. Ross, H. Chen, F. Livni and J. Thaler, *Pangolin: Speeding up Concurrent Messaging for
//! Cloud-Based Social Gaming*, ACM CoNEXT 2011, doi:10.1145/2079296.2079319 (deployed in the
//! Xbox Live SDK), which chooses the amount of FEC per message and per round trip with a
//! constrained Markov decision process solved offline into lookup tables. The code here is an
//! independent implementation of that model, as described below.
//!
//! # Model
//! A message of `k` data packets is encoded with a systematic erasure code: any `k` received
//! packets (data or parity) recover it. The time to the deadline is split into `I` stages of one
//! round trip. At the start of stage `i` the sender knows (from acks) that `q` data-packet
//! equivalents are still missing, and sends `a >= q` packets (the missing ones, or fresh parity
//! standing in for them, plus `a - q` extra parity). Each packet is lost independently with
//! probability `p`, so after the stage `q' = max(0, q - R)` with `R ~ Binomial(a, 1 - p)`
//! (`transition_probability` (in `policy.rs`)).
//!
//! The policy minimises the expected number of packets sent subject to
//! `P(still incomplete after stage I) <= 1 - target`. The constraint is relaxed with a price
//! `lambda` per packet: the dynamic programme
//!
//! ```text
//! J(i, q)    = min_{q <= a <= q + k + 8} [ lambda * a + sum_q' P(q' | q, a) J(i+1, q') ]
//! J(I+1, q)  = 1 for q > 0,   J(i, 0) = 0
//! ```
//!
//! gives, for every `lambda`, a deterministic policy minimising `lambda * E[packets] + P(miss)`.
//! Large prices give the trivial policy (send exactly what is missing), price zero the most
//! reliable one. [`policy::Policy::solve`] searches `lambda` for the boundary where the target
//! starts to be met; `evaluate` (in `policy.rs`, used by the tests) computes any policy's exact expected cost and miss
//! probability by forward recursion.
//!
//! # Choices
//! - **No randomisation.** In a constrained MDP the optimum generally mixes two deterministic
//!   policies (the two Lagrangian policies on either side of the boundary price) so that the
//!   miss probability lands exactly on the budget. We return the cheaper-side *deterministic*
//!   policy that meets the target: the feasible Lagrangian policy with the largest price, which
//!   is where bisection on `lambda` converges (we locate it exactly by intersecting the lines
//!   of the two bracketing policies, see `model::constrained`, rather than by halving). It may
//!   overshoot the target, i.e. be more reliable and slightly costlier than the randomised
//!   optimum; it is never less reliable than asked. In the worked example (`k = 4`, `p = 2 %`,
//!   two stages, 99.9 %) it sends 4 then `q + 1`, about 4.16 packets, with a miss probability
//!   near 3e-5 against a budget of 1e-3.
//! - **Lagrangian, not exhaustive.** A deterministic policy that is not optimal for any price
//!   can occasionally be cheaper while still feasible (in the worked example, sending only `q`
//!   when 2 or more are missing in stage 2 would also meet the target at about 0.002 fewer
//!   packets). Finding those is a knapsack-like search; we keep the Lagrangian family, as
//!   specified.
//! - **Per-stage cap** of `k + 8` extra packets ([`policy::max_extra`]): bounds the burst a
//!   single stage may send and the solver's work; targets needing more are
//!   [`policy::PolicyError::Unreachable`] (or best effort with the miss reported, via
//!   [`policy::Policy::solve_best_effort`]; the tables store that best effort and flag it).
//! - **Quantisation** (`loss_bucket` in `table.rs`): the loss estimate is rounded *up* to the next
//!   whole percent, so the table used assumes at least the estimated loss.
//!
//! # Tables
//! [`table::PolicyTables`] holds the policies for `k` in 1..=64, `I` in 1..=100 and loss 0..=50 %
//! in 1 % steps for one target; trivial cells are not stored, the others are solved on first
//! use or all at once, one byte per state.

mod model;
mod policy;
mod table;

pub use policy::{max_extra, Policy, PolicyError, PolicyParams, MAX_LOSS, MAX_PACKETS, MAX_STAGES};
pub use table::{BuildReport, PolicyTables, TableEntry};

#[cfg(test)]
mod tests;
