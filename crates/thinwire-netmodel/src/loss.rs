//! Random loss models.

use rand::Rng;

use super::error::{check_prob, ConfigError};

/// Random loss applied to packets that made it through the queue.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LossModel {
    /// No random loss.
    #[default]
    None,
    /// Every packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state Markov chain (good/bad) with a loss probability per state.
    ///
    /// For every packet the loss is drawn in the current state, then the chain
    /// takes one transition.
    GilbertElliott {
        /// Probability of moving from the good to the bad state per packet.
        p_good_to_bad: f64,
        /// Probability of moving from the bad to the good state per packet.
        p_bad_to_good: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

impl LossModel {
    /// Stationary (long-run) loss probability of the model.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let sum = p_good_to_bad + p_bad_to_good;
                if sum == 0.0 {
                    // The chain never moves; it starts (and stays) good.
                    return loss_good;
                }
                let pi_bad = p_good_to_bad / sum;
                (1.0 - pi_bad) * loss_good + pi_bad * loss_bad
            }
        }
    }

    /// Checks that all probabilities are in `[0, 1]`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match *self {
            LossModel::None => Ok(()),
            LossModel::Bernoulli { p } => check_prob("loss p", p),
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                check_prob("p_good_to_bad", p_good_to_bad)?;
                check_prob("p_bad_to_good", p_bad_to_good)?;
                check_prob("loss_good", loss_good)?;
                check_prob("loss_bad", loss_bad)
            }
        }
    }
}

/// Parameters of a Gilbert-Elliott loss chain, with helpers to derive them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliott {
    /// Probability of moving from the good to the bad state per packet.
    pub p_good_to_bad: f64,
    /// Probability of moving from the bad to the good state per packet.
    pub p_bad_to_good: f64,
    /// Loss probability in the good state.
    pub loss_good: f64,
    /// Loss probability in the bad state.
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// The simple Gilbert model (no loss in the good state, every packet lost
    /// in the bad state) with the given stationary loss rate and mean loss
    /// burst length in packets.
    ///
    /// With `loss_bad = 1` a loss burst is a sojourn in the bad state, whose
    /// length is geometric with mean `1 / p_bad_to_good`; the stationary bad
    /// probability `p_gb / (p_gb + p_bg)` equals the mean loss.
    pub fn from_mean_and_burst(mean_loss: f64, mean_burst_len: f64) -> Result<Self, ConfigError> {
        check_prob("mean loss", mean_loss)?;
        if mean_loss >= 1.0 {
            return Err(ConfigError::GilbertElliott("mean loss must be below 1"));
        }
        if mean_burst_len.is_nan() || mean_burst_len < 1.0 || mean_burst_len.is_infinite() {
            return Err(ConfigError::BurstLength(mean_burst_len));
        }
        let p_bad_to_good = 1.0 / mean_burst_len;
        let p_good_to_bad = mean_loss * p_bad_to_good / (1.0 - mean_loss);
        if p_good_to_bad > 1.0 {
            return Err(ConfigError::GilbertElliott(
                "mean loss too high for this burst length (p_good_to_bad > 1)",
            ));
        }
        Ok(GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_good: 0.0,
            loss_bad: 1.0,
        })
    }

    /// Mean length of a run of consecutive losses (in packets) in the
    /// stationary chain, for the simple Gilbert model (`loss_good = 0`,
    /// `loss_bad = 1`) this is `1 / p_bad_to_good`.
    pub fn mean_burst_len(&self) -> f64 {
        if self.p_bad_to_good == 0.0 {
            f64::INFINITY
        } else {
            1.0 / self.p_bad_to_good
        }
    }

    /// The equivalent [`LossModel`].
    pub fn model(&self) -> LossModel {
        LossModel::from(*self)
    }
}

impl From<GilbertElliott> for LossModel {
    fn from(g: GilbertElliott) -> Self {
        LossModel::GilbertElliott {
            p_good_to_bad: g.p_good_to_bad,
            p_bad_to_good: g.p_bad_to_good,
            loss_good: g.loss_good,
            loss_bad: g.loss_bad,
        }
    }
}

/// Running state of a loss model.
#[derive(Debug, Clone, Default)]
pub(super) struct LossState {
    bad: bool,
}

impl LossState {
    /// Decides whether the next packet is lost.
    pub(super) fn is_lost<R: Rng>(&mut self, model: &LossModel, rng: &mut R) -> bool {
        match *model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => p > 0.0 && rng.random::<f64>() < p,
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let p = if self.bad { loss_bad } else { loss_good };
                let lost = rng.random::<f64>() < p;
                let flip = if self.bad {
                    p_bad_to_good
                } else {
                    p_good_to_bad
                };
                if rng.random::<f64>() < flip {
                    self.bad = !self.bad;
                }
                lost
            }
        }
    }
}
