//! Latency distributions: the CDF and the log-scale tail (complementary CDF), as step
//! curves of the report kit's line family.

use std::ops::Range;

use thinwire_report::plot::frame::{legend_entries, message_figure, padded};
use thinwire_report::plot::lines::{line_chart, Level, Line, LineChart, YScale};
use thinwire_report::plot::style::{log_tick, num_tick};
use thinwire_report::plot::{self, Axes, Swatch};

use super::{all_protos, Panel, PlotResult, ProtocolPlot};

/// Lowest survival probability shown in the tail view.
pub(crate) const TAIL_FLOOR: f64 = 1e-4;

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

/// Each panel's protocols with samples as lines through `points` of their samples, in
/// [`drawing_order`]: solid for implementations, dashed for models (so that curves lying on
/// top of each other stay visible and models stand out).
fn lines(
    panels: &[Panel<'_>],
    points: impl Fn(&[u64]) -> Vec<(f64, f64)>,
) -> Vec<plot::Panel<Line>> {
    panels
        .iter()
        .map(|panel| plot::Panel {
            title: panel.title.clone(),
            items: drawing_order(&panel.items)
                .into_iter()
                .map(|p| Line::new(p.color, p.run.model, 2, points(samples_of(p))))
                .collect(),
        })
        .collect()
}

/// The legend of the distribution plots: each protocol with samples, as its line.
fn legend(panels: &[Panel<'_>]) -> Vec<(String, Swatch)> {
    legend_entries(
        all_protos(panels).filter(|p| has_samples(p)),
        |p| p.label,
        line_swatch,
    )
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
    let x_end = x_range.end;
    let spec = LineChart {
        axes: Axes {
            title,
            x_desc: "latency (ms)",
            y_desc: "fraction delivered ≤ x",
            x_range,
            y_range: 0.0..1.0,
        },
        y_scale: YScale::Linear,
        margin: 10,
        x_labels: None,
        max_light_lines: Some(1),
        x_fmt: &num_tick,
        y_fmt: &num_tick,
        levels: &[],
        legend: &legend(panels),
    };
    line_chart(&spec, &lines(panels, |s| cdf_points(s, x_end)))
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
    // Reference lines at the p99 and p99.9 levels.
    let levels = [(1e-2, "p99"), (1e-3, "p99.9")].map(|(y, label)| Level {
        y,
        label: Some(label),
        width: 1,
    });
    let spec = LineChart {
        axes: Axes {
            title,
            x_desc: "latency (ms)",
            y_desc: "P(latency > x)",
            x_range,
            // Slightly below the floor so that its tick (1e-4) is drawn and labelled.
            y_range: TAIL_FLOOR * 0.8..1.0,
        },
        y_scale: YScale::Log,
        margin: 10,
        x_labels: None,
        max_light_lines: None,
        x_fmt: &num_tick,
        y_fmt: &log_tick,
        levels: &levels,
        legend: &legend(panels),
    };
    line_chart(&spec, &lines(panels, ccdf_points))
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
}
