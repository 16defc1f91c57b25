//! The cost figure: p99.9 latency against redundancy, one labelled point per
//! protocol (per sweep point), labels placed where they do not overlap.

use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{all_protos, draw_figure, legend_entries, message_figure, Swatch};
use super::style::{self, num_tick, text_width, FONT, GUIDE};
use super::{err, Panel, PlotResult, ProtocolPlot};

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
        let mut chart = style::chart(area, caption, st, 12, x_range.clone(), 0.0..ymax)?;
        style::mesh(&mut chart, st)
            .x_desc("redundancy (payload bytes sent / unique payload bytes − 1)")
            .y_desc("p99.9 latency (ms)")
            .max_light_lines(1)
            .x_label_formatter(&|v| num_tick(*v))
            .y_label_formatter(&|v| num_tick(*v))
            .draw()
            .map_err(err)?;
        if sweep {
            join_points(&mut chart, &legend, &pts)?;
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
        for (p, &center) in pts.iter().zip(&centers) {
            chart
                .draw_series(std::iter::once(Circle::new(at(p), 7, p.color.filled())))
                .map_err(err)?;
            let text = if sweep {
                p.point.unwrap_or(p.full_label)
            } else {
                p.full_label
            };
            let w = text_width(text, font_size);
            let (dx, dy, hpos) = place_label(center, w, &bounds, &mut taken);
            if dy != 0 {
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at(at(p))
                            + PathElement::new(vec![(0, 0), (dx, dy)], GUIDE.stroke_width(1)),
                    ))
                    .map_err(err)?;
            }
            let font = (FONT, font_size)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(hpos, VPos::Center));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(at(p)) + Text::new(text.to_owned(), (dx, dy), font),
                ))
                .map_err(err)?;
        }
        Ok(())
    })
}

/// Where a point is drawn: (redundancy, p99.9 latency).
fn at(p: &ProtocolPlot<'_>) -> (f64, f64) {
    (p.run.redundancy, p.run.latency_ms.p999)
}

/// Joins each protocol's points (one per sweep point) in sweep order.
fn join_points<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    legend: &[(String, Swatch)],
    pts: &[&ProtocolPlot<'_>],
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (label, _) in legend {
        let line: Vec<&&ProtocolPlot<'_>> = pts.iter().filter(|p| p.label == label).collect();
        if let Some(first) = line.first() {
            chart
                .draw_series(LineSeries::new(
                    line.iter().map(|p| at(p)),
                    first.color.mix(0.6).stroke_width(1),
                ))
                .map_err(err)?;
        }
    }
    Ok(())
}

/// A label's anchor offset from its point, and the side of the anchor it is on.
type Placement = (i32, i32, HPos);

/// Places a label `w` pixels wide of the point at `center` (`cx`, `cy`): the
/// first free candidate place inside `bounds`, else the least crowded one
/// (first on ties). Its box joins the obstacles in `taken`.
fn place_label(center: (i32, i32), w: i32, bounds: &PixBox, taken: &mut Vec<PixBox>) -> Placement {
    let (cx, cy) = center;
    let h = 16;
    // Candidate offsets of the label's anchor from the point: right, left, then
    // stepping away above and below; a label off its point gets a leader line.
    let mut candidates: Vec<Placement> = Vec::new();
    for step in 0..8 {
        for dy in [-18 * step, 18 * step] {
            candidates.push((11, dy, HPos::Left));
            candidates.push((-11, dy, HPos::Right));
            if step == 0 {
                break;
            }
        }
    }
    let boxed = |(dx, dy, hpos): Placement| {
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
    let clashes = |c: Placement| {
        let b = boxed(c);
        taken.iter().filter(|t| t.overlaps(&b)).count()
    };
    let inside: Vec<Placement> = candidates
        .iter()
        .copied()
        .filter(|&c| boxed(c).inside(bounds))
        .collect();
    let chosen = inside
        .iter()
        .copied()
        .find(|&c| clashes(c) == 0)
        .or_else(|| inside.iter().copied().min_by_key(|&c| clashes(c)))
        .unwrap_or(candidates[0]);
    taken.push(boxed(chosen));
    chosen
}
