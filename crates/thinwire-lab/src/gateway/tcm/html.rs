//! The HTML fragment of the TCM reproduction: our tables beside the published figures.

use std::fmt::Write;

use super::TcmReport;

/// Renders `report` as an HTML fragment (headings and tables, no page wrapper).
pub fn tcm_report_html(report: &TcmReport) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<section id=\"tcm\"><h2>TCM: tunneling, compressing, multiplexing (Saldaña et al.)</h2>\
         <p>Real thinwire-gateway TCM multiplexer and demultiplexer on synthesized IPv4/UDP \
         Counter-Strike 1.6-like client traffic (61 B mean payload, 53.7 ms mean IAT per player, \
         calibrated to 319 kbit/s at Ethernet level for 20 players; {eth} B Ethernet framing per \
         packet). Seed {seed}, {secs} s simulated per point. CH = {ch} B (thinwire trunk) and \
         {l2tp} B (the paper's L2TP).</p>",
        eth = report.eth_overhead,
        seed = report.options.seed,
        secs = report.options.duration.as_secs(),
        ch = report.ch_thinwire,
        l2tp = report.ch_l2tp,
    );
    h.push_str(
        "<table><caption>Published figures</caption><tr><th>figure</th><th>paper</th>\
         <th>ours</th></tr>",
    );
    for (name, paper, ours) in published(report) {
        let _ = write!(h, "<tr><td>{name}</td><td>{paper}</td><td>{ours}</td></tr>");
    }
    h.push_str("</table>");
    h.push_str(
        "<table><caption>Bandwidth relation</caption><tr><th>players</th><th>T ms</th>\
         <th>native kbit/s IP / Eth</th><th>TCM kbit/s IP / Eth</th><th>pps native / TCM</th>\
         <th>E[k]</th><th>Pr(k=1)</th><th>MH+RH B</th><th>BWR measured / Eq.1 (CH 59) / predicted</th>\
         <th>BWR measured / Eq.1 (CH 25)</th><th>bundle B</th><th>hold ms</th><th>exact</th></tr>",
    );
    for r in &report.bwr {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{:.1} / {:.1}</td><td>{:.1} / {:.1}</td>\
             <td>{:.0} / {:.0}</td><td>{:.2}</td><td>{:.3}</td><td>{:.2}</td>\
             <td>{:.3} / {:.3} / {:.3}</td><td>{:.3} / {:.3}</td><td>{:.0}</td><td>{:.1}</td><td>{}</td></tr>",
            r.players, r.period_ms, r.native_ip_kbps, r.native_eth_kbps, r.mux_ip_kbps,
            r.mux_eth_kbps, r.native_pps, r.mux_pps, r.k_mean, r.p_single, r.mh_rh,
            r.bwr_measured, r.bwr_formula, r.bwr_predicted, r.bwr_measured_l2tp, r.bwr_formula_l2tp,
            r.mean_bundle_bytes, r.mean_hold_ms, r.exact,
        );
    }
    h.push_str("</table>");
    h.push_str(
        "<table><caption>1 Mbit/s bottleneck, 20 players</caption><tr><th>buffer ms</th>\
         <th>background kbit/s</th><th>mode</th><th>game kbit/s (Eth)</th><th>OWD mean ms</th>\
         <th>OWD p99 ms</th><th>game loss</th><th>late (&gt;160 ms) or lost</th>\
         <th>background loss</th></tr>",
    );
    for r in &report.link {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td>\
             <td>{:.4}</td><td>{:.4}</td><td>{:.4}</td></tr>",
            r.buffer_ms,
            r.background_kbps,
            r.mode,
            r.game_eth_kbps,
            r.owd_mean_ms,
            r.owd_p99_ms,
            r.loss,
            r.late_or_lost,
            r.background_loss,
        );
    }
    h.push_str("</table></section>");
    h
}

/// (figure, published value, our value) triples.
fn published(report: &TcmReport) -> Vec<(&'static str, String, String)> {
    let at = |p: usize, t: u64| {
        report
            .bwr
            .iter()
            .find(|r| r.players == p && r.period_ms == t)
    };
    let fmt = |v: Option<f64>, unit: &str| v.map_or("n/a".to_string(), |v| format!("{v:.1}{unit}"));
    let native = at(20, 25).map(|r| r.native_eth_kbps);
    let saving25 = at(20, 25).map(|r| (1.0 - r.bwr_measured_l2tp) * 100.0);
    let b25 =
        at(20, 25).map(|r| r.mean_bundle_bytes - (report.ch_thinwire - report.ch_l2tp) as f64);
    let b50 =
        at(20, 50).map(|r| r.mean_bundle_bytes - (report.ch_thinwire - report.ch_l2tp) as f64);
    let diff = at(20, 25)
        .zip(at(20, 50))
        .map(|(a, b)| a.mux_eth_kbps - b.mux_eth_kbps);
    let owd = report
        .link
        .iter()
        .filter(|r| r.buffer_ms == 50 && r.mode != "native")
        .map(|r| r.owd_p99_ms)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    vec![
        (
            "native game traffic, 20 players (Ethernet)",
            "319 kbit/s".into(),
            fmt(native, " kbit/s"),
        ),
        (
            "saving, 20 players, T = 25 ms (IP, CH 25 B)",
            "about 30 % (asymptote)".into(),
            fmt(saving25, " %"),
        ),
        (
            "mean multiplexed packet, 20 players, T = 25 ms (CH 25 B)",
            "608 B".into(),
            fmt(b25, " B"),
        ),
        (
            "mean multiplexed packet, 20 players, T = 50 ms (CH 25 B)",
            "1192 B".into(),
            fmt(b50, " B"),
        ),
        (
            "bandwidth T = 25 minus T = 50, 20 players (Ethernet)",
            "6 kbit/s".into(),
            fmt(diff, " kbit/s"),
        ),
        (
            "game OWD with the 50 ms buffer (TCM, worst p99 over the sweep)",
            "below 160 ms".into(),
            fmt(owd, " ms"),
        ),
    ]
}
