//! Bar charts: grouped bars per category (per-class tails, deadline misses)
//! and horizontal bars of bytes on the wire.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{all_protos, draw_figure, legend_entries, message_figure, svg, Swatch};
use super::style::{self, num_tick, text_width, FONT, MUTED, SINGLE};
use super::{err, BarGroup, Panel, PlotResult, ProtocolPlot};

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
        // One panel, with room on the right for the bars' labels and on the left
        // for the protocol names.
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
            .x_desc("kB on the wire (1 kB = 1000 bytes)")
            .max_light_lines(1)
            .x_label_formatter(&|v| num_tick(*v))
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
