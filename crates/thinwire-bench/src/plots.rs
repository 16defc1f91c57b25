//! The report's figures, drawn by the report kit ([`thinwire_report::plot`]): grouped bars
//! with the repetitions' range as whiskers, and lines against the sweep's client count.

use thinwire_report::plot::bars::{grouped_bars, BarGroup, BarValue, GroupedBars};
use thinwire_report::plot::lines::{line_chart, Level, Line, LineChart, Mark, YScale};
use thinwire_report::plot::style::series_color;
use thinwire_report::plot::{self, Axes, Panel, PlotResult, RGBColor, Swatch};

use crate::host::Protocol;

/// The color of a transport: the palette's hue of its place in [`Protocol::ALL`].
pub(crate) fn color(p: Protocol) -> RGBColor {
    series_color(Protocol::ALL.iter().position(|q| *q == p).unwrap_or(0))
}

/// One transport's values: per category (or x), the smallest, median and largest
/// repetition, `None` where it has none.
pub(crate) type Series = (Protocol, Vec<Option<(f64, f64, f64)>>);

/// A tick label without spurious decimals: `2.5 M`, `800 k`, `33.3`, `5000`.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1} M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0} k", v / 1e3)
    } else if a >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Grouped bars: one group per category (described by `x_desc`), one bar per transport
/// (the median), whiskers from the smallest to the largest repetition.
pub(crate) fn bars(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    categories: &[String],
    series: &[Series],
) -> PlotResult {
    let groups: Vec<BarGroup> = categories
        .iter()
        .enumerate()
        .map(|(i, label)| BarGroup {
            label: label.clone(),
            values: series
                .iter()
                .map(|(_, v)| {
                    v.get(i).copied().flatten().map(|(lo, mid, hi)| BarValue {
                        main: mid,
                        behind: None,
                        whisker: Some((lo, hi)),
                    })
                })
                .collect(),
        })
        .collect();
    let transports = series
        .iter()
        .map(|(p, _)| plot::Series {
            label: p.label().to_owned(),
            color: color(*p),
        })
        .collect();
    grouped_bars(
        &GroupedBars {
            title,
            y_desc,
            x_desc,
            groups: &[groups],
            layer_names: None,
            fmt: &tick,
            value_labels: false,
        },
        &[Panel::single(transports)],
    )
}

/// Lines against x (the sweep's client count) through each transport's medians, whiskers
/// for the repetitions' range, and an optional horizontal guide (a budget) with its name.
pub(crate) fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xs: &[f64],
    series: &[Series],
    guide: Option<(f64, &str)>,
) -> PlotResult {
    let hi = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().map(|s| s.2))
        .chain(guide.map(|g| g.0))
        .fold(0.0f64, f64::max);
    let xmax = xs.iter().copied().fold(1.0f64, f64::max) * 1.05;
    let mut legend = Vec::new();
    let mut lines = Vec::new();
    for (p, vals) in series {
        let pts: Vec<(f64, f64, f64, f64)> = xs
            .iter()
            .zip(vals)
            .filter_map(|(&x, v)| v.map(|(lo, mid, hi)| (x, lo, mid, hi)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let c = color(*p);
        legend.push((p.label().to_owned(), Swatch::Line(c, false)));
        let mut line = Line::new(
            c,
            false,
            3,
            pts.iter().map(|&(x, _, m, _)| (x, m)).collect(),
        );
        line.marks = pts
            .iter()
            .map(|&(x, lo, m, hi)| Mark {
                at: (x, m),
                radius: 4,
                whisker: Some((lo, hi)),
            })
            .collect();
        line.whisker_width = 2;
        lines.push(line);
    }
    let levels: Vec<Level<'_>> = guide
        .iter()
        .map(|&(y, name)| Level {
            y,
            label: Some(name),
            width: 2,
        })
        .collect();
    line_chart(
        &LineChart {
            axes: Axes {
                title,
                x_desc,
                y_desc,
                x_range: 0.0..xmax,
                y_range: 0.0..(hi * 1.12).max(1e-9),
            },
            y_scale: YScale::Linear,
            margin: 12,
            x_labels: None,
            max_light_lines: None,
            x_fmt: &tick,
            y_fmt: &tick,
            levels: &levels,
            legend: &legend,
        },
        &[Panel::single(lines)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_figures() {
        assert_eq!(tick(2_500_000.0), "2.5 M");
        assert_eq!(tick(800_000.0), "800 k");
        assert_eq!(tick(33.33), "33.3");
        assert_eq!(tick(5000.0), "5000");
        let series: Vec<Series> = vec![
            (Protocol::Thinwire, vec![Some((1.0, 2.0, 3.0)), None]),
            (Protocol::Enet, vec![None, None]),
        ];
        let bars = bars("t", "class", "µs", &["a".into(), "b".into()], &series).unwrap();
        assert!(bars.starts_with("<svg") && bars.contains("\nthinwire\n"));
        let lines = lines(
            "t",
            "clients",
            "ms",
            &[10.0, 20.0],
            &series,
            Some((2.5, "budget")),
        );
        let lines = lines.unwrap();
        assert!(lines.contains("\nbudget\n") && !lines.contains("\nENet\n"));
    }
}
