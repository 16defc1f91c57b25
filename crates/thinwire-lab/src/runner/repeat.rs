//! Repetitions: a scenario run with several independent seeds, each row's
//! statistics as a mean with a 95% confidence interval over the runs
//! (`runs.json` and the report's repetitions table).

use super::job::JobResult;
use crate::metrics::{RepeatedRow, Repetitions, RunKey, RunOutcome};

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
            let of: Vec<RunOutcome> = jobs
                .iter()
                .filter(|j| j.key == *key)
                .map(|j| RunOutcome {
                    sent: j.summary.sent,
                    delivered: j.summary.delivered,
                    latency_ms: j.summary.latency_ms,
                })
                .collect();
            RepeatedRow::over_runs(key.clone(), &of)
        })
        .collect();
    Repetitions {
        scenario: scenario.to_owned(),
        runs,
        seeds: (0..runs).map(|r| run_seed(seed, r)).collect(),
        rows,
    }
}
