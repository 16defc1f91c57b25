//! Bar charts: grouped bars per category (one bar per series in each group, a light bar
//! behind it and a whisker through it if wanted), and horizontal bars with a note each.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{all_items, draw_figure, legend_entries, message_figure, svg, Panel, Swatch};
use super::style::{self, num_tick, text_width, FONT, MUTED, SINGLE};
use super::{err, PlotResult, Series};

/// A group of a grouped bar chart: a category label and, per series, the bar.
#[derive(Debug, Clone, PartialEq)]
pub struct BarGroup {
    /// Category label shown under the group.
    pub label: String,
    /// One entry per series of the panel (in the panel's order): `None` = no bar.
    pub values: Vec<Option<BarValue>>,
}

/// The height of a bar, optionally a lighter bar drawn behind it and a whisker through it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BarValue {
    /// Height of the solid bar.
    pub main: f64,
    /// Height of the light bar behind it (e.g. p99.9 behind p99).
    pub behind: Option<f64>,
    /// A whisker `(lo, hi)` through the bar (e.g. the range over repetitions).
    pub whisker: Option<(f64, f64)>,
}

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

/// A grouped bar chart: per panel, one group per category and one bar per series within
/// a group.
pub struct GroupedBars<'a> {
    /// Figure title.
    pub title: &'a str,
    /// Y-axis description, with unit.
    pub y_desc: &'a str,
    /// X-axis description.
    pub x_desc: &'a str,
    /// The groups of each panel (aligned with the panels; bar `i` of a group belongs to
    /// the panel's series `i`).
    pub groups: &'a [Vec<BarGroup>],
    /// Legend entries for the solid bars and the light "behind" bars, if both are used.
    pub layer_names: Option<(&'a str, &'a str)>,
    /// Formatter of axis ticks and value labels.
    pub fmt: &'a dyn Fn(f64) -> String,
    /// Whether to write values above the bars (`main` or `main / behind`), where they fit.
    pub value_labels: bool,
}

/// Draws a [`GroupedBars`] figure over `panels` (each panel's series, one bar per group),
/// with one y range for all panels.
pub fn grouped_bars(spec: &GroupedBars<'_>, panels: &[Panel<Series>]) -> PlotResult {
    let ymax = spec
        .groups
        .iter()
        .flatten()
        .flat_map(|g| g.values.iter().flatten())
        .map(|v| {
            v.main
                .max(v.behind.unwrap_or(0.0))
                .max(v.whisker.map_or(0.0, |w| w.1))
        })
        .fold(0.0, f64::max);
    if spec.groups.iter().all(Vec::is_empty) || all_items(panels).next().is_none() {
        return message_figure(spec.title, "Nothing to plot.");
    }
    let ymax = if ymax > 0.0 { ymax * 1.12 } else { 1.0 };
    let mut legend = legend_entries(
        all_items(panels),
        |s| s.label.as_str(),
        |s| Swatch::Bar(s.color),
    );
    if let Some((main, behind)) = spec.layer_names {
        let grey = MUTED;
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
        let mut chart = style::chart(area, caption, st, 10, axis.clone(), 0.0..ymax)?;
        style::mesh(&mut chart, st)
            .disable_x_mesh()
            .x_desc(spec.x_desc)
            .y_desc(spec.y_desc)
            .max_light_lines(1)
            .y_label_formatter(&|v| (spec.fmt)(*v))
            .draw()
            .map_err(err)?;
        let k = panel.items.len().max(1) as f64;
        let (xr, _) = chart.plotting_area().get_pixel_range();
        let px_per_unit = (xr.end - xr.start) as f64 / axis.n();
        // Bars share 80% of a group, but none is wider than MAX_BAR_PX; the group's bars
        // stay centred.
        const MAX_BAR_PX: f64 = 90.0;
        let slot = (0.8 / k).min(MAX_BAR_PX / px_per_unit.max(1.0));
        let slot_px = px_per_unit * slot;
        let left = 0.5 - slot * k / 2.0;
        for (gi, g) in groups.iter().enumerate() {
            for (pi, (p, v)) in panel.items.iter().zip(&g.values).enumerate() {
                let Some(v) = v else { continue };
                let x0 = gi as f64 + left + pi as f64 * slot + 0.08 * slot;
                let x1 = gi as f64 + left + (pi + 1) as f64 * slot - 0.08 * slot;
                draw_bar(&mut chart, (x0, x1), p.color, v, spec, slot_px)?;
            }
        }
        Ok(())
    })
}

