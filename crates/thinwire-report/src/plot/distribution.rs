//! Distributions of a measure (a latency) per series: the tail, as the fraction of samples
//! above x on a log axis that reaches down to the data's resolution, and the body, as the
//! empirical CDF on linear axes.
//!
//! A report's lead latency figure is the tail ([`tail_chart`]): on a linear CDF every curve
//! of a lossy run sits above 0.9, and what tells protocols apart (the last percent, the last
//! per mille) is a few pixels high. On the log axis each decade gets the same height: the
//! p99 level (1e-2), the p99.9 level (1e-3) and so on down to 1/N, the smallest fraction N
//! samples can show; each decade that the data resolves has a guide line labelled with its
//! percentile. [`cdf_chart`] draws the body, for the median and the spread.
//!
//! Both draw step curves through the same ranks ([`plot_indices`]: evenly spaced ones for the
//! body, logarithmically spaced ones for the tail), so a series of millions of samples becomes
//! a few hundred points and keeps its tail.

use std::ops::Range;

use plotters::style::RGBColor;

use super::frame::{message_figure, padded, Panel, Swatch};
use super::lines::{line_chart, Level, Line, LineChart, YScale};
use super::style::{log_tick, num_tick};
use super::{Axes, PlotResult};

/// One series of a distribution figure: its sorted samples and how its curve is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    /// Color of the curve.
    pub color: RGBColor,
    /// Dashed (e.g. a model) rather than solid.
    pub dashed: bool,
    /// The samples, sorted ascending (e.g. latencies in ms).
    pub sorted: Vec<f64>,
}

/// What a distribution figure shows around its curves.
#[derive(Debug, Clone, Copy)]
pub struct DistributionChart<'a> {
    /// Figure title.
    pub title: &'a str,
    /// X-axis description, with unit (e.g. "latency (ms)").
    pub x_desc: &'a str,
    /// Y-axis description, in plain words (e.g. "fraction of messages later than x").
    pub y_desc: &'a str,
    /// Legend entries.
    pub legend: &'a [(String, Swatch)],
}

/// The lowest level of the tail axis for series of at most `n` samples: the decade at or
/// below `1/n`, the smallest fraction above x that `n` samples can show (`0.1` for fewer
/// than ten samples).
pub fn tail_floor(n: usize) -> f64 {
    if n < 10 {
        return 0.1;
    }
    10f64.powi(-((n as f64).log10().ceil() as i32))
}

/// The percentile whose level is the fraction `10^-decades` above it, as a guide label:
/// 1 → "p90", 2 → "p99", 3 → "p99.9", 4 → "p99.99"…
pub fn nines_label(decades: u32) -> String {
    match decades {
        0 => "p0".to_owned(),
        1 => "p90".to_owned(),
        d => format!(
            "p99{}{}",
            if d > 2 { "." } else { "" },
            "9".repeat(d as usize - 2)
        ),
    }
}

/// Indices of a sorted series of `n` samples to draw: 400 evenly spaced ranks plus 400
/// ranks spaced logarithmically in the fraction above them down to `floor` (so the tail
/// keeps its detail), plus the first and last. Sorted and unique; every index for a short
/// series.
pub fn plot_indices(n: usize, floor: f64) -> Vec<usize> {
    const LINEAR: usize = 400;
    const LOG: usize = 400;
    if n <= LINEAR + LOG {
        return (0..n).collect();
    }
    let mut idx: Vec<usize> = Vec::with_capacity(LINEAR + LOG + 2);
    for j in 0..=LINEAR {
        idx.push(j * (n - 1) / LINEAR);
    }
    let decades = -floor.max(1.0 / n as f64).log10();
    for k in 0..=LOG {
        let above = 10f64.powf(-decades * k as f64 / LOG as f64);
        // The sample after which the fraction above is at most `above`.
        let count = (above * n as f64).ceil() as usize;
        idx.push(n.saturating_sub(count.max(1)));
    }
    idx.push(n - 1);
    idx.sort_unstable();
    idx.dedup();
    idx
}

/// Step points `(x, fraction of samples > x)` of a sorted series, through the ranks of
/// [`plot_indices`]; the curve ends with a drop to `floor` at the largest sample (where the
/// fraction above becomes 0, which a log axis cannot show) or where it falls below `floor`.
pub fn tail_steps(sorted: &[f64], floor: f64) -> Vec<(f64, f64)> {
    let n = sorted.len();
    let mut pts = Vec::new();
    let mut prev = 1.0;
    for i in plot_indices(n, floor) {
        let x = sorted[i];
        let above = (n - 1 - i) as f64 / n as f64;
        pts.push((x, prev));
        if above < floor {
            pts.push((x, floor));
            return pts;
        }
        pts.push((x, above));
        prev = above;
    }
    pts
}

