//! Cross traffic on the bottleneck: Poisson or on-off packet arrivals, and a
//! calibration that finds the rate giving a target loss rate.

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thinwire_netmodel::{Link, LinkConfig, QueueLimit};

use crate::error::LabError;

/// Shape of the cross-traffic arrival process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CrossShape {
    /// Poisson arrivals.
    Poisson,
    /// Poisson arrivals during exponentially distributed on periods,
    /// silence during exponentially distributed off periods.
    OnOff {
        /// Mean on period.
        mean_on: Duration,
        /// Mean off period.
        mean_off: Duration,
    },
}

/// Cross-traffic parameters for one direction of the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrossTraffic {
    /// Mean packet rate while on (packets per second).
    pub rate_pps: f64,
    /// Packet size on the wire.
    pub packet_bytes: u32,
    /// Arrival process.
    pub shape: CrossShape,
}

/// Generator of cross-traffic arrival times.
#[derive(Debug)]
pub struct CrossGen {
    cfg: CrossTraffic,
    rng: ChaCha8Rng,
    t: f64,
    on_until: f64,
}

fn exp_sample(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>();
    -u.ln() * mean
}

impl CrossGen {
    /// A generator starting at time 0.
    pub fn new(cfg: CrossTraffic, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let on_until = match cfg.shape {
            CrossShape::Poisson => f64::INFINITY,
            CrossShape::OnOff { mean_on, .. } => exp_sample(&mut rng, mean_on.as_secs_f64()),
        };
        CrossGen {
            cfg,
            rng,
            t: 0.0,
            on_until,
        }
    }

    /// Packet size.
    pub fn packet_bytes(&self) -> u32 {
        self.cfg.packet_bytes
    }

    /// Time of the next arrival since the start, or `None` if the rate is 0.
    pub fn next_arrival(&mut self) -> Option<Duration> {
        if self.cfg.rate_pps <= 0.0 || !self.cfg.rate_pps.is_finite() {
            return None;
        }
        let mean_gap = 1.0 / self.cfg.rate_pps;
        let mut t = self.t + exp_sample(&mut self.rng, mean_gap);
        if let CrossShape::OnOff { mean_on, mean_off } = self.cfg.shape {
            // Memorylessness: a gap crossing the end of an on period restarts
            // at the beginning of the next on period.
            while t > self.on_until {
                let off = exp_sample(&mut self.rng, mean_off.as_secs_f64());
                let start = self.on_until + off;
                self.on_until = start + exp_sample(&mut self.rng, mean_on.as_secs_f64());
                t = start + exp_sample(&mut self.rng, mean_gap);
            }
        }
        self.t = t;
        Some(Duration::from_secs_f64(t))
    }
}

/// Poisson background load on a link besides the cross traffic (e.g. the
/// game traffic's mean rate), used when calibrating.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Background {
    /// Packets per second.
    pub pps: f64,
    /// Mean packet size on the wire.
    pub packet_bytes: u32,
}

/// Drop rate of all packets on a link carrying cross traffic at `rate_pps`
/// plus an optional Poisson `background` (drops by the queue and by the
/// link's loss model, over `horizon`).
pub fn cross_loss(
    link: &LinkConfig,
    mut cfg: CrossTraffic,
    rate_pps: f64,
    background: Option<Background>,
    horizon: Duration,
    seed: u64,
) -> f64 {
    cfg.rate_pps = rate_pps;
    let mut gen = CrossGen::new(cfg, seed);
    let mut bg = background.filter(|b| b.pps > 0.0).map(|b| {
        let g = CrossGen::new(
            CrossTraffic {
                rate_pps: b.pps,
                packet_bytes: b.packet_bytes,
                shape: CrossShape::Poisson,
            },
            crate::seed::salted(seed, 0x5bd1_e995),
        );
        (g, b.packet_bytes)
    });
    let mut l: Link<Vec<u8>> = Link::new(link.clone(), crate::seed::salted(seed, 0x9e37));
    let base = Instant::now();
    let mut next_cross = gen.next_arrival();
    let mut next_bg = bg.as_mut().and_then(|(g, _)| g.next_arrival());
    loop {
        let (t, size) = match (next_cross, next_bg) {
            (Some(c), Some(b)) if b < c => {
                next_bg = bg.as_mut().and_then(|(g, _)| g.next_arrival());
                (b, bg.as_ref().map_or(0, |x| x.1))
            }
            (Some(c), _) => {
                next_cross = gen.next_arrival();
                (c, cfg.packet_bytes)
            }
            (None, Some(b)) => {
                next_bg = bg.as_mut().and_then(|(g, _)| g.next_arrival());
                (b, bg.as_ref().map_or(0, |x| x.1))
            }
            (None, None) => break,
        };
        if t > horizon {
            break;
        }
        let now = base + t;
        while l.poll_deliver(now).is_some() {}
        l.send(now, Vec::new(), size as usize);
    }
    let st = l.stats();
    if st.sent == 0 {
        0.0
    } else {
        (st.dropped_queue + st.lost) as f64 / st.sent as f64
    }
}

