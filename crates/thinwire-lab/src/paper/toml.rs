//! The `[paper]`, `[[published]]` and `[[published_order]]` tables of a
//! scenario file, checked while parsing.

use serde::Deserialize;

use super::{
    FigureKind, LatencyFrom, Metric, PaperInfo, PaperSpec, Published, PublishedOrder, Tolerance,
};

/// `[paper]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct PaperToml {
    pub(crate) title: String,
    #[serde(default)]
    pub(crate) experiment: String,
    #[serde(default)]
    pub(crate) choices: Vec<String>,
    #[serde(default)]
    pub(crate) differences: Vec<String>,
    #[serde(default)]
    pub(crate) calibrations: Vec<String>,
    /// `"write"` (default) or `"first_transmission"` ([`super::LatencyFrom`]).
    pub(crate) latency_from: Option<String>,
}

/// The metric fields shared by `[[published]]` and `[[published_order]]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedToml {
    pub(crate) what: String,
    pub(crate) metric: String,
    pub(crate) protocol: String,
    pub(crate) baseline: Option<String>,
    #[serde(default)]
    pub(crate) classes: Vec<String>,
    pub(crate) point: Option<String>,
    pub(crate) q: Option<f64>,
    pub(crate) ms: Option<f64>,
    pub(crate) counter: Option<String>,
    pub(crate) per: Option<String>,
    pub(crate) scale: Option<f64>,
    pub(crate) offset: Option<f64>,
    pub(crate) value: f64,
    pub(crate) source: String,
    pub(crate) tolerance: Option<f64>,
    pub(crate) tolerance_abs: Option<f64>,
    #[serde(default)]
    pub(crate) fixed_by_setup: bool,
    #[serde(default)]
    pub(crate) synthetic_population: bool,
    #[serde(default)]
    pub(crate) note: String,
}

/// `[[published_order]]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedOrderToml {
    pub(crate) what: String,
    pub(crate) metric: String,
    pub(crate) protocols: Vec<String>,
    #[serde(default)]
    pub(crate) classes: Vec<String>,
    #[serde(default)]
    pub(crate) points: Vec<String>,
    pub(crate) q: Option<f64>,
    pub(crate) ms: Option<f64>,
    pub(crate) counter: Option<String>,
    pub(crate) per: Option<String>,
    pub(crate) scale: Option<f64>,
    pub(crate) slack: Option<f64>,
    pub(crate) source: String,
    #[serde(default)]
    pub(crate) note: String,
}

/// Default relative tolerance of a published figure.
const DEFAULT_TOLERANCE: f64 = 0.15;

/// The metric called `name` with its parameters.
fn metric(
    name: &str,
    q: Option<f64>,
    ms: Option<f64>,
    counter: Option<&String>,
    per: Option<&String>,
    scale: Option<f64>,
) -> Result<Metric, String> {
    let quantile = |q: f64| Metric::QuantileMs(q);
    Ok(match name {
        "mean_ms" => Metric::MeanMs,
        "jitter_ms" => Metric::JitterMs,
        "p50_ms" => quantile(0.5),
        "p90_ms" => quantile(0.9),
        "p95_ms" => quantile(0.95),
        "p99_ms" => quantile(0.99),
        "p995_ms" => quantile(0.995),
        "p999_ms" => quantile(0.999),
        "quantile_ms" => match q {
            Some(q) if q > 0.0 && q <= 1.0 => quantile(q),
            _ => return Err("`quantile_ms` needs `q` in (0, 1]".into()),
        },
        "within_ms" => match ms {
            Some(ms) if ms.is_finite() && ms >= 0.0 => Metric::WithinMs(ms),
            _ => return Err("`within_ms` needs `ms` (a non-negative number)".into()),
        },
        "delivered_pct" => Metric::DeliveredPct,
        "redundancy_pct" => Metric::RedundancyPct,
        "overhead_pct" => Metric::OverheadPct,
        "gsi" => Metric::Gsi,
        "counter" => match counter {
            Some(c) if !c.is_empty() => Metric::Counter {
                name: c.clone(),
                per: per.cloned(),
                scale: match scale {
                    Some(s) if s.is_finite() => s,
                    None => 1.0,
                    Some(s) => return Err(format!("scale {s} must be finite")),
                },
            },
            _ => return Err("`counter` needs `counter = \"name\"`".into()),
        },
        other => {
            return Err(format!(
                "unknown metric `{other}` (mean_ms, jitter_ms, p50_ms, p90_ms, p95_ms, p99_ms, \
                 p995_ms, p999_ms, quantile_ms, within_ms, delivered_pct, redundancy_pct, \
                 overhead_pct, gsi, counter)"
            ))
        }
    })
}

