//! The report as an HTML fragment: the setup, the published Table 1 beside ours, the
//! server's link per loss rate, latency, where the bytes go, the delivery checks, and a
//! figure of the latency percentiles against loss (the report kit's lines).

use std::fmt::Write;

use thinwire_report::escape;
use thinwire_report::html::figure;
use thinwire_report::plot::lines::{line_chart, Line, LineChart, Mark, YScale};
use thinwire_report::plot::style::{num_tick, series_color};
use thinwire_report::plot::{Axes, Panel, PlotResult, Swatch};

use super::results::{AoLossRun, AoModeResult};
use super::AoReport;

/// `n` with thousands separators.
fn num(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pct(loss: f64) -> String {
    format!("{}%", (loss * 1000.0).round() / 10.0)
}

fn mean_packet(bytes: u64, packets: u64) -> String {
    if packets == 0 {
        return "-".into();
    }
    format!("{:.0} B", bytes as f64 / packets as f64)
}

/// Renders `report` as an HTML fragment (no page skeleton): tables with the published
/// figures beside ours, and a figure of latency against loss.
pub fn ao_report_html(report: &AoReport) -> String {
    let mut h = String::new();
    let o = &report.options;
    let _ = writeln!(
        h,
        "<section class=\"ao-repro\">\n<h2>Anarchy Online: one multiplexed trunk against \
         separate connections (Griwodz &amp; Halvorsen, NOSSDAV 2006, Table 1)</h2>"
    );
    let _ = writeln!(
        h,
        "<p>{} AO-profile streams, all active, {} s simulated after a {} s warm-up; the \
         server's link: {} ms one way each direction, Bernoulli loss both ways; trunk period \
         T = {} ms (mean hold {:.2} ms); seed {}.</p>",
        o.flows,
        o.duration.as_secs_f64(),
        super::run::WARMUP.as_secs(),
        o.delay.as_millis(),
        o.period.as_millis(),
        report.hold_mean_ms,
        o.seed
    );
    published_table(&mut h, report);
    link_table(&mut h, &report.runs);
    latency_table(&mut h, &report.runs);
    figure(
        &mut h,
        "plot-ao-latency",
        latency_figure(&report.runs),
        "p99 (solid) and p99.9 (dashed) latency, server send to player delivery, against the \
         loss rate of each direction: separate connections (direct) and one multiplexed trunk.",
    );
    breakdown_table(&mut h, &report.runs);
    trunk_table(&mut h, &report.runs);
    delivery_table(&mut h, &report.runs);
    h.push_str("<ul class=\"notes\">\n");
    for n in &report.notes {
        let _ = writeln!(h, "<li>{}</li>", escape(n));
    }
    h.push_str("</ul>\n</section>\n");
    h
}

fn published_table(h: &mut String, report: &AoReport) {
    let p = &report.published;
    let ours = report.runs.iter().find(|r| (r.loss - 0.01).abs() < 1e-9);
    h.push_str(
        "<h3>Table 1 at 1% loss: published (TCP) beside ours (thinwire)</h3>\n<table>\n\
         <tr><th></th><th>published bytes</th><th>published packets</th>\
         <th>published mean packet</th><th>our IP bytes</th><th>our packets</th>\
         <th>our mean packet</th></tr>\n",
    );
    let rows = [
        (
            "separate connections",
            p.separate_bytes,
            p.separate_packets,
            ours.map(|r| &r.direct),
        ),
        (
            "one multiplexed connection",
            p.multiplexed_bytes,
            p.multiplexed_packets,
            ours.map(|r| &r.multiplexed),
        ),
    ];
    for (name, pb, pp, m) in rows {
        let (ob, op) = m.map_or((0, 0), |m| (m.wan.total.ip_bytes, m.wan.total.packets));
        let _ = writeln!(
            h,
            "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            num(pb),
            num(pp),
            mean_packet(pb, pp),
            num(ob),
            num(op),
            mean_packet(ob, op)
        );
    }
    let (sb, sp) = ours.map_or((f64::NAN, f64::NAN), |r| {
        (r.savings.ip_bytes_pct, r.savings.packets_pct)
    });
    let _ = writeln!(
        h,
        "<tr><td>saving</td><td>{:.1}%</td><td>{:.1}%</td><td></td><td>{sb:.1}%</td>\
         <td>{sp:.1}%</td><td></td></tr>\n</table>",
        p.bytes_saving_pct, p.packets_saving_pct
    );
    h.push_str(
        "<p>The published run is the one-hour trace (1855 s / 1804 s); ours is shorter, so \
         compare the savings, not the totals.</p>\n",
    );
}

fn link_table(h: &mut String, runs: &[AoLossRun]) {
    h.push_str(
        "<h3>The server's link, both directions</h3>\n<table>\n<tr><th>loss</th>\
         <th>mode</th><th>packets down</th><th>packets up</th><th>packets</th>\
         <th>UDP bytes</th><th>IP bytes</th><th>lost</th><th>byte saving (IP)</th>\
         <th>packet saving</th></tr>\n",
    );
    for r in runs {
        for (name, m, save) in [
            ("direct", &r.direct, None),
            ("multiplexed", &r.multiplexed, Some(r.savings)),
        ] {
            let w = &m.wan;
            let (sb, sp) = save.map_or((String::new(), String::new()), |s| {
                (
                    format!("{:.1}%", s.ip_bytes_pct),
                    format!("{:.1}%", s.packets_pct),
                )
            });
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{sb}</td><td>{sp}</td></tr>",
                pct(r.loss),
                num(w.down.packets),
                num(w.up.packets),
                num(w.total.packets),
                num(w.total.udp_bytes),
                num(w.total.ip_bytes),
                num(w.total.lost),
            );
        }
    }
    h.push_str("</table>\n");
}

