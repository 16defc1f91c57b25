//! Per-client access links: parameters drawn from distributions, so that a
//! scenario can model a population of players "in the wild" (RTTs spread over
//! a wide range, a tail of lossy clients) rather than identical links.
//!
//! Every client's values are drawn from its own seeded stream (run seed,
//! parameter, client index), so every protocol of a run, and every run with
//! the same seed, sees exactly the same population. A value drawn for a client
//! does not depend on the direction: when both directions use the same
//! distribution (as `[access.per_client]` does), a client's up and down links
//! get the same delay and the same loss rate.
//!
//! A population of several regions is a list of [`ClientGroup`]s: each takes
//! a consecutive block of client indices (its share of the clients, in
//! order) and draws from its own distributions, so that parameters that go
//! together in the measurements (Europe: longer RTTs *and* more loss) stay
//! together. A jitter fraction makes the delay variation grow with the
//! client's delay (Zhang et al., CoNEXT 2011, Fig. 2(c): large RTT variation
//! occurs mostly on clients with large RTTs).

use std::time::Duration;

use rand::Rng;
use rand_distr::{Distribution, LogNormal, Normal};
use thinwire_netmodel::{LinkConfig, LossModel};

use super::toml_types::{ClientGroupToml, DistTableToml, DistToml, PerClientToml};
use crate::seed;

/// Largest per-client loss rate a draw can give (draws are clamped to it).
pub const MAX_CLIENT_LOSS: f64 = 0.95;

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

fn fmt_num(v: f64) -> String {
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
    fn literals(&self, out: &mut Vec<f64>) {
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

/// Per-client access-link parameters (`[access.per_client]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerClient {
    /// One-way propagation delay in ms (replaces `delay_ms`); the round-trip
    /// time is about twice it.
    pub delay_ms: Option<ValueDist>,
    /// Mean loss rate (replaces the mean of the link's loss model: the
    /// Bernoulli probability, or the stationary loss of a Gilbert-Elliott
    /// chain, whose burst behaviour is kept).
    pub loss: Option<ValueDist>,
    /// The link's jitter as a fraction of the client's one-way delay
    /// (replaces `jitter_ms`; the jitter distribution and `reorder` stay as
    /// configured), applied after the delay is drawn.
    pub jitter_fraction: Option<f64>,
    /// Groups of clients with their own distributions, in order; empty: one
    /// population. A group's missing parameters fall back to the ones above.
    pub groups: Vec<ClientGroup>,
}

/// A block of clients with its own distributions (e.g. one region).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientGroup {
    /// Name for reports (e.g. `NA`).
    pub name: String,
    /// Share of the clients in `(0, 1]`; the shares of a list add up to 1.
    pub share: f64,
    /// The group's distributions (its `groups` is empty).
    pub draws: PerClient,
}

/// Clients `[first, end)` of `clients` that a block from cumulative share
/// `from` to cumulative share `to` holds: `round(from * clients)` to
/// `round(to * clients)`, so consecutive blocks tile the clients exactly.
fn share_block(from: f64, to: f64, clients: u32) -> std::ops::Range<u32> {
    let at = |s: f64| (s.clamp(0.0, 1.0) * f64::from(clients)).round() as u32;
    at(from)..at(to)
}

impl PerClient {
    /// Whether nothing is drawn per client.
    pub fn is_empty(&self) -> bool {
        self.delay_ms.is_none()
            && self.loss.is_none()
            && self.jitter_fraction.is_none()
            && self.groups.is_empty()
    }

    /// The group of client `client` out of `clients` (`None` without groups).
    pub fn group_of(&self, client: u32, clients: u32) -> Option<&ClientGroup> {
        let mut from = 0.0;
        for (i, g) in self.groups.iter().enumerate() {
            let to = if i + 1 == self.groups.len() {
                1.0
            } else {
                from + g.share
            };
            if share_block(from, to, clients).contains(&client) {
                return Some(g);
            }
            from = to;
        }
        None
    }

