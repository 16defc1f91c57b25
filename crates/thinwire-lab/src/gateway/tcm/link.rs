//! The bottleneck experiment: game traffic (native or multiplexed) and background traffic
//! through the paper's tc shaper (1 Mbit/s at Ethernet level, a 5000 B burst) whose buffer the
//! paper sizes by a maximum queueing time (50 ms or 500 ms), enforced in bytes as tc does
//! ([`RouterBuffer::Bytes`]) or per packet in time ([`RouterBuffer::Time`]).
//!
//! The shaper is Linux's token bucket filter ([`Tbf`]): the only tc qdisc with a rate, a burst
//! and a buffer given as a latency. Its bucket holds `burst` bytes of tokens filled at the rate;
//! the packet at the head of its byte FIFO leaves as soon as the bucket holds its size, and the
//! FIFO's limit counts only the packets still waiting (a dequeued packet is on the NIC).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use serde::Serialize;
use thinwire_gateway::tcm::{Demultiplexer, Multiplexer, Output};

use super::traffic::{game_packets, seq_of, GamePacket, TrafficModel, ETH_OVERHEAD};
use super::{mux_config, LinkRow, TcmOptions, CH_L2TP};

/// Bottleneck rate (Ethernet level), Saldaña et al. Sec. IV.
const LINK_BPS: u64 = 1_000_000;
/// tc's burst, "El parámetro burst se ha establecido en 5000 bytes" (Sec. IV).
const TC_BURST: usize = 5000;
/// Mux plus demux processing, Saldaña et al. Sec. IV.
const PROCESSING: Duration = Duration::from_millis(5);
/// The paper's one-way delay bound.
const OWD_BOUND: Duration = Duration::from_millis(160);
/// Background IP sizes and their shares.
const BG_SIZES: [(usize, f64); 3] = [(40, 0.5), (576, 0.1), (1500, 0.4)];

/// What travels through the link.
const KIND_BG: u64 = 0;
const KIND_NATIVE: u64 = 1;
const KIND_BUNDLE: u64 = 2;

/// How the router enforces a buffer the paper gives as a maximum queueing time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RouterBuffer {
    /// The paper's router: tc turns a maximum queueing time into a byte limit, rate x time +
    /// burst (11,250 B for 50 ms, 67,500 B for 500 ms at 1 Mbit/s), and drops a packet that
    /// does not fit: a 1500-byte packet is dropped where a 40-byte one still fits.
    Bytes,
    /// A packet is dropped when its own queueing delay would pass the time, whatever its size.
    Time,
}

impl RouterBuffer {
    /// `bytes` or `time`.
    pub fn label(self) -> &'static str {
        match self {
            RouterBuffer::Bytes => "bytes",
            RouterBuffer::Time => "time",
        }
    }

    /// The shaper with a buffer of `ms` milliseconds enforced this way.
    fn shaper(self, ms: u64) -> Tbf {
        Tbf {
            rate: LINK_BPS as f64 / 8.0,
            bucket: TC_BURST as f64,
            tokens: TC_BURST as f64,
            last: Duration::ZERO,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            limit: match self {
                // iproute2's tbf: limit = rate x latency + burst.
                RouterBuffer::Bytes => Limit::Bytes((LINK_BPS * ms / 8 / 1000) as usize + TC_BURST),
                RouterBuffer::Time => Limit::Time(Duration::from_millis(ms)),
            },
        }
    }
}

/// What the shaper's buffer bounds.
#[derive(Clone, Copy)]
enum Limit {
    /// Bytes waiting in the FIFO (tbf's bfifo child): drop-tail on size.
    Bytes(usize),
    /// The packet's wait behind the packets ahead of it.
    Time(Duration),
}

