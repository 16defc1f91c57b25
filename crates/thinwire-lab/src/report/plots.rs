//! The report's plots, drawn with plotters into SVG strings.
//!
//! Every function returns the SVG text of one figure, or an error message (the report
//! then shows the message instead of the figure). Colors follow the protocol order so a
//! protocol has the same color in every figure.
//!
//! A figure holds one or more [`Panel`]s: one for a plain run, one per sweep point for a
//! sweep (small multiples sharing their axes' ranges and one legend), all in one SVG.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::metrics::{RunResult, SampleSeries};

/// Width of every figure, in pixels.
const WIDTH: u32 = 960;
/// Height of single-panel figures, in pixels.
const HEIGHT: u32 = 460;
/// Height of one panel of a multi-panel figure, in pixels.
const PANEL_HEIGHT: u32 = 330;
/// Height of a multi-panel figure's title band, in pixels.
const TITLE_HEIGHT: u32 = 44;
/// Font family of all text.
const FONT: &str = "sans-serif";
/// Dash and gap lengths (pixels) of the lines of models.
const DASH: i32 = 7;
/// See [`DASH`].
const GAP: i32 = 4;
/// Lowest survival probability shown in the tail view.
pub(crate) const TAIL_FLOOR: f64 = 1e-4;

/// A qualitative palette whose first hues stay apart for color-blind readers (mostly
/// Okabe-Ito; neighbours in the order are clearly different hues).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(200, 40, 40),   // red
    RGBColor(120, 70, 170),  // purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(140, 86, 75),   // brown
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(120, 120, 120), // grey
    RGBColor(170, 170, 0),   // olive
];

/// The color of the `index`-th protocol: the palette, then (for more protocols than it
/// has colors) hues spread by the golden angle.
pub(crate) fn protocol_color(index: usize) -> RGBColor {
    if let Some(c) = PALETTE.get(index) {
        return *c;
    }
    let k = index - PALETTE.len();
    let hue = (k as f64 * 0.618_033_988_75 + 0.1).fract();
    let lightness = if k % 2 == 0 { 0.40 } else { 0.55 };
    hsl_to_rgb(hue, 0.65, lightness)
}

/// HSL (all in `0..1`) to RGB.
fn hsl_to_rgb(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = h * 6.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let to = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(to(r), to(g), to(b))
}

/// `#rrggbb` of a color, for HTML swatches.
pub(crate) fn css_color(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

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

type PlotResult = Result<String, String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("plot drawing failed: {e:?}")
}

// ---------------------------------------------------------------------------------------
// Categorical axis

/// A categorical axis over `0.0..n`: category `i` occupies `i..i+1`, labelled at `i + 0.5`.
#[derive(Debug, Clone)]
struct CategoryAxis {
    labels: Vec<String>,
}

impl CategoryAxis {
    fn n(&self) -> f64 {
        self.labels.len().max(1) as f64
    }
}

impl Ranged for CategoryAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = value / self.n();
        limit.0 + ((limit.1 - limit.0) as f64 * frac).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            // Only bold points (which carry the labels); no light grid.
            return Vec::new();
        }
        (0..self.labels.len()).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.n()
    }
}

impl ValueFormatter<f64> for CategoryAxis {
    fn format(_value: &f64) -> String {
        String::new()
    }

    fn format_ext(&self, value: &f64) -> String {
        let i = value.floor();
        if i >= 0.0 && (i as usize) < self.labels.len() {
            self.labels[i as usize].clone()
        } else {
            String::new()
        }
    }
}

// ---------------------------------------------------------------------------------------
// Shared pieces

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    /// A line; dashed when the flag is set (models).
    Line(RGBColor, bool),
    Bar(RGBColor),
    LightBar(RGBColor),
    Dot(RGBColor),
}

/// Approximate rendered width in pixels of `text` at the given plotters font size (SVG
/// text is `size / 1.24` px; an average glyph is about 0.6 em wide).
fn text_width(text: &str, size: f64) -> i32 {
    (text.chars().count() as f64 * size / 1.24 * 0.6).ceil() as i32
}