/// Label parts of a point filter (`"n=150, burst=1"` → `["n=150", "burst=1"]`).
fn point_parts(p: &str) -> Vec<String> {
    p.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One `[[published]]` entry, checked (`known` checks a protocol name).
fn published_entry(
    i: usize,
    p: PublishedToml,
    known: &dyn Fn(&str, &str) -> Result<(), String>,
) -> Result<Published, String> {
    let at = format!("[[published]] #{} (`{}`)", i + 1, p.what);
    let m = metric(
        &p.metric,
        p.q,
        p.ms,
        p.counter.as_ref(),
        p.per.as_ref(),
        p.scale,
    )
    .map_err(|e| format!("{at}: {e}"))?;
    known(&p.protocol, &at)?;
    if let Some(b) = &p.baseline {
        known(b, &at)?;
    }
    if !p.value.is_finite() {
        return Err(format!("{at}: `value` must be a finite number"));
    }
    let tolerance = match (p.tolerance, p.tolerance_abs) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{at}: give `tolerance` (relative) or `tolerance_abs`, not both"
            ))
        }
        (Some(t), None) if t.is_finite() && t >= 0.0 => Tolerance::Relative(t),
        (None, Some(t)) if t.is_finite() && t >= 0.0 => Tolerance::Absolute(t),
        (None, None) => Tolerance::Relative(DEFAULT_TOLERANCE),
        _ => return Err(format!("{at}: a tolerance must be a non-negative number")),
    };
    let kind = match (p.fixed_by_setup, p.synthetic_population) {
        (false, false) => FigureKind::Measured,
        (true, false) => FigureKind::FixedBySetup,
        (false, true) => FigureKind::SyntheticPopulation,
        (true, true) => {
            return Err(format!(
                "{at}: a figure is `fixed_by_setup` or `synthetic_population`, not both"
            ))
        }
    };
    Ok(Published {
        what: p.what,
        metric: m,
        protocol: p.protocol,
        baseline: p.baseline,
        classes: p.classes,
        point: p.point.as_deref().map(point_parts).unwrap_or_default(),
        offset: p.offset.unwrap_or(0.0),
        value: p.value,
        source: p.source,
        tolerance,
        kind,
        note: p.note,
    })
}

/// Checks and converts the paper tables; errors name the offending entry.
pub(crate) fn parse_paper(
    info: Option<PaperToml>,
    published: Vec<PublishedToml>,
    orders: Vec<PublishedOrderToml>,
    protocols: &[String],
) -> Result<PaperSpec, String> {
    let known = |p: &str, what: &str| -> Result<(), String> {
        if protocols.iter().any(|n| n == p) {
            Ok(())
        } else {
            Err(format!(
                "{what}: protocol `{p}` is not in this scenario's `protocols`"
            ))
        }
    };
    let latency_from = match info.as_ref().and_then(|p| p.latency_from.as_deref()) {
        None | Some("write") => LatencyFrom::Write,
        Some("first_transmission") => LatencyFrom::FirstTransmission,
        Some(other) => {
            return Err(format!(
                "[paper].latency_from: unknown `{other}` (write, first_transmission)"
            ))
        }
    };
    let mut spec = PaperSpec {
        latency_from,
        info: info.map(|p| PaperInfo {
            title: p.title,
            experiment: p.experiment,
            choices: p.choices,
            differences: p.differences,
            calibrations: p.calibrations,
        }),
        ..PaperSpec::default()
    };
    for (i, p) in published.into_iter().enumerate() {
        spec.published.push(published_entry(i, p, &known)?);
    }
    for (i, o) in orders.into_iter().enumerate() {
        let at = format!("[[published_order]] #{} (`{}`)", i + 1, o.what);
        let m = metric(
            &o.metric,
            o.q,
            o.ms,
            o.counter.as_ref(),
            o.per.as_ref(),
            o.scale,
        )
        .map_err(|e| format!("{at}: {e}"))?;
        if o.protocols.len() < 2 {
            return Err(format!("{at}: an order needs at least two protocols"));
        }
        for p in &o.protocols {
            known(p, &at)?;
        }
        let slack = o.slack.unwrap_or(0.0);
        if !(0.0..1.0).contains(&slack) {
            return Err(format!("{at}: `slack` must be in [0, 1)"));
        }
        spec.orders.push(PublishedOrder {
            what: o.what,
            metric: m,
            protocols: o.protocols,
            classes: o.classes,
            points: o.points.iter().map(|p| point_parts(p)).collect(),
            slack,
            source: o.source,
            note: o.note,
        });
    }
    Ok(spec)
}
