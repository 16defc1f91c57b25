//! The report's text and table sections: header, parameters, summary,
//! game-satisfaction index, definitions.

use std::fmt::Write as _;

use thinwire_report::{escape, table};

use super::html::{protocol_cell, table_cells};
use crate::metrics::table::{single_class, summary_rows, GSI_HEADER, HEADERS, TEXT_COLUMNS};
use crate::metrics::{format_ratio, Engine, Results, SatisfactionRatios};

/// The title, the run's scenario, engine and seed, and a note on models.
pub(super) fn header(html: &mut String, results: &Results) {
    let _ = write!(
        html,
        "<h1>thinwire lab report</h1>\n\
         <p class=\"meta\">Scenario <b>{scenario}</b> · engine <b>{engine}</b> · seed <b>{seed}</b></p>\n",
        scenario = escape(&results.scenario),
        engine = results.engine,
        seed = results.seed,
    );
    if results.runs.iter().any(|r| r.model) {
        html.push_str(
            "<p class=\"note\">Protocols marked <span class=\"badge\">model</span> are models \
             of those protocols run inside the simulator, not real implementations.</p>\n",
        );
    }
}

/// The scenario's parameters as a two-column table.
pub(super) fn params_section(html: &mut String, params: &[(String, String)]) {
    html.push_str("<h2 id=\"parameters\">Scenario parameters</h2>\n");
    if params.is_empty() {
        html.push_str("<p class=\"note\">No parameters were given.</p>\n");
        return;
    }
    table::open(html, Some("params"));
    table::header(html, ["parameter", "value"]);
    for (k, v) in params {
        html.push_str("<tr>");
        table::cells(html, &[k.clone(), v.clone()], 2);
        html.push_str("</tr>\n");
    }
    table::close(html);
}

/// The summary table: one row per protocol and per class, as in the terminal.
pub(super) fn summary_section(html: &mut String, results: &Results, ratios: &SatisfactionRatios) {
    html.push_str("<h2 id=\"summary\">Summary</h2>\n");
    if results.runs.is_empty() {
        html.push_str("<p class=\"note\">No runs.</p>\n");
        return;
    }
    table::open(html, Some("summary"));
    table::header(html, HEADERS.into_iter().chain([GSI_HEADER]));
    let mut first_class = true;
    for row in summary_rows(results, ratios) {
        let class = if row.protocol_row {
            ""
        } else if first_class {
            first_class = false;
            " class=\"class-row first-class-row\""
        } else {
            " class=\"class-row\""
        };
        let _ = write!(html, "<tr{class}>");
        table_cells(
            html,
            &row.key.to_string(),
            row.model,
            &row.cells,
            TEXT_COLUMNS,
        );
        html.push_str("</tr>\n");
    }
    table::close(html);
    let _ = writeln!(
        html,
        "<p class=\"note\">Latencies in ms over delivered messages (nearest-rank percentiles); \
         sent/delivered counts all messages; deadline miss counts late and undelivered messages \
         that carry a deadline. Wire kB and redundancy are per protocol and shown on its \
         <i>all</i> row. GSI ratio: against <b>{}</b>, same class{}.{}</p>",
        escape(&baseline_name(ratios)),
        if results.is_sweep() {
            ", same sweep point"
        } else {
            ""
        },
        match single_class(results) {
            Some(c) => format!(
                " Every message is of class <i>{}</i>: per-class rows equal the protocol rows \
                 and are omitted.",
                escape(c)
            ),
            None => String::new(),
        }
    );
}

/// The game-satisfaction index per protocol, with its ratio to the baseline.
pub(super) fn gsi_section(html: &mut String, results: &Results, ratios: &SatisfactionRatios) {
    html.push_str("<h2 id=\"gsi\">Game-satisfaction index</h2>\n");
    let _ = writeln!(
        html,
        "<p class=\"note\">GSI = exp(−1.6·delay<sub>s</sub> − 9.2·jitter<sub>s</sub>), from the \
         survival model of player departure in K.-T. Chen, P. Huang, C.-L. Lei, “How sensitive \
         are online gamers to network quality?”, CACM 49(11), 2006, applied to the mean and the \
         standard deviation of message latency (all classes). A ratio r against the baseline \
         (<b>{}</b>) means players are predicted to leave at 1/r of the baseline's rate; only \
         ratios are meaningful.</p>",
        escape(&baseline_name(ratios))
    );
    html.push_str(
        "<table class=\"gsi\">\n<tr><th>protocol</th><th>mean ms</th><th>jitter ms</th>\
         <th>GSI</th><th>ratio to baseline</th></tr>\n",
    );
    for run in results.protocol_runs() {
        let s = ratios.get(&run.key, None);
        let delivered = run.messages.delivered > 0;
        let ms = |v: f64| {
            if delivered {
                format!("{v:.1}")
            } else {
                "-".to_owned()
            }
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            protocol_cell(&run.key.to_string(), run.model),
            ms(run.latency_ms.mean),
            ms(run.latency_ms.jitter),
            s.and_then(|s| s.gsi)
                .map_or_else(|| "-".to_owned(), |g| format!("{g:.4e}")),
            s.and_then(|s| s.ratio)
                .map_or_else(|| "-".to_owned(), format_ratio),
        );
    }
    html.push_str("</table>\n");
}

/// The GSI baseline as shown, `-` without one.
fn baseline_name(ratios: &SatisfactionRatios) -> String {
    ratios
        .baseline
        .as_ref()
        .map_or_else(|| "-".to_owned(), ToString::to_string)
}

/// What the numbers mean (with a note on real peers for emulated runs).
pub(super) fn definitions_section(html: &mut String, engine: Engine) {
    html.push_str(
        "<h2 id=\"definitions\">Definitions</h2>\n<dl>\n\
         <dt>Latency</dt><dd>From the sender's send call to delivery to the receiving \
         application, waits for ordering included; statistics are over delivered messages.</dd>\n\
         <dt>Jitter</dt><dd>Population standard deviation of the latencies.</dd>\n\
         <dt>Percentiles</dt><dd>Nearest rank on the exact sorted samples: the q-quantile of n \
         samples is the sample of rank ⌈q·n⌉, an observed latency.</dd>\n\
         <dt>Lost</dt><dd>Sent minus delivered.</dd>\n\
         <dt>Deadline miss rate</dt><dd>Messages with a deadline that were delivered later than \
         sent time + deadline, or never, over messages with a deadline.</dd>\n\
         <dt>Wire bytes and packets</dt><dd>Everything the protocol put on the wire, IPv4 + UDP \
         (28 bytes) or IPv4 + TCP (40 bytes) headers included.</dd>\n\
         <dt>Redundancy</dt><dd>Payload bytes sent (retransmissions, bundled copies and parity \
         included) divided by unique payload bytes, minus one; per protocol.</dd>\n\
         <dt>Model</dt><dd>A protocol simulated by the lab's own model, not a real \
         implementation.</dd>\n",
    );
    if engine == Engine::Emu {
        html.push_str(
            "<dt>Redundancy of real peers</dt><dd>Only thinwire counts the payload bytes it \
             sends (retransmissions, bundled copies, parity). For kernel TCP, KCP, QUIC and ENet \
             the lab sees only what the application wrote, so their redundancy reads 0; their \
             retransmissions are in their wire bytes, and the stacks' own counters (kernel TCP: \
             segments retransmitted, loss probes, timeouts; QUIC: packets and bytes lost) are \
             listed as <i>measured</i> in the scenario parameters.</dd>\n",
        );
    }
    html.push_str("</dl>\n");
}
