//! The report's plots, drawn with plotters into SVG strings.
//!
//! Every function returns the SVG text of one figure, or an error message (the report
//! then shows the message instead of the figure). Colors follow the protocol order so a
//! protocol has the same color in every figure.
//!
//! A figure holds one or more [`Panel`]s: one for a plain run, one per sweep point for a
//! sweep (small multiples sharing their axes' ranges and one legend), all in one SVG.
//! Figures by family: [`latency`] (CDF, tail), [`scatter`] (tail versus redundancy),
//! [`bars`] (per class, deadlines, wire bytes); [`frame`] lays a figure out and [`style`]
//! holds the look they share.

mod bars;
mod frame;
mod latency;
mod paper;
mod scatter;
mod style;

use plotters::style::RGBColor;

use crate::metrics::{RunResult, SampleSeries};

pub(crate) use bars::{grouped_bars, wire_bytes, GroupedBars};
pub(crate) use latency::{latency_cdf, latency_tail};
pub(crate) use paper::{order_curves, published_ratios};
pub(crate) use scatter::tail_vs_redundancy;
pub(crate) use style::{css_color, protocol_color};

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

/// One panel of a figure: the protocols of one sweep point, or all of them.
#[derive(Debug, Clone)]
pub(crate) struct Panel<'a> {
    /// Panel title (the sweep point), `None` for a single-panel figure.
    pub(crate) title: Option<String>,
    /// The protocols drawn in this panel.
    pub(crate) protos: Vec<ProtocolPlot<'a>>,
}

/// A bar group of a grouped bar chart: a label and, per protocol, the bar values.
#[derive(Debug, Clone)]
pub(crate) struct BarGroup {
    /// Category label shown under the group.
    pub(crate) label: String,
    /// One entry per protocol (same order as the protocol list): `None` = no bar.
    pub(crate) values: Vec<Option<BarValue>>,
}

/// The height of a bar and, optionally, of a lighter bar drawn behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BarValue {
    /// Height of the solid bar.
    pub(crate) main: f64,
    /// Height of the light bar behind it (e.g. p99.9 behind p99).
    pub(crate) behind: Option<f64>,
}

/// The SVG text of a figure, or why it could not be drawn.
type PlotResult = Result<String, String>;

/// A plotters error as a message.
fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("plot drawing failed: {e:?}")
}
