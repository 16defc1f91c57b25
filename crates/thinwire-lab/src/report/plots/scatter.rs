//! The cost figure: p99.9 latency against redundancy, one labelled point per protocol
//! (per sweep point), drawn by the report kit's labelled points.

use thinwire_report::plot::frame::{legend_entries, message_figure};
use thinwire_report::plot::points::{labelled_points, Point, PointChart};
use thinwire_report::plot::{Axes, Swatch};

use super::{all_protos, Panel, PlotResult, ProtocolPlot};

/// Plot 3: p99.9 latency versus redundancy, one labelled point per protocol. In a sweep,
/// points are labelled with their sweep point and a protocol's points are joined in sweep
/// order.
pub(crate) fn tail_vs_redundancy(panels: &[Panel<'_>]) -> PlotResult {
    let title = "p99.9 latency versus redundancy";
    let pts: Vec<&ProtocolPlot<'_>> = all_protos(panels)
        .filter(|p| p.run.messages.delivered > 0)
        .collect();
    if pts.is_empty() {
        return message_figure(title, "No message was delivered: nothing to plot.");
    }
    let sweep = panels.len() > 1;
    let rmin = pts.iter().map(|p| p.run.redundancy).fold(0.0, f64::min);
    let rmax = pts.iter().map(|p| p.run.redundancy).fold(0.1, f64::max);
    let span = rmax - rmin;
    let ymax = pts
        .iter()
        .map(|p| p.run.latency_ms.p999)
        .fold(0.0, f64::max)
        .max(0.001)
        * 1.2;
    let legend = legend_entries(pts.iter().copied(), |p| p.label, |p| Swatch::Dot(p.color));
    let points: Vec<Point> = pts
        .iter()
        .map(|p| Point {
            at: (p.run.redundancy, p.run.latency_ms.p999),
            color: p.color,
            label: if sweep {
                p.point.unwrap_or(p.full_label)
            } else {
                p.full_label
            }
            .to_owned(),
            group: p.label.to_owned(),
        })
        .collect();
    let spec = PointChart {
        axes: Axes {
            title,
            x_desc: "redundancy (payload bytes sent / unique payload bytes − 1)",
            y_desc: "p99.9 latency (ms)",
            x_range: (rmin - 0.08 * span)..(rmax + 0.3 * span),
            y_range: 0.0..ymax,
        },
        font_size: if sweep { 13.0 } else { 15.0 },
        join: sweep,
        legend: &legend,
    };
    labelled_points(&spec, &points)
}
