//! Distributions of one real-valued link parameter.

use rand::Rng;
use rand_distr::{Distribution, LogNormal, Normal};

/// A distribution of one real-valued link parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueDist {
    /// Always this value.
    Constant(f64),
    /// Uniform on `[min, max]`.
    Uniform {
        /// Lower end.
        min: f64,
        /// Upper end.
        max: f64,
    },
    /// Lognormal: `median * exp(sigma * Z)` with `Z` standard normal.
    LogNormal {
        /// Median (`exp(mu)`).
        median: f64,
        /// Standard deviation of the logarithm.
        sigma: f64,
    },
    /// Normal.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
    },
    /// A mixture: a component is chosen with probability proportional to its
    /// weight, then drawn from.
    Mixture(Vec<(f64, ValueDist)>),
    /// Another distribution clamped to `[min, max]`.
    Clamped {
        /// The distribution.
        dist: Box<ValueDist>,
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
}

pub(super) fn fmt_num(v: f64) -> String {
    // Short, exact-enough form: 0.02, 75, 1e-3...
    let s = format!("{v}");
    if s.len() <= 8 {
        s
    } else {
        format!("{v:.4}")
    }
}

impl ValueDist {
    /// Draws one value.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self {
            ValueDist::Constant(v) => *v,
            ValueDist::Uniform { min, max } => {
                if max > min {
                    rng.random_range(*min..=*max)
                } else {
                    *min
                }
            }
            ValueDist::LogNormal { median, sigma } => {
                match LogNormal::new(median.max(f64::MIN_POSITIVE).ln(), *sigma) {
                    Ok(d) => d.sample(rng),
                    Err(_) => *median,
                }
            }
            ValueDist::Normal { mean, sd } => match Normal::new(*mean, *sd) {
                Ok(d) => d.sample(rng),
                Err(_) => *mean,
            },
            ValueDist::Mixture(parts) => {
                let total: f64 = parts.iter().map(|(w, _)| w).sum();
                let mut u = rng.random::<f64>() * total;
                for (w, d) in parts {
                    if u < *w {
                        return d.sample(rng);
                    }
                    u -= w;
                }
                // Rounding: the last component.
                parts.last().map_or(0.0, |(_, d)| d.sample(rng))
            }
            ValueDist::Clamped { dist, min, max } => dist.sample(rng).clamp(*min, *max),
        }
    }

    /// A short description, e.g. `lognormal(median 75, sigma 0.5) in [10, 300]`.
    pub fn describe(&self) -> String {
        match self {
            ValueDist::Constant(v) => fmt_num(*v),
            ValueDist::Uniform { min, max } => {
                format!("uniform [{}, {}]", fmt_num(*min), fmt_num(*max))
            }
            ValueDist::LogNormal { median, sigma } => format!(
                "lognormal(median {}, sigma {})",
                fmt_num(*median),
                fmt_num(*sigma)
            ),
            ValueDist::Normal { mean, sd } => {
                format!("normal(mean {}, sd {})", fmt_num(*mean), fmt_num(*sd))
            }
            ValueDist::Mixture(parts) => {
                let total: f64 = parts.iter().map(|(w, _)| w).sum();
                let inner: Vec<String> = parts
                    .iter()
                    .map(|(w, d)| format!("{:.0}%: {}", w / total * 100.0, d.describe()))
                    .collect();
                format!("mixture({})", inner.join("; "))
            }
            ValueDist::Clamped { dist, min, max } => {
                let mut s = dist.describe();
                if min.is_finite() && max.is_finite() {
                    s.push_str(&format!(" in [{}, {}]", fmt_num(*min), fmt_num(*max)));
                } else if min.is_finite() {
                    s.push_str(&format!(" at least {}", fmt_num(*min)));
                } else if max.is_finite() {
                    s.push_str(&format!(" at most {}", fmt_num(*max)));
                }
                s
            }
        }
    }

    /// Every literal number that bounds the values (constants, uniform ends,
    /// clamp bounds, lognormal medians, normal means), for range checks.
    pub(super) fn literals(&self, out: &mut Vec<f64>) {
        match self {
            ValueDist::Constant(v) => out.push(*v),
            ValueDist::Uniform { min, max } => out.extend([*min, *max]),
            ValueDist::LogNormal { median, .. } => out.push(*median),
            ValueDist::Normal { mean, .. } => out.push(*mean),
            ValueDist::Mixture(parts) => parts.iter().for_each(|(_, d)| d.literals(out)),
            ValueDist::Clamped { dist, min, max } => {
                dist.literals(out);
                out.extend([*min, *max].into_iter().filter(|v| v.is_finite()));
            }
        }
    }
}