/// Linux's token bucket filter (`tc qdisc ... tbf rate R burst B latency L`), in simulated
/// time: FIFO, tokens in bytes at `rate` up to `bucket`, a packet leaves when the bucket holds
/// its size. A dequeued packet goes to the NIC at once (the LAN is much faster than 1 Mbit/s).
struct Tbf {
    /// Token rate, bytes per second.
    rate: f64,
    /// Bucket depth (tc's `burst`), bytes.
    bucket: f64,
    /// Tokens left right after the last departure.
    tokens: f64,
    /// Time of the last departure.
    last: Duration,
    /// Admitted packets not yet dequeued: (departure, size).
    waiting: VecDeque<(Duration, usize)>,
    /// Sum of the sizes in `waiting`.
    waiting_bytes: usize,
    limit: Limit,
}

impl Tbf {
    /// Offers a packet of `size` bytes (Ethernet level) at `at`: when it leaves, or `None`
    /// when the buffer drops it.
    fn offer(&mut self, at: Duration, size: usize) -> Option<Duration> {
        while let Some(&(depart, bytes)) = self.waiting.front() {
            if depart > at {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= bytes;
        }
        let start = at.max(self.last);
        let tokens = (self.tokens + self.rate * (start - self.last).as_secs_f64()).min(self.bucket);
        let need = size as f64 - tokens;
        let depart = if need <= 0.0 {
            start
        } else {
            start + Duration::from_secs_f64(need / self.rate)
        };
        let refused = match self.limit {
            Limit::Bytes(max) => self.waiting_bytes + size > max,
            // The wait to reach the head of the FIFO, not the packet's own tokens: whatever
            // its size.
            Limit::Time(max) => start - at > max,
        };
        if refused {
            return None;
        }
        self.tokens = (tokens - size as f64).max(0.0);
        self.last = depart;
        if depart > at {
            self.waiting.push_back((depart, size));
            self.waiting_bytes += size;
        }
        Some(depart)
    }
}

/// Runs every (buffer, mode, background) point with 20 players of `model`.
pub(super) fn sweep(opts: &TcmOptions, model: &TrafficModel) -> Vec<LinkRow> {
    let mut rows = Vec::new();
    for &kind in &opts.buffer_kinds {
        for &buffer in &opts.buffers_ms {
            for &bg in &opts.background_kbps {
                for period in [None, Some(25), Some(50)] {
                    let at = Point {
                        period_ms: period,
                        kind,
                        buffer_ms: buffer,
                        bg_kbps: bg,
                    };
                    rows.push(point(opts, model, at));
                }
            }
        }
    }
    rows
}

/// One point of the sweep.
#[derive(Clone, Copy)]
struct Point {
    period_ms: Option<u64>,
    kind: RouterBuffer,
    buffer_ms: u64,
    bg_kbps: u64,
}

/// When background packets arrive (the paper does not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Poisson: exponential gaps (the reproduction's choice).
    #[default]
    Poisson,
    /// Evenly spaced at the mean rate, sizes still drawn at random (a diagnostic: how much the
    /// results owe to the background's burstiness).
    Periodic,
}

/// Background arrivals at `kbps` (Ethernet level), the paper's size mix.
fn background(
    kbps: u64,
    arrivals: Arrivals,
    duration: Duration,
    rng: &mut ChaCha8Rng,
) -> Vec<(Duration, usize)> {
    let mean_eth: f64 = BG_SIZES
        .iter()
        .map(|&(s, p)| (s + ETH_OVERHEAD) as f64 * p)
        .sum();
    let rate = kbps as f64 * 1000.0 / 8.0 / mean_eth; // packets per second
    let mut out = Vec::new();
    if rate <= 0.0 {
        return out;
    }
    let mut t = 0.0;
    loop {
        t += match arrivals {
            Arrivals::Poisson => -(1.0 - rng.random::<f64>()).ln() / rate,
            Arrivals::Periodic => 1.0 / rate,
        };
        if t >= duration.as_secs_f64() {
            return out;
        }
        let u: f64 = rng.random();
        let size = if u < 0.5 {
            40
        } else if u < 0.6 {
            576
        } else {
            1500
        };
        out.push((Duration::from_secs_f64(t), size));
    }
}

