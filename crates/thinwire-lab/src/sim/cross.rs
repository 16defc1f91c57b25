//! Cross traffic on the bottleneck: Poisson, on-off or ns-2 Exponential
//! on/off packet arrivals, and a calibration that finds the rate giving a
//! target loss rate.

use std::collections::VecDeque;
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
    /// Several ns-2 `Application/Traffic/Exponential` sources, each behind
    /// its own access link (see [`Expoo`]).
    Expoo(Expoo),
}

impl CrossShape {
    /// Fraction of the time a source is on (1 for Poisson).
    pub fn duty(&self) -> f64 {
        let (on, off) = match self {
            CrossShape::Poisson => return 1.0,
            CrossShape::OnOff { mean_on, mean_off } => (*mean_on, *mean_off),
            CrossShape::Expoo(e) => (e.mean_on, e.mean_off),
        };
        on.as_secs_f64() / (on + off).as_secs_f64().max(1e-9)
    }
}

/// ns-2's Exponential on/off traffic (`Application/Traffic/Exponential`):
/// during an on period (exponential, mean `burst_time_`) a source sends
/// fixed-size packets at a constant rate (`rate_`); during an off period
/// (exponential, mean `idle_time_`) it is silent. ns-2's defaults are 210-byte
/// packets, 0.5 s on and 0.5 s off.
///
/// Each of `sources` sources sits on its own traffic node whose access link
/// (bandwidth uniform in `access_kbps`, drop-tail of `access_queue` packets)
/// shapes what it sends before the bottleneck; a source whose rate exceeds
/// its access link is cut to the link's rate and loses the excess there.
/// Each source loads this bottleneck direction with probability `crossing`
/// (e.g. 0.5 when its two ends attach to one of two routers at random and only
/// pairs on different routers cross the server's links), drawn per run.
/// [`CrossTraffic::rate_pps`] is the sum of the sources' on-period rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expoo {
    /// Mean on period (ns-2 `burst_time_`, default 0.5 s).
    pub mean_on: Duration,
    /// Mean off period (ns-2 `idle_time_`, default 0.5 s).
    pub mean_off: Duration,
    /// Number of sources.
    pub sources: u16,
    /// Access link bandwidth range of a traffic node in kbit/s (uniform);
    /// `[0, 0]`: no access link.
    pub access_kbps: [f64; 2],
    /// Drop-tail limit of a traffic node's access link, in packets waiting.
    pub access_queue: u32,
    /// Probability that a source's traffic crosses this bottleneck direction.
    pub crossing: f64,
}

/// One ns-2 Exponential source behind its access link.
#[derive(Debug)]
struct ExpooSource {
    /// Seconds between packets while on.
    interval: f64,
    /// Next packet of the source (before its access link).
    next_gen: f64,
    on_until: f64,
    /// Access link: seconds per packet (0: none), limit, departure times of
    /// the packets queued or on the wire.
    ser: f64,
    limit: usize,
    backlog: VecDeque<f64>,
}

impl ExpooSource {
    /// The next packet generated after `next_gen` (skipping off periods).
    fn advance(&mut self, rng: &mut ChaCha8Rng, e: &Expoo) {
        self.next_gen += self.interval;
        while self.next_gen > self.on_until {
            let off = exp_sample(rng, e.mean_off.as_secs_f64());
            let start = self.on_until + off;
            self.on_until = start + exp_sample(rng, e.mean_on.as_secs_f64());
            self.next_gen = start;
        }
    }

