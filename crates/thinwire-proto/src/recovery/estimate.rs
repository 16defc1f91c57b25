//! The sender's loss estimates: the mean loss rate, the loss rate of copies sent after a loss
//! (what bursts raise), and the rate of acknowledgements missing at the timeout.

use crate::pack::{Pack, Packer, Unpacker};

/// Outcomes averaged by the mean loss estimate: the plain mean of the first 256, then an
/// exponentially weighted average over about the last 256 (the deadline policy needs a steady
/// estimate: a short window swings a 2% path between 0% and 6% and buys parity it does not
/// need).
const LOSS_WINDOW: u32 = 256;

/// Outcomes averaged by the repeat-loss estimate. Repairs are a few percent of packets, so the
/// window is shorter: a burst must move it within a few losses.
const REPEAT_WINDOW: u32 = 32;

/// Weight, in outcomes, of the mean loss rate as the repeat-loss estimate's prior: with few
/// repairs observed, the estimate stays near the mean instead of jumping to 0 or 1.
const REPEAT_PRIOR: f64 = 8.0;

/// The loss rate a new connection's repair policy assumes, and its weight in outcomes: the
/// policy plans with the mean pulled towards 5% until some 16 outcomes are known, so that the
/// first messages of a lossy path get copies before the estimate has seen its losses. (A copy
/// goes only with a retransmission, so a clean path pays for this prior almost nothing.)
const PRIOR_LOSS: f64 = 0.05;
const PRIOR_WEIGHT: f64 = 16.0;

/// One exponentially weighted rate: the plain mean of the first `window` outcomes, then an
/// average with weight `1 / window`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rate {
    value: f64,
    samples: u32,
}

impl Rate {
    fn weight(&self) -> f64 {
        1.0 / f64::from(self.samples.max(1))
    }

    /// The rate (0 before any outcome).
    pub(crate) fn value(&self) -> f64 {
        self.value
    }

    /// Outcomes counted, at most the window.
    pub(crate) fn samples(&self) -> u32 {
        self.samples
    }

    /// Counts one outcome.
    pub(crate) fn note(&mut self, hit: bool, window: u32) {
        self.samples = (self.samples + 1).min(window);
        let x = if hit { 1.0 } else { 0.0 };
        self.value += (x - self.value) * self.weight();
    }

    /// Turns an earlier "hit" into a "miss" (a loss that was not one): the same as having
    /// noted a miss, up to the weights of the outcomes noted since.
    fn retract(&mut self) {
        if self.samples > 0 {
            self.value = (self.value - self.weight()).max(0.0);
        }
    }
}

/// The three rates the repair policy needs, updated as packets are acknowledged or declared
/// lost.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LossEstimates {
    loss: Rate,
    repeat: Rate,
    ack: Rate,
}

impl LossEstimates {
    /// A packet was acknowledged in time (`lost` false: its acknowledgement also counts as
    /// one that came back) or declared lost; `repair` when it carried a retransmission or a
    /// copy (a packet sent after a loss of its data).
    pub(crate) fn on_outcome(&mut self, lost: bool, repair: bool) {
        self.loss.note(lost, LOSS_WINDOW);
        if repair {
            self.repeat.note(lost, REPEAT_WINDOW);
        }
        if !lost {
            self.ack.note(false, LOSS_WINDOW);
        }
    }

    /// A packet acknowledged after it was declared lost: its loss is retracted, and its
    /// acknowledgement counts as one that went missing (`ack_loss`).
    pub(crate) fn on_spurious(&mut self, repair: bool) {
        self.loss.retract();
        if repair {
            self.repeat.retract();
        }
        self.ack.note(true, LOSS_WINDOW);
    }

    /// Mean loss rate of packets.
    pub(crate) fn loss(&self) -> f64 {
        self.loss.value
    }

    /// The mean loss rate the repair policy plans with: the estimate with a prior of
    /// [`PRIOR_LOSS`] worth [`PRIOR_WEIGHT`] outcomes.
    pub(crate) fn planning_loss(&self) -> f64 {
        let n = f64::from(self.loss.samples);
        (self.loss.value * n + PRIOR_LOSS * PRIOR_WEIGHT) / (n + PRIOR_WEIGHT)
    }

    /// Loss rate of packets carrying a repair, shrunk towards the mean while few were seen.
    pub(crate) fn repeat_loss(&self) -> f64 {
        let n = f64::from(self.repeat.samples);
        (self.repeat.value * n + self.planning_loss() * REPEAT_PRIOR) / (n + REPEAT_PRIOR)
    }

    /// Rate of acknowledgements missing when the data had arrived.
    pub(crate) fn ack_loss(&self) -> f64 {
        self.ack.value
    }
}

impl Pack for Rate {
    fn pack(&self, p: &mut Packer) -> bool {
        p.f64(self.value);
        p.u64(u64::from(self.samples));
        true
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        Self {
            value: u.f64(),
            samples: u32::try_from(u.u64()).unwrap_or(0),
        }
    }
}

impl Pack for LossEstimates {
    fn pack(&self, p: &mut Packer) -> bool {
        self.loss.pack(p) && self.repeat.pack(p) && self.ack.pack(p)
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        Self {
            loss: Rate::unpack(u),
            repeat: Rate::unpack(u),
            ack: Rate::unpack(u),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_is_exact_for_the_first_window() {
        let mut e = LossEstimates::default();
        for i in 0..100 {
            e.on_outcome(i % 20 == 0, false);
        }
        assert!((e.loss() - 0.05).abs() < 1e-12, "{}", e.loss());
        // no repair seen: the repeat estimate is the planning mean (here the prior's 5% too)
        assert!((e.repeat_loss() - 0.05).abs() < 1e-12);
        assert!((e.planning_loss() - 0.05).abs() < 1e-12);
    }

    #[test]
    fn a_new_connection_plans_with_the_prior() {
        let mut e = LossEstimates::default();
        assert!((e.planning_loss() - PRIOR_LOSS).abs() < 1e-12);
        for _ in 0..256 {
            e.on_outcome(false, false);
        }
        assert!(e.planning_loss() < 0.005, "{}", e.planning_loss());
    }

    #[test]
    fn a_retracted_loss_counts_as_delivered() {
        let mut a = LossEstimates::default();
        let mut b = LossEstimates::default();
        for _ in 0..50 {
            a.on_outcome(false, false);
            b.on_outcome(false, false);
        }
        a.on_outcome(true, false);
        a.on_spurious(false);
        b.on_outcome(false, false);
        assert!(
            (a.loss() - b.loss()).abs() < 1e-12,
            "{} {}",
            a.loss(),
            b.loss()
        );
        assert!(a.ack_loss() > 0.0);
    }

    #[test]
    fn lost_repairs_raise_the_repeat_estimate_not_the_mean_alone() {
        let mut e = LossEstimates::default();
        for i in 0..1000 {
            e.on_outcome(i % 50 == 0, false);
        }
        let mean = e.loss();
        // a bursty path: most repairs are lost too
        for _ in 0..10 {
            e.on_outcome(true, true);
        }
        assert!(e.repeat_loss() > 0.4, "{}", e.repeat_loss());
        assert!(e.loss() < 0.1 + mean, "{}", e.loss());
    }
}