fn latency_table(h: &mut String, runs: &[AoLossRun]) {
    h.push_str(
        "<h3>Per-message latency (server send to player delivery), ms</h3>\n<table>\n\
         <tr><th>loss</th><th>mode</th><th>mean</th><th>p99</th><th>p99.9</th><th>max</th>\
         </tr>\n",
    );
    for r in runs {
        for (name, m) in [("direct", &r.direct), ("multiplexed", &r.multiplexed)] {
            let l = &m.latency_ms;
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{name}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td>\
                 <td>{:.1}</td></tr>",
                pct(r.loss),
                l.mean,
                l.p99,
                l.p999,
                l.max
            );
        }
    }
    h.push_str(
        "</table>\n<p>The paper gives no numbers for latency (Figs. 3-4): the multiplexed \
         stream was better at low loss, and the advantage disappeared at high loss.</p>\n",
    );
}

fn breakdown_table(h: &mut String, runs: &[AoLossRun]) {
    h.push_str(
        "<h3>Where the IP bytes on the server's link go</h3>\n<table>\n<tr><th>loss</th>\
         <th>mode</th><th>IP+UDP headers</th><th>game payload</th><th>redundant payload \
         (retransmitted, bundled)</th><th>framing payload (logins, trunk frames)</th>\
         <th>thinwire headers, acks, tags</th></tr>\n",
    );
    for r in runs {
        for (name, m) in [("direct", &r.direct), ("multiplexed", &r.multiplexed)] {
            let b = &m.breakdown;
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td></tr>",
                pct(r.loss),
                num(b.ip_udp_headers),
                num(b.app_payload),
                num(b.redundant_payload),
                num(b.framing_payload),
                num(b.thinwire_overhead)
            );
        }
    }
    h.push_str("</table>\n");
}

fn trunk_table(h: &mut String, runs: &[AoLossRun]) {
    h.push_str(
        "<h3>The trunk connection (server gateway, sender of the game data)</h3>\n<table>\n\
         <tr><th>loss</th><th>hold mean / max (ms)</th><th>SRTT (ms)</th>\
         <th>cwnd at end (packets)</th><th>packets sent</th><th>declared lost</th>\
         <th>by fast retransmit</th><th>RTO expirations</th><th>spurious</th></tr>\n",
    );
    for r in runs {
        let Some(t) = r.multiplexed.trunk else {
            continue;
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{:.1} / {:.1}</td><td>{:.0}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            pct(r.loss),
            t.hold_mean_ms,
            t.hold_max_ms,
            t.srtt_ms,
            t.cwnd_end,
            num(t.packets_sent),
            num(t.packets_lost),
            num(t.thin_fast_losses),
            num(t.rto_expirations),
            num(t.spurious_losses)
        );
    }
    h.push_str("</table>\n");
}

