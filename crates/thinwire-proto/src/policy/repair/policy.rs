//! The repair policy: exact evaluation of a copies-per-stage vector and the search for the
//! cheapest one that meets the target (see the [module overview](super)).

use thiserror::Error;

use crate::policy::{is_target, miss_budget};

/// Most stages a repair policy plans (later retransmissions send one copy each).
pub const MAX_STAGES: u8 = 6;

/// Most copies one stage may send.
pub const MAX_COPIES: u8 = 4;

/// Largest loss rate (mean or repeat) the model accepts.
pub const MAX_LOSS: f64 = 0.9;

/// Parameters of one repair problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepairModel {
    /// `I`: stages whose copies can arrive in time, `1..=MAX_STAGES`.
    pub stages: u8,
    /// `p`: loss rate of a first transmission.
    pub loss: f64,
    /// `r`: loss rate of a copy sent after a loss (equal to `p` on a path without bursts).
    pub repeat_loss: f64,
    /// Probability that no acknowledgement of a copy that arrived comes back before the next
    /// timeout (a lost ACK: the cause of spurious retransmissions).
    pub ack_loss: f64,
    /// Wanted probability of arriving within the stages, in `(0, 1)`.
    pub target: f64,
    /// Most copies per stage, `1..=MAX_COPIES`.
    pub max_copies: u8,
    /// Most copies of the first transmission, `1..=max_copies`: 1 when first transmissions
    /// are never copied (the default target's choice; see [`super::RepairTarget::copy_first`]).
    pub max_first_copies: u8,
}

/// Why a repair model was refused.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum RepairError {
    /// `stages` must be in `1..=MAX_STAGES`.
    #[error("stages {0} is outside 1..={MAX_STAGES}")]
    Stages(u8),
    /// A loss rate must be in `0..=MAX_LOSS`.
    #[error("loss rate {0} is outside 0..={MAX_LOSS}")]
    Loss(f64),
    /// The target must be strictly between 0 and 1.
    #[error("target {0} is not strictly between 0 and 1")]
    Target(f64),
    /// `max_copies` must be in `1..=MAX_COPIES`, `max_first_copies` in `1..=max_copies`.
    #[error("max copies {0} is outside 1..={MAX_COPIES} (or above max_copies)")]
    Copies(u8),
}

impl RepairModel {
    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), RepairError> {
        if !(1..=MAX_STAGES).contains(&self.stages) {
            return Err(RepairError::Stages(self.stages));
        }
        for rate in [self.loss, self.repeat_loss, self.ack_loss] {
            if !(0.0..=MAX_LOSS).contains(&rate) {
                return Err(RepairError::Loss(rate));
            }
        }
        if !is_target(self.target) {
            return Err(RepairError::Target(self.target));
        }
        if !(1..=MAX_COPIES).contains(&self.max_copies) {
            return Err(RepairError::Copies(self.max_copies));
        }
        if !(1..=self.max_copies).contains(&self.max_first_copies) {
            return Err(RepairError::Copies(self.max_first_copies));
        }
        Ok(())
    }

    /// Exact expected copies sent and probability of missing the target for `copies` (one
    /// entry per stage, each at least 1; entries past `stages` are ignored).
    pub fn evaluate(&self, copies: &[u8]) -> (f64, f64) {
        let unacked_first = self.loss + (1.0 - self.loss) * self.ack_loss;
        let unacked_repeat = self.repeat_loss + (1.0 - self.repeat_loss) * self.ack_loss;
        let mut cost = 0.0;
        let mut miss = 1.0;
        // probability that this stage happens: every earlier copy unacknowledged
        let mut reach = 1.0;
        let mut first = true;
        for &a in copies.iter().take(usize::from(self.stages)) {
            let a = a.max(1);
            cost += f64::from(a) * reach;
            for _ in 0..a {
                // the very first copy is lost at the mean rate, every later one (sent after
                // a loss, if the message is still missing) at the repeat rate
                let (lost, unacked) = if first {
                    (self.loss, unacked_first)
                } else {
                    (self.repeat_loss, unacked_repeat)
                };
                first = false;
                miss *= lost;
                reach *= unacked;
            }
        }
        (cost, miss)
    }
}

/// The copies each stage sends, with the expected cost and miss probability of the whole
/// policy. Found by [`RepairPolicy::solve`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepairPolicy {
    copies: [u8; MAX_STAGES as usize],
    stages: u8,
    /// Expected copies sent per message (1.0 for a lossless path and the plain policy).
    pub expected_copies: f64,
    /// Probability that the message misses the target.
    pub miss: f64,
    /// Whether the target is met; when not, the policy is the plain one (one copy a stage).
    pub reachable: bool,
}

impl RepairPolicy {
    /// One copy per stage: plain retransmission.
    pub fn plain(model: &RepairModel) -> Self {
        let copies = [1; MAX_STAGES as usize];
        let (expected_copies, miss) = model.evaluate(&copies);
        Self {
            copies,
            stages: model.stages.clamp(1, MAX_STAGES),
            expected_copies,
            miss,
            reachable: miss <= miss_budget(model.target),
        }
    }

    /// The cheapest policy meeting the target, found by enumerating every copies vector
    /// (ties go to fewer copies in earlier stages); the plain policy, flagged unreachable,
    /// when none does.
    pub fn solve(model: &RepairModel) -> Result<Self, RepairError> {
        model.validate()?;
        let budget = miss_budget(model.target);
        let stages = usize::from(model.stages);
        let mut best: Option<Self> = None;
        let mut copies = [1u8; MAX_STAGES as usize];
        loop {
            let (cost, miss) = model.evaluate(&copies);
            // a tolerance on cost so that rounding does not break ties towards later vectors
            if miss <= budget && best.is_none_or(|b| cost < b.expected_copies - 1e-12) {
                best = Some(Self {
                    copies,
                    stages: model.stages,
                    expected_copies: cost,
                    miss,
                    reachable: true,
                });
            }
            // next vector in lexicographic order (the last stage varies fastest)
            let cap = |i: usize| {
                if i == 0 {
                    model.max_first_copies
                } else {
                    model.max_copies
                }
            };
            let Some(i) = (0..stages).rev().find(|&i| copies[i] < cap(i)) else {
                break;
            };
            copies[i] += 1;
            copies[i + 1..stages].fill(1);
        }
        Ok(best.unwrap_or_else(|| Self::plain(model)))
    }

    /// Stages the policy plans.
    pub fn stages(&self) -> u8 {
        self.stages
    }

    /// Copies to send in `stage` (1-based); 1 for stages past the plan (and for stage 0).
    pub fn copies(&self, stage: u8) -> u8 {
        if stage == 0 || stage > self.stages {
            return 1;
        }
        self.copies[usize::from(stage - 1)]
    }

    /// The copies of every planned stage, first stage first.
    pub fn plan(&self) -> &[u8] {
        &self.copies[..usize::from(self.stages)]
    }
}
