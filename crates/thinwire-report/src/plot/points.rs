//! Points: labelled points, one dot per item with its label placed beside it where it
//! overlaps no other dot or label (with a leader line when it had to move away), optionally
//! joined by group (e.g. a protocol's points over a sweep); and estimates with their
//! intervals against a reference on a log scale, each over its tolerance band.

use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{single_figure, Swatch};
use super::style::{self, num_tick, text_width, FONT, GUIDE};
use super::{err, Axes, PlotResult};

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

/// One labelled point.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Where.
    pub at: (f64, f64),
    /// Dot color.
    pub color: RGBColor,
    /// Label text.
    pub label: String,
    /// The group it is joined with (a legend label), when the chart joins points.
    pub group: String,
}

/// What a labelled-points chart shows around its points.
pub struct PointChart<'a> {
    /// Title, axis descriptions and ranges.
    pub axes: Axes<'a>,
    /// Font size of the labels.
    pub font_size: f64,
    /// Whether to join each legend entry's group of points, in order.
    pub join: bool,
    /// Legend entries (their labels are the groups).
    pub legend: &'a [(String, Swatch)],
}

/// Draws `points`, dots first to last, each with its label.
pub fn labelled_points(spec: &PointChart<'_>, points: &[Point]) -> PlotResult {
    let axes = &spec.axes;
    single_figure(axes.title, spec.legend, |area, caption, st| {
        let mut chart = style::chart(
            area,
            caption,
            st,
            12,
            axes.x_range.clone(),
            axes.y_range.clone(),
        )?;
        style::mesh(&mut chart, st)
            .x_desc(axes.x_desc)
            .y_desc(axes.y_desc)
            .max_light_lines(1)
            .x_label_formatter(&|v| num_tick(*v))
            .y_label_formatter(&|v| num_tick(*v))
            .draw()
            .map_err(err)?;
        if spec.join {
            join_points(&mut chart, spec.legend, points)?;
        }
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let bounds = PixBox {
            x0: xr.start,
            y0: yr.start,
            x1: xr.end,
            y1: yr.end,
        };
        // Obstacles: the points themselves, then each placed label.
        let centers: Vec<(i32, i32)> = points.iter().map(|p| chart.backend_coord(&p.at)).collect();
        let mut taken: Vec<PixBox> = centers
            .iter()
            .map(|&(x, y)| PixBox {
                x0: x - 7,
                y0: y - 7,
                x1: x + 7,
                y1: y + 7,
            })
            .collect();
        for (p, &center) in points.iter().zip(&centers) {
            chart
                .draw_series(std::iter::once(Circle::new(p.at, 7, p.color.filled())))
                .map_err(err)?;
            let w = text_width(&p.label, spec.font_size);
            let (dx, dy, hpos) = place_label(center, w, &bounds, &mut taken);
            if dy != 0 {
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at(p.at)
                            + PathElement::new(vec![(0, 0), (dx, dy)], GUIDE.stroke_width(1)),
                    ))
                    .map_err(err)?;
            }
            let font = (FONT, spec.font_size)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(hpos, VPos::Center));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(p.at) + Text::new(p.label.clone(), (dx, dy), font),
                ))
                .map_err(err)?;
        }
        Ok(())
    })
}

/// An estimate at `x`: its value, its interval and the band it should fall in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Position on the x axis.
    pub x: f64,
    /// The estimate (a dot).
    pub value: f64,
    /// Lower end of its interval (a bar through the dot).
    pub lo: f64,
    /// Upper end of its interval.
    pub hi: f64,
    /// The band it should fall in (a light box behind it).
    pub band: (f64, f64),
}

/// What an interval chart shows around its estimates: a log y axis (its range must be
/// positive) with a reference line.
pub struct IntervalChart<'a> {
    /// Title, axis descriptions and ranges.
    pub axes: Axes<'a>,
    /// Number of x tick labels.
    pub x_labels: usize,
    /// X tick label.
    pub x_fmt: &'a dyn Fn(f64) -> String,
    /// The reference level, drawn across the chart.
    pub reference: f64,
    /// Color of the dots and intervals.
    pub color: RGBColor,
    /// Legend entries.
    pub legend: &'a [(String, Swatch)],
}

