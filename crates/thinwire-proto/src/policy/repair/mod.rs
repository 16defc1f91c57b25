//! Proactive repair of reliable thin streams: how many copies of a message each transmission
//! round sends, so that it arrives within an implicit deadline with a target probability at the
//! least expected number of copies.
//!
//! # Why
//! A thin stream (a message every few hundred milliseconds) finds every loss by its
//! retransmission timeout: no later packet reveals it. One loss costs one timeout (about one
//! RTT), two losses in a row cost two, and at 5% loss the double loss (0.25% of messages) *is*
//! the 99.9th percentile. Sending a retransmission twice turns that tail into the single-loss
//! case for a few percent more bytes; sending every first transmission twice would double them.
//! The policy says which, from the current loss estimates.
//!
//! # Model
//! It is the constrained Markov decision process of deadline delivery ([`super::deadline`], after
//! Pangolin, Zhang et al., CoNEXT 2011) with one data packet, `k = 1`. With one packet the
//! state at the start of stage `i` is only "not yet acknowledged", so a deterministic policy is
//! a vector `a_1 .. a_I` of copies per stage and the optimum is found by enumerating every
//! vector (at most [`MAX_COPIES`]^[`MAX_STAGES`] of them) with exact cost and miss
//! probability; no Lagrangian relaxation is needed. Three things differ from the deadline model:
//!
//! - **Stages are timeouts.** Stage 1 is the first transmission; stage `i > 1` starts when the
//!   retransmission timeout ([`thin_rto`](crate::thin_rto), the connection's while the stream is
//!   thin) fires with nothing acknowledged. The target "delivered within the one-way delay plus
//!   `m` round trips" ([`RepairTarget::rtts`]) therefore allows
//!   `I = 1 + floor(m * SRTT / (RTO + spacing))` stages ([`RepairTarget::stages`]).
//! - **Acknowledgements can be lost.** A stage happens when no acknowledgement came back, which
//!   is also the case when every copy arrived but every acknowledgement was lost. Each copy is
//!   therefore "unacknowledged" with probability `u = p + (1 - p) * ack_loss`, and a stage's
//!   copies are paid for with the probability that every earlier copy was unacknowledged.
//! - **Losses come in bursts.** A copy sent while the message is still missing is lost with
//!   the *repeat* loss rate `r = P(loss | the previous copy was lost)`, which a Gilbert-Elliott
//!   path makes much larger than the mean `p`. The very first copy uses `p`, every later one
//!   (in the same stage or a later one) `r`.
//!
//! ```text
//! miss(a) = p * r^(a1 + ... + aI - 1)
//! cost(a) = sum_i a_i * P(stage i happens)
//!           P(stage i happens) = u1 * ur^(a1 + ... + a(i-1) - 1)   (1 for stage 1)
//!           u1 = p + (1 - p) * ack_loss,  ur = r + (1 - r) * ack_loss
//! ```
//!
//! The policy is the cheapest vector with `miss <= 1 - target` (ties: fewer copies earlier);
//! `a_1` is 1 unless the target allows copies of first transmissions
//! ([`RepairTarget::copy_first`]).
//! When no vector within [`RepairTarget::max_copies`] per stage meets the target, the policy is
//! the plain one (one copy per stage) and says so ([`RepairPolicy::reachable`]): on a path that
//! loses whole bursts, copies that cannot bring the message in time only load a path that is
//! already failing, which is how the estimate "reacts to bursts without overpaying".
//!
//! # How a connection uses it
//! Copies beyond the first in a stage leave [`copy_spacing`] after it, riding in the next
//! packet when one goes in between (bundling) and in a packet of their own otherwise (a timed
//! probe). Retransmissions after the last stage the target allows send one copy, at the usual
//! linear thin-stream timeouts. `docs/PROTOCOL.md` section 9 has the wire-level behaviour.

mod policy;

use std::time::Duration;

pub use policy::{RepairError, RepairModel, RepairPolicy, MAX_COPIES, MAX_LOSS, MAX_STAGES};

/// The implicit target of a reliable channel: each message should arrive within the one-way
/// delay plus `rtts` smoothed round trips of being sent, with probability `target`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepairTarget {
    /// Time allowed past the one-way delay, in smoothed RTTs. Default 1.5: one repair round
    /// (the sender learns of a loss one RTT after sending at the earliest, and the repair
    /// takes another one-way delay) with room for the timeout's margin. At 1.0 no repair after
    /// a loss can arrive in time: only copies of first transmissions ([`Self::copy_first`])
    /// can meet it.
    pub rtts: f64,
    /// Wanted probability of arriving in time. Default 0.999.
    pub target: f64,
    /// Most copies one stage may send. Default 3.
    pub max_copies: u8,
    /// Whether first transmissions may be copied too. Default off: a copy of every first
    /// transmission at least doubles a stream's bytes, so the default target is met with
    /// copies of retransmissions only, and where no retransmission can arrive in time (a
    /// target under about one RTT plus the timeout's margin, or a path whose RTT varies so
    /// much that the timeout nears the target) it is out of reach and plain retransmission
    /// is used. Turn it on for a channel whose target must hold even then, e.g. "one-way
    /// delay + 1 RTT".
    pub copy_first: bool,
}

impl Default for RepairTarget {
    fn default() -> Self {
        Self {
            rtts: 1.5,
            target: 0.999,
            max_copies: 3,
            copy_first: false,
        }
    }
}

impl RepairTarget {
    /// Whether the target can be used: `rtts` finite and positive, `target` in `(0, 1)`,
    /// `max_copies` in `1..=MAX_COPIES`.
    pub fn is_valid(&self) -> bool {
        self.rtts.is_finite()
            && self.rtts > 0.0
            && super::is_target(self.target)
            && (1..=MAX_COPIES).contains(&self.max_copies)
    }

    /// Stages (transmission rounds) whose copies can arrive in time: stage `i` leaves
    /// `(i - 1) * (rto + spacing)` after the first transmission, so
    /// `I = 1 + floor(rtts * srtt / (rto + spacing))`, at most [`MAX_STAGES`]. `rto` is the
    /// thin-stream retransmission timeout ([`thin_rto`](crate::thin_rto)).
    pub fn stages(&self, srtt: Duration, rto: Duration) -> u8 {
        let round = (rto + copy_spacing(srtt)).as_secs_f64();
        if round <= 0.0 {
            return MAX_STAGES;
        }
        let extra = (self.rtts * srtt.as_secs_f64() / round).floor();
        (1.0 + extra).clamp(1.0, f64::from(MAX_STAGES)) as u8
    }
}

/// How long after a stage's first copy its further copies leave: an eighth of the smoothed
/// RTT, at least 1 ms. Long enough that a short burst of loss does not take every copy, short
/// enough to stay inside the target's margin; a packet that leaves in between carries the copy
/// instead (bundling), so on a busy stream the spacing costs nothing.
pub fn copy_spacing(srtt: Duration) -> Duration {
    (srtt / 8).max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests;
