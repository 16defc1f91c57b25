//! The report's figures and the tables that go with them. The protocols of a
//! run become [`Panel`]s (one per sweep point) with one color per protocol.

use std::fmt::Write as _;

use thinwire_report::html::figure;
use thinwire_report::plot::style::{css_color, series_color};
use thinwire_report::{escape, table};

use super::html::{protocol_cell, table_cells};
use super::plots::{self, BarGroup, BarValue, GroupedBars, Panel, ProtocolPlot};
use crate::metrics::{
    deadline_cells, deadline_rows, display_protocol, Results, RunResult, Samples, DEADLINE_HEADERS,
    DEADLINE_NOTE,
};

/// Display labels of the protocols (all-classes rows, in order) and how to draw them.
pub(super) struct Labels {
    /// Full display names.
    full: Vec<String>,
    /// Legend names: without the sweep point in a sweep.
    legend: Vec<String>,
    /// Sweep point per protocol, when the figures are split by sweep point.
    points: Vec<Option<String>>,
    /// Distinct sweep points in order (empty when not a sweep).
    sweep: Vec<String>,
    /// Color index per protocol (one per distinct legend name).
    color: Vec<usize>,
}

impl Labels {
    pub(super) fn new(results: &Results) -> Labels {
        let runs: Vec<&RunResult> = results.protocol_runs().collect();
        let mut sweep: Vec<String> = Vec::new();
        for pt in runs.iter().filter_map(|r| r.key.point.as_ref()) {
            if !sweep.contains(pt) {
                sweep.push(pt.clone());
            }
        }
        let is_sweep = sweep.len() > 1 && runs.iter().all(|r| r.key.point.is_some());
        if !is_sweep {
            sweep.clear();
        }
        let full: Vec<String> = runs.iter().map(|r| r.display_protocol()).collect();
        let legend: Vec<String> = if is_sweep {
            runs.iter()
                .map(|r| display_protocol(&r.key.protocol, r.model))
                .collect()
        } else {
            full.clone()
        };
        let mut distinct: Vec<&str> = Vec::new();
        let color = legend
            .iter()
            .map(|l| match distinct.iter().position(|d| *d == l) {
                Some(i) => i,
                None => {
                    distinct.push(l);
                    distinct.len() - 1
                }
            })
            .collect();
        let points = runs
            .iter()
            .map(|r| r.key.point.clone().filter(|_| is_sweep))
            .collect();
        Labels {
            full,
            legend,
            points,
            sweep,
            color,
        }
    }
}

/// The panels of the figures: one per sweep point, or a single one.
pub(super) fn panels<'a>(
    results: &'a Results,
    samples: &'a Samples,
    labels: &'a Labels,
) -> Vec<Panel<'a>> {
    let protos: Vec<ProtocolPlot<'a>> = results
        .protocol_runs()
        .enumerate()
        .map(|(i, run)| ProtocolPlot {
            label: &labels.legend[i],
            full_label: &labels.full[i],
            point: labels.points[i].as_deref(),
            color: series_color(labels.color[i]),
            run,
            samples: samples.get(&run.key, None),
        })
        .collect();
    if labels.sweep.is_empty() {
        return vec![Panel::single(protos)];
    }
    labels
        .sweep
        .iter()
        .map(|pt| Panel {
            title: Some(pt.clone()),
            items: protos
                .iter()
                .filter(|p| p.point == Some(pt.as_str()))
                .copied()
                .collect(),
        })
        .collect()
}

/// The figure sections: latency distribution, tail versus redundancy, per
/// class, deadlines, bytes on the wire.
pub(super) fn figure_sections(html: &mut String, results: &Results, samples: &Samples) {
    let labels = Labels::new(results);
    let panels = panels(results, samples, &labels);
    let sweep_note = if labels.sweep.is_empty() {
        ""
    } else {
        " One panel per sweep point; all panels share their axes."
    };
    latency_section(html, &panels, sweep_note);
    cost_section(html, &panels, !labels.sweep.is_empty());
    classes_section(html, results, &panels, sweep_note);
    deadlines_section(html, results, &panels, sweep_note);
    deadline_summary_table(html, results, samples);
    html.push_str("<h2 id=\"wire\">Bytes on the wire</h2>\n");
    figure(
        html,
        "plot-wire",
        plots::wire_bytes(&panels),
        "Bytes and packets on the wire per protocol, IP and transport headers included.",
    );
    wire_table(html, &panels);
}

