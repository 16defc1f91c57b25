//! The published TCM figures beside ours, with tolerances and verdicts
//! ([`crate::paper::Figure`]); the report's table and `paper.json` both read them.

use super::TcmReport;
use crate::paper::{Figure, FigureKind, Tolerance};

/// Every published figure of the TCM reproduction, ours from `report`.
pub fn figures(report: &TcmReport) -> Vec<Figure> {
    let at = |p: usize, t: u64| {
        report
            .bwr
            .iter()
            .find(|r| r.players == p && r.period_ms == t)
    };
    // The bundle as the paper's L2TP tunnel would carry it: our trunk's overhead replaced by
    // the paper's common header.
    let l2tp_bundle = |t: u64| {
        at(20, t).map(|r| r.mean_bundle_bytes - (report.ch_thinwire - report.ch_l2tp) as f64)
    };
    let rel = Tolerance::Relative(0.15);
    vec![
        Figure::one_run(
            "native game traffic, 20 players (Ethernet level)",
            "Sec. IV: 319 kbit/s for 20 players",
            319.0,
            "kbit/s",
            at(20, 25).map(|r| r.native_eth_kbps),
            rel,
        )
        .with_kind(FigureKind::FixedBySetup)
        .with_note("the traffic's rate is calibrated to this figure"),
        Figure::one_run(
            "bandwidth saving, 20 players, T = 25 ms (IP level, CH 25 B)",
            "Sec. IV: 'un 30% de ahorro' (about 120 kbit/s)",
            30.0,
            "%",
            at(20, 25).map(|r| (1.0 - r.bwr_measured_l2tp) * 100.0),
            Tolerance::Absolute(3.0),
        ),
        Figure::one_run(
            "mean multiplexed packet, 20 players, T = 25 ms (CH 25 B)",
            "Sec. IV: 608 B",
            608.0,
            "B",
            l2tp_bundle(25),
            rel,
        ),
        Figure::one_run(
            "mean multiplexed packet, 20 players, T = 50 ms (CH 25 B)",
            "Sec. IV: 1,192 B",
            1192.0,
            "B",
            l2tp_bundle(50),
            rel,
        ),
    ]
}

/// The reproduction's calibrations (a free parameter of the setup set to meet a fact the
/// paper states about its setup), in words.
pub fn calibrations(_report: &TcmReport) -> Vec<String> {
    vec![
        "the players' traffic (61 B mean payload, 53.7 ms mean inter-arrival time per player) \
         is calibrated to the paper's native rate of 319 kbit/s for 20 players at Ethernet \
         level"
            .into(),
    ]
}