/// Finds the cross-traffic rate (packets per second) at which all traffic
/// on `link` (cross traffic plus the optional Poisson `background`) sees
/// `target_loss` (bisection over a simulated 300 s). Returns 0 when the
/// background alone already loses more than the target.
pub fn calibrate_rate(
    link: &LinkConfig,
    cfg: CrossTraffic,
    target_loss: f64,
    background: Option<Background>,
    seed: u64,
) -> Result<f64, LabError> {
    let Some(bps) = link.bandwidth_bps else {
        return Err(LabError::Invalid(
            "cross traffic with a target loss needs a bottleneck bandwidth".into(),
        ));
    };
    if link.queue == QueueLimit::Unlimited {
        return Err(LabError::Invalid(
            "cross traffic with a target loss needs a bottleneck queue limit (bytes or time)"
                .into(),
        ));
    }
    if !(0.0..0.9).contains(&target_loss) {
        return Err(LabError::Invalid(format!(
            "cross traffic target loss {target_loss} must be in [0, 0.9)"
        )));
    }
    let capacity_pps = bps as f64 / (8.0 * f64::from(cfg.packet_bytes.max(1)));
    let duty = match cfg.shape {
        CrossShape::Poisson => 1.0,
        CrossShape::OnOff { mean_on, mean_off } => {
            mean_on.as_secs_f64() / (mean_on.as_secs_f64() + mean_off.as_secs_f64()).max(1e-9)
        }
    };
    let horizon = Duration::from_secs(300);
    if cross_loss(link, cfg, 0.0, background, horizon, seed) >= target_loss {
        return Ok(0.0);
    }
    let (mut lo, mut hi) = (0.0, 5.0 * capacity_pps / duty.max(0.01));
    if cross_loss(link, cfg, hi, background, horizon, seed) < target_loss {
        return Err(LabError::Invalid(format!(
            "cross traffic cannot reach {target_loss} loss on this bottleneck"
        )));
    }
    for _ in 0..30 {
        let mid = (lo + hi) / 2.0;
        if cross_loss(link, cfg, mid, background, horizon, seed) < target_loss {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok((lo + hi) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_rate_is_respected() {
        let cfg = CrossTraffic {
            rate_pps: 50.0,
            packet_bytes: 1000,
            shape: CrossShape::Poisson,
        };
        let mut g = CrossGen::new(cfg, 1);
        let n = std::iter::from_fn(|| g.next_arrival())
            .take_while(|t| *t < Duration::from_secs(1000))
            .count();
        assert!((n as f64 / 1000.0 - 50.0).abs() < 1.0, "{n}");
    }

    #[test]
    fn on_off_duty_cycle() {
        let cfg = CrossTraffic {
            rate_pps: 100.0,
            packet_bytes: 1000,
            shape: CrossShape::OnOff {
                mean_on: Duration::from_millis(500),
                mean_off: Duration::from_millis(1500),
            },
        };
        let mut g = CrossGen::new(cfg, 2);
        let n = std::iter::from_fn(|| g.next_arrival())
            .take_while(|t| *t < Duration::from_secs(2000))
            .count();
        let rate = n as f64 / 2000.0;
        assert!((rate - 25.0).abs() < 2.0, "{rate}");
    }

    #[test]
    fn calibration_hits_the_target_loss() {
        let link = LinkConfig::default()
            .with_bandwidth(600_000)
            .with_queue(QueueLimit::Bytes(15_000));
        let cfg = CrossTraffic {
            rate_pps: 0.0,
            packet_bytes: 1000,
            shape: CrossShape::Poisson,
        };
        let rate = calibrate_rate(&link, cfg, 0.04, None, 7).expect("calibrates");
        let loss = cross_loss(&link, cfg, rate, None, Duration::from_secs(300), 7);
        assert!((loss - 0.04).abs() < 0.005, "{loss}");
        // Independent check with another seed and horizon. Near full load the
        // loss rate of a finite queue varies a lot between samples.
        let loss2 = cross_loss(&link, cfg, rate, None, Duration::from_secs(1000), 99);
        assert!((loss2 - 0.04).abs() < 0.02, "{loss2}");
        assert!(calibrate_rate(&LinkConfig::default(), cfg, 0.04, None, 7).is_err());
        // With a background load the cross traffic is lighter, and the total
        // drop rate still hits the target.
        let bg = Background {
            pps: 30.0,
            packet_bytes: 100,
        };
        let rate_bg = calibrate_rate(&link, cfg, 0.04, Some(bg), 7).expect("calibrates");
        assert!(rate_bg < rate);
        let loss = cross_loss(&link, cfg, rate_bg, Some(bg), Duration::from_secs(300), 7);
        assert!((loss - 0.04).abs() < 0.005, "{loss}");
        // A background that alone overloads the link needs no cross traffic.
        let heavy = Background {
            pps: 1000.0,
            packet_bytes: 100,
        };
        assert_eq!(
            calibrate_rate(&link, cfg, 0.04, Some(heavy), 7).expect("ok"),
            0.0
        );
    }
}
