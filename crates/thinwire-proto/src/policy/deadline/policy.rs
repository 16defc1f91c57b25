//! One decision policy: the model, its parameters, the constrained solver and exact evaluation.
//!
//! See the [module overview](super) for the model. The entry points are [`Policy::solve`] (one
//! `(k, I, p, target)`), [`evaluate`] (exact expected cost and miss probability of any policy)
//! and [`transition_probability`] (the model's `P(q' | q, a)`).

use thiserror::Error;

use super::model::{self, Model, Search, Solution};
use crate::policy::{is_target, miss_budget};

/// Largest message size, in data packets, the policies cover.
pub const MAX_PACKETS: u16 = 64;

/// Largest number of stages (round trips before the deadline) the policies cover.
pub const MAX_STAGES: u16 = 100;

/// Largest per-packet loss probability the policies accept.
pub const MAX_LOSS: f64 = 0.5;

/// Most parity packets beyond what is missing that one stage may send, for a `k`-packet
/// message: `k + 8`, so a stage sends at most `q + k + 8 <= 2k + 8` packets.
///
/// The cap bounds per-stage bandwidth (at most about twice the message plus eight packets in
/// one round trip) and the work of the dynamic programme (actions per state). It only binds
/// with a single stage at very high loss: for example `k = 64`, one stage, 50 % loss and a
/// 99.9 % target would need about 168 packets in that stage, and such targets are reported as
/// [`PolicyError::Unreachable`]. The extra count always fits in a `u8`.
pub const fn max_extra(packets: u16) -> u16 {
    packets + 8
}

/// Parameters of one deadline-delivery problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolicyParams {
    /// `k`: data packets in the message, `1..=64`. Any `k` received packets (data or parity)
    /// recover it.
    pub packets: u16,
    /// `I`: stages (one round trip each) before the deadline, `1..=100`.
    pub stages: u16,
    /// `p`: independent per-packet loss probability, `0.0..=0.5`.
    pub loss: f64,
    /// Required probability that the message is complete after the last stage, in `(0, 1)`.
    pub target: f64,
}

impl PolicyParams {
    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.validate_model()?;
        if !is_target(self.target) {
            return Err(PolicyError::Target(self.target));
        }
        Ok(())
    }

    /// Checks everything but the target (which [`evaluate`] does not need).
    fn validate_model(&self) -> Result<(), PolicyError> {
        if !(1..=MAX_PACKETS).contains(&self.packets) {
            return Err(PolicyError::Packets(self.packets));
        }
        if !(1..=MAX_STAGES).contains(&self.stages) {
            return Err(PolicyError::Stages(self.stages));
        }
        if !(0.0..=MAX_LOSS).contains(&self.loss) {
            return Err(PolicyError::Loss(self.loss));
        }
        Ok(())
    }

    /// The miss-probability budget `1 - target`.
    pub fn miss_budget(&self) -> f64 {
        miss_budget(self.target)
    }
}

/// Why no policy was produced.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum PolicyError {
    /// `packets` must be in `1..=64`.
    #[error("packets {0} is outside 1..={MAX_PACKETS}")]
    Packets(u16),
    /// `stages` must be in `1..=100`.
    #[error("stages {0} is outside 1..={MAX_STAGES}")]
    Stages(u16),
    /// `loss` must be in `0.0..=0.5` (and not NaN).
    #[error("loss {0} is outside 0..={MAX_LOSS}")]
    Loss(f64),
    /// `target` must be strictly between 0 and 1 (and not NaN).
    #[error("target {0} is outside the open interval (0, 1)")]
    Target(f64),
    /// No policy within the per-stage cap ([`max_extra`]) meets the target; the most reliable
    /// one still misses with this probability. [`Policy::solve_best_effort`] returns that policy.
    #[error("target unreachable within the per-stage cap: best miss probability {best_miss_probability:e}")]
    Unreachable {
        /// Miss probability of the most reliable policy under the cap.
        best_miss_probability: f64,
    },
}

/// Exact expected cost and miss probability of a policy (see [`evaluate`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg(test)]
pub(crate) struct Evaluation {
    /// Expected number of packets (data and parity) sent over all stages.
    pub expected_packets: f64,
    /// Probability that the message is still incomplete after the last stage.
    pub miss_probability: f64,
}