/// Draws one bar of a grouped bar chart between `x0` and `x1`: the light bar behind, the
/// solid bar, the whisker and (where it fits in `slot_px`) the value label.
fn draw_bar<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<CategoryAxis, Y>>,
    (x0, x1): (f64, f64),
    color: RGBColor,
    v: &BarValue,
    spec: &GroupedBars<'_>,
    slot_px: f64,
) -> Result<(), String>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    if let Some(b) = v.behind {
        chart
            .draw_series([
                Rectangle::new([(x0, 0.0), (x1, b)], color.mix(0.3).filled()),
                Rectangle::new([(x0, 0.0), (x1, b)], color.stroke_width(1)),
            ])
            .map_err(err)?;
    }
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(x0, 0.0), (x1, v.main)],
            color.filled(),
        )))
        .map_err(err)?;
    if let Some((lo, hi)) = v.whisker {
        let x = (x0 + x1) / 2.0;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, lo), (x, hi)],
                BLACK.stroke_width(2),
            )))
            .map_err(err)?;
    }
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
    Ok(())
}

/// One horizontal bar: a labelled value with a note written after the bar.
#[derive(Debug, Clone, PartialEq)]
pub struct HBar {
    /// Label on the y axis.
    pub label: String,
    /// Length.
    pub value: f64,
    /// Color.
    pub color: RGBColor,
    /// Text after the bar's end.
    pub note: String,
}

/// Horizontal bars, the first at the top, each labelled on the y axis and followed by its
/// note; the x axis (described by `x_desc`) leaves room for the notes.
pub fn horizontal_bars(title: &str, x_desc: &str, bars: &[HBar]) -> PlotResult {
    if bars.is_empty() {
        return message_figure(title, "Nothing to plot.");
    }
    let n = bars.len();
    // Bar 0 at the top: the y axis grows upwards, so list labels bottom-up.
    let axis = CategoryAxis {
        labels: bars.iter().rev().map(|b| b.label.clone()).collect(),
    };
    let xmax = bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let xmax = if xmax > 0.0 { xmax * 1.4 } else { 1.0 };
    let longest = bars
        .iter()
        .map(|b| text_width(&b.label, 14.0))
        .max()
        .unwrap_or(0);
    let per_bar = if n > 8 { 30 } else { 46 };
    let height = (n as u32 * per_bar + 130).max(220);
    svg(height, |root| {
        // One panel, with room on the right for the bars' notes and on the left for
        // the labels.
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, SINGLE.caption))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(SINGLE.x_area)
            .y_label_area_size((longest + 24).clamp(60, 420) as u32)
            .build_cartesian_2d(0.0..xmax, axis)
            .map_err(err)?;
        style::mesh(&mut chart, SINGLE)
            .disable_y_mesh()
            .x_desc(x_desc)
            .max_light_lines(1)
            .x_label_formatter(&|v| num_tick(*v))
            .draw()
            .map_err(err)?;
        for (i, b) in bars.iter().enumerate() {
            let pos = (n - 1 - i) as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, pos + 0.2), (b.value, pos + 0.8)],
                    b.color.filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((b.value, pos + 0.5))
                        + Text::new(
                            b.note.clone(),
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
    use crate::plot::style::series_color;

    #[test]
    fn grouped_bars_with_whiskers_and_horizontal_bars() {
        let fmt = |v: f64| num_tick(v);
        let groups = vec![vec![BarGroup {
            label: "g".into(),
            values: vec![
                Some(BarValue {
                    main: 2.0,
                    behind: Some(3.0),
                    whisker: Some((1.5, 2.5)),
                }),
                None,
            ],
        }]];
        let spec = GroupedBars {
            title: "t",
            y_desc: "y",
            x_desc: "x",
            groups: &groups,
            layer_names: Some(("solid", "light")),
            fmt: &fmt,
            value_labels: true,
        };
        let series = ["a", "b"].map(|l| Series {
            label: l.into(),
            color: series_color(0),
        });
        let svg = grouped_bars(&spec, &[Panel::single(series.to_vec())]).unwrap();
        assert!(svg.contains("<rect") && svg.contains("\nsolid\n") && svg.contains("\ng\n"));
        let none = grouped_bars(&spec, &[Panel::single(Vec::new())]).unwrap();
        assert!(none.contains("Nothing to plot."));
        let bars = [HBar {
            label: "tcp".into(),
            value: 12.5,
            color: series_color(1),
            note: "12.5 kB".into(),
        }];
        let svg = horizontal_bars("w", "kB", &bars).unwrap();
        assert!(svg.contains("\ntcp\n") && svg.contains("12.5 kB"));
        assert!(horizontal_bars("w", "kB", &[])
            .unwrap()
            .contains("Nothing to plot."));
    }
}
