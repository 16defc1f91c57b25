//! Figures, drawn with plotters into SVG strings.
//!
//! Every function returns the SVG text of one figure, or an error message (a report shows
//! the message instead of the figure, see [`crate::html::figure`]). A figure has a legend
//! column on the right and one [`Panel`] or, for small multiples (a sweep's points), a
//! titled two-column grid of panels sharing their axes' ranges and one legend
//! ([`frame`]). [`style`] holds the look every figure shares: sizes, fonts, the palette,
//! tick labels. The families: [`lines`] (lines and step curves; markers, whiskers, guide
//! levels; linear or log y), [`distribution`] (the tail on a log axis and the CDF of each
//! series' samples, drawn as [`lines`]), [`bars`] (grouped bars, horizontal bars) and
//! [`points`] (labelled points).
//!
//! A family draws plain data (numbers, labels, colors): the report that uses it decides what
//! the numbers are.

pub mod bars;
pub mod distribution;
pub mod frame;
pub mod lines;
pub mod points;
pub mod style;

use std::ops::Range;

pub use frame::{Panel, Swatch};
pub use plotters::style::RGBColor;

/// The title and axes of a figure: how a family's chart starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Axes<'a> {
    /// Figure title.
    pub title: &'a str,
    /// X-axis description, with unit.
    pub x_desc: &'a str,
    /// Y-axis description, with unit.
    pub y_desc: &'a str,
    /// X range (of every panel).
    pub x_range: Range<f64>,
    /// Y range (of every panel).
    pub y_range: Range<f64>,
}

/// The SVG text of a figure, or why it could not be drawn.
pub type PlotResult = Result<String, String>;

/// A named, colored series (a protocol, a transport): a bar of each group of a grouped bar
/// chart, and its legend entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Color of its bars and legend swatch.
    pub color: RGBColor,
}

/// A plotters error as a message.
pub fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("plot drawing failed: {e:?}")
}
