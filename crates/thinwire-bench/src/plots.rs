//! The report's figures, drawn with plotters into SVG strings in the lab's look (its
//! palette, font and sizes): grouped bars with the repetitions' range as whiskers, and
//! lines against the sweep's client count.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::host::Protocol;

/// Width and height of every figure, as the lab's.
const SIZE: (u32, u32) = (960, 460);
/// The lab's font family.
const FONT: &str = "sans-serif";
/// The lab's light grid lines.
const GRID: RGBColor = RGBColor(235, 235, 235);
/// The lab's guide lines (reference levels).
const GUIDE: RGBColor = RGBColor(150, 150, 150);

/// The color of a transport: the first hues of the lab's palette (Okabe-Ito).
pub(crate) fn color(p: Protocol) -> RGBColor {
    match p {
        Protocol::Thinwire => RGBColor(0, 114, 178),
        Protocol::Enet => RGBColor(230, 159, 0),
        Protocol::Kcp => RGBColor(0, 158, 115),
    }
}

/// One transport's values: per category (or x), the smallest, median and largest
/// repetition, `None` where it has none.
pub(crate) type Series = (Protocol, Vec<Option<(f64, f64, f64)>>);

/// A tick label without spurious decimals: `2.5 M`, `800 k`, `33.3`, `5000`.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1} M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0} k", v / 1e3)
    } else if a >= 100.0 || *v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("plot: {e:?}")
}

/// Draws the legend in the lab's style and writes the plot out.
fn finish<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(GUIDE)
        .label_font((FONT, 14))
        .position(position)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Grouped bars: one group per category, one bar per transport (the median), whiskers from
/// the smallest to the largest repetition.
pub(crate) fn bars(
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[Series],
) -> Result<String, String> {
    let hi = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().map(|s| s.2))
        .fold(0.0f64, f64::max);
    let n = categories.len().max(1) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(52)
            .y_label_area_size(84)
            .build_cartesian_2d(0.0..n, 0.0..(hi * 1.12).max(1e-9))
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&tick)
            .light_line_style(GRID)
            .y_desc(y_desc)
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 14))
            .draw()
            .map_err(err)?;
        let k = series.len().max(1) as f64;
        let w = 0.8 / k;
        for (j, (p, vals)) in series.iter().enumerate() {
            let c = color(*p);
            let bars = vals.iter().enumerate().filter_map(|(i, v)| {
                let (_, mid, _) = (*v)?;
                let x0 = i as f64 + 0.1 + j as f64 * w;
                Some(Rectangle::new(
                    [(x0, 0.0), (x0 + w * 0.92, mid)],
                    c.filled(),
                ))
            });
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(p.label())
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled()));
            let whiskers = vals.iter().enumerate().filter_map(|(i, v)| {
                let (lo, _, hi) = (*v)?;
                let x = i as f64 + 0.1 + j as f64 * w + w * 0.46;
                Some(PathElement::new(
                    vec![(x, lo), (x, hi)],
                    BLACK.stroke_width(2),
                ))
            });
            chart.draw_series(whiskers).map_err(err)?;
        }
        let label = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (i, c) in categories.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            root.draw(&Text::new(c.clone(), (x, y + 8), label.clone()))
                .map_err(err)?;
        }
        finish(&root, &mut chart, SeriesLabelPosition::UpperRight)?;
    }
    Ok(svg)
}

/// Lines against x (the sweep's client count), whiskers for the repetitions' range, and an
/// optional horizontal guide (a budget).
pub(crate) fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xs: &[f64],
    series: &[Series],
    guide: Option<(f64, &str)>,
) -> Result<String, String> {
    let hi = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().map(|s| s.2))
        .chain(guide.map(|g| g.0))
        .fold(0.0f64, f64::max);
    let xmax = xs.iter().copied().fold(1.0f64, f64::max) * 1.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(84)
            .build_cartesian_2d(0.0..xmax, 0.0..(hi * 1.12).max(1e-9))
            .map_err(err)?;
        chart
            .configure_mesh()
            .light_line_style(GRID)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 14))
            .draw()
            .map_err(err)?;
        if let Some((y, name)) = guide {
            chart
                .draw_series(LineSeries::new(
                    [(0.0, y), (xmax, y)],
                    GUIDE.stroke_width(2),
                ))
                .map_err(err)?
                .label(name)
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], GUIDE.stroke_width(2))
                });
        }
        for (p, vals) in series {
            let c = color(*p);
            let pts: Vec<(f64, f64, f64, f64)> = xs
                .iter()
                .zip(vals)
                .filter_map(|(&x, v)| v.map(|(lo, mid, hi)| (x, lo, mid, hi)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|&(x, _, m, _)| (x, m)),
                    c.stroke_width(3),
                ))
                .map_err(err)?
                .label(p.label())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(3))
                });
            chart
                .draw_series(
                    pts.iter()
                        .map(|&(x, _, m, _)| Circle::new((x, m), 4, c.filled())),
                )
                .map_err(err)?;
            chart
                .draw_series(pts.iter().map(|&(x, lo, _, hi)| {
                    PathElement::new(vec![(x, lo), (x, hi)], c.stroke_width(2))
                }))
                .map_err(err)?;
        }
        finish(&root, &mut chart, SeriesLabelPosition::UpperLeft)?;
    }
    Ok(svg)
}