    /// Applies client `client`'s draws (run seed `seed`; `clients` clients in
    /// all, which places the client in its group) to `config`.
    pub fn apply(&self, config: &mut LinkConfig, seed: u64, client: u32, clients: u32) {
        let group = self.group_of(client, clients).map(|g| &g.draws);
        let pick = |f: fn(&PerClient) -> Option<&ValueDist>| group.and_then(f).or(f(self));
        if let Some(d) = pick(|p| p.delay_ms.as_ref()) {
            let v = draw(d, seed, seed::PER_CLIENT_DELAY, client).clamp(0.0, 1e7);
            config.delay = Duration::from_secs_f64(v / 1000.0);
        }
        if let Some(d) = pick(|p| p.loss.as_ref()) {
            let v = draw(d, seed, seed::PER_CLIENT_LOSS, client).clamp(0.0, MAX_CLIENT_LOSS);
            config.loss = with_mean_loss(&config.loss, v);
        }
        if let Some(f) = group
            .and_then(|g| g.jitter_fraction)
            .or(self.jitter_fraction)
        {
            config.jitter = config.delay.mul_f64(f);
        }
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(d) = &self.delay_ms {
            parts.push(format!("one-way delay (ms) {}", d.describe()));
        }
        if let Some(d) = &self.loss {
            parts.push(format!("loss rate {}", d.describe()));
        }
        if let Some(f) = self.jitter_fraction {
            parts.push(format!("jitter {}% of the delay", fmt_num(f * 100.0)));
        }
        for g in &self.groups {
            parts.push(format!(
                "group {} ({}% of the clients): {}",
                g.name,
                fmt_num(g.share * 100.0),
                g.draws.describe()
            ));
        }
        parts.join(", ")
    }
}

fn draw(d: &ValueDist, run_seed: u64, tag: u64, client: u32) -> f64 {
    let mut rng = seed::rng(run_seed, tag, u64::from(client));
    d.sample(&mut rng)
}

/// `model` with its mean loss rate replaced by `mean`: a Bernoulli model (or
/// none) becomes Bernoulli with `p = mean`; a Gilbert-Elliott chain keeps its
/// return probability (mean burst length) and per-state loss rates, and gets
/// the good-to-bad probability that gives it stationary loss `mean`. That is
/// exact while it stays a probability, i.e. for
/// `loss_good <= mean <= (loss_bad + p_bad_to_good * loss_good) / (1 + p_bad_to_good)`;
/// outside it is clamped to 0 or 1.
pub fn with_mean_loss(model: &LossModel, mean: f64) -> LossModel {
    match *model {
        LossModel::None | LossModel::Bernoulli { .. } => LossModel::Bernoulli { p: mean },
        LossModel::GilbertElliott {
            p_bad_to_good,
            loss_good,
            loss_bad,
            ..
        } => {
            let p_good_to_bad = if mean <= loss_good {
                0.0
            } else if mean >= loss_bad {
                1.0
            } else {
                (p_bad_to_good * (mean - loss_good) / (loss_bad - mean)).clamp(0.0, 1.0)
            };
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            }
        }
    }
}

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

