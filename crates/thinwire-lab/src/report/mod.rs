//! The self-contained HTML report (`report.html`) of a lab run.
//!
//! The report is one HTML file with inline CSS and inline SVG plots (drawn with plotters'
//! SVG backend); it fetches nothing and needs no script. It shows the scenario's name,
//! engine, seed and parameters; the summary table (as in the terminal, models labelled);
//! the game-satisfaction index per protocol; and these figures, each in a
//! `<figure id="...">` holding one `<svg>`:
//!
//! * `plot-cdf`: latency CDF per protocol (all classes), linear axes;
//! * `plot-tail`: the complementary CDF on a log scale down to 1e-4 (p99 / p99.9 tail);
//! * `plot-redundancy`: p99.9 latency versus redundancy, one labelled point per protocol;
//! * `plot-classes`: p99 and p99.9 per message class and protocol (grouped bars);
//! * `plot-deadline`: deadline miss rate per protocol and class, present only when some
//!   message carries a deadline, followed by the deadline summary table (p95 / p99 / p99.9
//!   over all messages, miss rate, redundancy, wire bytes; see
//!   [`crate::metrics::deadline_rows`]);
//! * `plot-wire`: bytes on the wire per protocol (with a table of the counters).
//!
//! Output is deterministic: the same inputs give the same string.

mod plots;

use std::fmt::Write as _;
use std::path::Path;

use crate::metrics::{
    display_protocol, split_sweep_label, sweep_name, MetricsError, Results, RunResult, Samples,
    SatisfactionRatios,
};

use plots::{BarGroup, BarValue, GroupedBars, Panel, ProtocolPlot};

/// Renders the report and writes it to `path` (creating the parent directory if needed).
pub fn write_report(
    path: &Path,
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)?;
        }
    }
    std::fs::write(path, render_report(results, samples, scenario_params))
}

/// The report's HTML, with GSI ratios against the first protocol.
pub fn render_report(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
) -> String {
    // With no named baseline there is nothing that can fail.
    render_report_with_baseline(results, samples, scenario_params, None).unwrap_or_default()
}

/// [`render_report`] with GSI ratios against `baseline` (`None`: the first protocol).
/// Errors if `baseline` names a protocol without a run.
pub fn render_report_with_baseline(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
    baseline: Option<&str>,
) -> Result<String, MetricsError> {
    render(results, samples, scenario_params, baseline, None)
}

/// The report of an emulated run (`results`, `samples`) with a section that
/// puts the simulator's results for the same scenario (`sim`, `sim_samples`)
/// beside it: a table pairing each simulated protocol with the real peer that
/// implements it (see [`crate::metrics::compare`]), rows where the two engines
/// disagree at p99 flagged, and the tail of every pair in one figure
/// (`plot-sim-emu`).
pub fn render_report_side_by_side(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
    sim: &Results,
    sim_samples: &Samples,
) -> String {
    render(
        results,
        samples,
        scenario_params,
        None,
        Some((sim, sim_samples)),
    )
    .unwrap_or_default()
}

