//! Conversion and checks of `[access.per_client]` tables.

use super::dist::{fmt_num, ValueDist};
use super::{ClientGroup, PerClient, MAX_CLIENT_LOSS};
use crate::scenario::toml_types::{ClientGroupToml, DistTableToml, DistToml, PerClientToml};

fn table_dist(t: &DistTableToml, nested: bool) -> Result<ValueDist, String> {
    if t.weight.is_some() && !nested {
        return Err("`weight` is only for the components of a `mixture`".into());
    }
    let n = [
        t.value.is_some(),
        t.uniform.is_some(),
        t.lognormal.is_some(),
        t.normal.is_some(),
        t.mixture.is_some(),
    ]
    .iter()
    .filter(|&&b| b)
    .count();
    if n != 1 {
        return Err(
            "a distribution needs exactly one of `value`, `uniform`, `lognormal`, `normal` or `mixture`"
                .into(),
        );
    }
    let finite = |v: f64, what: &str| {
        if v.is_finite() {
            Ok(v)
        } else {
            Err(format!("{what} must be a finite number"))
        }
    };
    let inner = if let Some(v) = t.value {
        ValueDist::Constant(finite(v, "value")?)
    } else if let Some([a, b]) = t.uniform {
        let (a, b) = (finite(a, "uniform")?, finite(b, "uniform")?);
        if a > b {
            return Err(format!("uniform [{a}, {b}] must have min <= max"));
        }
        ValueDist::Uniform { min: a, max: b }
    } else if let Some(l) = &t.lognormal {
        ValueDist::LogNormal {
            median: l.median.0,
            sigma: l.sigma.0,
        }
    } else if let Some(nrm) = &t.normal {
        ValueDist::Normal {
            mean: finite(nrm.mean, "normal mean")?,
            sd: nrm.sd.0,
        }
    } else {
        let parts = t.mixture.as_deref().unwrap_or_default();
        if parts.is_empty() {
            return Err("`mixture` needs at least one component".into());
        }
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            out.push((p.weight.map_or(1.0, |w| w.0), table_dist(p, true)?));
        }
        ValueDist::Mixture(out)
    };
    if t.min.is_none() && t.max.is_none() {
        return Ok(inner);
    }
    let min = finite(t.min.unwrap_or(f64::NEG_INFINITY).max(-1e300), "min")?;
    let max = finite(t.max.unwrap_or(f64::INFINITY).min(1e300), "max")?;
    if min > max {
        return Err(format!("min {min} is above max {max}"));
    }
    Ok(ValueDist::Clamped {
        dist: Box::new(inner),
        min: if t.min.is_some() {
            min
        } else {
            f64::NEG_INFINITY
        },
        max: if t.max.is_some() { max } else { f64::INFINITY },
    })
}

/// Converts and checks one distribution whose values must lie in `[lo, hi]`.
fn dist(t: &DistToml, what: &str, lo: f64, hi: f64) -> Result<ValueDist, String> {
    let d = match t {
        DistToml::Value(v) => ValueDist::Constant(*v),
        DistToml::Table(t) => table_dist(t, false).map_err(|e| format!("{what}: {e}"))?,
    };
    let mut lits = Vec::new();
    d.literals(&mut lits);
    if let Some(bad) = lits.iter().find(|v| !(lo..=hi).contains(*v)) {
        return Err(format!("{what}: {bad} is outside [{lo}, {hi}]"));
    }
    Ok(d)
}

/// The delay and loss distributions of a table (top level or group).
fn draws(
    what: &str,
    delay_ms: Option<&DistToml>,
    loss: Option<&DistToml>,
    jitter_fraction: Option<f64>,
) -> Result<PerClient, String> {
    if let Some(f) = jitter_fraction.filter(|f| !(0.0..=10.0).contains(f)) {
        return Err(format!("{what}.jitter_fraction: {f} is outside [0, 10]"));
    }
    Ok(PerClient {
        delay_ms: delay_ms
            .map(|d| dist(d, &format!("{what}.delay_ms"), 0.0, 1e7))
            .transpose()?,
        loss: loss
            .map(|d| dist(d, &format!("{what}.loss"), 0.0, MAX_CLIENT_LOSS))
            .transpose()?,
        jitter_fraction,
        groups: Vec::new(),
    })
}

fn group(g: &ClientGroupToml) -> Result<ClientGroup, String> {
    let what = format!("per_client.groups[{}]", g.name);
    Ok(ClientGroup {
        name: g.name.clone(),
        share: g.share.0,
        draws: draws(
            &what,
            g.delay_ms.as_ref(),
            g.loss.as_ref(),
            g.jitter_fraction.map(|f| f.0),
        )?,
    })
}

/// Converts and checks `[access.per_client]`.
pub(crate) fn per_client(t: &PerClientToml) -> Result<PerClient, String> {
    let mut out = draws(
        "per_client",
        t.delay_ms.as_ref(),
        t.loss.as_ref(),
        t.jitter_fraction.map(|f| f.0),
    )?;
    out.groups = t
        .groups
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(group)
        .collect::<Result<_, _>>()?;
    if !out.groups.is_empty() {
        let total: f64 = out.groups.iter().map(|g| g.share).sum();
        if (total - 1.0).abs() > 1e-6 {
            return Err(format!(
                "per_client.groups: the shares add up to {}, not 1",
                fmt_num(total)
            ));
        }
    }
    Ok(out)
}
