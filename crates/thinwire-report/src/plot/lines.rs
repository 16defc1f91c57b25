//! Lines against x: curves (e.g. a latency CDF as steps), lines through measured points
//! with markers and whiskers (a confidence interval, the repetitions' range), and
//! horizontal guide levels; linear or log y; one panel or a grid of them.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{draw_figure, Panel, Swatch};
use super::style::{self, PanelStyle, DASH, FONT, GAP, GUIDE, MUTED};
use super::{err, Axes, PlotResult};

/// How the y axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YScale {
    /// Linear.
    Linear,
    /// Logarithmic (the range must be positive).
    Log,
}

/// A horizontal guide line across a panel at `y` (a reference level such as p99, a budget).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level<'a> {
    /// Where.
    pub y: f64,
    /// Text at the line's right end (above it), if any.
    pub label: Option<&'a str>,
    /// Stroke width in pixels.
    pub width: u32,
}

/// A marker on a line: a dot, and a whisker through it (a vertical bar from `lo` to `hi`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    /// Where the dot is.
    pub at: (f64, f64),
    /// Dot radius in pixels.
    pub radius: u32,
    /// The whisker's `(lo, hi)`, if any.
    pub whisker: Option<(f64, f64)>,
}

/// One line of a panel: drawn through `points`, then its marks (each dot, then its
/// whisker).
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Color of the line, its dots and whiskers.
    pub color: RGBColor,
    /// Dashed (e.g. a model) rather than solid.
    pub dashed: bool,
    /// Stroke width of the line, in pixels.
    pub width: u32,
    /// The line's points, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// Markers along it.
    pub marks: Vec<Mark>,
    /// Stroke width of the whiskers, in pixels.
    pub whisker_width: u32,
}

impl Line {
    /// A plain line (no marks) through `points`.
    pub fn new(color: RGBColor, dashed: bool, width: u32, points: Vec<(f64, f64)>) -> Line {
        Line {
            color,
            dashed,
            width,
            points,
            marks: Vec::new(),
            whisker_width: 1,
        }
    }
}

/// What a line chart shows around its lines: title, axes, guide levels and legend.
pub struct LineChart<'a> {
    /// Title, axis descriptions and ranges.
    pub axes: Axes<'a>,
    /// Y scale.
    pub y_scale: YScale,
    /// Margin around each panel's chart, in pixels.
    pub margin: u32,
    /// Number of x tick labels (`None`: plotters' choice).
    pub x_labels: Option<usize>,
    /// Light grid lines between bold ones (`None`: plotters' default).
    pub max_light_lines: Option<usize>,
    /// X tick label.
    pub x_fmt: &'a dyn Fn(f64) -> String,
    /// Y tick label.
    pub y_fmt: &'a dyn Fn(f64) -> String,
    /// Guide levels, drawn under the lines.
    pub levels: &'a [Level<'a>],
    /// Legend entries.
    pub legend: &'a [(String, Swatch)],
}

/// Draws `panels` of lines (in order, so later lines lie on top) with one set of axes.
pub fn line_chart(spec: &LineChart<'_>, panels: &[Panel<Line>]) -> PlotResult {
    let y_range = spec.axes.y_range.clone();
    draw_figure(
        spec.axes.title,
        panels,
        spec.legend,
        |area, panel, caption, st| match spec.y_scale {
            YScale::Linear => draw_panel(spec, area, panel, caption, st, y_range.clone()),
            YScale::Log => draw_panel(spec, area, panel, caption, st, y_range.clone().log_scale()),
        },
    )
}

fn draw_panel<Y>(
    spec: &LineChart<'_>,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    panel: &Panel<Line>,
    caption: &str,
    st: PanelStyle,
    y: Y,
) -> Result<(), String>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let x_range = spec.axes.x_range.clone();
    let mut chart = style::chart(area, caption, st, spec.margin, x_range.clone(), y)?;
    let x_fmt = |v: &f64| (spec.x_fmt)(*v);
    let y_fmt = |v: &f64| (spec.y_fmt)(*v);
    let mut mesh = style::mesh(&mut chart, st);
    mesh.x_desc(spec.axes.x_desc).y_desc(spec.axes.y_desc);
    if let Some(n) = spec.max_light_lines {
        mesh.max_light_lines(n);
    }
    if let Some(n) = spec.x_labels {
        mesh.x_labels(n);
    }
    mesh.x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(err)?;
    for level in spec.levels {
        chart
            .draw_series(LineSeries::new(
                vec![(x_range.start, level.y), (x_range.end, level.y)],
                GUIDE.stroke_width(level.width),
            ))
            .map_err(err)?;
        if let Some(label) = level.label {
            chart
                .draw_series(std::iter::once(Text::new(
                    label.to_owned(),
                    (x_range.end, level.y),
                    (FONT, 13)
                        .into_font()
                        .color(&MUTED)
                        .pos(Pos::new(HPos::Right, VPos::Bottom)),
                )))
                .map_err(err)?;
        }
    }
    for line in &panel.items {
        let stroke = line.color.stroke_width(line.width);
        let points = line.points.iter().copied();
        if line.dashed {
            chart
                .draw_series(DashedLineSeries::new(points, DASH, GAP, stroke))
                .map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(points, stroke))
                .map_err(err)?;
        }
        for m in &line.marks {
            chart
                .draw_series(std::iter::once(Circle::new(
                    m.at,
                    m.radius,
                    line.color.filled(),
                )))
                .map_err(err)?;
            if let Some((lo, hi)) = m.whisker {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(m.at.0, lo), (m.at.0, hi)],
                        line.color.stroke_width(line.whisker_width),
                    )))
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::style::{num_tick, series_color};

    #[test]
    fn draws_lines_marks_and_levels() {
        let fmt = |v: f64| num_tick(v);
        let legend = [("a".to_owned(), Swatch::Line(series_color(0), true))];
        let spec = LineChart {
            axes: Axes {
                title: "t",
                x_desc: "x",
                y_desc: "y",
                x_range: 0.0..10.0,
                y_range: 0.001..1.0,
            },
            y_scale: YScale::Log,
            margin: 10,
            x_labels: None,
            max_light_lines: Some(1),
            x_fmt: &fmt,
            y_fmt: &fmt,
            levels: &[Level {
                y: 0.01,
                label: Some("p99"),
                width: 1,
            }],
            legend: &legend,
        };
        let mut line = Line::new(series_color(0), true, 2, vec![(1.0, 1.0), (5.0, 0.01)]);
        line.marks.push(Mark {
            at: (5.0, 0.01),
            radius: 4,
            whisker: Some((0.005, 0.02)),
        });
        let svg = line_chart(&spec, &[Panel::single(vec![line])]).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("p99") && svg.contains("<circle"));
        assert!(svg.contains("stroke-dasharray") || svg.matches("<polyline").count() > 1);
    }
}
