//! The bottleneck experiment: game traffic (native or multiplexed) and background traffic
//! through a 1 Mbit/s link whose buffer the paper sizes by a maximum queueing time (50 ms or
//! 500 ms), enforced in bytes as tc does ([`RouterBuffer::Bytes`]) or per packet in time
//! ([`RouterBuffer::Time`]).

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use serde::Serialize;
use thinwire_gateway::tcm::{Demultiplexer, Multiplexer, Output};
use thinwire_netmodel::{Link, LinkConfig, QueueLimit};

use super::traffic::{game_packets, seq_of, GamePacket, TrafficModel, ETH_OVERHEAD};
use super::{mux_config, LinkRow, TcmOptions, CH_THINWIRE};

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

    /// The link's queue limit for a buffer of `ms` milliseconds.
    fn limit(self, ms: u64) -> QueueLimit {
        match self {
            RouterBuffer::Bytes => {
                QueueLimit::Bytes((LINK_BPS * ms / 8 / 1000) as usize + TC_BURST)
            }
            RouterBuffer::Time => QueueLimit::Time(Duration::from_millis(ms)),
        }
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

/// Background arrivals: Poisson at `kbps` (Ethernet level), the paper's size mix.
fn background(kbps: u64, duration: Duration, rng: &mut ChaCha8Rng) -> Vec<(Duration, usize)> {
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
        t += -(1.0 - rng.random::<f64>()).ln() / rate;
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
    let bg = background(bg_kbps, opts.duration, &mut rng);
    let link_config = LinkConfig::default()
        .with_bandwidth(LINK_BPS)
        .with_queue(at.kind.limit(buffer_ms));
    let mut link: Link<(u64, Vec<u8>)> = Link::new(link_config, rng.random());
    let mut mux =
        period_ms.map(|t| Multiplexer::new(mux_config(Duration::from_millis(t))).expect("valid"));
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
    loop {
        let next_game = packets.get(gi).map(|p| base + p.at);
        let next_bg = bg.get(bi).map(|b| base + b.0);
        let next_mux = mux.as_ref().and_then(|m| m.poll_timeout());
        let next_link = link.next_delivery();
        let Some(now) = [next_link, next_mux, next_game, next_bg]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        if next_link == Some(now) {
            while let Some((at, (kind, bytes))) = link.poll_deliver_timed(now) {
                run.deliver(base, at, kind, &bytes);
            }
        } else if next_mux == Some(now) {
            let m = mux.as_mut().expect("mux timeout implies a mux");
            m.handle_timeout(now);
            while let Some(kind) = m.poll_output(now, &mut buf) {
                let (k, ch) = match kind {
                    Output::Bundle => (KIND_BUNDLE, CH_THINWIRE),
                    Output::Native => (KIND_NATIVE, 0),
                };
                let size = buf.len() + ch + ETH_OVERHEAD;
                run.game_eth_bytes += size as u64;
                link.send(now, (k, buf.clone()), size);
            }
        } else if next_game == Some(now) {
            let p = &packets[gi].bytes;
            gi += 1;
            match mux.as_mut() {
                Some(m) => m.push(now, p).expect("game packet"),
                None => {
                    run.game_eth_bytes += (p.len() + ETH_OVERHEAD) as u64;
                    link.send(now, (KIND_NATIVE, p.clone()), p.len() + ETH_OVERHEAD);
                }
            }
        } else {
            let size = bg[bi].1;
            bi += 1;
            link.send(now, (KIND_BG, Vec::new()), size + ETH_OVERHEAD);
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