/// Step points `(x, fraction of samples ≤ x)` of the empirical CDF of a sorted series,
/// through the ranks of [`plot_indices`], clipped at `x_max`.
pub fn cdf_steps(sorted: &[f64], x_max: f64) -> Vec<(f64, f64)> {
    let n = sorted.len();
    let mut pts = Vec::new();
    let mut prev = 0.0;
    for i in plot_indices(n, tail_floor(n)) {
        let x = sorted[i];
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

/// The series of all panels that have samples.
fn drawn(panels: &[Panel<Distribution>]) -> impl Iterator<Item = &Distribution> {
    panels
        .iter()
        .flat_map(|p| p.items.iter())
        .filter(|d| !d.sorted.is_empty())
}

/// The x range: from just below the smallest sample (so a constant offset such as a
/// propagation delay does not waste the width) to `hi`.
fn x_axis(panels: &[Panel<Distribution>], hi: f64) -> Range<f64> {
    let lo = drawn(panels)
        .map(|d| d.sorted[0])
        .fold(f64::INFINITY, f64::min);
    let start = if lo.is_finite() && lo < hi {
        (lo - 0.04 * (hi - lo)).max(0.0).floor()
    } else {
        0.0
    };
    padded(start, hi, 0.0)
}

/// Each panel's series with samples as step curves through `steps` of their samples.
fn curves(
    panels: &[Panel<Distribution>],
    steps: impl Fn(&[f64]) -> Vec<(f64, f64)>,
) -> Vec<Panel<Line>> {
    panels
        .iter()
        .map(|panel| Panel {
            title: panel.title.clone(),
            items: panel
                .items
                .iter()
                .filter(|d| !d.sorted.is_empty())
                .map(|d| Line::new(d.color, d.dashed, 2, steps(&d.sorted)))
                .collect(),
        })
        .collect()
}

/// The tail: the fraction of each series' samples above x, log y from 1 down to
/// [`tail_floor`] of the longest series, with a guide at each percentile level (p99, p99.9…)
/// that the longest series resolves; x from just below the smallest sample to the largest.
/// Series are drawn in order (later on top); a series without samples is left out.
pub fn tail_chart(spec: &DistributionChart<'_>, panels: &[Panel<Distribution>]) -> PlotResult {
    let Some(n) = drawn(panels).map(|d| d.sorted.len()).max() else {
        return message_figure(spec.title, "No samples: nothing to plot.");
    };
    let floor = tail_floor(n);
    let x_max = drawn(panels)
        .filter_map(|d| d.sorted.last())
        .fold(0.0, |a: f64, &b| a.max(b));
    let resolved = (n as f64).log10().floor() as u32;
    let labels: Vec<String> = (2..=resolved).map(nines_label).collect();
    let levels: Vec<Level<'_>> = labels
        .iter()
        .zip(2..)
        .map(|(label, d)| Level {
            y: 10f64.powi(-d),
            label: Some(label),
            width: 1,
        })
        .collect();
    let line_spec = LineChart {
        axes: Axes {
            title: spec.title,
            x_desc: spec.x_desc,
            y_desc: spec.y_desc,
            x_range: x_axis(panels, (x_max * 1.03).max(0.001)),
            // Slightly below the floor so that its decade is drawn and labelled.
            y_range: floor * 0.8..1.0,
        },
        y_scale: YScale::Log,
        margin: 10,
        x_labels: None,
        max_light_lines: None,
        x_fmt: &num_tick,
        y_fmt: &log_tick,
        levels: &levels,
        legend: spec.legend,
    };
    line_chart(&line_spec, &curves(panels, |s| tail_steps(s, floor)))
}

/// The body: the empirical CDF of each series on linear axes, x from just below the
/// smallest sample to `x_end` (curves are clipped there). Series are drawn in order (later
/// on top); a series without samples is left out.
pub fn cdf_chart(
    spec: &DistributionChart<'_>,
    x_end: f64,
    panels: &[Panel<Distribution>],
) -> PlotResult {
    if drawn(panels).next().is_none() {
        return message_figure(spec.title, "No samples: nothing to plot.");
    }
    let x_range = x_axis(panels, x_end.max(0.001));
    let x_end = x_range.end;
    let line_spec = LineChart {
        axes: Axes {
            title: spec.title,
            x_desc: spec.x_desc,
            y_desc: spec.y_desc,
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
        legend: spec.legend,
    };
    line_chart(&line_spec, &curves(panels, |s| cdf_steps(s, x_end)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::style::series_color;

    fn chart(title: &str) -> DistributionChart<'_> {
        DistributionChart {
            title,
            x_desc: "latency (ms)",
            y_desc: "fraction of messages later than x",
            legend: &[],
        }
    }

    fn series(sorted: Vec<f64>) -> Distribution {
        Distribution {
            color: series_color(0),
            dashed: false,
            sorted,
        }
    }

    /// The text of every `<text>` element of an SVG.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect()
    }

    #[test]
    fn floor_is_the_decade_at_or_below_one_over_n() {
        assert_eq!(tail_floor(0), 0.1);
        assert_eq!(tail_floor(9), 0.1);
        assert_eq!(tail_floor(10), 0.1);
        assert_eq!(tail_floor(99), 0.01);
        assert_eq!(tail_floor(100), 0.01);
        assert_eq!(tail_floor(101), 1e-3);
        assert_eq!(tail_floor(23_799), 1e-5);
        assert_eq!(tail_floor(1_000_000), 1e-6);
    }

    #[test]
    fn nines() {
        assert_eq!(nines_label(1), "p90");
        assert_eq!(nines_label(2), "p99");
        assert_eq!(nines_label(3), "p99.9");
        assert_eq!(nines_label(5), "p99.999");
    }

    #[test]
    fn tail_steps_of_a_small_series() {
        // Four samples: above 1 are 3 of 4, above 2 half, above 3 a quarter, above 4 none.
        let pts = tail_steps(&[1.0, 2.0, 3.0, 4.0], 0.1);
        assert_eq!(
            pts,
            vec![
                (1.0, 1.0),
                (1.0, 0.75),
                (2.0, 0.75),
                (2.0, 0.5),
                (3.0, 0.5),
                (3.0, 0.25),
                (4.0, 0.25),
                (4.0, 0.1),
            ]
        );
    }

    #[test]
    fn tail_steps_reach_one_over_n() {
        let n = 20_000;
        let sorted: Vec<f64> = (0..n).map(f64::from).collect();
        let floor = tail_floor(n as usize);
        let pts = tail_steps(&sorted, floor);
        assert!(pts.len() < 2000, "thinned: {}", pts.len());
        // The last level above the floor is 1/n, up to the largest sample.
        assert_eq!(pts[pts.len() - 2], (f64::from(n - 1), 1.0 / f64::from(n)));
        assert_eq!(pts[pts.len() - 1], (f64::from(n - 1), floor));
        // The p99 level: 1% of the samples lie above the 99th-percentile sample.
        assert!(pts.contains(&(f64::from(n - 201), 0.01)));
    }

    #[test]
    fn cdf_steps_end_at_one() {
        let s = [1.0, 2.0, 3.0, 4.0];
        let pts = cdf_steps(&s, 10.0);
        assert_eq!(pts.first(), Some(&(1.0, 0.0)));
        assert_eq!(pts.last(), Some(&(10.0, 1.0)));
        assert_eq!(cdf_steps(&s, 2.5).last(), Some(&(2.5, 0.5)));
    }

    #[test]
    fn indices_of_large_series_keep_the_tail() {
        let n = 1_000_000;
        let idx = plot_indices(n, 1e-4);
        assert!(idx.len() <= 803);
        assert_eq!(idx[0], 0);
        assert_eq!(*idx.last().unwrap(), n - 1);
        assert!(idx.windows(2).all(|w| w[0] < w[1]));
        // The p99.99 rank (a fraction 1e-4 above it) is present.
        assert!(idx.contains(&(n - 100)));
        assert_eq!(plot_indices(3, 0.1), vec![0, 1, 2]);
    }

    #[test]
    fn the_tail_axis_has_a_tick_at_every_decade_down_to_the_resolution() {
        let sorted: Vec<f64> = (0..2_000).map(|i| 100.0 + f64::from(i) / 10.0).collect();
        let svg = tail_chart(&chart("tail"), &[Panel::single(vec![series(sorted)])]).unwrap();
        let texts = texts(&svg);
        // 2000 samples resolve 5e-4: the axis reaches the decade below, 1e-4.
        for tick in ["1", "0.1", "0.01", "1e-3", "1e-4"] {
            assert!(texts.contains(&tick), "no {tick} tick in {texts:?}");
        }
        assert!(!texts.contains(&"1e-5"), "{texts:?}");
        // Only decades are labelled on the y axis: no 0.2, 0.5, 2e-3…
        for between in ["0.2", "0.5", "0.05", "2e-3", "5e-4"] {
            assert!(!texts.contains(&between), "{between} in {texts:?}");
        }
        // Guides at the levels 2000 samples resolve: p99 and p99.9, not p99.99.
        assert!(texts.contains(&"p99") && texts.contains(&"p99.9"));
        assert!(!texts.contains(&"p99.99"));
        assert!(texts.contains(&"fraction of messages later than x"));
    }

    #[test]
    fn empty_series_give_a_message() {
        let svg = tail_chart(&chart("t"), &[Panel::single(vec![series(Vec::new())])]).unwrap();
        assert!(svg.contains("No samples"));
        let svg = cdf_chart(&chart("c"), 1.0, &[Panel::single(Vec::new())]).unwrap();
        assert!(svg.contains("No samples"));
    }
}
