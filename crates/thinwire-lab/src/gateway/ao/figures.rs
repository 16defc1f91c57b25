//! The published figures of the multiplexing proxy (Griwodz & Halvorsen, NOSSDAV 2006)
//! beside ours, with tolerances and verdicts ([`crate::paper::Figure`]).

use super::AoReport;
use crate::paper::{Figure, Tolerance};

/// Every published figure of the proxy reproduction, ours from `report` (at 1% loss, the
/// published table's).
pub fn figures(report: &AoReport) -> Vec<Figure> {
    let p = &report.published;
    let one = report
        .runs
        .iter()
        .find(|r| (r.loss - 0.01).abs() < 1e-9)
        .map(|r| r.savings);
    vec![
        Figure::one_run(
            "bytes saved by multiplexing the streams into one trunk, 1% loss",
            "Table 1: 44,974,424 B separate, 27,582,922 B multiplexed",
            p.bytes_saving_pct,
            "%",
            one.map(|s| s.ip_bytes_pct),
            Tolerance::Relative(0.15),
        ),
        Figure::one_run(
            "packets saved by multiplexing the streams into one trunk, 1% loss",
            "Table 1: 372,711 packets separate, 113,149 multiplexed",
            p.packets_saving_pct,
            "%",
            one.map(|s| s.packets_pct),
            Tolerance::Relative(0.15),
        ),
    ]
}

/// The reproduction's calibrations (a free parameter of the setup set to meet a fact the
/// paper states about its setup), in words.
pub fn calibrations(_report: &AoReport) -> Vec<String> {
    Vec::new()
}