/// Per-run measurement state.
struct Run<'a> {
    packets: &'a [GamePacket],
    demux: Option<Demultiplexer>,
    net: LogNormal<f64>,
    rng: ChaCha8Rng,
    owds: Vec<f64>,
    game_eth_bytes: u64,
    bg_sent: u64,
    bg_delivered: u64,
}

impl Run<'_> {
    /// A game item (native packet or bundle) left the link at `at`.
    fn deliver(&mut self, base: Instant, at: Instant, kind: u64, bytes: &[u8]) {
        let net = Duration::from_millis(20)
            + Duration::from_secs_f64(self.net.sample(&mut self.rng) / 1000.0);
        let owd = |p: &[u8], extra: Duration, owds: &mut Vec<f64>| {
            if let Some(sent) = seq_of(p).and_then(|s| self.packets.get(s as usize)) {
                let d = at.duration_since(base + sent.at) + net + extra;
                owds.push(d.as_secs_f64() * 1000.0);
            }
        };
        match (kind, self.demux.as_mut()) {
            (KIND_BUNDLE, Some(demux)) => {
                let mut owds = std::mem::take(&mut self.owds);
                let _ = demux.handle_bundle(bytes, &mut |p| owd(p, PROCESSING, &mut owds));
                self.owds = owds;
            }
            (KIND_NATIVE, demux) => {
                let extra = if demux.is_some() {
                    PROCESSING
                } else {
                    Duration::ZERO
                };
                owd(bytes, extra, &mut self.owds);
            }
            _ => self.bg_delivered += 1,
        }
    }
}

fn point(opts: &TcmOptions, model: &TrafficModel, at: Point) -> LinkRow {
    let Point {
        period_ms,
        buffer_ms,
        bg_kbps,
        ..
    } = at;
    let mut rng =
        ChaCha8Rng::seed_from_u64(opts.seed ^ 0x7c3 ^ (bg_kbps << 16) ^ (buffer_ms << 40));
    let packets = game_packets(20, model, opts.duration, &mut rng);
    let bg = background(bg_kbps, opts.background_arrivals, opts.duration, &mut rng);
    let mut router = at.kind.shaper(buffer_ms);
    let mut mux = period_ms
        .map(|t| Multiplexer::new(mux_config(Duration::from_millis(t), CH_L2TP)).expect("valid"));
    let variance = 5.0f64; // ms^2 [AMBIGUOUS in the paper: units presumably ms^2]
    let sigma2 = (1.0 + variance / 400.0).ln();
    let mut run = Run {
        packets: &packets,
        demux: mux
            .as_ref()
            .map(|m| Demultiplexer::new(m.config()).expect("valid")),
        net: LogNormal::new(20f64.ln() - sigma2 / 2.0, sigma2.sqrt()).expect("valid lognormal"),
        rng: ChaCha8Rng::seed_from_u64(opts.seed ^ 0x9e7),
        owds: Vec::new(),
        game_eth_bytes: 0,
        bg_sent: bg.len() as u64,
        bg_delivered: 0,
    };
    let base = Instant::now();
    let (mut gi, mut bi) = (0, 0);
    let mut buf = Vec::new();
    // The shaper is FIFO and decides each packet's departure when it arrives, so every packet
    // is handed on (in departure order) as soon as it is offered.
    let mut send = |run: &mut Run<'_>, now: Instant, kind: u64, bytes: &[u8], size: usize| {
        if let Some(depart) = router.offer(now - base, size) {
            run.deliver(base, base + depart, kind, bytes);
        }
    };
    loop {
        let next_game = packets.get(gi).map(|p| base + p.at);
        let next_bg = bg.get(bi).map(|b| base + b.0);
        let next_mux = mux.as_ref().and_then(|m| m.poll_timeout());
        let Some(now) = [next_mux, next_game, next_bg].into_iter().flatten().min() else {
            break;
        };
        if next_mux == Some(now) {
            let m = mux.as_mut().expect("mux timeout implies a mux");
            m.handle_timeout(now);
            while let Some(kind) = m.poll_output(now, &mut buf) {
                // A bundle travels in the paper's L2TP tunnel: its common header added.
                let (k, ch) = match kind {
                    Output::Bundle => (KIND_BUNDLE, CH_L2TP),
                    Output::Native => (KIND_NATIVE, 0),
                };
                let size = buf.len() + ch + ETH_OVERHEAD;
                run.game_eth_bytes += size as u64;
                send(&mut run, now, k, &buf, size);
            }
        } else if next_game == Some(now) {
            let p = &packets[gi].bytes;
            gi += 1;
            match mux.as_mut() {
                Some(m) => m.push(now, p).expect("game packet"),
                None => {
                    run.game_eth_bytes += (p.len() + ETH_OVERHEAD) as u64;
                    send(&mut run, now, KIND_NATIVE, p, p.len() + ETH_OVERHEAD);
                }
            }
        } else {
            let size = bg[bi].1;
            bi += 1;
            send(&mut run, now, KIND_BG, &[], size + ETH_OVERHEAD);
        }
    }
    summarize(run, at, opts.duration)
}