    /// Time the next packet leaves the access link, generating (and dropping
    /// at the access queue) as needed.
    fn next_departure(&mut self, rng: &mut ChaCha8Rng, e: &Expoo) -> f64 {
        loop {
            if self.ser <= 0.0 {
                let t = self.next_gen;
                self.advance(rng, e);
                return t;
            }
            // Departures already scheduled come first.
            if let Some(&d) = self.backlog.front() {
                if d <= self.next_gen {
                    self.backlog.pop_front();
                    return d;
                }
            }
            // Admit the next generated packet to the access link.
            let t = self.next_gen;
            self.advance(rng, e);
            // Packets whose departure passed by `t` have left.
            let on_wire = self.backlog.front().is_some_and(|&d| d > t);
            let waiting = self.backlog.len().saturating_sub(usize::from(on_wire));
            if waiting >= self.limit && on_wire {
                continue;
            }
            let start = self.backlog.back().copied().unwrap_or(t).max(t);
            self.backlog.push_back(start + self.ser);
        }
    }
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
    /// ns-2 Exponential sources with their next departure times.
    expoo: Vec<(f64, ExpooSource)>,
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
            CrossShape::Poisson | CrossShape::Expoo(_) => f64::INFINITY,
            CrossShape::OnOff { mean_on, .. } => exp_sample(&mut rng, mean_on.as_secs_f64()),
        };
        let mut expoo = Vec::new();
        if let CrossShape::Expoo(e) = cfg.shape {
            let per_source = cfg.rate_pps / f64::from(e.sources.max(1));
            for _ in 0..e.sources {
                let crosses = rng.random::<f64>() < e.crossing;
                let (lo, hi) = (e.access_kbps[0].min(e.access_kbps[1]), e.access_kbps[1]);
                let kbps = if hi > lo {
                    rng.random_range(lo..hi)
                } else {
                    lo
                };
                // A source starts at a random phase of an on or off period.
                let on = rng.random::<f64>() < cfg.shape.duty();
                let first = if on {
                    0.0
                } else {
                    exp_sample(&mut rng, e.mean_off.as_secs_f64())
                };
                let on_until = first + exp_sample(&mut rng, e.mean_on.as_secs_f64());
                if !crosses || per_source <= 0.0 || !per_source.is_finite() {
                    continue;
                }
                let mut src = ExpooSource {
                    interval: 1.0 / per_source,
                    next_gen: first,
                    on_until,
                    ser: if kbps > 0.0 {
                        f64::from(cfg.packet_bytes) * 8.0 / (kbps * 1000.0)
                    } else {
                        0.0
                    },
                    limit: e.access_queue as usize,
                    backlog: VecDeque::new(),
                };
                let t = src.next_departure(&mut rng, &e);
                expoo.push((t, src));
            }
        }
        CrossGen {
            cfg,
            rng,
            t: 0.0,
            on_until,
            expoo,
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
        if let CrossShape::Expoo(e) = self.cfg.shape {
            let (i, _) = self
                .expoo
                .iter()
                .enumerate()
                .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
            let (t, src) = &mut self.expoo[i];
            let at = *t;
            *t = src.next_departure(&mut self.rng, &e);
            self.t = at;
            return Some(Duration::from_secs_f64(at));
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
    let duty = cfg.shape.duty();
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

    fn expoo(sources: u16, access_kbps: [f64; 2], crossing: f64) -> CrossTraffic {
        CrossTraffic {
            // 500 kbit/s per source while on, 210-byte packets.
            rate_pps: f64::from(sources) * 500_000.0 / (8.0 * 210.0),
            packet_bytes: 210,
            shape: CrossShape::Expoo(Expoo {
                mean_on: Duration::from_millis(500),
                mean_off: Duration::from_millis(500),
                sources,
                access_kbps,
                access_queue: 50,
                crossing,
            }),
        }
    }

    fn rate_kbps(cfg: CrossTraffic, seed: u64, secs: f64) -> f64 {
        let mut g = CrossGen::new(cfg, seed);
        let mut last = Duration::ZERO;
        let n = std::iter::from_fn(|| g.next_arrival())
            .take_while(|t| *t < Duration::from_secs_f64(secs))
            .inspect(|t| {
                assert!(*t >= last, "arrivals out of order");
                last = *t;
            })
            .count();
        n as f64 * 210.0 * 8.0 / secs / 1000.0
    }

    #[test]
    fn expoo_without_access_link_has_half_the_on_rate() {
        // One source, no access link: 500 kbit/s half of the time.
        let r = rate_kbps(expoo(1, [0.0, 0.0], 1.0), 3, 2000.0);
        assert!((r - 250.0).abs() < 15.0, "{r}");
    }

    #[test]
    fn expoo_is_cut_to_its_access_link() {
        // A 100 kbit/s access link with a 50-packet queue: the source is
        // throttled to (nearly) the link rate, which its queue keeps busy
        // through most off periods.
        let r = rate_kbps(expoo(1, [100.0, 100.0], 1.0), 4, 2000.0);
        assert!(r <= 100.5 && r > 85.0, "{r}");
        // Spacing of departures is at least one packet time on that link.
        let mut g = CrossGen::new(expoo(1, [100.0, 100.0], 1.0), 4);
        let ts: Vec<f64> = (0..500)
            .filter_map(|_| g.next_arrival())
            .map(|t| t.as_secs_f64())
            .collect();
        let min_gap = ts.windows(2).map(|w| w[1] - w[0]).fold(f64::MAX, f64::min);
        assert!(min_gap >= 210.0 * 8.0 / 100_000.0 - 1e-9, "{min_gap}");
    }

    #[test]
    fn expoo_crossing_selects_sources() {
        // Eleven sources each crossing with probability 1/2: the load is a
        // whole number of throttled sources, and none when nothing crosses.
        let all = rate_kbps(expoo(11, [64.0, 128.0], 1.0), 5, 500.0);
        let half = rate_kbps(expoo(11, [64.0, 128.0], 0.5), 5, 500.0);
        assert!(all > 11.0 * 64.0 * 0.8 && all < 11.0 * 128.0, "{all}");
        assert!(half < all, "{half} vs {all}");
        let mut none = CrossGen::new(expoo(11, [64.0, 128.0], 0.0), 5);
        assert!(none.next_arrival().is_none());
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
