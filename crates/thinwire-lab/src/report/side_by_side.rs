//! The simulator-versus-emulator section: each simulated protocol paired with
//! the real peer that implements it, in a table and in one tail figure.

use std::fmt::Write as _;

use thinwire_report::escape;
use thinwire_report::html::{badge, figure};

use super::figures::{panels, plots_num, Labels};
use super::plots;
use crate::metrics::{compare, Comparison, Results, RunKey, RunResult, Samples, DISAGREE_AT_P99};

/// The section comparing the emulated run (`emu`) with the simulated one (`sim`).
pub(super) fn side_by_side_section(
    html: &mut String,
    emu: (&Results, &Samples),
    sim: (&Results, &Samples),
) {
    let cmp = compare(sim.0, emu.0);
    html.push_str("<h2 id=\"sim-vs-emu\">Simulator and emulator side by side</h2>\n");
    let _ = writeln!(
        html,
        "<p class=\"note\">The same scenario (workload, seed, link models) run by the \
         deterministic simulator and by the real-kernel emulator. Each simulated protocol is \
         paired with the real peer that implements it: every thinwire configuration with \
         itself over real UDP sockets, the TCP model with kernel TCP. Cells read \
         <b>simulator / emulator</b>; rows where p99 differs by more than {:.0}% are marked \
         <b>DISAGREE</b>: there the model and the real stack behave differently, and the \
         emulator is the one to believe.</p>",
        DISAGREE_AT_P99 * 100.0
    );
    if cmp.rows.is_empty() {
        html.push_str("<p class=\"note\">No protocol ran in both engines.</p>\n");
        return;
    }
    comparison_table(html, &cmp);
    both_engines_figure(html, &cmp, emu, sim);
}

/// One row per pair: latencies and wire bytes of both engines.
fn comparison_table(html: &mut String, cmp: &Comparison) {
    html.push_str(
        "<div class=\"wide\"><table class=\"sim-emu\">\n<tr><th>simulator</th><th>emulator</th>\
         <th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>wire bytes</th>\
         <th>p99 emu vs sim</th></tr>\n",
    );
    let pair = |a: f64, b: f64| format!("{} / {}", plots_num(a), plots_num(b));
    for r in &cmp.rows {
        let (a, b) = (&r.sim_latency_ms, &r.emu_latency_ms);
        let diff = match r.p99_rel_diff {
            Some(d) => format!("{:+.0}%", d * 100.0),
            None => "n/a".to_owned(),
        };
        let flag = if r.disagree {
            format!(" {}", badge("DISAGREE"))
        } else {
            String::new()
        };
        let _ = writeln!(
            html,
            "<tr><td class=\"proto\">{}</td><td class=\"proto\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{} / {}</td><td class=\"num\">{diff}{flag}</td></tr>",
            escape(&r.sim.to_string()),
            escape(&r.emu.to_string()),
            pair(a.p50, b.p50),
            pair(a.p99, b.p99),
            pair(a.p999, b.p999),
            pair(a.max, b.max),
            r.sim_wire_bytes,
            r.emu_wire_bytes,
        );
    }
    html.push_str("</table></div>\n");
}

/// One figure with both engines: simulator runs dashed ("sim: ..."), real peers solid.
fn both_engines_figure(
    html: &mut String,
    cmp: &Comparison,
    emu: (&Results, &Samples),
    sim: (&Results, &Samples),
) {
    let mut runs = Vec::new();
    let mut series = Vec::new();
    let mut add =
        |prefix: &str, model: bool, (results, samples): (&Results, &Samples), key: &RunKey| {
            let Some(run) = results.protocol_runs().find(|r| r.key == *key) else {
                return;
            };
            let renamed = prefixed(prefix, key);
            if runs.iter().any(|r: &RunResult| r.key == renamed) {
                return;
            }
            let mut run = run.clone();
            run.key = renamed.clone();
            run.model = model;
            runs.push(run);
            if let Some(s) = samples.get(key, None) {
                let mut s = s.clone();
                s.key = renamed;
                s.model = model;
                series.push(s);
            }
        };
    for r in &cmp.rows {
        add("sim: ", true, sim, &r.sim);
        add("emu: ", false, emu, &r.emu);
    }
    let merged = Results {
        scenario: emu.0.scenario.clone(),
        engine: emu.0.engine,
        seed: emu.0.seed,
        runs,
    };
    let merged_samples = Samples::from_series(series);
    let labels = Labels::new(&merged);
    let panels = panels(&merged, &merged_samples, &labels);
    figure(
        html,
        "plot-sim-emu",
        plots::latency_tail(&panels),
        "The fraction of messages later than x (log scale) of each simulated protocol (dashed, \
         \"sim:\") and the real peer paired with it (solid, \"emu:\"), same scenario and seed. \
         Where a pair's curves part, the model and the real stack disagree.",
    );
}

/// `key` with `prefix` in front of its protocol, at the same sweep point, so
/// that the figure splits it by point like any other sweep.
fn prefixed(prefix: &str, key: &RunKey) -> RunKey {
    RunKey {
        protocol: format!("{prefix}{}", key.protocol),
        point: key.point.clone(),
    }
}
