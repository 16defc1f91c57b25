//! Means over independent runs with their 95% confidence intervals.

use serde::{Deserialize, Serialize};

/// A mean over runs with its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Mean over the runs where the value is defined.
    pub mean: f64,
    /// Half-width of the 95% confidence interval (Student's t), `None` with one run.
    pub ci95: Option<f64>,
    /// Runs that gave a value.
    pub runs: usize,
}

impl Estimate {
    /// `123.4` or `123.4 ± 5.6`, with `digits` decimals.
    pub fn display(&self, digits: usize) -> String {
        match self.ci95 {
            Some(h) => format!("{:.*} ± {:.*}", digits, self.mean, digits, h),
            None => format!("{:.*}", digits, self.mean),
        }
    }
}

/// Decimals that suit a value's size in a table: none from 100, one from 10, two below.
pub fn decimals(v: f64) -> usize {
    let a = v.abs();
    if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else {
        2
    }
}

/// Two-sided 95% Student-t quantiles for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The two-sided 95% Student-t quantile for a mean over `n >= 2` values (`n - 1` degrees of
/// freedom); the normal 1.96 beyond 31 values.
pub fn t95(n: usize) -> f64 {
    T95.get(n.saturating_sub(2)).copied().unwrap_or(1.96)
}

/// Mean and 95% confidence interval of independent values (`None` when empty).
///
/// The interval is `t(0.975, n-1) * s / sqrt(n)` with the sample standard
/// deviation `s`; beyond 30 degrees of freedom the normal 1.96 is used.
pub fn confidence_interval(values: &[f64]) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let ci95 = (n > 1).then(|| {
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let t = t95(n);
        t * var.sqrt() / (n as f64).sqrt()
    });
    Some(Estimate {
        mean,
        ci95,
        runs: n,
    })
}
