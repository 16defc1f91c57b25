//! The deadline summary: for every protocol and message class that carries a deadline, the
//! tail latencies that matter for deadline delivery (p95, p99, p99.9), the miss rate, the
//! redundancy and the bytes on the wire, side by side.
//!
//! Unlike the latency columns of `results.json` (over *delivered* messages), the percentiles
//! here are over *all* messages of the row: a message never delivered counts as infinitely
//! late, so a protocol cannot look good by losing its slowest messages. A percentile that
//! falls on an undelivered message is `None` (printed `lost`). When every message was
//! delivered the two definitions agree. Everything else comes from `results.json` unchanged
//! (`deadline_ms`, `deadline_miss_rate`, `redundancy`, `wire`).

use super::results::{display_protocol, Results, RunKey};
use super::samples::Samples;
use super::stats::Quantile;

/// The 95th percentile.
const P95: Quantile = Quantile { num: 95, den: 100 };

/// One row of the deadline summary.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadlineRow {
    /// The run: protocol and sweep point.
    pub key: RunKey,
    /// Whether the protocol is a simulator model.
    pub model: bool,
    /// Message class.
    pub class: String,
    /// The class's (most common) deadline, ms.
    pub deadline_ms: f64,
    /// Messages sent.
    pub sent: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// 95th percentile latency over all sent messages (ms); `None`: it falls on an
    /// undelivered message.
    pub p95_ms: Option<f64>,
    /// 99th percentile, as `p95_ms`.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile, as `p95_ms`.
    pub p999_ms: Option<f64>,
    /// Share of deadline-carrying messages late or never delivered.
    pub miss_rate: f64,
    /// The protocol's redundancy (retransmissions, bundled copies and parity).
    pub redundancy: f64,
    /// The protocol's bytes on the wire (headers included).
    pub wire_bytes: u64,
}

/// The nearest-rank `q`-quantile (as [`super::nearest_rank`]) over `sent` messages of which the delivered ones have the
/// ascending latencies `sorted` (µs) and the rest count as infinite; in ms.
fn quantile_all(sorted: &[u64], sent: u64, q: Quantile) -> Option<f64> {
    let n = u128::from(sent.max(sorted.len() as u64));
    if n == 0 {
        return None;
    }
    let rank = (u128::from(q.num) * n).div_ceil(u128::from(q.den.max(1)));
    let rank = rank.clamp(1, n);
    if rank > sorted.len() as u128 {
        return None;
    }
    // 1 <= rank <= sorted.len(): the rank-th delivered latency.
    sorted.get(rank as usize - 1).map(|&us| us as f64 / 1e3)
}

/// The deadline summary of a run: one row per protocol and class with a deadline, in the
/// order of `results.runs`. Empty when no message carries a deadline.
pub fn deadline_rows(results: &Results, samples: &Samples) -> Vec<DeadlineRow> {
    results
        .class_runs()
        .filter_map(|r| {
            let deadline_ms = r.deadline_ms?;
            let miss_rate = r.deadline_miss_rate?;
            let class = r.class.clone()?;
            let lat: &[u64] = samples
                .get(&r.key, Some(&class))
                .map_or(&[], |s| s.latencies_us.as_slice());
            let sent = r.messages.sent;
            Some(DeadlineRow {
                key: r.key.clone(),
                model: r.model,
                class,
                deadline_ms,
                sent,
                delivered: r.messages.delivered,
                p95_ms: quantile_all(lat, sent, P95),
                p99_ms: quantile_all(lat, sent, Quantile::P99),
                p999_ms: quantile_all(lat, sent, Quantile::P999),
                miss_rate,
                redundancy: r.redundancy,
                wire_bytes: r.wire.bytes,
            })
        })
        .collect()
}

/// Column headers of the deadline summary.
pub(crate) const DEADLINE_HEADERS: [&str; 10] = [
    "protocol",
    "class",
    "deadline ms",
    "sent/delivered",
    "p95 ms",
    "p99 ms",
    "p99.9 ms",
    "deadline miss",
    "redundancy",
    "wire kB",
];

/// The cells of one row, aligned with [`DEADLINE_HEADERS`].
pub(crate) fn deadline_cells(r: &DeadlineRow) -> Vec<String> {
    let p = |v: Option<f64>| v.map_or_else(|| "lost".to_owned(), |v| format!("{v:.1}"));
    vec![
        display_protocol(&r.key, r.model),
        r.class.clone(),
        format!("{}", r.deadline_ms),
        format!("{}/{}", r.sent, r.delivered),
        p(r.p95_ms),
        p(r.p99_ms),
        p(r.p999_ms),
        format!("{:.3}%", r.miss_rate * 100.0),
        format!("{:.2}%", r.redundancy * 100.0),
        format!("{:.1}", r.wire_bytes as f64 / 1000.0),
    ]
}

/// The explanation printed under the deadline summary.
pub(crate) const DEADLINE_NOTE: &str =
    "Deadline summary: percentiles over all messages of the class, an undelivered message \
     counting as infinitely late ('lost'); deadline miss = late or undelivered; redundancy = \
     payload bytes sent (retransmissions and parity included) / unique payload - 1, per \
     protocol.";

/// The deadline summary as a plain-text table (empty string without deadline rows).
pub fn deadline_table(rows: &[DeadlineRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let cells: Vec<Vec<String>> = rows.iter().map(deadline_cells).collect();
    let mut widths: Vec<usize> = DEADLINE_HEADERS.iter().map(|h| h.len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (i, (c, &w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i < 2 {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(&DEADLINE_HEADERS);
    let total = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    out.push_str(&"-".repeat(total));
    out.push('\n');
    for row in &cells {
        let r: Vec<&str> = row.iter().map(String::as_str).collect();
        out.push_str(&line(&r));
    }
    out.push_str(DEADLINE_NOTE);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undelivered_messages_count_as_infinitely_late() {
        // 1000 sent, 998 delivered with latencies 1..=998 ms.
        let lat: Vec<u64> = (1..=998).map(|v| v * 1000).collect();
        assert_eq!(quantile_all(&lat, 1000, P95), Some(950.0));
        assert_eq!(quantile_all(&lat, 1000, Quantile::P99), Some(990.0));
        // rank 999 falls on an undelivered message
        assert_eq!(quantile_all(&lat, 1000, Quantile::P999), None);
        // all delivered: the plain nearest rank
        let all: Vec<u64> = (1..=1000).map(|v| v * 1000).collect();
        assert_eq!(quantile_all(&all, 1000, Quantile::P999), Some(999.0));
        assert_eq!(quantile_all(&[], 0, P95), None);
        assert_eq!(quantile_all(&[], 3, P95), None);
    }
}
