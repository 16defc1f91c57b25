//! Latency distributions: the tail (the fraction of messages later than x, log scale) and
//! the CDF, drawn by the report kit's distribution family.

use thinwire_report::plot::distribution::{cdf_chart, tail_chart, Distribution, DistributionChart};
use thinwire_report::plot::frame::legend_entries;
use thinwire_report::plot::{self, Swatch};

use super::{all_protos, Panel, PlotResult, ProtocolPlot};

/// The x-axis description of both figures.
const X_DESC: &str = "latency (ms)";

fn has_samples(p: &ProtocolPlot<'_>) -> bool {
    p.samples.is_some_and(|s| !s.is_empty())
}

/// Protocols with samples, implementations first and models (dashed) last, so that a
/// dashed curve on top of a solid one leaves both visible.
fn drawing_order<'p, 'a>(protos: &'p [ProtocolPlot<'a>]) -> Vec<&'p ProtocolPlot<'a>> {
    let with = protos.iter().filter(|p| has_samples(p));
    with.clone()
        .filter(|p| !p.run.model)
        .chain(with.filter(|p| p.run.model))
        .collect()
}

/// Each panel's protocols with samples as the kit's distributions (latencies in ms), in
/// [`drawing_order`]: solid for implementations, dashed for models.
fn distributions(panels: &[Panel<'_>]) -> Vec<plot::Panel<Distribution>> {
    panels
        .iter()
        .map(|panel| plot::Panel {
            title: panel.title.clone(),
            items: drawing_order(&panel.items)
                .into_iter()
                .map(|p| Distribution {
                    color: p.color,
                    dashed: p.run.model,
                    sorted: p.samples.map_or_else(Vec::new, |s| {
                        s.latencies_us
                            .iter()
                            .map(|&us| us as f64 / 1000.0)
                            .collect()
                    }),
                })
                .collect(),
        })
        .collect()
}

/// The legend of the distribution plots: each protocol with samples, as its line.
fn legend(panels: &[Panel<'_>]) -> Vec<(String, Swatch)> {
    legend_entries(
        all_protos(panels).filter(|p| has_samples(p)),
        |p| p.label,
        |p| Swatch::Line(p.color, p.run.model),
    )
}

/// The lead latency figure: per protocol, the fraction of messages later than x on a log
/// scale down to the resolution of the samples, with guides at p99, p99.9…
pub(crate) fn latency_tail(panels: &[Panel<'_>]) -> PlotResult {
    tail_chart(
        &DistributionChart {
            title: "Latency tail (all classes): fraction of messages later than x",
            x_desc: X_DESC,
            y_desc: "fraction of messages later than x",
            legend: &legend(panels),
        },
        &distributions(panels),
    )
}

/// The latency CDF per protocol, linear axes, x cut just past the largest p99 (the tail
/// figure shows the rest).
pub(crate) fn latency_cdf(panels: &[Panel<'_>]) -> PlotResult {
    let x_end = all_protos(panels)
        .filter(|p| has_samples(p))
        .map(|p| p.run.latency_ms.p99)
        .fold(0.0, f64::max)
        * 1.1;
    cdf_chart(
        &DistributionChart {
            title: "Latency CDF (all classes)",
            x_desc: X_DESC,
            y_desc: "fraction of messages delivered by x",
            legend: &legend(panels),
        },
        x_end,
        &distributions(panels),
    )
}