/// Splits `root` into the chart area (left) and a legend column (right) sized for the
/// entries, draws the legend there and returns the chart area.
fn with_legend<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    entries: &[(String, Swatch)],
) -> Result<DrawingArea<SVGBackend<'a>, Shift>, String> {
    let (w, _) = root.dim_in_pixel();
    let longest = entries
        .iter()
        .map(|(t, _)| text_width(t, 15.0))
        .max()
        .unwrap_or(0);
    let legend_w = (longest + 50).clamp(120, (w / 3) as i32) as u32;
    let (chart, legend) = root.split_horizontally(w - legend_w);
    let style = (FONT, 15).into_font().color(&BLACK);
    let mut y = 50;
    for (label, swatch) in entries {
        let cy = y + 8;
        match *swatch {
            Swatch::Line(c, false) => legend
                .draw(&PathElement::new(
                    vec![(8, cy), (34, cy)],
                    c.stroke_width(3),
                ))
                .map_err(err)?,
            Swatch::Line(c, true) => legend
                .draw(&DashedPathElement::new(
                    vec![(6, cy), (36, cy)],
                    DASH,
                    GAP,
                    c.stroke_width(3),
                ))
                .map_err(err)?,
            Swatch::Bar(c) => legend
                .draw(&Rectangle::new([(12, cy - 7), (30, cy + 7)], c.filled()))
                .map_err(err)?,
            Swatch::LightBar(c) => {
                legend
                    .draw(&Rectangle::new(
                        [(12, cy - 7), (30, cy + 7)],
                        c.mix(0.3).filled(),
                    ))
                    .map_err(err)?;
                legend
                    .draw(&Rectangle::new(
                        [(12, cy - 7), (30, cy + 7)],
                        c.stroke_width(1),
                    ))
                    .map_err(err)?
            }
            Swatch::Dot(c) => legend
                .draw(&Circle::new((21, cy), 6, c.filled()))
                .map_err(err)?,
        }
        legend
            .draw(&Text::new(
                label.clone(),
                (42, cy),
                style.pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        y += 24;
    }
    Ok(chart)
}

/// Draws into a fresh SVG of `WIDTH x height` and returns its text.
fn svg<F>(height: u32, draw: F) -> PlotResult
where
    F: FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String>,
{
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// A figure that only says `message` (used when there is nothing to plot).
pub(crate) fn message_figure(title: &str, message: &str) -> PlotResult {
    svg(160, |root| {
        root.draw(&Text::new(
            title.to_owned(),
            (20, 30),
            (FONT, 22).into_font().color(&BLACK),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            message.to_owned(),
            (20, 90),
            (FONT, 17).into_font().color(&RGBColor(90, 90, 90)),
        ))
        .map_err(err)?;
        Ok(())
    })
}

/// A padded `lo..hi` range that is never empty.
fn padded(lo: f64, hi: f64, pad_frac: f64) -> Range<f64> {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
    let pad = (hi - lo) * pad_frac;
    (lo - pad)..(hi + pad)
}

/// Formats a tick value of a log axis: `1`, `0.1`, `0.01`, `1e-3`, `1e-4`…
fn log_tick(v: f64) -> String {
    if v >= 0.01 {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        let e = v.log10().round() as i32;
        let m = v / 10f64.powi(e);
        if (m - 1.0).abs() < 1e-6 {
            format!("1e{e}")
        } else {
            format!("{m:.0}e{e}")
        }
    }
}

/// Formats a linear tick value without spurious decimals.
fn num_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    let a = v.abs();
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    };
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------
// Figure layout

/// Pixel height a legend of `entries` lines needs.
fn legend_height(entries: usize) -> u32 {
    60 + 24 * entries as u32
}

/// Rows of a multi-panel grid (two columns).
fn panel_rows(panels: usize) -> usize {
    panels.div_ceil(2)
}

/// Height of a figure of `panels` panels with a legend of `entries` lines.
fn figure_height(panels: usize, entries: usize) -> u32 {
    let body = if panels <= 1 {
        HEIGHT
    } else {
        TITLE_HEIGHT + panel_rows(panels) as u32 * PANEL_HEIGHT
    };
    body.max(legend_height(entries))
}

/// Text sizes and label areas of a panel.
#[derive(Debug, Clone, Copy)]
struct PanelStyle {
    caption: u32,
    desc: u32,
    label: u32,
    x_area: u32,
    y_area: u32,
}

const SINGLE: PanelStyle = PanelStyle {
    caption: 22,
    desc: 16,
    label: 14,
    x_area: 48,
    y_area: 64,
};

const MULTI: PanelStyle = PanelStyle {
    caption: 17,
    desc: 14,
    label: 13,
    x_area: 42,
    y_area: 58,
};

/// Draws a figure: a legend column on the right and, on the left, one panel (captioned
/// with `title`) or a titled two-column grid of panels (captioned with their titles).
fn draw_figure<'p, F>(
    title: &str,
    panels: &[Panel<'p>],
    legend: &[(String, Swatch)],
    mut draw_panel: F,
) -> PlotResult
where
    F: for<'b> FnMut(
        &DrawingArea<SVGBackend<'b>, Shift>,
        &Panel<'p>,
        &str,
        PanelStyle,
    ) -> Result<(), String>,
{
    let height = figure_height(panels.len(), legend.len());
    svg(height, |root| {
        let area = with_legend(root, legend)?;
        if panels.len() == 1 {
            let (_, h) = area.dim_in_pixel();
            let (body, _) = area.split_vertically(h.min(HEIGHT.max(legend_height(legend.len()))));
            return draw_panel(&body, &panels[0], title, SINGLE);
        }
        let body = area
            .titled(title, (FONT, 22).into_font().color(&BLACK))
            .map_err(err)?;
        let rows = panel_rows(panels.len());
        let (_, h) = body.dim_in_pixel();
        let (grid, _) = body.split_vertically((rows as u32 * PANEL_HEIGHT).min(h));
        let cells = grid.split_evenly((rows, 2));
        for (cell, panel) in cells.iter().zip(panels) {
            draw_panel(cell, panel, panel.title.as_deref().unwrap_or(""), MULTI)?;
        }
        Ok(())
    })
}