fn summarize(mut run: Run<'_>, at: Point, d: Duration) -> LinkRow {
    let sent = run.packets.len().max(1) as f64;
    run.owds.sort_by(f64::total_cmp);
    let n = run.owds.len();
    let bound = OWD_BOUND.as_secs_f64() * 1000.0;
    let on_time = run.owds.iter().filter(|&&o| o <= bound).count();
    LinkRow {
        mode: at
            .period_ms
            .map_or("native".to_string(), |t| format!("T={t}")),
        buffer: at.kind,
        buffer_ms: at.buffer_ms,
        background_kbps: at.bg_kbps,
        game_eth_kbps: run.game_eth_bytes as f64 * 8.0 / d.as_secs_f64() / 1000.0,
        owd_mean_ms: if n == 0 {
            0.0
        } else {
            run.owds.iter().sum::<f64>() / n as f64
        },
        owd_p99_ms: if n == 0 {
            0.0
        } else {
            run.owds[(n * 99 / 100).min(n - 1)]
        },
        loss: 1.0 - n as f64 / sent,
        late_or_lost: 1.0 - on_time as f64 / sent,
        background_loss: if run.bg_sent == 0 {
            0.0
        } else {
            1.0 - run.bg_delivered as f64 / run.bg_sent as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tbf_bursts_then_shapes_and_limits_waiting_bytes() {
        let mut tbf = RouterBuffer::Bytes.shaper(50);
        let zero = Duration::ZERO;
        // A full bucket (5000 B) lets three 1514 B frames through at once; the fourth waits
        // for the 1056 B its bucket lacks at 125,000 B/s.
        for _ in 0..3 {
            assert_eq!(tbf.offer(zero, 1514), Some(zero));
        }
        let fourth = tbf.offer(zero, 1514).expect("fits");
        assert_eq!(fourth.as_micros(), 8448);
        // 11,250 B of waiting packets at most: six more frames fit (7 x 1514 = 10,598 B)...
        for _ in 0..6 {
            assert!(tbf.offer(zero, 1514).is_some());
        }
        assert_eq!(tbf.offer(zero, 1514), None);
        // ... and a small native packet still does.
        assert!(tbf.offer(zero, 84).is_some());
        // A time limit ignores sizes: a packet is refused once the wait ahead passes 50 ms.
        let mut time = RouterBuffer::Time.shaper(50);
        let mut admitted = 0;
        while time.offer(zero, 1514).is_some() {
            admitted += 1;
        }
        assert_eq!(time.offer(zero, 84), None);
        // Three at once, the fourth after 8.4 ms, then one per 12.1 ms: five start waiting
        // within 50 ms.
        assert_eq!(admitted, 3 + 5);
    }
}