/// Quantiles of a per-client quantity, for reports: `(median, p90, max)`.
pub(crate) fn quantiles(mut v: Vec<f64>) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    };
    Some((at(0.5), at(0.9), v[v.len() - 1]))
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn sample_many(d: &ValueDist, n: usize) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    #[test]
    fn lognormal_median_and_clamp() {
        let d = ValueDist::Clamped {
            dist: Box::new(ValueDist::LogNormal {
                median: 75.0,
                sigma: 0.5,
            }),
            min: 10.0,
            max: 300.0,
        };
        let v = sample_many(&d, 20_000);
        assert!(v.iter().all(|x| (10.0..=300.0).contains(x)));
        let (median, p90, _) = quantiles(v).expect("samples");
        assert!((median - 75.0).abs() < 3.0, "{median}");
        // exp(1.2816 * 0.5) * 75 = 142
        assert!((p90 - 142.0).abs() < 8.0, "{p90}");
    }

    #[test]
    fn mixture_weights() {
        let d = ValueDist::Mixture(vec![
            (
                0.9,
                ValueDist::Uniform {
                    min: 0.0,
                    max: 0.02,
                },
            ),
            (
                0.1,
                ValueDist::Uniform {
                    min: 0.05,
                    max: 0.15,
                },
            ),
        ]);
        let v = sample_many(&d, 20_000);
        let tail = v.iter().filter(|&&x| x >= 0.05).count() as f64 / v.len() as f64;
        assert!((tail - 0.1).abs() < 0.01, "{tail}");
        assert!(v.iter().all(|&x| x <= 0.15));
    }

    #[test]
    fn gilbert_elliott_keeps_burst_and_matches_mean() {
        let base: LossModel = thinwire_netmodel::GilbertElliott::from_mean_and_burst(0.02, 3.0)
            .expect("valid")
            .into();
        for mean in [0.0, 0.01, 0.1, 0.3] {
            let m = with_mean_loss(&base, mean);
            assert!((m.mean_loss() - mean).abs() < 1e-12, "{mean}: {m:?}");
            let LossModel::GilbertElliott { p_bad_to_good, .. } = m else {
                panic!("{m:?}")
            };
            assert!((p_bad_to_good - 1.0 / 3.0).abs() < 1e-12);
        }
        assert_eq!(
            with_mean_loss(&LossModel::None, 0.05),
            LossModel::Bernoulli { p: 0.05 }
        );
    }

    #[test]
    fn draws_depend_on_client_and_seed_not_direction() {
        let pc = PerClient {
            delay_ms: Some(ValueDist::Uniform {
                min: 10.0,
                max: 200.0,
            }),
            loss: Some(ValueDist::Uniform { min: 0.0, max: 0.1 }),
            ..PerClient::default()
        };
        let mut up = LinkConfig::default();
        let mut down = LinkConfig::default();
        pc.apply(&mut up, 3, 5, 10);
        pc.apply(&mut down, 3, 5, 10);
        assert_eq!(up.delay, down.delay);
        assert_eq!(up.loss, down.loss);
        let mut other = LinkConfig::default();
        pc.apply(&mut other, 3, 6, 10);
        assert_ne!(up.delay, other.delay);
        let mut reseeded = LinkConfig::default();
        pc.apply(&mut reseeded, 4, 5, 10);
        assert_ne!(up.delay, reseeded.delay);
    }

    fn two_regions() -> PerClient {
        let region = |name: &str, share: f64, delay: f64, loss: f64| ClientGroup {
            name: name.into(),
            share,
            draws: PerClient {
                delay_ms: Some(ValueDist::Constant(delay)),
                loss: Some(ValueDist::Constant(loss)),
                ..PerClient::default()
            },
        };
        PerClient {
            jitter_fraction: Some(0.1),
            groups: vec![
                region("NA", 0.7, 100.0, 0.01),
                region("EU", 0.3, 200.0, 0.03),
            ],
            ..PerClient::default()
        }
    }

    #[test]
    fn groups_take_consecutive_blocks_and_keep_their_parameters_together() {
        let pc = two_regions();
        let mut na = 0;
        for c in 0..1000 {
            let mut cfg = LinkConfig::default();
            pc.apply(&mut cfg, 1, c, 1000);
            let (delay, loss) = if c < 700 { (100, 0.01) } else { (200, 0.03) };
            na += u32::from(pc.group_of(c, 1000).is_some_and(|g| g.name == "NA"));
            assert_eq!(cfg.delay, Duration::from_millis(delay), "client {c}");
            assert_eq!(cfg.loss, LossModel::Bernoulli { p: loss }, "client {c}");
            // the jitter follows the client's own delay
            assert_eq!(cfg.jitter, Duration::from_millis(delay / 10), "client {c}");
        }
        assert_eq!(na, 700);
        // blocks tile any client count exactly (rounding included)
        for n in [1u32, 3, 7, 10_304] {
            let count = |name: &str| {
                (0..n)
                    .filter(|&c| pc.group_of(c, n).is_some_and(|g| g.name == name))
                    .count() as u32
            };
            assert_eq!(count("NA") + count("EU"), n, "{n}");
            assert_eq!(share_block(0.0, 0.7, n).len() as u32, count("NA"), "{n}");
        }
        assert!(
            pc.describe().contains("group EU (30% of the clients)"),
            "{}",
            pc.describe()
        );
    }

    #[test]
    fn group_falls_back_to_the_top_level_distributions() {
        let mut pc = two_regions();
        pc.groups[1].draws.loss = None;
        pc.loss = Some(ValueDist::Constant(0.2));
        let mut cfg = LinkConfig::default();
        pc.apply(&mut cfg, 1, 9, 10);
        assert_eq!(cfg.loss, LossModel::Bernoulli { p: 0.2 });
        assert_eq!(cfg.delay, Duration::from_millis(200));
    }

    #[test]
    fn group_shares_must_add_up_to_one() {
        let t: PerClientToml = toml::from_str(
            "jitter_fraction = 0.1\n\
             [[groups]]\nname = \"a\"\nshare = 0.7\ndelay_ms = 100\n\
             [[groups]]\nname = \"b\"\nshare = 0.2\ndelay_ms = 200\n",
        )
        .expect("toml");
        let e = per_client(&t).expect_err("shares 0.9");
        assert!(e.contains("add up to 0.9"), "{e}");
        let t: PerClientToml = toml::from_str(
            "[[groups]]\nname = \"a\"\nshare = 0.7\ndelay_ms = 100\njitter_fraction = 0.2\n\
             [[groups]]\nname = \"b\"\nshare = 0.3\nloss = { uniform = [0.0, 0.1] }\n",
        )
        .expect("toml");
        let pc = per_client(&t).expect("valid");
        assert_eq!(pc.groups.len(), 2);
        assert_eq!(pc.groups[0].draws.jitter_fraction, Some(0.2));
        let t: PerClientToml = toml::from_str("jitter_fraction = 11\n").expect("toml");
        assert!(per_client(&t).is_err());
    }
}
