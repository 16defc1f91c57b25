//! The simulator's view of a scenario at one sweep point: per-client access
//! links (bandwidth ranges and `[access.per_client]` drawn per client) and
//! the bottleneck's cross traffic (calibrated to a target loss rate).

use std::time::Duration;

use thinwire_netmodel::{GilbertElliott, LinkConfig, LossModel};

use super::sweep::SweepPoint;
use super::{CrossRate, CrossSpec, LinkSpec, Scenario};
use crate::error::LabError;
use crate::seed;
use crate::sim::{calibrate_rate, Background, CrossTraffic, SimSetup};
use crate::workload::{mean_load, InstanceParams};

impl Scenario {
    /// The network of one sweep point (calibrates cross traffic).
    pub fn setup(&self, p: &SweepPoint) -> Result<SimSetup, LabError> {
        let load = self.game_load(p);
        let (bottleneck, cross_up, cross_down) = match &self.bottleneck {
            None => (None, None, None),
            Some(b) => (
                Some((b.up.clone(), b.down.clone())),
                self.cross_traffic(b.cross_up, &b.up, load[0], 0)?,
                self.cross_traffic(b.cross_down, &b.down, load[1], 1)?,
            ),
        };
        Ok(SimSetup {
            clients: p.clients,
            access_up: self.access_links(&self.access_up, p, seed::BANDWIDTH_UP),
            access_down: self.access_links(&self.access_down, p, seed::BANDWIDTH_DOWN),
            bottleneck,
            cross: (cross_up, cross_down),
            duration: self.duration,
            drain: self.drain,
            seed: self.seed,
        })
    }

    /// The access links of one direction at sweep point `p`: one shared
    /// configuration, or one per client when something is drawn per client
    /// (the bandwidth from its range with seed stream `tag`).
    pub(super) fn access_links(
        &self,
        spec: &LinkSpec,
        p: &SweepPoint,
        tag: u64,
    ) -> Vec<LinkConfig> {
        let mut base = spec.config.clone();
        if let Some(d) = p.delay_ms {
            base.delay = Duration::from_secs_f64(d / 1000.0);
        }
        if let Some(l) = p.loss {
            base.loss = LossModel::Bernoulli { p: l };
        }
        if let Some(b) = p.burst.filter(|&b| b > 1.0) {
            // Checked when the scenario was parsed: the mean is below 1 and
            // high enough bursts stay a valid chain.
            if let Ok(ge) = GilbertElliott::from_mean_and_burst(base.loss.mean_loss(), b) {
                base.loss = ge.into();
            }
        }
        if let Some(j) = p.jitter {
            base.jitter = base.delay.mul_f64(j);
        }
        if spec.bandwidth_kbps.is_none() && spec.per_client.is_empty() {
            return vec![base];
        }
        (0..p.clients)
            .map(|c| {
                let mut cfg = base.clone();
                if let Some((lo, hi)) = spec.bandwidth_kbps {
                    let u = seed::unit(self.seed, tag, u64::from(c));
                    cfg.bandwidth_bps =
                        Some(((lo + (hi - lo) * u) * 1000.0).round().max(1.0) as u64);
                }
                spec.per_client.apply(&mut cfg, self.seed, c, p.clients);
                cfg
            })
            .collect()
    }

    /// The game's own mean load on the bottleneck (up, down), for calibrating
    /// cross traffic to a target loss rate of all traffic there; `None`s when
    /// no cross traffic is calibrated.
    fn game_load(&self, p: &SweepPoint) -> [Option<Background>; 2] {
        let needs_load = self.bottleneck.as_ref().is_some_and(|b| {
            [b.cross_up, b.cross_down].iter().any(|c| {
                matches!(
                    c,
                    Some(CrossSpec {
                        rate: CrossRate::TargetLoss(_),
                        ..
                    })
                )
            })
        });
        if !needs_load {
            return [None, None];
        }
        let l = mean_load(
            &self.workloads_at(p),
            &InstanceParams {
                clients: p.clients,
                duration: self.duration,
                seed: self.seed,
            },
            28,
        );
        l.map(|(pps, packet_bytes)| Some(Background { pps, packet_bytes }))
    }

    /// The cross traffic of one bottleneck direction (`dir`: 0 up, 1 down) on
    /// `link` beside the game's `load`.
    fn cross_traffic(
        &self,
        spec: Option<CrossSpec>,
        link: &LinkConfig,
        load: Option<Background>,
        dir: u64,
    ) -> Result<Option<CrossTraffic>, LabError> {
        let Some(spec) = spec else { return Ok(None) };
        let base = CrossTraffic {
            rate_pps: 0.0,
            packet_bytes: spec.packet_bytes,
            shape: spec.shape,
        };
        let rate_pps = match spec.rate {
            CrossRate::Kbps(k) => {
                let duty = spec.shape.duty();
                k * 1000.0 / (8.0 * f64::from(spec.packet_bytes)) / duty.max(1e-6)
            }
            CrossRate::TargetLoss(l) => calibrate_rate(
                link,
                base,
                l,
                load,
                seed::derive(self.seed, seed::CROSS_CALIBRATION, dir),
            )?,
        };
        Ok(Some(CrossTraffic { rate_pps, ..base }))
    }
}
