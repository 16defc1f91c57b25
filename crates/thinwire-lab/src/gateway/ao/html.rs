//! The report as an HTML fragment: the setup, the published figures with verdicts, Table 1
//! beside ours (TCP and thinwire), the server's link per loss rate with data and ACKs apart,
//! the retransmission delay (Fig. 4), latency, where the bytes go, the delivery checks, and a
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
        "<p>{} AO-profile streams, {} active at once on average, {} s simulated (thinwire \
         after a {} s warm-up); the server's link: {} ms one way each direction, Bernoulli \
         loss both ways; thinwire's trunk period T = {} ms (mean hold {:.2} ms); seed {}.</p>",
        o.flows,
        o.active.min(o.flows),
        o.duration.as_secs_f64(),
        super::run::WARMUP.as_secs(),
        o.delay.as_millis(),
        o.period.as_millis(),
        report.hold_mean_ms,
        o.seed
    );
    figures_table(&mut h, report);
    published_table(&mut h, report);
    link_table(&mut h, &report.runs);
    data_ack_table(&mut h, &report.runs);
    rtx_delay_table(&mut h, &report.runs);
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
        "<h3>Table 1 at 1% loss: published (TCP) beside ours (TCP model, and thinwire)</h3>\n\
         <table>\n\
         <tr><th></th><th>published bytes</th><th>published packets</th>\
         <th>published mean packet</th><th>our IP bytes</th><th>our packets</th>\
         <th>our mean packet</th></tr>\n",
    );
    let rows = [
        (
            "separate connections, TCP",
            p.separate_bytes,
            p.separate_packets,
            ours.map(|r| &r.tcp_direct),
        ),
        (
            "one multiplexed connection, TCP",
            p.multiplexed_bytes,
            p.multiplexed_packets,
            ours.map(|r| &r.tcp_trunk),
        ),
        (
            "separate connections, thinwire",
            p.separate_bytes,
            p.separate_packets,
            ours.map(|r| &r.direct),
        ),
        (
            "one multiplexed connection, thinwire",
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
    for (name, save) in [
        ("saving, TCP", ours.map(|r| r.tcp_savings)),
        ("saving, thinwire", ours.map(|r| r.savings)),
    ] {
        let (sb, sp) = save.map_or((f64::NAN, f64::NAN), |s| (s.ip_bytes_pct, s.packets_pct));
        let _ = writeln!(
            h,
            "<tr><td>{name}</td><td>{:.1}%</td><td>{:.1}%</td><td></td><td>{sb:.1}%</td>\
             <td>{sp:.1}%</td><td></td></tr>",
            p.bytes_saving_pct, p.packets_saving_pct
        );
    }
    h.push_str(
        "</table>\n<p>The published run replayed the trace for 1855 s (separate) / 1804 s \
         (multiplexed); compare the savings and sizes, and the totals only when ours ran as \
         long.</p>\n",
    );
}

/// The four modes of a loss rate, named.
fn modes(r: &AoLossRun) -> [(&'static str, &AoModeResult); 4] {
    [
        ("TCP direct", &r.tcp_direct),
        ("TCP trunk", &r.tcp_trunk),
        ("thinwire direct", &r.direct),
        ("thinwire trunk", &r.multiplexed),
    ]
}

fn figures_table(h: &mut String, report: &AoReport) {
    h.push_str(
        "<h3>Published figures and ours</h3>\n<table>\n<tr><th>figure</th><th>source</th>\
         <th>published</th><th>ours</th><th>tolerance</th><th>verdict</th><th>note</th></tr>\n",
    );
    for f in super::figures(report) {
        let ours = f
            .ours
            .map_or_else(|| "-".to_owned(), |e| format!("{:.3} {}", e.mean, f.unit));
        let verdict = match f.kind {
            crate::paper::FigureKind::Measured => f.verdict().as_str().to_owned(),
            k => format!("{} ({})", f.verdict().as_str(), k.label()),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{} {}</td><td>{ours}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            escape(&f.what),
            escape(&f.source),
            f.published,
            f.unit,
            escape(&f.tolerance_text()),
            verdict,
            escape(&f.note)
        );
    }
    h.push_str("</table>\n");
}

fn data_ack_table(h: &mut String, runs: &[AoLossRun]) {
    h.push_str(
        "<h3>Data and acknowledgements apart (IP level, both counted when lost)</h3>\n\
         <table>\n<tr><th>loss</th><th>mode</th><th>data packets (down)</th>\
         <th>data bytes</th><th>ACK packets (up)</th><th>ACK bytes</th></tr>\n",
    );
    for r in runs {
        for (name, m) in modes(r) {
            let (d, a) = (m.wan.down, m.wan.up);
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                pct(r.loss),
                num(d.packets),
                num(d.ip_bytes),
                num(a.packets),
                num(a.ip_bytes)
            );
        }
    }
    h.push_str(
        "</table>\n<p>The players send no game data: in the TCP modes every packet up is a \
         pure ACK and every packet down carries data; in thinwire's the packets up are \
         acknowledgements and keepalives.</p>\n",
    );
}

fn rtx_delay_table(h: &mut String, runs: &[AoLossRun]) {
    h.push_str(
        "<h3>Retransmission delay (Fig. 4): first transmission to the retransmission that \
         gets acknowledged, mean ms (packets)</h3>\n<table>\n<tr><th>loss</th><th>mode</th>\
         <th>1st</th><th>2nd</th><th>3rd</th><th>retransmitted 1st / 2nd / 3rd time, of \
         packets</th></tr>\n",
    );
    for r in runs {
        for (name, m) in [("TCP direct", &r.tcp_direct), ("TCP trunk", &r.tcp_trunk)] {
            let Some(d) = m.rtx_delay else { continue };
            let cell = |i: usize| {
                d.mean_ms[i].map_or_else(|| "-".to_owned(), |v| format!("{v:.0} ({})", d.acked[i]))
            };
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{name}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{} / {} / {} of {}</td></tr>",
                pct(r.loss),
                cell(0),
                cell(1),
                cell(2),
                num(d.retransmitted[0]),
                num(d.retransmitted[1]),
                num(d.retransmitted[2]),
                num(d.data_packets)
            );
        }
    }
    h.push_str(
        "</table>\n<p>The paper's Fig. 4 (no numbers in the text): lower for the multiplexed \
         connection, \"but the advantage is lost when the packet loss rate is very high\". \
         Thinwire has no sender-side counterpart of this counter; its equivalent is the \
         application's: the mean delay beyond the one-way delay of the messages a loss \
         delayed, in the latency table, for every mode.</p>\n",
    );
}

fn link_table(h: &mut String, runs: &[AoLossRun]) {
    h.push_str(
        "<h3>The server's link, both directions</h3>\n<table>\n<tr><th>loss</th>\
         <th>mode</th><th>packets down</th><th>packets up</th><th>packets</th>\
         <th>bytes above IP</th><th>IP bytes</th><th>lost</th><th>byte saving (IP)</th>\
         <th>packet saving</th></tr>\n",
    );
    for r in runs {
        for (name, m, save) in [
            ("TCP direct", &r.tcp_direct, None),
            ("TCP trunk", &r.tcp_trunk, Some(r.tcp_savings)),
            ("thinwire direct", &r.direct, None),
            ("thinwire trunk", &r.multiplexed, Some(r.savings)),
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
         <th>delayed by loss: share</th><th>their mean delay beyond the one-way delay</th>\
         </tr>\n",
    );
    for r in runs {
        for (name, m) in modes(r) {
            let (l, late) = (&m.latency_ms, &m.late);
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{name}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td>\
                 <td>{:.1}</td><td>{:.2}%</td><td>{:.0}</td></tr>",
                pct(r.loss),
                l.mean,
                l.p99,
                l.p999,
                l.max,
                late.share_pct,
                late.mean_extra_ms
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
