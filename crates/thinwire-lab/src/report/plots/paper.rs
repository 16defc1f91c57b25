//! The paper figures: ours over published per figure (with the 95%
//! confidence interval and the tolerance band), and a published ranking as
//! curves over the sweep points (with confidence intervals).

use plotters::prelude::*;

use super::frame::{draw_figure, message_figure, Swatch};
use super::style::{self, num_tick, GUIDE};
use super::{err, protocol_color, Panel, PlotResult};
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
    let single = [Panel {
        title: None,
        protos: Vec::new(),
    }];
    let legend = [
        (
            "ours / published".to_owned(),
            Swatch::Dot(protocol_color(0)),
        ),
        ("tolerance".to_owned(), Swatch::LightBar(GUIDE)),
    ];
    draw_figure(title, &single, &legend, |area, _, caption, st| {
        let mut chart = style::chart(
            area,
            caption,
            st,
            12,
            0.5..(n as f64 + 0.5),
            (lo..hi).log_scale(),
        )?;
        style::mesh(&mut chart, st)
            .x_desc("published figure (# in the table)")
            .y_desc("ours / published")
            .x_labels(n.min(30))
            .x_label_formatter(&|v| format!("{}", v.round() as i64))
            .y_label_formatter(&|v| num_tick(*v))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.5, 1.0), (n as f64 + 0.5, 1.0)],
                GUIDE.stroke_width(1),
            )))
            .map_err(err)?;
        for (i, p) in &pts {
            let x = *i as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.3, p.band.0), (x + 0.3, p.band.1)],
                    GUIDE.mix(0.25).filled(),
                )))
                .map_err(err)?;
            let c = protocol_color(0);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, p.lo), (x, p.hi)],
                    c.stroke_width(2),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Circle::new((x, p.ratio), 5, c.filled())))
                .map_err(err)?;
        }
        Ok(())
    })
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
        .map(|(i, p)| (p.clone(), Swatch::Line(protocol_color(i), false)))
        .collect();
    let single = [Panel {
        title: None,
        protos: Vec::new(),
    }];
    draw_figure(&title, &single, &legend, |area, _, caption, st| {
        let x_range = if n == 1 {
            -0.5..0.5
        } else {
            -0.2..(n as f64 - 0.8)
        };
        let mut chart = style::chart(area, caption, st, 12, x_range, lo..hi)?;
        style::mesh(&mut chart, st)
            .x_desc("sweep point")
            .y_desc(unit)
            .x_labels(n.min(20))
            .x_label_formatter(&|v| {
                let i = v.round();
                if (v - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| num_tick(*v))
            .draw()
            .map_err(err)?;
        for (pi, p) in order.order.protocols.iter().enumerate() {
            let c = protocol_color(pi);
            let pts: Vec<(f64, f64, f64)> = order
                .checks
                .iter()
                .enumerate()
                .filter_map(|(x, chk)| {
                    let e = chk.values.iter().find(|v| &v.0 == p)?.1?;
                    Some((x as f64, e.mean, e.ci95.unwrap_or(0.0)))
                })
                .collect();
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|&(x, y, _)| (x, y)),
                    c.stroke_width(2),
                ))
                .map_err(err)?;
            for &(x, y, h) in &pts {
                chart
                    .draw_series(std::iter::once(Circle::new((x, y), 4, c.filled())))
                    .map_err(err)?;
                if h > 0.0 {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(x, y - h), (x, y + h)],
                            c.stroke_width(1),
                        )))
                        .map_err(err)?;
                }
            }
        }
        Ok(())
    })
}