/// All protocols of all panels, in order.
fn all_protos<'p, 'a>(panels: &'p [Panel<'a>]) -> impl Iterator<Item = &'p ProtocolPlot<'a>> {
    panels.iter().flat_map(|p| p.protos.iter())
}

/// Legend entries: each distinct legend label once, in order of first appearance.
fn legend_entries<'a>(
    protos: impl Iterator<Item = &'a ProtocolPlot<'a>>,
    swatch: impl Fn(&ProtocolPlot<'_>) -> Swatch,
) -> Vec<(String, Swatch)> {
    let mut out: Vec<(String, Swatch)> = Vec::new();
    for p in protos {
        if !out.iter().any(|(l, _)| l == p.label) {
            out.push((p.label.to_owned(), swatch(p)));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Distribution plots

/// Indices of a sorted series of `n` samples to draw: evenly spaced ranks plus ranks
/// spaced logarithmically in the survival probability down to [`TAIL_FLOOR`] (so the tail
/// keeps its detail), plus the first and last. Sorted and unique.
pub(crate) fn plot_indices(n: usize) -> Vec<usize> {
    const LINEAR: usize = 400;
    const LOG: usize = 400;
    if n <= LINEAR + LOG {
        return (0..n).collect();
    }
    let mut idx: Vec<usize> = Vec::with_capacity(LINEAR + LOG + 2);
    for j in 0..=LINEAR {
        idx.push(j * (n - 1) / LINEAR);
    }
    let floor = TAIL_FLOOR.max(1.0 / n as f64);
    let decades = -floor.log10();
    for k in 0..=LOG {
        let survival = 10f64.powf(-decades * k as f64 / LOG as f64);
        // The sample after which P(X > x) <= survival.
        let above = (survival * n as f64).ceil() as usize;
        idx.push(n.saturating_sub(above.max(1)));
    }
    idx.push(n - 1);
    idx.sort_unstable();
    idx.dedup();
    idx
}

/// Step points `(latency ms, F)` of the empirical CDF `F(x) = P(X <= x)` of a sorted
/// series, clipped at `x_max`.
pub(crate) fn cdf_points(sorted_us: &[u64], x_max: f64) -> Vec<(f64, f64)> {
    let n = sorted_us.len();
    let mut pts = Vec::new();
    let mut prev = 0.0;
    for i in plot_indices(n) {
        let x = sorted_us[i] as f64 / 1000.0;
        if x > x_max {
            pts.push((x_max, prev));
            return pts;
        }
        let f = (i + 1) as f64 / n as f64;
        pts.push((x, prev));
        pts.push((x, f));
        prev = f;
    }
    pts.push((x_max, prev));
    pts
}

/// Step points `(latency ms, P(X > x))` of a sorted series for a log-scale tail view;
/// the curve stops with a drop to [`TAIL_FLOOR`] where it goes below it.
pub(crate) fn ccdf_points(sorted_us: &[u64]) -> Vec<(f64, f64)> {
    let n = sorted_us.len();
    let mut pts = Vec::new();
    let mut prev = 1.0;
    for i in plot_indices(n) {
        let x = sorted_us[i] as f64 / 1000.0;
        let s = (n - 1 - i) as f64 / n as f64;
        pts.push((x, prev));
        if s < TAIL_FLOOR {
            pts.push((x, TAIL_FLOOR));
            return pts;
        }
        pts.push((x, s));
        prev = s;
    }
    pts
}

fn has_samples(p: &ProtocolPlot<'_>) -> bool {
    p.samples.is_some_and(|s| !s.is_empty())
}

fn samples_of<'a>(p: &ProtocolPlot<'a>) -> &'a [u64] {
    p.samples.map_or(&[], |s| s.latencies_us.as_slice())
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The x range of the distribution plots: from just below the smallest latency (so a
/// constant propagation delay does not waste the width) to `hi`.
fn latency_axis<'a>(protos: impl Iterator<Item = &'a ProtocolPlot<'a>>, hi: f64) -> Range<f64> {
    let lo = protos
        .filter_map(|p| samples_of(p).first())
        .map(|&us| ms(us))
        .fold(f64::INFINITY, f64::min);
    let start = if lo.is_finite() && lo < hi {
        (lo - 0.04 * (hi - lo)).max(0.0).floor()
    } else {
        0.0
    };
    padded(start, hi, 0.0)
}

fn line_swatch(p: &ProtocolPlot<'_>) -> Swatch {
    Swatch::Line(p.color, p.run.model)
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

/// Draws `points` as protocol `p`'s line: solid for implementations, dashed for models (so
/// that curves lying on top of each other stay visible and models stand out).
fn draw_line<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    p: &ProtocolPlot<'_>,
    points: Vec<(f64, f64)>,
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = p.color.stroke_width(2);
    if p.run.model {
        chart
            .draw_series(DashedLineSeries::new(points, DASH, GAP, style))
            .map_err(err)?;
    } else {
        chart
            .draw_series(LineSeries::new(points, style))
            .map_err(err)?;
    }
    Ok(())
}

/// Plot 1: latency CDF per protocol, linear axes, x cut just past the largest p99 (the
/// tail view shows the rest).
pub(crate) fn latency_cdf(panels: &[Panel<'_>]) -> PlotResult {
    let title = "Latency CDF (all classes)";
    if !all_protos(panels).any(has_samples) {
        return message_figure(title, "No message was delivered: nothing to plot.");
    }
    let x_max = all_protos(panels)
        .filter(|p| has_samples(p))
        .map(|p| p.run.latency_ms.p99)
        .fold(0.0, f64::max)
        * 1.1;
    let x_range = latency_axis(all_protos(panels), x_max.max(0.001));
    let legend = legend_entries(all_protos(panels).filter(|p| has_samples(p)), line_swatch);
    draw_figure(title, panels, &legend, |area, panel, caption, st| {
        let mut chart = ChartBuilder::on(area)
            .caption(caption, (FONT, st.caption))
            .margin(10)
            .x_label_area_size(st.x_area)
            .y_label_area_size(st.y_area)
            .build_cartesian_2d(x_range.clone(), 0.0..1.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("latency (ms)")
            .y_desc("fraction delivered ≤ x")
            .axis_desc_style((FONT, st.desc))
            .label_style((FONT, st.label))
            .max_light_lines(1)
            .x_label_formatter(&|v| num_tick(*v))
            .y_label_formatter(&|v| num_tick(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for p in drawing_order(&panel.protos) {
            draw_line(&mut chart, p, cdf_points(samples_of(p), x_range.end))?;
        }
        Ok(())
    })
}

/// Plot 2: complementary CDF on a log y axis down to [`TAIL_FLOOR`].
pub(crate) fn latency_tail(panels: &[Panel<'_>]) -> PlotResult {
    let title = "Latency tail: P(latency > x), log scale";
    if !all_protos(panels).any(has_samples) {
        return message_figure(title, "No message was delivered: nothing to plot.");
    }
    // Up to where the last curve reaches the floor (or its largest latency).
    let x_max = all_protos(panels)
        .filter_map(|p| ccdf_points(samples_of(p)).last().map(|&(x, _)| x))
        .fold(0.0, f64::max)
        * 1.03;
    let x_range = latency_axis(all_protos(panels), x_max.max(0.001));
    let legend = legend_entries(all_protos(panels).filter(|p| has_samples(p)), line_swatch);
    draw_figure(title, panels, &legend, |area, panel, caption, st| {
        let mut chart = ChartBuilder::on(area)
            .caption(caption, (FONT, st.caption))
            .margin(10)
            .x_label_area_size(st.x_area)
            .y_label_area_size(st.y_area)
            // Slightly below the floor so that its tick (1e-4) is drawn and labelled.
            .build_cartesian_2d(x_range.clone(), (TAIL_FLOOR * 0.8..1.0).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("latency (ms)")
            .y_desc("P(latency > x)")
            .axis_desc_style((FONT, st.desc))
            .label_style((FONT, st.label))
            .x_label_formatter(&|v| num_tick(*v))
            .y_label_formatter(&|v| log_tick(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        // Reference lines at the p99 and p99.9 levels.
        for (level, label) in [(1e-2, "p99"), (1e-3, "p99.9")] {
            chart
                .draw_series(LineSeries::new(
                    vec![(x_range.start, level), (x_range.end, level)],
                    RGBColor(150, 150, 150).stroke_width(1),
                ))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (x_range.end, level),
                    (FONT, 13)
                        .into_font()
                        .color(&RGBColor(110, 110, 110))
                        .pos(Pos::new(HPos::Right, VPos::Bottom)),
                )))
                .map_err(err)?;
        }
        for p in drawing_order(&panel.protos) {
            draw_line(&mut chart, p, ccdf_points(samples_of(p)))?;
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// Scatter

/// Axis-aligned pixel box, for label placement.
#[derive(Debug, Clone, Copy)]
struct PixBox {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl PixBox {
    fn overlaps(&self, o: &PixBox) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn inside(&self, o: &PixBox) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

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
    let x_range = (rmin - 0.08 * span)..(rmax + 0.3 * span);
    let ymax = pts
        .iter()
        .map(|p| p.run.latency_ms.p999)
        .fold(0.0, f64::max)
        .max(0.001)
        * 1.2;
    let legend = legend_entries(pts.iter().copied(), |p| Swatch::Dot(p.color));
    let single = [Panel {
        title: None,
        protos: Vec::new(),
    }];
    draw_figure(title, &single, &legend, |area, _, caption, st| {
        let mut chart = ChartBuilder::on(area)
            .caption(caption, (FONT, st.caption))
            .margin(12)
            .x_label_area_size(st.x_area)
            .y_label_area_size(st.y_area)
            .build_cartesian_2d(x_range.clone(), 0.0..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("redundancy (payload bytes sent / unique payload bytes − 1)")
            .y_desc("p99.9 latency (ms)")
            .axis_desc_style((FONT, st.desc))
            .label_style((FONT, st.label))
            .max_light_lines(1)
            .x_label_formatter(&|v| num_tick(*v))
            .y_label_formatter(&|v| num_tick(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        let at = |p: &ProtocolPlot<'_>| (p.run.redundancy, p.run.latency_ms.p999);
        if sweep {
            // Join each protocol's points in sweep order.
            for (label, _) in &legend {
                let line: Vec<&&ProtocolPlot<'_>> =
                    pts.iter().filter(|p| p.label == label).collect();
                if let Some(first) = line.first() {
                    chart
                        .draw_series(LineSeries::new(
                            line.iter().map(|p| at(p)),
                            first.color.mix(0.6).stroke_width(1),
                        ))
                        .map_err(err)?;
                }
            }
        }
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let bounds = PixBox {
            x0: xr.start,
            y0: yr.start,
            x1: xr.end,
            y1: yr.end,
        };
        // Obstacles: the points themselves, then each placed label.
        let centers: Vec<(i32, i32)> = pts.iter().map(|p| chart.backend_coord(&at(p))).collect();
        let mut taken: Vec<PixBox> = centers
            .iter()
            .map(|&(x, y)| PixBox {
                x0: x - 7,
                y0: y - 7,
                x1: x + 7,
                y1: y + 7,
            })
            .collect();
        let font_size = if sweep { 13.0 } else { 15.0 };
        let h = 16;
        for (p, &(cx, cy)) in pts.iter().zip(&centers) {
            chart
                .draw_series(std::iter::once(Circle::new(at(p), 7, p.color.filled())))
                .map_err(err)?;
            let text = if sweep {
                p.point.unwrap_or(p.full_label)
            } else {
                p.full_label
            };
            let w = text_width(text, font_size);
            // Candidate offsets of the label's anchor from the point: right, left, then
            // stepping away above and below; a label off its point gets a leader line.
            let mut candidates: Vec<(i32, i32, HPos)> = Vec::new();
            for step in 0..8 {
                for dy in [-18 * step, 18 * step] {
                    candidates.push((11, dy, HPos::Left));
                    candidates.push((-11, dy, HPos::Right));
                    if step == 0 {
                        break;
                    }
                }
            }
            let boxed = |(dx, dy, hpos): (i32, i32, HPos)| {
                let (x0, x1) = match hpos {
                    HPos::Left => (cx + dx, cx + dx + w),
                    _ => (cx + dx - w, cx + dx),
                };
                PixBox {
                    x0,
                    y0: cy + dy - h / 2,
                    x1,
                    y1: cy + dy + h / 2,
                }
            };
            let clashes = |c: (i32, i32, HPos)| {
                let b = boxed(c);
                taken.iter().filter(|t| t.overlaps(&b)).count()
            };
            let inside: Vec<(i32, i32, HPos)> = candidates
                .iter()
                .copied()
                .filter(|&c| boxed(c).inside(&bounds))
                .collect();
            // The first free place, else the least crowded one (first on ties).
            let chosen = inside
                .iter()
                .copied()
                .find(|&c| clashes(c) == 0)
                .or_else(|| inside.iter().copied().min_by_key(|&c| clashes(c)))
                .unwrap_or(candidates[0]);
            taken.push(boxed(chosen));
            let (dx, dy, hpos) = chosen;
            if dy != 0 {
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at(at(p))
                            + PathElement::new(
                                vec![(0, 0), (dx, dy)],
                                RGBColor(150, 150, 150).stroke_width(1),
                            ),
                    ))
                    .map_err(err)?;
            }
            let style = (FONT, font_size)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(hpos, VPos::Center));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(at(p)) + Text::new(text.to_owned(), (dx, dy), style),
                ))
                .map_err(err)?;
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// Bars

/// A grouped bar chart: per panel, one group per category and one bar per protocol within
/// a group.
pub(crate) struct GroupedBars<'a> {
    /// Figure title.
    pub(crate) title: &'a str,
    /// Y-axis description, with unit.
    pub(crate) y_desc: &'a str,
    /// X-axis description.
    pub(crate) x_desc: &'a str,
    /// The groups of each panel (aligned with the panels; bar `i` of a group belongs to
    /// the panel's protocol `i`).
    pub(crate) groups: &'a [Vec<BarGroup>],
    /// Legend entries for the solid bars and the light "behind" bars, if both are used.
    pub(crate) layer_names: Option<(&'a str, &'a str)>,
    /// Formatter of axis ticks and value labels.
    pub(crate) fmt: &'a dyn Fn(f64) -> String,
    /// Whether to write values above the bars (`main` or `main / behind`), where they fit.
    pub(crate) value_labels: bool,
}

/// Draws a [`GroupedBars`] figure over `panels`, with one y range for all panels.
pub(crate) fn grouped_bars(spec: &GroupedBars<'_>, panels: &[Panel<'_>]) -> PlotResult {
    let ymax = spec
        .groups
        .iter()
        .flatten()
        .flat_map(|g| g.values.iter().flatten())
        .map(|v| v.main.max(v.behind.unwrap_or(0.0)))
        .fold(0.0, f64::max);
    if spec.groups.iter().all(Vec::is_empty) || all_protos(panels).next().is_none() {
        return message_figure(spec.title, "Nothing to plot.");
    }
    let ymax = if ymax > 0.0 { ymax * 1.12 } else { 1.0 };
    let mut legend = legend_entries(all_protos(panels), |p| Swatch::Bar(p.color));
    if let Some((main, behind)) = spec.layer_names {
        let grey = RGBColor(110, 110, 110);
        legend.push((main.to_owned(), Swatch::Bar(grey)));
        legend.push((behind.to_owned(), Swatch::LightBar(grey)));
    }
    let mut panel_index = 0usize;
    draw_figure(spec.title, panels, &legend, |area, panel, caption, st| {
        let groups: &[BarGroup] = spec.groups.get(panel_index).map_or(&[], Vec::as_slice);
        panel_index += 1;
        let axis = CategoryAxis {
            labels: groups.iter().map(|g| g.label.clone()).collect(),
        };
        let mut chart = ChartBuilder::on(area)
            .caption(caption, (FONT, st.caption))
            .margin(10)
            .x_label_area_size(st.x_area)
            .y_label_area_size(st.y_area)
            .build_cartesian_2d(axis.clone(), 0.0..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(spec.x_desc)
            .y_desc(spec.y_desc)
            .axis_desc_style((FONT, st.desc))
            .label_style((FONT, st.label))
            .max_light_lines(1)
            .y_label_formatter(&|v| (spec.fmt)(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        let k = panel.protos.len().max(1) as f64;
        let (xr, _) = chart.plotting_area().get_pixel_range();
        let px_per_unit = (xr.end - xr.start) as f64 / axis.n();
        // Bars share 80% of a group, but none is wider than MAX_BAR_PX; the group's bars
        // stay centred.
        const MAX_BAR_PX: f64 = 90.0;
        let slot = (0.8 / k).min(MAX_BAR_PX / px_per_unit.max(1.0));
        let slot_px = px_per_unit * slot;
        let left = 0.5 - slot * k / 2.0;
        for (gi, g) in groups.iter().enumerate() {
            for (pi, (p, v)) in panel.protos.iter().zip(&g.values).enumerate() {
                let Some(v) = v else { continue };
                let x0 = gi as f64 + left + pi as f64 * slot + 0.08 * slot;
                let x1 = gi as f64 + left + (pi + 1) as f64 * slot - 0.08 * slot;
                if let Some(b) = v.behind {
                    chart
                        .draw_series([
                            Rectangle::new([(x0, 0.0), (x1, b)], p.color.mix(0.3).filled()),
                            Rectangle::new([(x0, 0.0), (x1, b)], p.color.stroke_width(1)),
                        ])
                        .map_err(err)?;
                }
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, v.main)],
                        p.color.filled(),
                    )))
                    .map_err(err)?;
                if spec.value_labels {
                    let text = match v.behind {
                        Some(b) => format!("{} / {}", (spec.fmt)(v.main), (spec.fmt)(b)),
                        None => (spec.fmt)(v.main),
                    };
                    if f64::from(text_width(&text, 13.0)) + 4.0 <= slot_px {
                        let top = v.main.max(v.behind.unwrap_or(0.0));
                        chart
                            .draw_series(std::iter::once(Text::new(
                                text,
                                ((x0 + x1) / 2.0, top),
                                (FONT, 13)
                                    .into_font()
                                    .color(&BLACK)
                                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
                            )))
                            .map_err(err)?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// Horizontal bars of bytes on the wire per protocol (all panels' protocols, full names),
/// labelled with kB and packets.
pub(crate) fn wire_bytes(panels: &[Panel<'_>]) -> PlotResult {
    let title = "Bytes on the wire (headers included)";
    let protos: Vec<&ProtocolPlot<'_>> = all_protos(panels).collect();
    if protos.is_empty() {
        return message_figure(title, "No protocol: nothing to plot.");
    }
    let n = protos.len();
    // Protocol 0 at the top: the y axis grows upwards, so list labels bottom-up.
    let axis = CategoryAxis {
        labels: protos
            .iter()
            .rev()
            .map(|p| p.full_label.to_owned())
            .collect(),
    };
    let kb: Vec<f64> = protos
        .iter()
        .map(|p| p.run.wire.bytes as f64 / 1000.0)
        .collect();
    let xmax = kb.iter().copied().fold(0.0, f64::max);
    let xmax = if xmax > 0.0 { xmax * 1.4 } else { 1.0 };
    let longest = protos
        .iter()
        .map(|p| text_width(p.full_label, 14.0))
        .max()
        .unwrap_or(0);
    let per_bar = if n > 8 { 30 } else { 46 };
    let height = (n as u32 * per_bar + 130).max(220);
    svg(height, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 22))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(48)
            .y_label_area_size((longest + 24).clamp(60, 420) as u32)
            .build_cartesian_2d(0.0..xmax, axis)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("kB on the wire (1 kB = 1000 bytes)")
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 14))
            .max_light_lines(1)
            .x_label_formatter(&|v| num_tick(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for (i, (p, &v)) in protos.iter().zip(&kb).enumerate() {
            let pos = (n - 1 - i) as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, pos + 0.2), (v, pos + 0.8)],
                    p.color.filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((v, pos + 0.5))
                        + Text::new(
                            format!("{v:.1} kB · {} packets", p.run.wire.packets),
                            (6, 0),
                            (FONT, 14)
                                .into_font()
                                .color(&BLACK)
                                .pos(Pos::new(HPos::Left, VPos::Center)),
                        ),
                ))
                .map_err(err)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_cover_small_series_fully() {
        assert_eq!(plot_indices(5), vec![0, 1, 2, 3, 4]);
        assert!(plot_indices(0).is_empty());
    }

    #[test]
    fn indices_of_large_series_keep_the_tail() {
        let n = 1_000_000;
        let idx = plot_indices(n);
        assert!(idx.len() <= 803);
        assert_eq!(idx[0], 0);
        assert_eq!(*idx.last().unwrap(), n - 1);
        assert!(idx.windows(2).all(|w| w[0] < w[1]));
        // The p99.99 rank (survival 1e-4) is present.
        assert!(idx.contains(&(n - 100)));
    }

    #[test]
    fn cdf_steps_end_at_one() {
        let s = [1000, 2000, 3000, 4000];
        let pts = cdf_points(&s, 10.0);
        assert_eq!(pts.first(), Some(&(1.0, 0.0)));
        assert_eq!(pts.last(), Some(&(10.0, 1.0)));
        let clipped = cdf_points(&s, 2.5);
        assert_eq!(clipped.last(), Some(&(2.5, 0.5)));
    }

    #[test]
    fn ccdf_stops_at_floor() {
        let s = [1000, 2000];
        let pts = ccdf_points(&s);
        assert_eq!(
            pts,
            vec![(1.0, 1.0), (1.0, 0.5), (2.0, 0.5), (2.0, TAIL_FLOOR)]
        );
    }

    #[test]
    fn tick_formats() {
        assert_eq!(log_tick(1.0), "1");
        assert_eq!(log_tick(0.1), "0.1");
        assert_eq!(log_tick(0.001), "1e-3");
        assert_eq!(num_tick(250.0), "250");
        assert_eq!(num_tick(0.25), "0.25");
        assert_eq!(num_tick(2.5), "2.5");
    }
}
