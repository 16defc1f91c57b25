//! The frame of a figure: the SVG canvas, the legend column, the single panel
//! or grid of panels, and the message figure drawn when there is nothing to plot.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{
    text_width, PanelStyle, DASH, FONT, GAP, HEIGHT, MULTI, PANEL_HEIGHT, SINGLE, TITLE_HEIGHT,
    WIDTH,
};
use super::{err, PlotResult};

/// One panel of a figure: the items (lines, bar series) drawn in it, e.g. the protocols
/// of one sweep point.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel<T> {
    /// Panel title (e.g. the sweep point), `None` for a single-panel figure.
    pub title: Option<String>,
    /// What the panel draws.
    pub items: Vec<T>,
}

impl<T> Panel<T> {
    /// The one panel of a figure that is not split.
    pub fn single(items: Vec<T>) -> Panel<T> {
        Panel { title: None, items }
    }
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Swatch {
    /// A line; dashed when the flag is set (models).
    Line(RGBColor, bool),
    /// A solid bar.
    Bar(RGBColor),
    /// A light bar (drawn behind a solid one).
    LightBar(RGBColor),
    /// A dot.
    Dot(RGBColor),
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

/// Draws into a fresh SVG of [`WIDTH`] x `height` and returns its text.
pub fn svg<F>(height: u32, draw: F) -> PlotResult
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
pub fn message_figure(title: &str, message: &str) -> PlotResult {
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
pub fn padded(lo: f64, hi: f64, pad_frac: f64) -> Range<f64> {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
    let pad = (hi - lo) * pad_frac;
    (lo - pad)..(hi + pad)
}

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

/// Draws a figure: a legend column on the right and, on the left, one panel (captioned
/// with `title`) or a titled two-column grid of panels (captioned with their titles).
/// `draw_panel` draws one panel into its area, with its caption and text sizes.
pub fn draw_figure<T, F>(
    title: &str,
    panels: &[Panel<T>],
    legend: &[(String, Swatch)],
    mut draw_panel: F,
) -> PlotResult
where
    F: for<'b> FnMut(
        &DrawingArea<SVGBackend<'b>, Shift>,
        &Panel<T>,
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

/// A figure of one untitled panel (captioned with `title`) beside its legend; `draw`
/// draws the panel into its area.
pub fn single_figure<F>(title: &str, legend: &[(String, Swatch)], mut draw: F) -> PlotResult
where
    F: for<'b> FnMut(&DrawingArea<SVGBackend<'b>, Shift>, &str, PanelStyle) -> Result<(), String>,
{
    let single = [Panel::<()>::single(Vec::new())];
    draw_figure(title, &single, legend, |area, _, caption, st| {
        draw(area, caption, st)
    })
}

/// The items of all panels, in order.
pub fn all_items<T>(panels: &[Panel<T>]) -> impl Iterator<Item = &T> {
    panels.iter().flat_map(|p| p.items.iter())
}

/// Legend entries: each distinct `label` of `items` once, in order of first appearance,
/// drawn as `swatch` says.
pub fn legend_entries<'a, T: 'a>(
    items: impl Iterator<Item = &'a T>,
    label: impl Fn(&T) -> &str,
    swatch: impl Fn(&T) -> Swatch,
) -> Vec<(String, Swatch)> {
    let mut out: Vec<(String, Swatch)> = Vec::new();
    for p in items {
        let l = label(p);
        if !out.iter().any(|(o, _)| o == l) {
            out.push((l.to_owned(), swatch(p)));
        }
    }
    out
}
