//! The human-readable summary table (terminal), shared with the HTML report.

use super::gsi::SatisfactionRatios;
use super::results::{Results, RunKey, RunResult};
use super::MetricsError;

/// Column headers of the summary table.
pub(crate) const HEADERS: [&str; 12] = [
    "protocol",
    "class",
    "sent/delivered",
    "mean ms",
    "jitter ms",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "deadline miss",
    "wire kB",
    "redundancy",
];

/// Header of the GSI-ratio column (appended after [`HEADERS`]).
pub(crate) const GSI_HEADER: &str = "GSI ratio";

/// Number of leading text (left-aligned) columns; the rest are numbers.
pub(crate) const TEXT_COLUMNS: usize = 2;

/// One formatted row of the summary table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SummaryRow {
    /// Whether this is a protocol (all classes) row rather than a per-class row.
    pub(crate) protocol_row: bool,
    /// The run (shown without the "(model)" mark).
    pub(crate) key: RunKey,
    /// Whether the protocol is a model.
    pub(crate) model: bool,
    /// Cells, aligned with [`HEADERS`] followed by [`GSI_HEADER`].
    pub(crate) cells: Vec<String>,
}

/// A latency in ms with one decimal.
pub(crate) fn fmt_ms(v: f64) -> String {
    format!("{v:.1}")
}

/// A fraction as a percentage with two decimals.
pub(crate) fn fmt_pct(v: f64) -> String {
    format!("{:.2}%", v * 100.0)
}

/// Bytes as kB (1000 bytes) with one decimal.
pub(crate) fn fmt_kb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1000.0)
}

fn row_cells(r: &RunResult, ratio: Option<f64>) -> Vec<String> {
    let delivered_any = r.messages.delivered > 0;
    let lat = |v: f64| {
        if delivered_any {
            fmt_ms(v)
        } else {
            "-".to_owned()
        }
    };
    let l = &r.latency_ms;
    let protocol_row = r.class.is_none();
    vec![
        r.display_protocol(),
        r.class.clone().unwrap_or_else(|| "all".to_owned()),
        format!("{}/{}", r.messages.sent, r.messages.delivered),
        lat(l.mean),
        lat(l.jitter),
        lat(l.p50),
        lat(l.p99),
        lat(l.p999),
        lat(l.max),
        r.deadline_miss_rate.map_or_else(|| "-".to_owned(), fmt_pct),
        if protocol_row {
            fmt_kb(r.wire.bytes)
        } else {
            String::new()
        },
        if protocol_row {
            format!("{:.3}", r.redundancy)
        } else {
            String::new()
        },
        ratio.map_or_else(|| "-".to_owned(), format_ratio),
    ]
}

/// Whether the per-class rows add nothing: every protocol carried the same single class,
/// so its class row repeats its protocol row.
pub(crate) fn single_class(results: &Results) -> Option<&str> {
    match results.classes().as_slice() {
        [only] => Some(only),
        _ => None,
    }
}

/// The summary rows: protocol rows first, then the per-class rows (omitted when there is
/// a single class, see [`single_class`]).
pub(crate) fn summary_rows(results: &Results, ratios: &SatisfactionRatios) -> Vec<SummaryRow> {
    let mk = |r: &RunResult| SummaryRow {
        protocol_row: r.class.is_none(),
        key: r.key.clone(),
        model: r.model,
        cells: row_cells(
            r,
            ratios.get(&r.key, r.class.as_deref()).and_then(|s| s.ratio),
        ),
    };
    let class_rows = single_class(results).is_none();
    results
        .protocol_runs()
        .map(mk)
        .chain(results.class_runs().filter(|_| class_rows).map(mk))
        .collect()
}

/// A GSI ratio: three decimals in the readable range, scientific notation outside it (under
/// heavy congestion the index of one protocol can be 1e-40 of another's).
pub(crate) fn format_ratio(x: f64) -> String {
    if x == 0.0 || (1e-3..1e4).contains(&x) {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

/// The footnote explaining the GSI ratio, the per-protocol columns and omitted rows.
fn footnote(results: &Results, baseline: Option<&RunKey>) -> String {
    let base = baseline.map_or_else(|| "-".to_owned(), RunKey::to_string);
    let point = if results.is_sweep() {
        ", same sweep point"
    } else {
        ""
    };
    let mut s = format!(
        "GSI ratio: exp(-1.6*delay_s - 9.2*jitter_s) (Chen et al., CACM 2006) on mean latency and \
         jitter, relative to {base} (same class{point}); >1 is better.\n\
         Latencies are over delivered messages (nearest-rank percentiles); wire kB and redundancy \
         are per protocol, shown on its 'all' row."
    );
    if let Some(c) = single_class(results) {
        s.push_str(&format!(
            "\nEvery message is of class '{c}': per-class rows equal the 'all' rows and are omitted."
        ));
    }
    s
}

impl Results {
    /// The summary as a plain-text table, GSI ratios against the first protocol.
    ///
    /// One line per protocol (all classes), then one per protocol and class; models are
    /// marked "(model)".
    pub fn terminal_table(&self) -> String {
        // With no named baseline there is nothing that can fail.
        self.terminal_table_with_baseline(None).unwrap_or_default()
    }

    /// [`Results::terminal_table`] with GSI ratios against `baseline` (`None`: the first
    /// run). Errors if `baseline` names no run (see [`Results::satisfaction_ratios`]).
    pub fn terminal_table_with_baseline(
        &self,
        baseline: Option<&RunKey>,
    ) -> Result<String, MetricsError> {
        let ratios = self.satisfaction_ratios(baseline)?;
        let rows = summary_rows(self, &ratios);
        let headers: Vec<&str> = HEADERS
            .iter()
            .copied()
            .chain(std::iter::once(GSI_HEADER))
            .collect();
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, c) in widths.iter_mut().zip(&row.cells) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[&str]| -> String {
            let mut s = String::new();
            for (i, (c, &w)) in cells.iter().zip(&widths).enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                if i < TEXT_COLUMNS {
                    s.push_str(&format!("{c:<w$}"));
                } else {
                    s.push_str(&format!("{c:>w$}"));
                }
            }
            s.truncate(s.trim_end().len());
            s.push('\n');
            s
        };
        let rule: String = {
            let total = widths.iter().sum::<usize>() + 2 * (widths.len().saturating_sub(1));
            let mut r = "-".repeat(total);
            r.push('\n');
            r
        };
        let mut out = format!(
            "thinwire lab: scenario {}, engine {}, seed {}\n",
            self.scenario, self.engine, self.seed
        );
        out.push_str(&line(&headers));
        out.push_str(&rule);
        let mut in_class_block = false;
        for row in &rows {
            if !row.protocol_row && !in_class_block {
                in_class_block = true;
                out.push_str(&rule);
            }
            let cells: Vec<&str> = row.cells.iter().map(String::as_str).collect();
            out.push_str(&line(&cells));
        }
        out.push_str(&footnote(self, ratios.baseline.as_ref()));
        out.push('\n');
        Ok(out)
    }
}