/// The latency tail (the lead figure: where protocols differ) and the CDF (the body).
fn latency_section(html: &mut String, panels: &[Panel<'_>], sweep_note: &str) {
    html.push_str("<h2 id=\"latency\">Latency distribution</h2>\n");
    figure(
        html,
        "plot-tail",
        plots::latency_tail(panels),
        &format!(
            "The tail: per protocol, the fraction of messages (all classes, delivered ones) \
             later than x, on a log scale that gives each decade the same height, down to the \
             smallest fraction the samples can show (one message in N). Where a curve crosses \
             the p99 line (1 message in 100 later) is that protocol's p99, the p99.9 line its \
             p99.9, and so on. A curve ends with a drop at its largest latency. Models are \
             dashed.{sweep_note}"
        ),
    );
    figure(
        html,
        "plot-cdf",
        plots::latency_cdf(panels),
        &format!(
            "The body: empirical CDF of message latency per protocol, all classes, over \
             delivered messages (the fraction delivered by x), linear axes. The x axis ends \
             just past the largest p99; the tail beyond is in the figure above. Models are \
             dashed.{sweep_note}"
        ),
    );
}

/// p99.9 latency against redundancy.
fn cost_section(html: &mut String, panels: &[Panel<'_>], sweep: bool) {
    html.push_str("<h2 id=\"cost\">Tail latency versus redundancy</h2>\n");
    figure(
        html,
        "plot-redundancy",
        plots::tail_vs_redundancy(panels),
        &format!(
            "One point per protocol: p99.9 latency (all classes) against redundancy (payload \
             bytes sent, counting retransmissions, bundled copies and parity, over unique \
             payload bytes, minus one). Lower left is better.{}",
            if sweep {
                " Points are labelled with their sweep point; a protocol's points are joined \
                 in sweep order."
            } else {
                ""
            }
        ),
    );
}

/// p99 and p99.9 per message class.
fn classes_section(html: &mut String, results: &Results, panels: &[Panel<'_>], sweep_note: &str) {
    html.push_str("<h2 id=\"classes\">Per message class</h2>\n");
    let classes = results.classes();
    let class_groups: Vec<Vec<BarGroup>> = panels
        .iter()
        .map(|panel| {
            classes
                .iter()
                .map(|c| BarGroup {
                    label: (*c).to_owned(),
                    values: panel
                        .items
                        .iter()
                        .map(|p| {
                            results
                                .run(&p.run.key, Some(c))
                                .filter(|r| r.messages.delivered > 0)
                                .map(|r| BarValue {
                                    main: r.latency_ms.p99,
                                    behind: Some(r.latency_ms.p999),
                                    whisker: None,
                                })
                        })
                        .collect(),
                })
                .collect()
        })
        .collect();
    let fmt_ms = |v: f64| plots_num(v);
    figure(
        html,
        "plot-classes",
        plots::grouped_bars(
            &GroupedBars {
                title: "Tail latency per message class",
                y_desc: "latency (ms)",
                x_desc: "message class",
                groups: &class_groups,
                layer_names: Some(("p99 (solid)", "p99.9 (light)")),
                fmt: &fmt_ms,
                value_labels: true,
            },
            panels,
        ),
        &format!(
            "Per class and protocol: p99 latency (solid bar) and p99.9 latency (light bar \
             behind it; labels read p99 / p99.9 where they fit), over delivered messages. A \
             missing bar means the protocol delivered no message of that class.{sweep_note}"
        ),
    );
}

/// Deadline miss rates, when some message carries a deadline.
fn deadlines_section(html: &mut String, results: &Results, panels: &[Panel<'_>], sweep_note: &str) {
    html.push_str("<h2 id=\"deadlines\">Deadlines</h2>\n");
    let deadline_groups: Vec<Vec<BarGroup>> = panels
        .iter()
        .map(|panel| deadline_groups(results, &panel.items))
        .collect();
    if deadline_groups.iter().all(Vec::is_empty) {
        html.push_str("<p class=\"note\">No message in this scenario carries a deadline.</p>\n");
        return;
    }
    let fmt_pct = |v: f64| plots_pct(v);
    figure(
        html,
        "plot-deadline",
        plots::grouped_bars(
            &GroupedBars {
                title: "Deadline miss rate",
                y_desc: "missed deadlines (%)",
                x_desc: "message class (deadline)",
                groups: &deadline_groups,
                layer_names: None,
                fmt: &fmt_pct,
                value_labels: true,
            },
            panels,
        ),
        &format!(
            "Share of deadline-carrying messages delivered after their deadline or never \
             delivered, per protocol and class.{sweep_note}"
        ),
    );
}

/// Tick/label formatter for ms values.
pub(super) fn plots_num(v: f64) -> String {
    if v == 0.0 {
        "0".to_owned()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    } else {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    }
}

/// Tick/label formatter for percentages (the value is already in percent).
fn plots_pct(v: f64) -> String {
    format!("{}%", plots_num(v))
}

/// Bar groups of the deadline plot: one per class that has a deadline (labelled with it),
/// plus "all classes" when more than one class has one. Values in percent.
fn deadline_groups(results: &Results, protos: &[ProtocolPlot<'_>]) -> Vec<BarGroup> {
    let mut groups = Vec::new();
    let classes: Vec<&str> = results
        .classes()
        .into_iter()
        .filter(|c| {
            results
                .class_runs()
                .any(|r| r.class.as_deref() == Some(*c) && r.deadline_miss_rate.is_some())
        })
        .collect();
    let bar = |r: Option<&RunResult>| {
        r.and_then(|r| r.deadline_miss_rate).map(|m| BarValue {
            main: m * 100.0,
            behind: None,
            whisker: None,
        })
    };
    for c in &classes {
        let deadline = results
            .class_runs()
            .filter(|r| r.class.as_deref() == Some(*c))
            .find_map(|r| r.deadline_ms);
        let label = match deadline {
            Some(d) => format!("{c} (≤ {} ms)", plots_num(d)),
            None => (*c).to_owned(),
        };
        groups.push(BarGroup {
            label,
            values: protos
                .iter()
                .map(|p| bar(results.run(&p.run.key, Some(c))))
                .collect(),
        });
    }
    if classes.len() > 1 {
        groups.push(BarGroup {
            label: "all classes".to_owned(),
            values: protos.iter().map(|p| bar(Some(p.run))).collect(),
        });
    }
    groups
}

/// The deadline summary (p95 / p99 / p99.9 over all messages, miss rate, redundancy, wire
/// bytes) as `<table class="summary deadline-summary">`; nothing without deadlines.
fn deadline_summary_table(html: &mut String, results: &Results, samples: &Samples) {
    let rows = deadline_rows(results, samples);
    if rows.is_empty() {
        return;
    }
    table::open(html, Some("summary deadline-summary"));
    table::header(html, DEADLINE_HEADERS);
    for r in &rows {
        html.push_str("<tr>");
        table_cells(html, &r.key.to_string(), r.model, &deadline_cells(r), 2);
        html.push_str("</tr>\n");
    }
    table::close(html);
    let _ = writeln!(html, "<p class=\"note\">{}</p>", escape(DEADLINE_NOTE));
}

/// The wire counters per protocol, with each protocol's color.
fn wire_table(html: &mut String, panels: &[Panel<'_>]) {
    let protos: Vec<&ProtocolPlot<'_>> = panels.iter().flat_map(|p| p.items.iter()).collect();
    if protos.is_empty() {
        return;
    }
    html.push_str(
        "<table class=\"wire\">\n<tr><th>protocol</th><th>packets</th><th>wire bytes</th>\
         <th>unique payload bytes</th><th>redundancy</th><th>wire bytes per delivered message</th></tr>\n",
    );
    for p in &protos {
        let r = p.run;
        let per_msg = if r.messages.delivered > 0 {
            format!("{:.1}", r.wire.bytes as f64 / r.messages.delivered as f64)
        } else {
            "-".to_owned()
        };
        let _ = writeln!(
            html,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{:.3}</td><td class=\"num\">{}</td></tr>",
            css_color(p.color),
            protocol_cell(&r.key.to_string(), r.model),
            r.wire.packets,
            r.wire.bytes,
            r.payload_bytes,
            r.redundancy,
            per_msg,
        );
    }
    html.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_labels() {
        assert_eq!(plots_num(250.0), "250");
        assert_eq!(plots_num(12.5), "12.5");
        assert_eq!(plots_num(0.25), "0.25");
        assert_eq!(plots_pct(3.0), "3%");
    }
}
