//! Game-satisfaction index (GSI) from a published survival model of player departure.

use super::results::{display_protocol, Results, RunKey, RunResult};
use super::MetricsError;

/// Coefficient of mean delay, per second, in [`game_satisfaction_index`].
pub const DELAY_COEFFICIENT_PER_S: f64 = 1.6;
/// Coefficient of delay jitter (standard deviation), per second, in
/// [`game_satisfaction_index`].
pub const JITTER_COEFFICIENT_PER_S: f64 = 9.2;

/// The game-satisfaction index `exp(-1.6 * delay_s - 9.2 * jitter_s)`.
///
/// The model comes from the survival analysis of MMORPG session times in K.-T. Chen,
/// P. Huang and C.-L. Lei, "How sensitive are online gamers to network quality?",
/// Communications of the ACM 49(11), 2006: the rate at which players leave a game grows
/// exponentially with network delay and jitter, jitter weighing much more than delay.
/// The index is the inverse of that relative departure rate, so the ratio of two indices
/// is the inverse ratio of the predicted departure rates: a ratio of 1.25 for protocol X
/// against a baseline means players on X are predicted to leave at 1/1.25 of the
/// baseline's rate. Only ratios are meaningful; the lab applies the model to the mean and
/// the standard deviation of application-level message latency.
///
/// Arguments are in milliseconds, as in [`super::LatencyMs`].
pub fn game_satisfaction_index(mean_ms: f64, jitter_ms: f64) -> f64 {
    gsi_exponent(mean_ms, jitter_ms).exp()
}

/// The (non-positive for non-negative inputs) exponent of the index.
fn gsi_exponent(mean_ms: f64, jitter_ms: f64) -> f64 {
    -DELAY_COEFFICIENT_PER_S * mean_ms / 1000.0 - JITTER_COEFFICIENT_PER_S * jitter_ms / 1000.0
}

/// GSI of one row and its ratio to the baseline's row of the same class.
#[derive(Debug, Clone, PartialEq)]
pub struct Satisfaction {
    /// The run: protocol and sweep point.
    pub key: RunKey,
    /// Whether the protocol is a simulator model.
    pub model: bool,
    /// Message class, or `None` for all classes.
    pub class: Option<String>,
    /// The index, or `None` when nothing was delivered (no latency to judge).
    pub gsi: Option<f64>,
    /// `gsi / baseline gsi` for the same class and sweep point (computed as the exponential of the exponents'
    /// difference, so it stays exact even when both indices underflow to zero); `None` when
    /// either row delivered nothing.
    pub ratio: Option<f64>,
}

impl Satisfaction {
    /// The run as shown to people (with ` (model)` for models).
    pub fn display_protocol(&self) -> String {
        display_protocol(&self.key, self.model)
    }
}

/// GSI and ratios of every row of a [`Results`], against one baseline protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct SatisfactionRatios {
    /// The baseline, or `None` when the results have no run. For a sweep this is the
    /// protocol without a sweep point (`tcp-model`, not `tcp-model [n=10]`): every row is
    /// compared with the baseline's row at its own point.
    pub baseline: Option<RunKey>,
    /// One entry per run, in the order of [`Results::runs`].
    pub rows: Vec<Satisfaction>,
}

impl SatisfactionRatios {
    /// The entry of the run `key` for `class` (`None`: all classes).
    pub fn get(&self, key: &RunKey, class: Option<&str>) -> Option<&Satisfaction> {
        self.rows
            .iter()
            .find(|s| s.key == *key && s.class.as_deref() == class)
    }

    /// The all-classes entries, one per run, in order.
    pub fn protocol_rows(&self) -> impl Iterator<Item = &Satisfaction> {
        self.rows.iter().filter(|s| s.class.is_none())
    }
}

impl Results {
    /// GSI of every row and its ratio to `baseline` (`None`: the first run of the results).
    ///
    /// Each row is compared with the baseline's row of the same class. In a sweep,
    /// `baseline` may be given with or without a sweep point, and each row is compared with
    /// the baseline protocol's row at the row's own point (falling back to the named run
    /// when that point has no baseline run).
    ///
    /// Errors if `baseline` names no run of the results (a baseline without a point: no
    /// run of that protocol at any point).
    pub fn satisfaction_ratios(
        &self,
        baseline: Option<&RunKey>,
    ) -> Result<SatisfactionRatios, MetricsError> {
        let named: Option<RunKey> = match baseline {
            Some(b) => {
                let known = self.runs.iter().any(|r| {
                    r.key.protocol == b.protocol && (b.point.is_none() || r.key.point == b.point)
                });
                if !known {
                    return Err(MetricsError::UnknownBaseline(b.to_string()));
                }
                Some(b.clone())
            }
            None => self.runs.first().map(|r| r.key.clone()),
        };
        let base = named.as_ref().map(|n| RunKey::new(n.protocol.clone()));
        let exponent_of = |r: &RunResult| {
            (r.messages.delivered > 0).then(|| gsi_exponent(r.latency_ms.mean, r.latency_ms.jitter))
        };
        // The baseline's row for `r`: same class, same sweep point when there is one.
        let baseline_row = |r: &RunResult| -> Option<&RunResult> {
            let named = named.as_ref()?;
            let base = base.as_ref()?;
            let class = r.class.as_deref();
            let same_point = r.key.point.as_ref().and_then(|pt| {
                let at = RunKey {
                    protocol: base.protocol.clone(),
                    point: Some(pt.clone()),
                };
                self.run(&at, class)
            });
            same_point
                .or_else(|| self.run(named, class))
                .or_else(|| self.run(base, class))
        };
        let rows = self
            .runs
            .iter()
            .map(|r| {
                let exponent = exponent_of(r);
                let base = baseline_row(r).and_then(exponent_of);
                let ratio = match (exponent, base) {
                    (Some(e), Some(b)) => Some((e - b).exp()),
                    _ => None,
                };
                Satisfaction {
                    key: r.key.clone(),
                    model: r.model,
                    class: r.class.clone(),
                    gsi: exponent.map(f64::exp),
                    ratio,
                }
            })
            .collect();
        let baseline = if self.is_sweep() { base } else { named };
        Ok(SatisfactionRatios { baseline, rows })
    }
}
