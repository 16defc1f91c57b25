//! The HTML fragment of the TCM reproduction: our tables beside the published figures.

use std::fmt::Write;

use super::{figures, TcmReport};

/// Renders `report` as an HTML fragment (headings and tables, no page wrapper).
pub fn tcm_report_html(report: &TcmReport) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<section id=\"tcm\"><h2>TCM: tunneling, compressing, multiplexing (Saldaña et al.)</h2>\
         <p>Real thinwire-gateway TCM multiplexer and demultiplexer on synthesized IPv4/UDP \
         Counter-Strike 1.6-like client traffic ({payload:.1} B mean payload, {iat:.1} ms mean \
         IAT per player, fitted to the paper's traffic facts; {eth} B of MAC header per packet \
         at Ethernet level). Seed {seed}, {secs} s simulated per point. CH = {ch} B (thinwire \
         trunk) and {l2tp} B (the paper's L2TP, also on the bottleneck). The router is tc's \
         token bucket filter (1 Mbit/s, 5000 B burst); its buffer is limited in bytes as tc \
         sizes it from the paper's maximum queueing time (rate x time + the burst), and for \
         contrast per packet in time.</p>",
        payload = report.fit.model.mean_payload,
        iat = report.fit.model.mean_iat.as_secs_f64() * 1000.0,
        eth = report.eth_overhead,
        seed = report.options.seed,
        secs = report.options.duration.as_secs(),
        ch = report.ch_thinwire,
        l2tp = report.ch_l2tp,
    );
    h.push_str("<p>Setup choices:</p><ul>");
    for c in &report.choices {
        let _ = write!(h, "<li>{c}</li>");
    }
    h.push_str("</ul>");
    h.push_str("<p>Calibrations:</p><ul>");
    for c in &report.calibrations {
        let _ = write!(h, "<li>{c}</li>");
    }
    h.push_str("</ul>");
    h.push_str(
        "<table><caption>Published figures</caption><tr><th>figure</th><th>source</th>\
         <th>paper</th><th>ours</th><th>tolerance</th><th>verdict</th><th>kind</th>\
         <th>note</th></tr>",
    );
    for f in figures(report) {
        let ours = f
            .ours
            .map_or("n/a".to_string(), |e| format!("{:.1} {}", e.mean, f.unit));
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{} {}</td><td>{ours}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            f.what,
            f.source,
            f.published,
            f.unit,
            f.tolerance_text(),
            f.verdict().as_str(),
            f.kind.label(),
            f.note,
        );
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
        "<table><caption>1 Mbit/s bottleneck, 20 players</caption><tr><th>buffer</th><th>buffer ms</th>\
         <th>background kbit/s</th><th>mode</th><th>game kbit/s (Eth)</th><th>OWD mean ms</th>\
         <th>OWD p99 ms</th><th>game loss</th><th>late (&gt;160 ms) or lost</th>\
         <th>background loss</th></tr>",
    );
    for r in &report.link {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td>\
             <td>{:.1}</td><td>{:.4}</td><td>{:.4}</td><td>{:.4}</td></tr>",
            r.buffer.label(),
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