/// Draws every estimate of `items`: its band, its interval and its dot.
pub fn interval_chart(spec: &IntervalChart<'_>, items: &[Interval]) -> PlotResult {
    let axes = &spec.axes;
    single_figure(axes.title, spec.legend, |area, caption, st| {
        let x_range = axes.x_range.clone();
        let mut chart = style::chart(
            area,
            caption,
            st,
            12,
            x_range.clone(),
            axes.y_range.clone().log_scale(),
        )?;
        style::mesh(&mut chart, st)
            .x_desc(axes.x_desc)
            .y_desc(axes.y_desc)
            .x_labels(spec.x_labels)
            .x_label_formatter(&|v| (spec.x_fmt)(*v))
            .y_label_formatter(&|v| num_tick(*v))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![
                    (x_range.start, spec.reference),
                    (x_range.end, spec.reference),
                ],
                GUIDE.stroke_width(1),
            )))
            .map_err(err)?;
        let c = spec.color;
        for p in items {
            let x = p.x;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.3, p.band.0), (x + 0.3, p.band.1)],
                    GUIDE.mix(0.25).filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, p.lo), (x, p.hi)],
                    c.stroke_width(2),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Circle::new((x, p.value), 5, c.filled())))
                .map_err(err)?;
        }
        Ok(())
    })
}

/// Joins each legend entry's points (its group), in order.
fn join_points<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    legend: &[(String, Swatch)],
    points: &[Point],
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (label, _) in legend {
        let line: Vec<&Point> = points.iter().filter(|p| &p.group == label).collect();
        if let Some(first) = line.first() {
            chart
                .draw_series(LineSeries::new(
                    line.iter().map(|p| p.at),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::style::series_color;

    #[test]
    fn labels_avoid_each_other() {
        let mut taken = Vec::new();
        let bounds = PixBox {
            x0: 0,
            y0: 0,
            x1: 500,
            y1: 500,
        };
        let a = place_label((100, 100), 40, &bounds, &mut taken);
        let b = place_label((100, 100), 40, &bounds, &mut taken);
        assert!(matches!(a, (11, 0, HPos::Left)), "right of the point");
        assert!(!matches!(b, (11, 0, _)), "the second label moves away");
        let legend = [("g".to_owned(), Swatch::Dot(series_color(0)))];
        let pts: Vec<Point> = (0..3)
            .map(|i| Point {
                at: (f64::from(i), 1.0),
                color: series_color(0),
                label: format!("p{i}"),
                group: "g".into(),
            })
            .collect();
        let spec = PointChart {
            axes: Axes {
                title: "t",
                x_desc: "x",
                y_desc: "y",
                x_range: -1.0..4.0,
                y_range: 0.0..2.0,
            },
            font_size: 13.0,
            join: true,
            legend: &legend,
        };
        let svg = labelled_points(&spec, &pts).unwrap();
        assert_eq!(
            svg.matches("<circle").count(),
            4,
            "three dots and the legend's"
        );
    }

    #[test]
    fn intervals_over_their_bands() {
        let fmt = |v: f64| format!("{}", v.round() as i64);
        let spec = IntervalChart {
            axes: Axes {
                title: "t",
                x_desc: "#",
                y_desc: "ours / published",
                x_range: 0.5..2.5,
                y_range: 0.5..2.0,
            },
            x_labels: 2,
            x_fmt: &fmt,
            reference: 1.0,
            color: series_color(0),
            legend: &[],
        };
        let items = [1.0, 2.0].map(|x| Interval {
            x,
            value: 1.1,
            lo: 0.9,
            hi: 1.3,
            band: (0.85, 1.15),
        });
        let svg = interval_chart(&spec, &items).unwrap();
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
