//! Random distributions used by the workload generators.

use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal, Normal};

/// A distribution over non-negative reals (milliseconds or bytes), clamped to
/// `[lo, hi]`.
#[derive(Debug, Clone)]
pub struct Clamped {
    kind: Kind,
    lo: f64,
    hi: f64,
}

#[derive(Debug, Clone)]
enum Kind {
    Const(f64),
    /// `shift + Exp(mean)`.
    Exp {
        shift: f64,
        exp: Exp<f64>,
    },
    /// `max - Exp(mean)` (mass piled up near `max`).
    ReflectedExp {
        max: f64,
        exp: Exp<f64>,
    },
    /// `shift + LogNormal(mu, sigma)`.
    LogNormal {
        shift: f64,
        ln: LogNormal<f64>,
    },
    /// `shift` with probability `p0`, otherwise `shift + Exp(mean)`.
    ZeroInflatedExp {
        shift: f64,
        p0: f64,
        exp: Exp<f64>,
    },
    /// Normal.
    Normal(Normal<f64>),
    /// Uniform on `[a, b]`.
    Uniform {
        a: f64,
        b: f64,
    },
}

fn exp(mean: f64) -> Exp<f64> {
    // `mean` is validated positive by callers; fall back to a tiny mean.
    Exp::new(1.0 / mean.max(1e-9)).unwrap_or_else(|_| Exp::new(1.0).expect("rate 1 is valid"))
}

impl Clamped {
    fn new(kind: Kind, lo: f64, hi: f64) -> Self {
        Clamped {
            kind,
            lo,
            hi: hi.max(lo),
        }
    }

    /// A constant.
    pub fn constant(v: f64) -> Self {
        Clamped::new(Kind::Const(v), v, v)
    }

    /// Uniform on `[a, b]`.
    pub fn uniform(a: f64, b: f64) -> Self {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        Clamped::new(Kind::Uniform { a, b }, a, b)
    }

    /// Exponential with the given mean (e.g. Poisson interarrival gaps).
    pub fn exponential(mean: f64) -> Self {
        Clamped::new(
            Kind::Exp {
                shift: 0.0,
                exp: exp(mean),
            },
            0.0,
            f64::INFINITY,
        )
    }

    /// Normal with mean and standard deviation, clamped to `[lo, hi]`.
    pub fn normal(mean: f64, sd: f64, lo: f64, hi: f64) -> Self {
        match Normal::new(mean, sd.max(0.0)) {
            Ok(n) if sd > 0.0 => Clamped::new(Kind::Normal(n), lo, hi),
            _ => Clamped::new(Kind::Const(mean.clamp(lo, hi)), lo, hi),
        }
    }

    /// A value in `[min, max]` with the given mean, for sizes where only
    /// (mean, min, max) are published: a shifted exponential from `min` when
    /// the mean is nearer the minimum, a reflected exponential from `max`
    /// otherwise.
    pub fn from_mean_min_max(mean: f64, min: f64, max: f64) -> Self {
        let mean = mean.clamp(min, max);
        if max - min < 1e-9 {
            return Clamped::constant(min);
        }
        if mean - min <= max - mean {
            Clamped::new(
                Kind::Exp {
                    shift: min,
                    exp: exp(mean - min),
                },
                min,
                max,
            )
        } else {
            Clamped::new(
                Kind::ReflectedExp {
                    max,
                    exp: exp(max - mean),
                },
                min,
                max,
            )
        }
    }

    /// Interarrival-time model fitted to published statistics.
    ///
    /// * `mean > median > shift`: a shifted lognormal with `shift` as the lower
    ///   bound, `exp(mu) = median - shift` and
    ///   `sigma^2 = 2 ln((mean - shift) / (median - shift))`, which matches
    ///   the mean and the median exactly (before clamping to `[min, max]`);
    /// * `median <= shift` (half or more of the gaps are at the minimum, e.g.
    ///   packets sent back to back): a point mass of 1/2 at `shift` plus a
    ///   shifted exponential matching the mean;
    /// * `mean <= median`: a normal around the median whose spread matches the
    ///   published 99th percentile.
    pub fn fit_interarrival(
        mean: f64,
        median: f64,
        shift: f64,
        p99: f64,
        min: f64,
        max: f64,
    ) -> Self {
        let shift = shift.max(0.0);
        if median > shift + 1e-9 && mean > median + 1e-9 {
            let mu = (median - shift).ln();
            let sigma = (2.0 * ((mean - shift) / (median - shift)).ln()).sqrt();
            match LogNormal::new(mu, sigma) {
                Ok(ln) => Clamped::new(Kind::LogNormal { shift, ln }, min, max),
                Err(_) => Clamped::constant(median),
            }
        } else if median <= shift + 1e-9 {
            let p0 = 0.5;
            let tail_mean = ((mean - shift) / (1.0 - p0)).max(1e-6);
            Clamped::new(
                Kind::ZeroInflatedExp {
                    shift,
                    p0,
                    exp: exp(tail_mean),
                },
                min,
                max,
            )
        } else {
            let sd = ((p99 - median) / 2.326).max(0.0);
            Clamped::normal(median, sd, min, max)
        }
    }

    /// Draws one value.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let v = match &self.kind {
            Kind::Const(v) => *v,
            Kind::Exp { shift, exp } => shift + exp.sample(rng),
            Kind::ReflectedExp { max, exp } => max - exp.sample(rng),
            Kind::LogNormal { shift, ln } => shift + ln.sample(rng),
            Kind::ZeroInflatedExp { shift, p0, exp } => {
                if rng.random::<f64>() < *p0 {
                    *shift
                } else {
                    shift + exp.sample(rng)
                }
            }
            Kind::Normal(n) => n.sample(rng),
            Kind::Uniform { a, b } => {
                if b > a {
                    rng.random_range(*a..=*b)
                } else {
                    *a
                }
            }
        };
        v.clamp(self.lo, self.hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn stats(d: &Clamped, n: usize) -> (f64, f64) {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut v: Vec<f64> = (0..n).map(|_| d.sample(&mut rng)).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        v.sort_by(f64::total_cmp);
        (mean, v[n / 2])
    }

    #[test]
    fn lognormal_fit_matches_mean_and_median() {
        let d = Clamped::fit_interarrival(632.0, 449.0, 83.0, 4195.0, 7.0, 1e9);
        let (mean, median) = stats(&d, 200_000);
        assert!((mean - 632.0).abs() < 0.03 * 632.0, "{mean}");
        assert!((median - 449.0).abs() < 0.03 * 449.0, "{median}");
    }

    #[test]
    fn zero_inflated_fit_matches_mean() {
        let d = Clamped::fit_interarrival(24.0, 0.0, 0.0, 151.0, 0.0, 1e9);
        let (mean, median) = stats(&d, 200_000);
        assert!((mean - 24.0).abs() < 0.03 * 24.0, "{mean}");
        assert!(median < 1.0);
    }

    #[test]
    fn size_from_mean_min_max() {
        for (mean, min, max) in [(98.0, 8.0, 1333.0), (270.0, 32.0, 280.0)] {
            let d = Clamped::from_mean_min_max(mean, min, max);
            let (m, _) = stats(&d, 200_000);
            assert!((m - mean).abs() < 0.03 * mean, "{m} vs {mean}");
        }
    }
}
