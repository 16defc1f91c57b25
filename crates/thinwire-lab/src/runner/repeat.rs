//! Repetitions: a scenario run with several independent seeds, each row's
//! statistics as a mean with a 95% confidence interval over the runs
//! (`runs.json` and the report's repetitions table).

use serde::{Deserialize, Serialize};

use super::job::JobResult;
use crate::paper::{confidence_interval, Estimate};

/// The seed of repetition `run` of a scenario with seed `seed`: the
/// scenario's own for run 0 (so that one run is the plain run), an
/// independent stream for the others.
pub fn run_seed(seed: u64, run: u32) -> u64 {
    if run == 0 {
        seed
    } else {
        crate::seed::derive(seed, crate::seed::REPETITION, u64::from(run))
    }
}

/// One row (protocol at a sweep point, all classes) over every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatedRow {
    /// Protocol label (with the sweep point).
    pub protocol: String,
    /// Mean latency, ms.
    pub mean_ms: Option<Estimate>,
    /// Latency standard deviation, ms.
    pub jitter_ms: Option<Estimate>,
    /// 99th percentile, ms.
    pub p99_ms: Option<Estimate>,
    /// 99.9th percentile, ms.
    pub p999_ms: Option<Estimate>,
    /// Delivered share of sent messages, %.
    pub delivered_pct: Option<Estimate>,
}

/// Every row over every run (`runs.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repetitions {
    /// Scenario name.
    pub scenario: String,
    /// Number of runs.
    pub runs: u32,
    /// The seed of every run.
    pub seeds: Vec<u64>,
    /// One row per protocol label, in job order.
    pub rows: Vec<RepeatedRow>,
}

impl Repetitions {
    /// Gathers the jobs' summaries by label (`jobs` in job order).
    pub(crate) fn from_jobs(scenario: &str, seed: u64, runs: u32, jobs: &[JobResult]) -> Self {
        let mut labels: Vec<&str> = Vec::new();
        for j in jobs.iter().filter(|j| j.run == 0) {
            labels.push(&j.label);
        }
        let rows = labels
            .iter()
            .map(|&label| {
                let of: Vec<&JobResult> = jobs.iter().filter(|j| j.label == label).collect();
                let delivered: Vec<&JobResult> = of
                    .iter()
                    .copied()
                    .filter(|j| j.summary.delivered > 0)
                    .collect();
                let pick = |f: fn(&JobResult) -> f64| {
                    confidence_interval(&delivered.iter().map(|j| f(j)).collect::<Vec<_>>())
                };
                RepeatedRow {
                    protocol: label.to_owned(),
                    mean_ms: pick(|j| j.summary.latency_ms.mean),
                    jitter_ms: pick(|j| j.summary.latency_ms.jitter),
                    p99_ms: pick(|j| j.summary.latency_ms.p99),
                    p999_ms: pick(|j| j.summary.latency_ms.p999),
                    delivered_pct: confidence_interval(
                        &of.iter()
                            .filter(|j| j.summary.sent > 0)
                            .map(|j| 100.0 * j.summary.delivered as f64 / j.summary.sent as f64)
                            .collect::<Vec<_>>(),
                    ),
                }
            })
            .collect();
        Repetitions {
            scenario: scenario.to_owned(),
            runs,
            seeds: (0..runs).map(|r| run_seed(seed, r)).collect(),
            rows,
        }
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// A plain-text table of the rows.
    pub fn terminal_table(&self) -> String {
        let cell = |e: &Option<Estimate>, d: usize| e.map_or("-".to_owned(), |e| e.display(d));
        let mut out = format!(
            "{} runs (mean ± 95% confidence interval over runs)\n{:<44} {:>18} {:>18} {:>18} {:>18} {:>16}\n",
            self.runs, "protocol", "mean ms", "jitter ms", "p99 ms", "p99.9 ms", "delivered %"
        );
        for r in &self.rows {
            out.push_str(&format!(
                "{:<44} {:>18} {:>18} {:>18} {:>18} {:>16}\n",
                r.protocol,
                cell(&r.mean_ms, 1),
                cell(&r.jitter_ms, 1),
                cell(&r.p99_ms, 1),
                cell(&r.p999_ms, 1),
                cell(&r.delivered_pct, 2)
            ));
        }
        out
    }
}
