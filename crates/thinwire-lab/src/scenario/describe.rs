//! A scenario in words: the parameter table of the report.

use thinwire_netmodel::{LinkConfig, LossModel, QueueLimit};

use super::per_client::quantiles;
use super::{CrossRate, CrossSpec, LinkSpec, Scenario};
use crate::protocol::ProtocolSpec;
use crate::seed;
use crate::sim::CrossShape;

impl Scenario {
    /// Human-readable parameters for the report.
    pub fn params(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("scenario".to_owned(), self.name.clone()),
            ("description".to_owned(), self.description.clone()),
            ("source".to_owned(), self.source.clone()),
            (
                "engine".to_owned(),
                "discrete-event simulator (sim)".to_owned(),
            ),
            ("seed".to_owned(), self.seed.to_string()),
            (
                "duration".to_owned(),
                format!(
                    "{} s (+{} s drain)",
                    self.duration.as_secs_f64(),
                    self.drain.as_secs_f64()
                ),
            ),
            ("clients".to_owned(), self.clients.to_string()),
        ];
        if self.gateway_edges > 1 {
            let edges = format!("{} (emulator, gateway peer)", self.gateway_edges);
            v.push(("gateway edges".to_owned(), edges));
        }
        v.extend([
            ("access up".to_owned(), describe_access(&self.access_up)),
            ("access down".to_owned(), describe_access(&self.access_down)),
        ]);
        self.per_client_params(&mut v);
        self.bottleneck_params(&mut v);
        for (i, w) in self.workloads.iter().enumerate() {
            v.push((format!("workload {}", i + 1), w.describe()));
        }
        v.push((
            "protocols".into(),
            self.protocols
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", "),
        ));
        if let Some(security) = self.thinwire_security() {
            v.push(("thinwire security".into(), security));
        }
        self.sweep_params(&mut v);
        v.push((
            "models".into(),
            "tcp-model and udp-model are simulator models of TCP NewReno and plain UDP, not kernel stacks".into(),
        ));
        v
    }

    /// How the scenario's thinwire configurations protect their packets, in
    /// words (`None` without thinwire): one label when they all agree,
    /// otherwise `name: label` for each.
    pub fn thinwire_security(&self) -> Option<String> {
        let tw: Vec<(String, &str)> = self
            .protocols
            .iter()
            .filter_map(|p| match p {
                ProtocolSpec::Thinwire(t) => Some((p.name(), t.security())),
                _ => None,
            })
            .collect();
        let first = tw.first()?.1;
        if tw.iter().all(|(_, s)| *s == first) {
            return Some(first.to_owned());
        }
        Some(
            tw.iter()
                .map(|(n, s)| format!("{n}: {s}"))
                .collect::<Vec<_>>()
                .join("; "),
        )
    }

    /// What the per-client draws gave (first sweep point): round-trip
    /// propagation delay and mean loss rate per client (server to client),
    /// as median / p90 / max, and the share of clients with 5% loss or more.
    pub fn drawn_summary(&self) -> Option<String> {
        let p = self.points().into_iter().next()?;
        let up = self.access_links(&self.access_up, &p, seed::BANDWIDTH_UP);
        let down = self.access_links(&self.access_down, &p, seed::BANDWIDTH_DOWN);
        let n = p.clients as usize;
        let at = |v: &[LinkConfig], c: usize| v[c % v.len().max(1)].clone();
        let rtt: Vec<f64> = (0..n)
            .map(|c| (at(&up, c).delay + at(&down, c).delay).as_secs_f64() * 1000.0)
            .collect();
        let loss: Vec<f64> = (0..n).map(|c| at(&down, c).loss.mean_loss()).collect();
        let lossy = loss.iter().filter(|&&l| l >= 0.05).count();
        let (r50, r90, rmax) = quantiles(rtt)?;
        let (l50, l90, lmax) = quantiles(loss)?;
        Some(format!(
            "{n} clients: RTT (propagation) median {r50:.0} ms, p90 {r90:.0} ms, max {rmax:.0} ms; \
             loss (down) median {:.2}%, p90 {:.2}%, max {:.2}%; {lossy} clients ({:.1}%) at 5% loss or more",
            l50 * 100.0,
            l90 * 100.0,
            lmax * 100.0,
            lossy as f64 / n.max(1) as f64 * 100.0
        ))
    }

    /// The per-client distributions and what they drew, if any.
    fn per_client_params(&self, v: &mut Vec<(String, String)>) {
        if self.access_up.per_client.is_empty() && self.access_down.per_client.is_empty() {
            return;
        }
        for (dir, spec) in [("up", &self.access_up), ("down", &self.access_down)] {
            if !spec.per_client.is_empty() {
                v.push((
                    format!("access {dir} per client"),
                    spec.per_client.describe(),
                ));
            }
        }
        if let Some(s) = self.drawn_summary() {
            v.push(("per-client links drawn".to_owned(), s));
        }
    }

    /// The bottleneck and its cross traffic, if any.
    fn bottleneck_params(&self, v: &mut Vec<(String, String)>) {
        let Some(b) = &self.bottleneck else { return };
        let bw = |c: &LinkConfig| {
            c.bandwidth_bps.map_or("unlimited".into(), |b| {
                format!("{} kbit/s", b as f64 / 1000.0)
            })
        };
        v.push(("bottleneck up".into(), describe_link(&b.up, bw(&b.up))));
        v.push((
            "bottleneck down".into(),
            describe_link(&b.down, bw(&b.down)),
        ));
        v.push(("cross traffic up".into(), describe_cross(&b.cross_up)));
        v.push(("cross traffic down".into(), describe_cross(&b.cross_down)));
    }

    /// The swept values, if any.
    fn sweep_params(&self, v: &mut Vec<(String, String)>) {
        if !self.sweep.clients.is_empty() {
            v.push(("sweep clients".into(), format!("{:?}", self.sweep.clients)));
        }
        if !self.sweep.delay_ms.is_empty() {
            v.push((
                "sweep access delay (ms)".into(),
                format!("{:?}", self.sweep.delay_ms),
            ));
        }
        if !self.sweep.loss.is_empty() {
            v.push(("sweep access loss".into(), format!("{:?}", self.sweep.loss)));
        }
        if !self.sweep.jitter.is_empty() {
            v.push((
                "sweep access jitter (fraction of the delay)".into(),
                format!("{:?}", self.sweep.jitter),
            ));
        }
    }
}

