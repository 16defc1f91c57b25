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

mod dist;
mod from_toml;
#[cfg(test)]
mod tests;

use std::time::Duration;

use thinwire_netmodel::{LinkConfig, LossModel};

use crate::seed;
use dist::fmt_num;
pub use dist::ValueDist;
pub(crate) use from_toml::per_client;

/// Largest per-client loss rate a draw can give (draws are clamped to it).
pub const MAX_CLIENT_LOSS: f64 = 0.95;

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
