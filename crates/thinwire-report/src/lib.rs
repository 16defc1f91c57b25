//! The report kit: everything thinwire's HTML reports share, written once.
//!
//! The lab's scenario reports, the gateway reproductions' page and the bench's report are
//! each one self-contained HTML file: inline CSS, inline SVG figures, no script, nothing
//! fetched. This crate holds what makes them one style:
//!
//! * [`html`]: the page shell and its style sheet ([`html::page`], or
//!   [`html::page_start`] and [`html::page_end`] around a body written in place), the one
//!   HTML [`escape`], figures ([`html::figure`]) and badges;
//! * [`table`]: table markup (the scrolling wrapper, header rows, text and number cells);
//! * [`plot`]: figures drawn with plotters into SVG strings in one look ([`plot::style`]),
//!   framed by a legend column and one panel or a grid of panels ([`plot::frame`]), in four
//!   families: [`plot::lines`] (lines and step curves with markers, whiskers and guide
//!   levels, linear or log y), [`plot::distribution`] (a measure's distribution per series:
//!   the tail, the fraction above x on a log axis down to the data's resolution, for a
//!   report's lead latency figure; the CDF), [`plot::bars`] (grouped bars with light bars
//!   behind and whiskers; horizontal bars) and [`plot::points`] (labelled points whose labels
//!   do not overlap).
//!
//! Data flow: a report turns its results into the kit's plain series (numbers, labels,
//! colors), asks a family for an SVG (a [`plot::PlotResult`]: an error becomes a message in
//! place of the figure), and appends it with [`html::figure`] to the `String` that
//! [`html::page_start`] opened and [`html::page_end`] closes. Output is deterministic: the
//! same inputs give the same bytes.

#![forbid(unsafe_code)]

pub mod html;
pub mod plot;
pub mod table;

pub use html::escape;