/// An access-link direction, its bandwidth range included.
fn describe_access(l: &LinkSpec) -> String {
    let c = &l.config;
    let bw = match (l.bandwidth_kbps, c.bandwidth_bps) {
        (Some((a, b)), _) => format!("{a}-{b} kbit/s per client"),
        (None, Some(b)) => format!("{} kbit/s", b as f64 / 1000.0),
        (None, None) => "unlimited".into(),
    };
    describe_link(c, bw)
}

/// Cross traffic of one bottleneck direction.
fn describe_cross(c: &Option<CrossSpec>) -> String {
    let Some(c) = c else {
        return "none".to_owned();
    };
    format!(
        "{} {}-byte packets, {}",
        match c.shape {
            CrossShape::Poisson => "Poisson".to_owned(),
            CrossShape::OnOff { mean_on, mean_off } => format!(
                "on-off ({} ms / {} ms)",
                mean_on.as_millis(),
                mean_off.as_millis()
            ),
            CrossShape::Expoo(e) => format!(
                "{} ns-2 Exponential on/off sources ({} ms / {} ms; access links {}-{} kbit/s, \
                 {}-packet queues; each crossing with probability {})",
                e.sources,
                e.mean_on.as_millis(),
                e.mean_off.as_millis(),
                e.access_kbps[0],
                e.access_kbps[1],
                e.access_queue,
                e.crossing
            ),
        },
        c.packet_bytes,
        match c.rate {
            CrossRate::TargetLoss(l) => format!(
                "rate calibrated so that all bottleneck traffic (cross traffic plus the game's \
                 mean load, as Poisson) sees {}% loss",
                l * 100.0
            ),
            CrossRate::Kbps(k) => format!("{k} kbit/s"),
        }
    )
}

/// A link configuration with its bandwidth already in words (`bw`).
fn describe_link(c: &LinkConfig, bw: String) -> String {
    let loss = match c.loss {
        LossModel::None => "no random loss".to_owned(),
        LossModel::Bernoulli { p } => format!("Bernoulli loss {}%", p * 100.0),
        LossModel::GilbertElliott { .. } => format!(
            "Gilbert-Elliott loss (mean {:.2}%)",
            c.loss.mean_loss() * 100.0
        ),
    };
    let queue = match c.queue {
        QueueLimit::Unlimited => "unlimited queue".to_owned(),
        QueueLimit::Bytes(b) => format!("{b}-byte drop-tail queue"),
        QueueLimit::Time(t) => format!("{} ms time-limited queue", t.as_secs_f64() * 1000.0),
        QueueLimit::Packets(n) => format!("{n}-packet drop-tail queue"),
    };
    format!(
        "delay {} ms, jitter ±{} ms{}, {loss}, {bw}, {queue}{}{}",
        c.delay.as_secs_f64() * 1000.0,
        c.jitter.as_secs_f64() * 1000.0,
        if c.reorder { " (reordering)" } else { "" },
        if c.trace.is_some() {
            ", per-packet trace"
        } else {
            ""
        },
        if c.duplicate > 0.0 || c.corrupt > 0.0 {
            format!(
                ", duplicate {}%, corrupt {}%",
                c.duplicate * 100.0,
                c.corrupt * 100.0
            )
        } else {
            String::new()
        }
    )
}
