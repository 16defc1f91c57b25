//! The report's figures: the runs turned into the report kit's series
//! ([`thinwire_report::plot`]) and drawn by its families.
//!
//! Every function returns the SVG text of one figure, or an error message (the report
//! then shows the message instead of the figure). Colors follow the protocol order so a
//! protocol has the same color in every figure.
//!
//! A figure holds one or more [`Panel`]s: one for a plain run, one per sweep point for a
//! sweep (small multiples sharing their axes' ranges and one legend), all in one SVG.
//! Figures by family: [`latency`] (tail and CDF: distributions), [`scatter`] (tail versus
//! redundancy: labelled points), [`bars`] (per class, deadlines: grouped bars; wire bytes:
//! horizontal bars), [`paper`] (the paper's figures beside ours).

mod bars;
mod latency;
mod paper;
mod scatter;

use thinwire_report::plot::{self, RGBColor, Series};

use crate::metrics::{RunResult, SampleSeries};

pub(crate) use bars::{grouped_bars, wire_bytes, GroupedBars};
pub(crate) use latency::{latency_cdf, latency_tail};
pub(crate) use paper::{order_curves, published_ratios};
pub(crate) use scatter::tail_vs_redundancy;
pub(crate) use thinwire_report::plot::bars::{BarGroup, BarValue};

/// What a plot needs to know about one protocol.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProtocolPlot<'a> {
    /// Legend name (with "(model)" for models); in a sweep, the protocol without the
    /// sweep point, shared by the protocol's runs at every point.
    pub(crate) label: &'a str,
    /// Full display name (with the sweep point, if any, and "(model)" for models).
    pub(crate) full_label: &'a str,
    /// The sweep point, if the figure is split by sweep point.
    pub(crate) point: Option<&'a str>,
    /// Protocol color.
    pub(crate) color: RGBColor,
    /// The protocol's all-classes row.
    pub(crate) run: &'a RunResult,
    /// The protocol's all-classes latency samples, if any were given.
    pub(crate) samples: Option<&'a SampleSeries>,
}

impl ProtocolPlot<'_> {
    /// The protocol as a bar series: its legend name and color.
    fn series(&self) -> Series {
        Series {
            label: self.label.to_owned(),
            color: self.color,
        }
    }
}

/// One panel of a figure: the protocols of one sweep point, or all of them.
pub(crate) type Panel<'a> = plot::Panel<ProtocolPlot<'a>>;

/// The SVG text of a figure, or why it could not be drawn.
type PlotResult = plot::PlotResult;

/// All protocols of all panels, in order.
fn all_protos<'p, 'a>(panels: &'p [Panel<'a>]) -> impl Iterator<Item = &'p ProtocolPlot<'a>> {
    plot::frame::all_items(panels)
}
