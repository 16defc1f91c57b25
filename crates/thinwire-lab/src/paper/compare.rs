//! Published against ours: every run's value of a figure, their mean with a
//! 95% confidence interval, and a verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    point_matches, Metric, PaperInfo, PaperSpec, Published, PublishedOrder, SetupOverride,
};
use crate::metrics::{confidence_interval, t95, Estimate, RunKey};

/// Which entry of the paper tables a value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EntryId {
    /// `[[published]]` number `i` (0-based).
    Published(usize),
    /// `[[published_order]]` number `i` (0-based).
    Order(usize),
}

/// One measured value: an entry's metric for one protocol, in one run, at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Value {
    /// The entry.
    pub entry: EntryId,
    /// Run index (0 = the scenario's seed).
    pub run: u32,
    /// The protocol and the sweep point measured.
    pub key: RunKey,
    /// The metric's value (`None`: undefined in this run).
    pub value: Option<f64>,
}

/// How ours compares with the published figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Within the tolerance.
    Matches,
    /// Outside it.
    Differs,
    /// Ours could not be computed (no run of that protocol or point).
    Missing,
}

impl Verdict {
    /// `matches`, `differs` or `missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Matches => "matches",
            Verdict::Differs => "differs",
            Verdict::Missing => "missing",
        }
    }
}

/// A published figure beside ours.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The figure.
    pub published: Published,
    /// Ours at every matching sweep point, in sweep order (the first is the
    /// paper's setup; the rest, e.g. bursty loss, are extra columns).
    pub columns: Vec<(String, Option<Estimate>)>,
    /// The verdict at the first point.
    pub verdict: Verdict,
}

impl Comparison {
    /// Ours at the paper's setup (the first matching point).
    pub fn ours(&self) -> Option<Estimate> {
        self.columns.first().and_then(|c| c.1)
    }

    /// Ours over published at the paper's setup.
    pub fn ratio(&self) -> Option<f64> {
        let o = self.ours()?;
        (self.published.value != 0.0).then(|| o.mean / self.published.value)
    }
}

/// A ranking checked at one sweep point.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderCheck {
    /// The point.
    pub point: String,
    /// Each protocol's mean over runs, in the published order.
    pub values: Vec<(String, Option<Estimate>)>,
    /// Whether the published order holds (within the slack).
    pub holds: bool,
}

/// A published ranking beside ours.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderComparison {
    /// The ranking.
    pub order: PublishedOrder,
    /// Every matching point.
    pub checks: Vec<OrderCheck>,
}

impl OrderComparison {
    /// Points where the order holds, and points checked.
    pub fn score(&self) -> (usize, usize) {
        (
            self.checks.iter().filter(|c| c.holds).count(),
            self.checks.len(),
        )
    }
}

/// The paper tables of a run: every published figure and ranking beside ours.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperOutcome {
    /// The paper and the setup choices.
    pub info: Option<PaperInfo>,
    /// Published figures against ours.
    pub comparisons: Vec<Comparison>,
    /// Published rankings against ours.
    pub orders: Vec<OrderComparison>,
    /// The settings of the paper's setup that the run's options replaced (none: the run
    /// is at the paper's setup).
    pub overrides: Vec<SetupOverride>,
}

/// Values keyed by (entry, protocol and point), one per run.
type Table = BTreeMap<(EntryId, RunKey), Vec<(u32, Option<f64>)>>;

fn table(values: &[Value]) -> Table {
    let mut t: Table = BTreeMap::new();
    for v in values {
        t.entry((v.entry, v.key.clone()))
            .or_default()
            .push((v.run, v.value));
    }
    for runs in t.values_mut() {
        runs.sort_by_key(|r| r.0);
    }
    t
}

/// Per-run values of `entry` for `protocol` at the sweep point labelled `point`.
fn per_run(t: &Table, entry: EntryId, point: &str, protocol: &str) -> BTreeMap<u32, f64> {
    t.get(&(entry, RunKey::at(protocol, point)))
        .map(|v| v.iter().filter_map(|&(r, x)| x.map(|x| (r, x))).collect())
        .unwrap_or_default()
}

/// One run's figure from the protocol's (and the baseline's) measured values.
fn combine(metric: &Metric, ours: f64, base: Option<f64>) -> Option<f64> {
    match (metric, base) {
        (Metric::Gsi, None) => Some(ours.exp()),
        (Metric::Gsi, Some(b)) => Some((ours - b).exp()),
        (_, None) => Some(ours),
        (_, Some(b)) => (b != 0.0).then(|| ours / b),
    }
}

