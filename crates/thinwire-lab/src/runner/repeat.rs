//! Repetitions: a scenario run with several independent seeds, each row's
//! statistics as a mean with a 95% confidence interval over the runs
//! (`runs.json` and the report's repetitions table).

use super::job::JobResult;
use crate::metrics::{confidence_interval, RepeatedRow, Repetitions, RunKey};

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

/// Gathers the jobs' summaries by run key (`jobs` in job order).
pub(crate) fn repetitions(scenario: &str, seed: u64, runs: u32, jobs: &[JobResult]) -> Repetitions {
    let keys: Vec<&RunKey> = jobs.iter().filter(|j| j.run == 0).map(|j| &j.key).collect();
    let rows = keys
        .iter()
        .map(|&key| {
            let of: Vec<&JobResult> = jobs.iter().filter(|j| j.key == *key).collect();
            let delivered: Vec<&JobResult> = of
                .iter()
                .copied()
                .filter(|j| j.summary.delivered > 0)
                .collect();
            let pick = |f: fn(&JobResult) -> f64| {
                confidence_interval(&delivered.iter().map(|j| f(j)).collect::<Vec<_>>())
            };
            RepeatedRow {
                key: key.clone(),
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