/// A solved decision policy: how many packets to send at every state `(stage, missing)`.
///
/// Stored compactly as one byte per state (`send - missing`), `stages * packets` bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    params: PolicyParams,
    /// `extra[(stage - 1) * k + (missing - 1)] = send - missing`.
    extra: Box<[u8]>,
    expected_packets: f64,
    miss_probability: f64,
}

impl Policy {
    /// Solves for the cheapest policy meeting `params.target`, or explains why there is none.
    ///
    /// If sending exactly what is missing already meets the target, that trivial policy is
    /// returned (it is the cheapest of all). Otherwise the policy is the cheapest
    /// *deterministic Lagrangian* policy that meets the target: among the policies that
    /// minimise `lambda * packets + P(miss)` for some price `lambda`, the one with the largest
    /// `lambda` (fewest expected packets) whose miss probability is within `1 - target`; this
    /// is the policy bisection on `lambda` converges to. Because it is deterministic it may
    /// overshoot the target (miss well below the budget); see the [module docs](super) on
    /// randomisation.
    ///
    /// # Errors
    /// A parameter out of range, or [`PolicyError::Unreachable`] when even the most reliable
    /// policy within the per-stage cap ([`max_extra`]) misses too often.
    pub fn solve(params: PolicyParams) -> Result<Self, PolicyError> {
        let policy = Self::solve_best_effort(params)?;
        if policy.meets_target() {
            Ok(policy)
        } else {
            Err(PolicyError::Unreachable {
                best_miss_probability: policy.miss_probability,
            })
        }
    }

    /// Like [`Policy::solve`], but when the target is unreachable returns the most reliable
    /// policy within the cap (minimum miss probability, the `lambda = 0` solution) instead of an
    /// error; check [`Policy::meets_target`].
    ///
    /// # Errors
    /// Only a parameter out of range.
    pub fn solve_best_effort(params: PolicyParams) -> Result<Self, PolicyError> {
        params.validate()?;
        let PolicyParams {
            packets,
            stages,
            loss,
            ..
        } = params;
        let budget = params.miss_budget();
        let trivial = Solution::trivial(packets, stages, loss);
        if trivial.miss <= budget {
            return Ok(Self::from_solution(params, trivial));
        }
        // max_extra(k) <= 72 for k <= 64.
        let cap = u8::try_from(max_extra(packets)).unwrap_or(u8::MAX);
        let model = Model::new(packets, stages, loss, cap);
        let solution = match model::constrained(&model, trivial, budget) {
            Search::Met(s) | Search::Unreachable(s) => s,
        };
        Ok(Self::from_solution(params, solution))
    }

    fn from_solution(params: PolicyParams, solution: Solution) -> Self {
        Self {
            params,
            extra: solution.extra.into_boxed_slice(),
            expected_packets: solution.cost,
            miss_probability: solution.miss,
        }
    }

    /// The parameters this policy was solved for.
    pub fn params(&self) -> PolicyParams {
        self.params
    }

    /// Packets to send in `stage` (1-based) when `missing` data-packet equivalents are still
    /// missing at the receiver: `missing` plus the parity the policy adds.
    ///
    /// Never panics: `missing == 0` gives 0; a `stage` outside `1..=stages` (for example past
    /// the deadline) or `missing` above `packets` gives `missing` (plain retransmission).
    pub fn send(&self, stage: u16, missing: u16) -> u16 {
        missing.saturating_add(u16::from(self.extra_at(stage, missing)))
    }

    fn extra_at(&self, stage: u16, missing: u16) -> u8 {
        let k = self.params.packets;
        if missing == 0 || missing > k || stage == 0 || stage > self.params.stages {
            return 0;
        }
        let index = usize::from(stage - 1) * usize::from(k) + usize::from(missing - 1);
        self.extra.get(index).copied().unwrap_or(0)
    }

    /// Expected packets sent per message (data and parity, over all stages), exact under the
    /// model. Divide by `packets` for the redundancy factor.
    pub fn expected_packets(&self) -> f64 {
        self.expected_packets
    }

    /// Probability the message is still incomplete after the last stage, exact under the model.
    pub fn miss_probability(&self) -> f64 {
        self.miss_probability
    }

