//! The paper figures: ours over published per figure (with the 95%
//! confidence interval and the tolerance band), and a published ranking as
//! curves over the sweep points (with confidence intervals).

use thinwire_report::plot::frame::message_figure;
use thinwire_report::plot::lines::{line_chart, Line, LineChart, Mark, YScale};
use thinwire_report::plot::points::{interval_chart, Interval, IntervalChart};
use thinwire_report::plot::style::{num_tick, series_color, GUIDE};
use thinwire_report::plot::{Axes, Panel, Swatch};

use super::PlotResult;
use crate::paper::{Comparison, OrderComparison, Tolerance};

/// One point of the ratio figure: ours / published with its interval and band.
struct RatioPoint {
    ratio: f64,
    lo: f64,
    hi: f64,
    band: (f64, f64),
}

fn ratio_point(c: &Comparison) -> Option<RatioPoint> {
    let e = c.ours()?;
    let v = c.published.value;
    if v <= 0.0 || e.mean <= 0.0 {
        return None;
    }
    let h = e.ci95.unwrap_or(0.0);
    let band = match c.published.tolerance {
        Tolerance::Relative(f) => (1.0 - f, 1.0 + f),
        Tolerance::Absolute(a) => ((v - a) / v, (v + a) / v),
    };
    Some(RatioPoint {
        ratio: e.mean / v,
        lo: ((e.mean - h) / v).max(1e-6),
        hi: (e.mean + h) / v,
        band: (band.0.max(1e-6), band.1),
    })
}

/// Ours over published for every figure (numbered as in the table), on a log
/// scale, with the tolerance band in grey and the 95% interval as a bar.
pub(crate) fn published_ratios(comparisons: &[Comparison]) -> PlotResult {
    let title = "ours / published (1 = the paper's figure; grey: tolerance; bar: 95% CI)";
    let pts: Vec<(usize, RatioPoint)> = comparisons
        .iter()
        .enumerate()
        .filter_map(|(i, c)| ratio_point(c).map(|p| (i + 1, p)))
        .collect();
    if pts.is_empty() {
        return message_figure(
            title,
            "No published figure with a positive value was measured.",
        );
    }
    let lo = pts
        .iter()
        .map(|(_, p)| p.lo.min(p.band.0).min(p.ratio))
        .fold(1.0, f64::min)
        / 1.3;
    let hi = pts
        .iter()
        .map(|(_, p)| p.hi.max(p.band.1).max(p.ratio))
        .fold(1.0, f64::max)
        * 1.3;
    let n = comparisons.len();
    let legend = [
        ("ours / published".to_owned(), Swatch::Dot(series_color(0))),
        ("tolerance".to_owned(), Swatch::LightBar(GUIDE)),
    ];
    let items: Vec<Interval> = pts
        .iter()
        .map(|(i, p)| Interval {
            x: *i as f64,
            value: p.ratio,
            lo: p.lo,
            hi: p.hi,
            band: p.band,
        })
        .collect();
    let spec = IntervalChart {
        axes: Axes {
            title,
            x_desc: "published figure (# in the table)",
            y_desc: "ours / published",
            x_range: 0.5..(n as f64 + 0.5),
            y_range: lo..hi,
        },
        x_labels: n.min(30),
        x_fmt: &|v| format!("{}", v.round() as i64),
        reference: 1.0,
        color: series_color(0),
        legend: &legend,
    };
    interval_chart(&spec, &items)
}

/// A published ranking as one curve per protocol over the sweep points, with
/// the 95% interval of every point.
pub(crate) fn order_curves(order: &OrderComparison, unit: &str) -> PlotResult {
    let title = format!("{} ({})", order.order.what, order.order.metric.name());
    let n = order.checks.len();
    let all: Vec<f64> = order
        .checks
        .iter()
        .flat_map(|c| c.values.iter().filter_map(|v| v.1))
        .flat_map(|e| {
            [
                e.mean - e.ci95.unwrap_or(0.0),
                e.mean + e.ci95.unwrap_or(0.0),
            ]
        })
        .collect();
    if n == 0 || all.is_empty() {
        return message_figure(&title, "The ranking's protocols were not measured.");
    }
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max) * 1.1 + 1e-9;
    let labels: Vec<String> = order.checks.iter().map(|c| c.point.clone()).collect();
    let legend: Vec<(String, Swatch)> = order
        .order
        .protocols
        .iter()
        .enumerate()
        .map(|(i, p)| (p.clone(), Swatch::Line(series_color(i), false)))
        .collect();
    let lines: Vec<Line> = order
        .order
        .protocols
        .iter()
        .enumerate()
        .map(|(pi, p)| {
            let pts: Vec<(f64, f64, f64)> = order
                .checks
                .iter()
                .enumerate()
                .filter_map(|(x, chk)| {
                    let e = chk.values.iter().find(|v| &v.0 == p)?.1?;
                    Some((x as f64, e.mean, e.ci95.unwrap_or(0.0)))
                })
                .collect();
            let mut line = Line::new(
                series_color(pi),
                false,
                2,
                pts.iter().map(|&(x, y, _)| (x, y)).collect(),
            );
            line.marks = pts
                .iter()
                .map(|&(x, y, h)| Mark {
                    at: (x, y),
                    radius: 4,
                    whisker: (h > 0.0).then_some((y - h, y + h)),
                })
                .collect();
            line
        })
        .collect();
    let x_fmt = |v: f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let spec = LineChart {
        axes: Axes {
            title: &title,
            x_desc: "sweep point",
            y_desc: unit,
            x_range: if n == 1 {
                -0.5..0.5
            } else {
                -0.2..(n as f64 - 0.8)
            },
            y_range: lo..hi,
        },
        y_scale: YScale::Linear,
        margin: 12,
        x_labels: Some(n.min(20)),
        max_light_lines: None,
        x_fmt: &x_fmt,
        y_fmt: &num_tick,
        levels: &[],
        legend: &legend,
    };
    line_chart(&spec, &[Panel::single(lines)])
}
