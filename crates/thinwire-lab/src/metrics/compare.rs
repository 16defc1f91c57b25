//! Simulator and emulator results of one scenario side by side
//! (`thinwire lab run SCENARIO --emulate --compare-sim`).
//!
//! Rows pair a simulator protocol with the real peer that implements it:
//! every thinwire configuration with itself, `tcp-model` with `tcp-nodelay`
//! and with `tcp-thin-linear`. Only whole-protocol rows (`class: None`) are
//! compared; sweep points are paired by their label.

use serde::Serialize;

use super::{LatencyMs, Results, RunKey};

/// Relative difference at p99 above which a row is flagged.
pub const DISAGREE_AT_P99: f64 = 0.20;

/// One simulator/emulator pair.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// Simulator run: protocol and sweep point.
    pub sim: RunKey,
    /// Emulator run: real peer and sweep point.
    pub emu: RunKey,
    /// Simulator latency (ms).
    pub sim_latency_ms: LatencyMs,
    /// Emulator latency (ms).
    pub emu_latency_ms: LatencyMs,
    /// Simulator wire bytes.
    pub sim_wire_bytes: u64,
    /// Emulator wire bytes.
    pub emu_wire_bytes: u64,
    /// `(emu p99 - sim p99) / sim p99` (`None` when the simulator's p99 is 0).
    pub p99_rel_diff: Option<f64>,
    /// `|p99_rel_diff| >` [`DISAGREE_AT_P99`].
    pub disagree: bool,
}

/// The comparison of one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Scenario name.
    pub scenario: String,
    /// Pairs found in both result sets.
    pub rows: Vec<CompareRow>,
}

/// The real peers that implement a simulator protocol.
fn emu_names(sim: &str) -> Vec<&str> {
    match sim {
        "tcp-model" => vec!["tcp-nodelay", "tcp-thin-linear"],
        "udp-model" => Vec::new(),
        other => vec![other],
    }
}

/// Pairs the whole-protocol rows of `sim` and `emu`.
pub fn compare(sim: &Results, emu: &Results) -> Comparison {
    let mut rows = Vec::new();
    for s in sim.protocol_runs() {
        for cand in emu_names(&s.key.protocol) {
            let Some(e) = emu
                .protocol_runs()
                .find(|e| e.key.protocol == cand && e.key.point == s.key.point)
            else {
                continue;
            };
            let (sp, ep) = (s.latency_ms.p99, e.latency_ms.p99);
            let rel = (sp > 0.0).then(|| (ep - sp) / sp);
            rows.push(CompareRow {
                sim: s.key.clone(),
                emu: e.key.clone(),
                sim_latency_ms: s.latency_ms,
                emu_latency_ms: e.latency_ms,
                sim_wire_bytes: s.wire.bytes,
                emu_wire_bytes: e.wire.bytes,
                p99_rel_diff: rel,
                disagree: rel.is_none_or(|r| r.abs() > DISAGREE_AT_P99),
            });
        }
    }
    Comparison {
        scenario: sim.scenario.clone(),
        rows,
    }
}

impl Comparison {
    /// A plain-text table (`sim/emu` per cell, latencies in ms).
    pub fn to_text(&self) -> String {
        let head = [
            "sim",
            "emu",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "wire bytes",
            "p99 diff",
        ];
        let mut cells: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
        let pair = |a: f64, b: f64| format!("{a:.1}/{b:.1}");
        for r in &self.rows {
            let (s, e) = (&r.sim_latency_ms, &r.emu_latency_ms);
            cells.push(vec![
                r.sim.to_string(),
                r.emu.to_string(),
                pair(s.p50, e.p50),
                pair(s.p99, e.p99),
                pair(s.p999, e.p999),
                pair(s.max, e.max),
                format!("{}/{}", r.sim_wire_bytes, r.emu_wire_bytes),
                match (r.p99_rel_diff, r.disagree) {
                    (Some(d), true) => format!("{:+.0}% DISAGREE", d * 100.0),
                    (Some(d), false) => format!("{:+.0}%", d * 100.0),
                    (None, _) => "n/a DISAGREE".into(),
                },
            ]);
        }
        let widths: Vec<usize> = (0..head.len())
            .map(|i| cells.iter().map(|r| r[i].len()).max().unwrap_or(0))
            .collect();
        let mut out = format!(
            "scenario {}: simulator/emulator (cells sim/emu; DISAGREE: p99 differs by more than {:.0}%)\n",
            self.scenario,
            DISAGREE_AT_P99 * 100.0
        );
        for row in &cells {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out
    }

    /// Pretty JSON.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_pair_across_engines() {
        assert_eq!(emu_names("tcp-model"), ["tcp-nodelay", "tcp-thin-linear"]);
        assert_eq!(emu_names("thinwire-fec+2"), ["thinwire-fec+2"]);
        assert!(emu_names("udp-model").is_empty());
    }
}