    /// Whether the miss probability is within `1 - target` (false only for a best-effort
    /// policy from [`Policy::solve_best_effort`]).
    pub fn meets_target(&self) -> bool {
        self.miss_probability <= self.params.miss_budget()
    }

    /// Whether the policy sends exactly what is missing in every state (no parity at all).
    pub fn is_trivial(&self) -> bool {
        self.extra.iter().all(|&e| e == 0)
    }

    /// Every state and its action, as `(stage, missing, send)`, stage by stage and by
    /// increasing `missing` (`1..=packets`). At stage 1 only `missing == packets` can occur;
    /// the other rows say what the policy would do there.
    pub fn rows(&self) -> impl Iterator<Item = (u16, u16, u16)> + '_ {
        let k = self.params.packets;
        (1..=self.params.stages)
            .flat_map(move |stage| (1..=k).map(move |missing| (stage, missing)))
            .map(|(stage, missing)| (stage, missing, self.send(stage, missing)))
    }

    /// Heap bytes of the stored actions (one per state).
    pub fn table_bytes(&self) -> usize {
        self.extra.len()
    }

    /// The stored actions, `send - missing`, indexed `(stage - 1) * packets + (missing - 1)`.
    pub(crate) fn into_extra(self) -> Box<[u8]> {
        self.extra
    }
}

/// `P(q' | q, a)`: the probability that `q_next` data-packet equivalents are still missing after
/// a stage that started with `q` missing and sent `a` packets, each lost independently with
/// probability `loss`. Arrivals are `Binomial(a, 1 - loss)` and `q' = max(0, q - arrivals)`.
///
/// Defined for every input: `q_next > q` has probability 0; `a < q` is allowed (then `q'` is at
/// least `q - a`); `loss` is clamped to `[0, 1]`, and a NaN `loss` gives NaN.
#[cfg(test)]
pub(crate) fn transition_probability(q: u16, a: u16, q_next: u16, loss: f64) -> f64 {
    if loss.is_nan() {
        return f64::NAN;
    }
    if q_next > q {
        return 0.0;
    }
    let loss = loss.clamp(0.0, 1.0);
    let a = usize::from(a);
    if q_next == 0 {
        // Complete: at least q of the a packets arrive.
        let row = model::reception_row(a, loss, a + 1);
        return row.iter().skip(usize::from(q)).sum();
    }
    let arrivals = usize::from(q - q_next);
    if arrivals > a {
        return 0.0;
    }
    model::reception_row(a, loss, arrivals + 1)[arrivals]
}

/// Exact expected cost and miss probability of the policy `send(stage, missing) -> packets`
/// under the model, by forward recursion over the distribution of `missing` from the initial
/// state `(1, packets)`; `params.target` is not used.
///
/// The policy may return any count (fewer than `missing` included); states the message cannot
/// reach are never queried. Cost is `O(stages * packets * (packets + largest send))`.
///
/// # Errors
/// `packets`, `stages` or `loss` out of range.
#[cfg(test)]
pub(crate) fn evaluate(
    params: &PolicyParams,
    mut send: impl FnMut(u16, u16) -> u16,
) -> Result<Evaluation, PolicyError> {
    params.validate_model()?;
    let k = usize::from(params.packets);
    // dist[q] = P(q missing at the start of the current stage); dist[0] is absorbed.
    let mut dist = vec![0.0f64; k + 1];
    dist[k] = 1.0;
    let mut next = vec![0.0f64; k + 1];
    let mut expected = 0.0;
    for stage in 1..=params.stages {
        next.iter_mut().for_each(|x| *x = 0.0);
        for (q, &mass) in dist.iter().enumerate().skip(1) {
            if mass == 0.0 {
                continue;
            }
            // q <= 64 fits in u16.
            let a = send(stage, q as u16);
            expected += mass * f64::from(a);
            let row = model::reception_row(usize::from(a), params.loss, q);
            for (arrived, &pr) in row.iter().enumerate() {
                next[q - arrived] += mass * pr;
            }
        }
        std::mem::swap(&mut dist, &mut next);
    }
    Ok(Evaluation {
        expected_packets: expected,
        miss_probability: dist.iter().skip(1).sum(),
    })
}