/// GSI(protocol) / GSI(baseline) as the paper forms it: each protocol's GSI averaged over
/// the runs (the paper's iterations), then the ratio of the two means. (A mean of per-run
/// ratios would be ruled by the runs where the baseline's GSI is nearly zero: `exp(-9.2 j)`
/// for a jitter of seconds.) The interval is the delta method's over the runs both have.
/// `ours` and `base` hold each run's log GSI.
fn gsi_ratio(ours: &BTreeMap<u32, f64>, base: &BTreeMap<u32, f64>) -> Option<Estimate> {
    let pairs: Vec<(f64, f64)> = ours
        .iter()
        .filter_map(|(r, &x)| base.get(r).map(|&y| (x.exp(), y.exp())))
        .collect();
    let n = pairs.len();
    let mx = pairs.iter().map(|p| p.0).sum::<f64>() / n.max(1) as f64;
    let my = pairs.iter().map(|p| p.1).sum::<f64>() / n.max(1) as f64;
    if n == 0 || my <= 0.0 {
        return None;
    }
    let ratio = mx / my;
    let ci95 = (n > 1).then(|| {
        // Var(x̄/ȳ) ≈ (Var(x) - 2R Cov(x, y) + R² Var(y)) / (n ȳ²), sample (co)variances.
        let d = (n - 1) as f64;
        let vx = pairs.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>() / d;
        let vy = pairs.iter().map(|p| (p.1 - my).powi(2)).sum::<f64>() / d;
        let cov = pairs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / d;
        let var = ((vx - 2.0 * ratio * cov + ratio * ratio * vy) / (n as f64 * my * my)).max(0.0);
        t95(n) * var.sqrt()
    });
    Some(Estimate {
        mean: ratio,
        ci95,
        runs: n,
    })
}

/// Compares every published figure and ranking with the measured `values`.
/// `points` are the scenario's sweep point labels in sweep order.
pub fn compare_published(
    spec: &PaperSpec,
    points: &[String],
    values: &[Value],
) -> (Vec<Comparison>, Vec<OrderComparison>) {
    let t = table(values);
    let mut out = Vec::new();
    for (i, p) in spec.published.iter().enumerate() {
        let id = EntryId::Published(i);
        let mut columns = Vec::new();
        for point in points.iter().filter(|pt| point_matches(pt, &p.point)) {
            let ours = per_run(&t, id, point, &p.protocol);
            let base = p.baseline.as_ref().map(|b| per_run(&t, id, point, b));
            let estimate = match (&p.metric, &base) {
                (Metric::Gsi, Some(b)) => gsi_ratio(&ours, b),
                _ => {
                    let runs: Vec<f64> = ours
                        .iter()
                        .filter_map(|(r, &v)| match &base {
                            None => combine(&p.metric, v, None),
                            Some(b) => b.get(r).and_then(|&bv| combine(&p.metric, v, Some(bv))),
                        })
                        .collect();
                    confidence_interval(&runs)
                }
            };
            let estimate = estimate.map(|e| Estimate {
                mean: e.mean + p.offset,
                ..e
            });
            columns.push((point.clone(), estimate));
        }
        let verdict = match columns.first().and_then(|c| c.1) {
            None => Verdict::Missing,
            Some(e) if p.tolerance.holds(p.value, e.mean) => Verdict::Matches,
            Some(_) => Verdict::Differs,
        };
        out.push(Comparison {
            published: p.clone(),
            columns,
            verdict,
        });
    }
    let mut orders = Vec::new();
    for (i, o) in spec.orders.iter().enumerate() {
        let id = EntryId::Order(i);
        let mut checks = Vec::new();
        for point in points
            .iter()
            .filter(|pt| o.points.is_empty() || o.points.iter().any(|f| point_matches(pt, f)))
        {
            let values: Vec<(String, Option<Estimate>)> = o
                .protocols
                .iter()
                .map(|p| {
                    let runs: Vec<f64> = per_run(&t, id, point, p)
                        .values()
                        .filter_map(|&v| combine(&o.metric, v, None))
                        .collect();
                    (p.clone(), confidence_interval(&runs))
                })
                .collect();
            let means: Option<Vec<f64>> = values.iter().map(|v| v.1.map(|e| e.mean)).collect();
            let holds = means.is_some_and(|m| {
                m.windows(2).all(|w| {
                    // Lower is better for latencies; for the GSI, higher is.
                    if matches!(o.metric, Metric::Gsi) {
                        w[1] <= w[0] * (1.0 + o.slack)
                    } else {
                        w[1] >= w[0] * (1.0 - o.slack)
                    }
                })
            });
            checks.push(OrderCheck {
                point: point.clone(),
                values,
                holds,
            });
        }
        orders.push(OrderComparison {
            order: o.clone(),
            checks,
        });
    }
    (out, orders)
}
