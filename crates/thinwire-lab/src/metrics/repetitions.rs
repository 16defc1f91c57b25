//! Repetitions: every row's statistics over independent runs, each as a mean
//! with a 95% confidence interval (`runs.json` and the report's repetitions
//! table).

use serde::{Deserialize, Serialize};

use super::{confidence_interval, Estimate, LatencyMs, Results, RunKey};

/// One row (protocol at a sweep point, all classes) over every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatedRow {
    /// The row's protocol and sweep point (an object in `runs.json`, as in `results.json`).
    pub key: RunKey,
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

/// One run's outcome of a row: what [`RepeatedRow::over_runs`] averages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunOutcome {
    /// Messages sent.
    pub sent: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// Latency statistics of the delivered messages.
    pub latency_ms: LatencyMs,
}

impl RepeatedRow {
    /// `key`'s row over `runs`, one outcome per run: the latency statistics over the runs
    /// that delivered something, the delivered share over the runs that sent something.
    pub fn over_runs(key: RunKey, runs: &[RunOutcome]) -> RepeatedRow {
        let delivered: Vec<&RunOutcome> = runs.iter().filter(|r| r.delivered > 0).collect();
        let pick = |f: fn(&LatencyMs) -> f64| {
            confidence_interval(
                &delivered
                    .iter()
                    .map(|r| f(&r.latency_ms))
                    .collect::<Vec<_>>(),
            )
        };
        RepeatedRow {
            key,
            mean_ms: pick(|l| l.mean),
            jitter_ms: pick(|l| l.jitter),
            p99_ms: pick(|l| l.p99),
            p999_ms: pick(|l| l.p999),
            delivered_pct: confidence_interval(
                &runs
                    .iter()
                    .filter(|r| r.sent > 0)
                    .map(|r| 100.0 * r.delivered as f64 / r.sent as f64)
                    .collect::<Vec<_>>(),
            ),
        }
    }
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
    /// One row per protocol and sweep point, in job order.
    pub rows: Vec<RepeatedRow>,
}

impl Repetitions {
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
                r.key,
                cell(&r.mean_ms, 1),
                cell(&r.jitter_ms, 1),
                cell(&r.p99_ms, 1),
                cell(&r.p999_ms, 1),
                cell(&r.delivered_pct, 2)
            ));
        }
        out
    }

    /// Every all-classes row of the first run, over `runs` (one [`Results`] per run, seeds in
    /// the same order): how the emulator's repeated runs are summarised. A row missing from
    /// a run (its peer failed there) counts only the runs that have it.
    pub fn from_results(runs: &[&Results], seeds: Vec<u64>) -> Repetitions {
        let outcome = |r: &super::RunResult| RunOutcome {
            sent: r.messages.sent,
            delivered: r.messages.delivered,
            latency_ms: r.latency_ms,
        };
        let first = runs.first();
        let rows = first
            .into_iter()
            .flat_map(|f| f.runs.iter().filter(|r| r.class.is_none()))
            .map(|row| {
                let of: Vec<RunOutcome> = runs
                    .iter()
                    .filter_map(|res| {
                        res.runs
                            .iter()
                            .find(|r| r.class.is_none() && r.key == row.key)
                    })
                    .map(outcome)
                    .collect();
                RepeatedRow::over_runs(row.key.clone(), &of)
            })
            .collect();
        Repetitions {
            scenario: first.map(|f| f.scenario.clone()).unwrap_or_default(),
            runs: runs.len() as u32,
            seeds,
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Engine, MessageRecord, Recorder};
    use super::*;

    /// One run's results: `peers` each deliver 10 messages `latency_ms` after sending them.
    fn run(peers: &[(&str, u64)]) -> Results {
        let mut r = Recorder::new();
        for i in 0..10u64 {
            for &(p, latency_ms) in peers {
                r.record(MessageRecord {
                    key: p.into(),
                    class: "move".into(),
                    sent_at_us: i * 100_000,
                    delivered_at_us: Some(i * 100_000 + latency_ms * 1000),
                    payload_bytes: 20,
                    deadline_us: None,
                });
            }
        }
        r.finish("reps", Engine::Emu, 1).0
    }

    #[test]
    fn rows_over_results_average_each_run_and_skip_missing_ones() {
        let runs = [
            run(&[("kcp", 100), ("quic", 50)]),
            run(&[("kcp", 120)]), // quic failed in this run
            run(&[("kcp", 110), ("quic", 70)]),
        ];
        let reps = Repetitions::from_results(&runs.iter().collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!((reps.runs, reps.scenario.as_str()), (3, "reps"));
        let row = |name: &str| {
            reps.rows
                .iter()
                .find(|r| r.key == RunKey::new(name))
                .expect("row")
        };
        let kcp = row("kcp").p999_ms.expect("p99.9");
        assert!((kcp.mean - 110.0).abs() < 1e-9, "{kcp:?}");
        assert!(
            kcp.ci95.is_some_and(|h| h > 0.0),
            "three different runs: {kcp:?}"
        );
        assert_eq!(kcp.runs, 3);
        let quic = row("quic").p999_ms.expect("p99.9");
        assert!((quic.mean - 60.0).abs() < 1e-9, "{quic:?}");
        assert_eq!(quic.runs, 2, "the run where quic failed is not counted");
        assert_eq!(reps.rows.len(), 2, "one all-classes row per peer");
    }
}