fn render(
    results: &Results,
    samples: &Samples,
    scenario_params: &[(String, String)],
    baseline: Option<&str>,
    sim: Option<(&Results, &Samples)>,
) -> Result<String, MetricsError> {
    let ratios = results.satisfaction_ratios(baseline)?;
    let mut html = String::with_capacity(256 * 1024);
    head(&mut html, results);
    params_section(&mut html, scenario_params);
    summary_section(&mut html, results, &ratios);
    gsi_section(&mut html, results, &ratios);
    plots_sections(&mut html, results, samples);
    if let Some((sim, sim_samples)) = sim {
        side_by_side_section(&mut html, results, samples, sim, sim_samples);
    }
    definitions_section(&mut html, results.engine);
    html.push_str("</main>\n</body>\n</html>\n");
    Ok(html)
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0; background: #f6f7f9; color: #1d2433; line-height: 1.45; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 24px 64px; background: #fff; }
h1 { margin: 0 0 4px; font-size: 28px; }
h2 { margin: 36px 0 10px; font-size: 21px; border-bottom: 1px solid #dde1e8; padding-bottom: 4px; }
.meta { color: #4a5468; margin: 0 0 8px; }
.meta b { color: #1d2433; }
.note { color: #4a5468; font-size: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #dde1e8; padding: 3px 6px; }
td.proto { white-space: nowrap; }
th { background: #eef1f5; text-align: left; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.class-row td { color: #3a4356; background: #fbfcfd; }
tr.first-class-row td { border-top: 2px solid #b8c0cc; }
.badge { display: inline-block; font-size: 11px; padding: 0 5px; margin-left: 4px; border-radius: 3px;
         background: #fff1d6; color: #7a4b00; border: 1px solid #e9c77d; vertical-align: 1px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
.wide { overflow-x: auto; }
figure { margin: 16px 0 28px; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid #e4e7ec; }
figcaption { font-size: 14px; color: #4a5468; margin-top: 6px; }
.error { color: #a00; }
dl dt { font-weight: 600; margin-top: 8px; }
dl dd { margin-left: 18px; }
"#;

fn head(html: &mut String, results: &Results) {
    let scenario = escape(&results.scenario);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>thinwire lab report: {scenario}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n\
         <h1>thinwire lab report</h1>\n\
         <p class=\"meta\">Scenario <b>{scenario}</b> · engine <b>{engine}</b> · seed <b>{seed}</b></p>\n",
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

fn params_section(html: &mut String, params: &[(String, String)]) {
    html.push_str("<h2 id=\"parameters\">Scenario parameters</h2>\n");
    if params.is_empty() {
        html.push_str("<p class=\"note\">No parameters were given.</p>\n");
        return;
    }
    html.push_str(
        "<div class=\"wide\"><table class=\"params\">\n<tr><th>parameter</th><th>value</th></tr>\n",
    );
    for (k, v) in params {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td></tr>",
            escape(k),
            escape(v)
        );
    }
    html.push_str("</table></div>\n");
}

/// The protocol cell: name, with a "model" badge for models.
fn protocol_cell(name: &str, model: bool) -> String {
    if model {
        format!("{} <span class=\"badge\">model</span>", escape(name))
    } else {
        escape(name)
    }
}

/// The `<td>`s of one table row: the first cell is the protocol (shown as
/// `name` with its model badge), the rest of the first `text_columns` cells
/// are text and the others numbers.
fn table_cells(html: &mut String, name: &str, model: bool, cells: &[String], text_columns: usize) {
    for (i, cell) in cells.iter().enumerate() {
        if i == 0 {
            let _ = write!(
                html,
                "<td class=\"proto\">{}</td>",
                protocol_cell(name, model)
            );
        } else if i < text_columns {
            let _ = write!(html, "<td>{}</td>", escape(cell));
        } else {
            let _ = write!(html, "<td class=\"num\">{}</td>", escape(cell));
        }
    }
}

fn summary_section(html: &mut String, results: &Results, ratios: &SatisfactionRatios) {
    use crate::metrics::table::{single_class, summary_rows, GSI_HEADER, HEADERS, TEXT_COLUMNS};
    html.push_str("<h2 id=\"summary\">Summary</h2>\n");
    if results.runs.is_empty() {
        html.push_str("<p class=\"note\">No runs.</p>\n");
        return;
    }
    html.push_str("<div class=\"wide\"><table class=\"summary\">\n<tr>");
    for h in HEADERS.iter().chain(std::iter::once(&GSI_HEADER)) {
        let _ = write!(html, "<th>{}</th>", escape(h));
    }
    html.push_str("</tr>\n");
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
        table_cells(html, &row.protocol, row.model, &row.cells, TEXT_COLUMNS);
        html.push_str("</tr>\n");
    }
    html.push_str("</table></div>\n");
    let _ = writeln!(
        html,
        "<p class=\"note\">Latencies in ms over delivered messages (nearest-rank percentiles); \
         sent/delivered counts all messages; deadline miss counts late and undelivered messages \
         that carry a deadline. Wire kB and redundancy are per protocol and shown on its \
         <i>all</i> row. GSI ratio: against <b>{}</b>, same class{}.{}</p>",
        escape(ratios.baseline.as_deref().unwrap_or("-")),
        if crate::metrics::table::is_sweep(results) {
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

fn gsi_section(html: &mut String, results: &Results, ratios: &SatisfactionRatios) {
    html.push_str("<h2 id=\"gsi\">Game-satisfaction index</h2>\n");
    let _ = writeln!(
        html,
        "<p class=\"note\">GSI = exp(−1.6·delay<sub>s</sub> − 9.2·jitter<sub>s</sub>), from the \
         survival model of player departure in K.-T. Chen, P. Huang, C.-L. Lei, “How sensitive \
         are online gamers to network quality?”, CACM 49(11), 2006, applied to the mean and the \
         standard deviation of message latency (all classes). A ratio r against the baseline \
         (<b>{}</b>) means players are predicted to leave at 1/r of the baseline's rate; only \
         ratios are meaningful.</p>",
        escape(ratios.baseline.as_deref().unwrap_or("-"))
    );
    html.push_str(
        "<table class=\"gsi\">\n<tr><th>protocol</th><th>mean ms</th><th>jitter ms</th>\
         <th>GSI</th><th>ratio to baseline</th></tr>\n",
    );
    for run in results.protocol_runs() {
        let s = ratios.get(&run.protocol, None);
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
            protocol_cell(&run.protocol, run.model),
            ms(run.latency_ms.mean),
            ms(run.latency_ms.jitter),
            s.and_then(|s| s.gsi)
                .map_or_else(|| "-".to_owned(), |g| format!("{g:.4e}")),
            s.and_then(|s| s.ratio)
                .map_or_else(|| "-".to_owned(), crate::metrics::format_ratio),
        );
    }
    html.push_str("</table>\n");
}

/// Appends a figure (or the error instead of it) with a caption.
fn figure(html: &mut String, id: &str, svg: Result<String, String>, caption: &str) {
    let _ = writeln!(html, "<figure id=\"{id}\">");
    match svg {
        Ok(svg) => {
            // plotters emits a bare <svg> element; keep only from it on, in case a backend
            // version adds an XML declaration.
            let start = svg.find("<svg").unwrap_or(0);
            html.push_str(svg[start..].trim_end());
            html.push('\n');
        }
        Err(e) => {
            let _ = writeln!(html, "<p class=\"error\">{}</p>", escape(&e));
        }
    }
    let _ = writeln!(html, "<figcaption>{caption}</figcaption>\n</figure>");
}

/// Display labels of the protocols (all-classes rows, in order) and how to draw them.
struct Labels {
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
    fn new(results: &Results) -> Labels {
        let runs: Vec<&RunResult> = results.protocol_runs().collect();
        let split: Vec<(&str, Option<&str>)> = runs
            .iter()
            .map(|r| split_sweep_label(&r.protocol))
            .collect();
        let mut sweep: Vec<String> = Vec::new();
        for pt in split.iter().filter_map(|(_, p)| *p) {
            if !sweep.iter().any(|s| s == pt) {
                sweep.push(pt.to_owned());
            }
        }
        let is_sweep = sweep.len() > 1 && split.iter().all(|(_, p)| p.is_some());
        if !is_sweep {
            sweep.clear();
        }
        let full: Vec<String> = runs.iter().map(|r| r.display_protocol()).collect();
        let legend: Vec<String> = if is_sweep {
            runs.iter()
                .zip(&split)
                .map(|(r, (base, _))| display_protocol(base, r.model))
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
        let points = split
            .iter()
            .map(|(_, p)| if is_sweep { p.map(str::to_owned) } else { None })
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
fn panels<'a>(results: &'a Results, samples: &'a Samples, labels: &'a Labels) -> Vec<Panel<'a>> {
    let protos: Vec<ProtocolPlot<'a>> = results
        .protocol_runs()
        .enumerate()
        .map(|(i, run)| ProtocolPlot {
            label: &labels.legend[i],
            full_label: &labels.full[i],
            point: labels.points[i].as_deref(),
            color: plots::protocol_color(labels.color[i]),
            run,
            samples: samples.get(&run.protocol, None),
        })
        .collect();
    if labels.sweep.is_empty() {
        return vec![Panel {
            title: None,
            protos,
        }];
    }
    labels
        .sweep
        .iter()
        .map(|pt| Panel {
            title: Some(pt.clone()),
            protos: protos
                .iter()
                .filter(|p| p.point == Some(pt.as_str()))
                .copied()
                .collect(),
        })
        .collect()
}

fn plots_sections(html: &mut String, results: &Results, samples: &Samples) {
    let labels = Labels::new(results);
    let panels = panels(results, samples, &labels);
    let sweep_note = if labels.sweep.is_empty() {
        ""
    } else {
        " One panel per sweep point; all panels share their axes."
    };

    html.push_str("<h2 id=\"latency\">Latency distribution</h2>\n");
    figure(
        html,
        "plot-cdf",
        plots::latency_cdf(&panels),
        &format!(
            "Empirical CDF of message latency per protocol, all classes, over delivered \
             messages. The x axis ends just past the largest p99; the tail beyond is in the \
             next figure. Models are dashed.{sweep_note}"
        ),
    );
    figure(
        html,
        "plot-tail",
        plots::latency_tail(&panels),
        &format!(
            "Complementary CDF, P(latency &gt; x), on a log scale down to 10<sup>−4</sup>: \
             where a curve crosses the p99 (10<sup>−2</sup>) and p99.9 (10<sup>−3</sup>) lines \
             is that protocol's p99 and p99.9. A curve ends with a drop at its largest latency \
             (or where it falls below 10<sup>−4</sup>).{sweep_note}"
        ),
    );

    html.push_str("<h2 id=\"cost\">Tail latency versus redundancy</h2>\n");
    figure(
        html,
        "plot-redundancy",
        plots::tail_vs_redundancy(&panels),
        &format!(
            "One point per protocol: p99.9 latency (all classes) against redundancy (payload \
             bytes sent, counting retransmissions, bundled copies and parity, over unique \
             payload bytes, minus one). Lower left is better.{}",
            if labels.sweep.is_empty() {
                ""
            } else {
                " Points are labelled with their sweep point; a protocol's points are joined \
                 in sweep order."
            }
        ),
    );

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
                        .protos
                        .iter()
                        .map(|p| {
                            results
                                .run(&p.run.protocol, Some(c))
                                .filter(|r| r.messages.delivered > 0)
                                .map(|r| BarValue {
                                    main: r.latency_ms.p99,
                                    behind: Some(r.latency_ms.p999),
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
            &panels,
        ),
        &format!(
            "Per class and protocol: p99 latency (solid bar) and p99.9 latency (light bar \
             behind it; labels read p99 / p99.9 where they fit), over delivered messages. A \
             missing bar means the protocol delivered no message of that class.{sweep_note}"
        ),
    );

    html.push_str("<h2 id=\"deadlines\">Deadlines</h2>\n");
    let deadline_groups: Vec<Vec<BarGroup>> = panels
        .iter()
        .map(|panel| deadline_groups(results, &panel.protos))
        .collect();
    if deadline_groups.iter().all(Vec::is_empty) {
        html.push_str("<p class=\"note\">No message in this scenario carries a deadline.</p>\n");
    } else {
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
                &panels,
            ),
            &format!(
                "Share of deadline-carrying messages delivered after their deadline or never \
                 delivered, per protocol and class.{sweep_note}"
            ),
        );
    }

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

/// Tick/label formatter for ms values.
fn plots_num(v: f64) -> String {
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
                .map(|p| bar(results.run(&p.run.protocol, Some(c))))
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
    let rows = crate::metrics::deadline_rows(results, samples);
    if rows.is_empty() {
        return;
    }
    html.push_str("<div class=\"wide\"><table class=\"summary deadline-summary\">\n<tr>");
    for h in crate::metrics::DEADLINE_HEADERS {
        let _ = write!(html, "<th>{}</th>", escape(h));
    }
    html.push_str("</tr>\n");
    for r in &rows {
        html.push_str("<tr>");
        table_cells(
            html,
            &r.protocol,
            r.model,
            &crate::metrics::deadline_cells(r),
            2,
        );
        html.push_str("</tr>\n");
    }
    html.push_str("</table></div>\n");
    let _ = writeln!(
        html,
        "<p class=\"note\">{}</p>",
        escape(crate::metrics::DEADLINE_NOTE)
    );
}

fn wire_table(html: &mut String, panels: &[Panel<'_>]) {
    let protos: Vec<&ProtocolPlot<'_>> = panels.iter().flat_map(|p| p.protos.iter()).collect();
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
            plots::css_color(p.color),
            protocol_cell(&r.protocol, r.model),
            r.wire.packets,
            r.wire.bytes,
            r.payload_bytes,
            r.redundancy,
            per_msg,
        );
    }
    html.push_str("</table>\n");
}

/// `name` (or `name [point]`) with `prefix` in front of the base name, in the
/// lab's sweep-label form so that the figure splits it like any other sweep.
fn prefixed(prefix: &str, name: &str) -> String {
    let (base, point) = split_sweep_label(name);
    sweep_name(&format!("{prefix}{base}"), point.unwrap_or(""))
}

fn side_by_side_section(
    html: &mut String,
    emu: &Results,
    emu_samples: &Samples,
    sim: &Results,
    sim_samples: &Samples,
) {
    let cmp = crate::metrics::compare(sim, emu);
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
        crate::metrics::DISAGREE_AT_P99 * 100.0
    );
    if cmp.rows.is_empty() {
        html.push_str("<p class=\"note\">No protocol ran in both engines.</p>\n");
        return;
    }
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
            " <span class=\"badge\">DISAGREE</span>"
        } else {
            ""
        };
        let _ = writeln!(
            html,
            "<tr><td class=\"proto\">{}</td><td class=\"proto\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{} / {}</td><td class=\"num\">{diff}{flag}</td></tr>",
            escape(&r.sim),
            escape(&r.emu),
            pair(a.p50, b.p50),
            pair(a.p99, b.p99),
            pair(a.p999, b.p999),
            pair(a.max, b.max),
            r.sim_wire_bytes,
            r.emu_wire_bytes,
        );
    }
    html.push_str("</table></div>\n");

    // One figure with both engines: simulator runs dashed ("sim: ..."), real peers solid.
    let mut runs = Vec::new();
    let mut series = Vec::new();
    let mut add = |prefix: &str, model: bool, results: &Results, samples: &Samples, name: &str| {
        let Some(run) = results.protocol_runs().find(|r| r.protocol == name) else {
            return;
        };
        let renamed = prefixed(prefix, name);
        if runs.iter().any(|r: &RunResult| r.protocol == renamed) {
            return;
        }
        let mut run = run.clone();
        run.protocol = renamed.clone();
        run.model = model;
        runs.push(run);
        if let Some(s) = samples.get(name, None) {
            let mut s = s.clone();
            s.protocol = renamed;
            s.model = model;
            series.push(s);
        }
    };
    for r in &cmp.rows {
        add("sim: ", true, sim, sim_samples, &r.sim);
        add("emu: ", false, emu, emu_samples, &r.emu);
    }
    let merged = Results {
        scenario: emu.scenario.clone(),
        engine: emu.engine,
        seed: emu.seed,
        runs,
    };
    let merged_samples = Samples::from_series(series);
    let labels = Labels::new(&merged);
    let panels = panels(&merged, &merged_samples, &labels);
    figure(
        html,
        "plot-sim-emu",
        plots::latency_tail(&panels),
        "Complementary CDF of latency, P(latency &gt; x), of each simulated protocol (dashed, \
         \"sim:\") and the real peer paired with it (solid, \"emu:\"), same scenario and seed. \
         Where a pair's curves part, the model and the real stack disagree.",
    );
}

fn definitions_section(html: &mut String, engine: crate::metrics::Engine) {
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
    if engine == crate::metrics::Engine::Emu {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn number_labels() {
        assert_eq!(plots_num(250.0), "250");
        assert_eq!(plots_num(12.5), "12.5");
        assert_eq!(plots_num(0.25), "0.25");
        assert_eq!(plots_pct(3.0), "3%");
    }
}
