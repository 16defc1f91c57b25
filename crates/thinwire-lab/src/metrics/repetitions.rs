//! Repetitions: every row's statistics over independent runs, each as a mean
//! with a 95% confidence interval (`runs.json` and the report's repetitions
//! table).

use serde::{Deserialize, Serialize};

use super::{Estimate, RunKey};

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
}