fn delivery_table(h: &mut String, runs: &[AoLossRun]) {
    h.push_str(
        "<h3>Delivery checks</h3>\n<table>\n<tr><th>loss</th><th>mode</th><th>sent</th>\
         <th>delivered</th><th>out of order</th><th>misdelivered</th><th>reconnects</th>\
         <th>refused</th><th>all logged in at start</th></tr>\n",
    );
    for r in runs {
        for (name, m) in [("direct", &r.direct), ("multiplexed", &r.multiplexed)] {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td></tr>",
                pct(r.loss),
                num(m.messages_sent),
                num(m.messages_delivered),
                m.order_violations,
                m.misdelivered,
                m.disconnects,
                m.refused_sends,
                if m.all_ready_at_start { "yes" } else { "no" }
            );
        }
    }
    h.push_str("</table>\n");
}

/// One line of the plot: a mode, a statistic, how it is drawn.
struct SeriesSpec {
    label: &'static str,
    /// Index of its color in the kit's palette.
    color: usize,
    dashed: bool,
    value: fn(&AoModeResult) -> f64,
    multiplexed: bool,
}

const SERIES: [SeriesSpec; 4] = [
    SeriesSpec {
        label: "direct p99",
        color: 0,
        dashed: false,
        value: |m| m.latency_ms.p99,
        multiplexed: false,
    },
    SeriesSpec {
        label: "direct p99.9",
        color: 0,
        dashed: true,
        value: |m| m.latency_ms.p999,
        multiplexed: false,
    },
    SeriesSpec {
        label: "multiplexed p99",
        color: 1,
        dashed: false,
        value: |m| m.latency_ms.p99,
        multiplexed: true,
    },
    SeriesSpec {
        label: "multiplexed p99.9",
        color: 1,
        dashed: true,
        value: |m| m.latency_ms.p999,
        multiplexed: true,
    },
];

/// The figure: p99 and p99.9 latency against loss, direct and multiplexed.
fn latency_figure(runs: &[AoLossRun]) -> PlotResult {
    let x_max = runs.iter().map(|r| r.loss * 100.0).fold(1.0, f64::max);
    let y_max = runs
        .iter()
        .flat_map(|r| [r.direct.latency_ms.p999, r.multiplexed.latency_ms.p999])
        .fold(1.0, f64::max)
        * 1.1;
    let legend: Vec<(String, Swatch)> = SERIES
        .iter()
        .map(|s| {
            (
                s.label.to_owned(),
                Swatch::Line(series_color(s.color), s.dashed),
            )
        })
        .collect();
    let lines: Vec<Line> = SERIES
        .iter()
        .map(|s| {
            let pts: Vec<(f64, f64)> = runs
                .iter()
                .map(|r| {
                    let m = if s.multiplexed {
                        &r.multiplexed
                    } else {
                        &r.direct
                    };
                    (r.loss * 100.0, (s.value)(m))
                })
                .collect();
            let mut line = Line::new(series_color(s.color), s.dashed, 2, pts.clone());
            line.marks = pts
                .into_iter()
                .map(|at| Mark {
                    at,
                    radius: 4,
                    whisker: None,
                })
                .collect();
            line
        })
        .collect();
    let spec = LineChart {
        axes: Axes {
            title: "Latency against loss",
            x_desc: "loss (each direction)",
            y_desc: "latency (ms)",
            x_range: 0.0..x_max * 1.05,
            y_range: 0.0..y_max,
        },
        y_scale: YScale::Linear,
        margin: 12,
        x_labels: None,
        max_light_lines: Some(1),
        x_fmt: &|v| format!("{}%", num_tick(v)),
        y_fmt: &num_tick,
        levels: &[],
        legend: &legend,
    };
    line_chart(&spec, &[Panel::single(lines)])
}
