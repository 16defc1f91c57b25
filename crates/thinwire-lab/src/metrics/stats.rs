//! Exact summary statistics over latency samples (microseconds in, milliseconds out).

use super::results::LatencyMs;

/// A quantile given as the exact fraction `num / den` (`0 < num <= den`).
///
/// Exact fractions keep the nearest-rank computation free of floating-point rounding:
/// `0.999 * 1000.0` is not guaranteed to be `999.0`, `999 * 1000 / 1000` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantile {
    /// Numerator.
    pub num: u64,
    /// Denominator (not zero).
    pub den: u64,
}

impl Quantile {
    /// The median (p50).
    pub const P50: Quantile = Quantile { num: 1, den: 2 };
    /// The 90th percentile.
    pub const P90: Quantile = Quantile { num: 9, den: 10 };
    /// The 99th percentile.
    pub const P99: Quantile = Quantile { num: 99, den: 100 };
    /// The 99.9th percentile.
    pub const P999: Quantile = Quantile {
        num: 999,
        den: 1000,
    };
}

/// The nearest-rank `q`-quantile of `sorted` (ascending), or `None` when it is empty.
///
/// Definition: with `n` samples, the result is the sample of 1-based rank
/// `r = ceil(q.num * n / q.den)`, clamped to `1..=n`. It is the smallest sample `x` such
/// that at least a fraction `q` of the samples are `<= x`. For example, with the samples
/// `1..=10`, p50 is 5, p90 is 9 and p99 is 10; with `1..=1000`, p99.9 is 999.
///
/// `q.den` must not be zero; a zero denominator is treated as the maximum.
pub fn nearest_rank(sorted: &[u64], q: Quantile) -> Option<u64> {
    let n = sorted.len() as u128;
    if n == 0 {
        return None;
    }
    let rank = if q.den == 0 {
        n
    } else {
        let num = u128::from(q.num) * n;
        let den = u128::from(q.den);
        num.div_ceil(den).clamp(1, n)
    };
    // rank is within 1..=n, which fits in usize because n came from a slice length.
    Some(sorted[(rank - 1) as usize])
}

/// Converts microseconds to milliseconds.
fn us_to_ms(us: f64) -> f64 {
    us / 1000.0
}

/// Rounds `x` to a multiple of `1 / scale` (`scale` a power of ten).
///
/// Used so that every float of `results.json` has a short decimal form (at most 15
/// significant digits for the magnitudes the lab produces), which any correct JSON parser
/// reads back to the very same `f64`.
pub(crate) fn round_to(x: f64, scale: f64) -> f64 {
    (x * scale).round() / scale
}

/// Rounding scale of mean and jitter in ms: 1e-6 ms (1 ns).
pub(crate) const MS_SCALE: f64 = 1e6;
/// Rounding scale of rates and ratios (miss rate, redundancy): 1e-9.
pub(crate) const RATIO_SCALE: f64 = 1e9;

/// Latency statistics of `sorted_us` (delivered latencies in microseconds, ascending).
///
/// Mean is exact up to the final division (the sum is accumulated in `u128`); jitter is the
/// population standard deviation; both are rounded to 1e-6 ms (1 ns). Percentiles follow
/// [`nearest_rank`] and, like max, are exact (a whole number of microseconds). An empty input
/// gives all zeros.
pub fn latency_summary(sorted_us: &[u64]) -> LatencyMs {
    if sorted_us.is_empty() {
        return LatencyMs::default();
    }
    debug_assert!(sorted_us.windows(2).all(|w| w[0] <= w[1]));
    let n = sorted_us.len() as f64;
    let sum: u128 = sorted_us.iter().map(|&x| u128::from(x)).sum();
    let mean_us = sum as f64 / n;
    let var_us = sorted_us
        .iter()
        .map(|&x| {
            let d = x as f64 - mean_us;
            d * d
        })
        .sum::<f64>()
        / n;
    let pick = |q| us_to_ms(nearest_rank(sorted_us, q).unwrap_or(0) as f64);
    LatencyMs {
        mean: round_to(us_to_ms(mean_us), MS_SCALE),
        jitter: round_to(us_to_ms(var_us.sqrt()), MS_SCALE),
        p50: pick(Quantile::P50),
        p90: pick(Quantile::P90),
        p99: pick(Quantile::P99),
        p999: pick(Quantile::P999),
        max: us_to_ms(*sorted_us.last().unwrap_or(&0) as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_small() {
        let s: Vec<u64> = (1..=10).collect();
        assert_eq!(nearest_rank(&s, Quantile::P50), Some(5));
        assert_eq!(nearest_rank(&s, Quantile::P90), Some(9));
        assert_eq!(nearest_rank(&s, Quantile::P99), Some(10));
        assert_eq!(nearest_rank(&[], Quantile::P99), None);
        assert_eq!(nearest_rank(&[7], Quantile::P50), Some(7));
    }

    #[test]
    fn summary_of_textbook_sample() {
        // mean 5, population standard deviation 2
        let s: Vec<u64> = [2u64, 4, 4, 4, 5, 5, 7, 9]
            .iter()
            .map(|x| x * 1000)
            .collect();
        let l = latency_summary(&s);
        assert_eq!(l.mean, 5.0);
        assert_eq!(l.jitter, 2.0);
        assert_eq!(l.p50, 4.0);
        assert_eq!(l.max, 9.0);
    }
}
