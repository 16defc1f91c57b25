//! The TCM reproduction (Saldaña et al., "Influencia del buffer del router en la multiplexión
//! de juegos online"), on the real [`thinwire_gateway::tcm`] multiplexer and demultiplexer.
//!
//! First the workload is fitted to the paper's traffic facts ([`TrafficFit`]: 319 kbit/s
//! native for 20 players, 608 B and 1,192 B mean multiplexed packets). Then two experiments, in
//! deterministic simulated time (seeded ChaCha8):
//! - **Bandwidth** ([`BwrRow`]): 5..20 Counter-Strike-like players ([`TrafficModel`])
//!   x period T; native vs multiplexed bandwidth at IP and Ethernet level, the measured
//!   bandwidth relation against Eq. 1 fed with the observed k statistics and header sizes,
//!   hold delay and bundle size. CH is the thinwire trunk's overhead, [`CH_THINWIRE`] = 59 B
//!   (IPv4 + UDP 28, short header 1 + 8 + 2, AEAD tag 16, message frame about 4), and also
//!   the paper's L2TP [`CH_L2TP`] = 25 B.
//! - **Bottleneck** ([`LinkRow`]): 20 players native, T = 25 ms and T = 50 ms (bundles in the
//!   paper's L2TP tunnel, CH 25 B) through tc's token bucket filter at 1 Mbit/s with a 5000 B
//!   burst and a 50 ms or 500 ms buffer ([`RouterBuffer`]: in bytes as tc sizes it, or limited
//!   in time) and background traffic (50 % 40 B, 10 % 576 B, 40 % 1500 B); network delay
//!   20 ms + lognormal(mean 20 ms, variance 5 ms^2), 5 ms mux + demux processing; game one-way
//!   delay and loss.
//!
//! Each reading of the setup is stated with the sentence it rests on ([`choices`]).

mod choices;
mod figures;
mod fit;
mod html;
mod link;
#[cfg(test)]
mod tests;
mod traffic;

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use thinwire_gateway::tcm::bwr::{bwr, BwrInputs, KStats};
use thinwire_gateway::tcm::{BufferPolicy, Demultiplexer, Multiplexer, Output, TcmConfig};

pub use choices::choices;
pub use figures::{calibrations, figures};
pub use fit::{fit, TrafficFit};
pub use html::tcm_report_html;
pub use link::{Arrivals, RouterBuffer};
pub use traffic::TrafficModel;
use traffic::{game_packets, ETH_OVERHEAD, NH};

/// Tunnel overhead per bundle on a thinwire trunk: IPv4 + UDP 28, short header 1 + 8 + 2
/// (flags, connection id, packet number), AEAD tag 16, message frame header about 4.
pub const CH_THINWIRE: usize = 59;
/// The paper's common header: IPv4 20 + L2TP 4 + PPP 1.
pub const CH_L2TP: usize = 25;

/// What to run.
#[derive(Debug, Clone, Serialize)]
pub struct TcmOptions {
    /// Seed of every random choice.
    pub seed: u64,
    /// Simulated duration of each run.
    pub duration: Duration,
    /// Numbers of players of the bandwidth sweep.
    pub players: Vec<usize>,
    /// Periods T (ms) of the bandwidth sweep.
    pub periods_ms: Vec<u64>,
    /// Background rates (kbit/s, Ethernet level) of the bottleneck sweep.
    pub background_kbps: Vec<u64>,
    /// Buffer sizes of the bottleneck, as the paper gives them (maximum queueing time, ms).
    pub buffers_ms: Vec<u64>,
    /// How the router enforces them.
    pub buffer_kinds: Vec<RouterBuffer>,
    /// When background packets arrive.
    pub background_arrivals: Arrivals,
}

impl Default for TcmOptions {
    fn default() -> Self {
        TcmOptions {
            seed: 1,
            duration: Duration::from_secs(120),
            players: vec![5, 10, 15, 20],
            periods_ms: vec![5, 10, 25, 50, 100],
            background_kbps: vec![
                0, 200, 400, 600, 700, 750, 800, 850, 900, 925, 950, 1000, 1100, 1200,
            ],
            buffers_ms: vec![50, 500],
            buffer_kinds: vec![RouterBuffer::Bytes, RouterBuffer::Time],
            background_arrivals: Arrivals::Poisson,
        }
    }
}

/// One point of the bandwidth sweep.
#[derive(Debug, Clone, Serialize)]
pub struct BwrRow {
    /// Players.
    pub players: usize,
    /// Period T in ms.
    pub period_ms: u64,
    /// Native game traffic, IP level, kbit/s.
    pub native_ip_kbps: f64,
    /// Native game traffic, Ethernet level, kbit/s.
    pub native_eth_kbps: f64,
    /// Multiplexed traffic with the thinwire trunk overhead, IP level, kbit/s.
    pub mux_ip_kbps: f64,
    /// The same at Ethernet level, kbit/s.
    pub mux_eth_kbps: f64,
    /// Native packets per second.
    pub native_pps: f64,
    /// Multiplexed packets (bundles + natives) per second.
    pub mux_pps: f64,
    /// Measured bandwidth relation (IP level, CH = 59 B).
    pub bwr_measured: f64,
    /// Eq. 1 from the observed k statistics and header sizes (CH = 59 B).
    pub bwr_formula: f64,
    /// Measured bandwidth relation with the paper's CH = 25 B.
    pub bwr_measured_l2tp: f64,
    /// Eq. 1 with CH = 25 B.
    pub bwr_formula_l2tp: f64,
    /// Eq. 1 predicted a priori (CH = 59 B): k from Poisson arrivals at the observed packet
    /// rate (`KStats::poisson`), MH + RH = 6 B (a steady COMPRESSED record), the mean payload.
    /// Unlike `bwr_formula` it observes no period, so it tests the paper's model.
    pub bwr_predicted: f64,
    /// Eq. 1's asymptote (MH+RH+P)/(NH+P) from the measured MH+RH and mean payload: the BWR
    /// for many players and long periods, where CH is shared by many packets.
    pub bwr_asymptote: f64,
    /// Mean MH + RH per bundled packet (record length prefix + compressed header), bytes.
    pub mh_rh: f64,
    /// E\[k\] over non-empty periods.
    pub k_mean: f64,
    /// Pr(k = 1).
    pub p_single: f64,
    /// Mean bundle size in bytes (the tunnel packet: bundle + CH).
    pub mean_bundle_bytes: f64,
    /// Mean hold time added by the multiplexer, ms.
    pub mean_hold_ms: f64,
    /// Every packet came back bit-exactly.
    pub exact: bool,
}

/// One point of the bottleneck sweep.
#[derive(Debug, Clone, Serialize)]
pub struct LinkRow {
    /// "native", "T=25" or "T=50".
    pub mode: String,
    /// How the router enforces the buffer.
    pub buffer: RouterBuffer,
    /// Buffer size as the paper gives it (maximum queueing time), ms.
    pub buffer_ms: u64,
    /// Offered background traffic, kbit/s at Ethernet level.
    pub background_kbps: u64,
    /// Game traffic offered to the link, kbit/s at Ethernet level.
    pub game_eth_kbps: f64,
    /// Mean game one-way delay, ms.
    pub owd_mean_ms: f64,
    /// 99th percentile of the game one-way delay, ms.
    pub owd_p99_ms: f64,
    /// Fraction of game packets not delivered.
    pub loss: f64,
    /// Fraction of game packets delivered later than 160 ms or not at all.
    pub late_or_lost: f64,
    /// Fraction of background packets dropped.
    pub background_loss: f64,
}

/// The whole reproduction.
#[derive(Debug, Clone, Serialize)]
pub struct TcmReport {
    /// What was run.
    pub options: TcmOptions,
    /// The workload's fit to the paper's traffic facts.
    pub fit: TrafficFit,
    /// The calibrations in words (from `fit`).
    pub calibrations: Vec<String>,
    /// How the paper's setup is read, each choice with its sentence ([`choices`]).
    pub choices: Vec<String>,
    /// Tunnel overhead used (bytes).
    pub ch_thinwire: usize,
    /// The paper's tunnel overhead (bytes).
    pub ch_l2tp: usize,
    /// Ethernet framing counted per packet (bytes).
    pub eth_overhead: usize,
    /// The bandwidth sweep.
    pub bwr: Vec<BwrRow>,
    /// The bottleneck sweep.
    pub link: Vec<LinkRow>,
}

/// Runs both experiments.
pub fn run_tcm(opts: &TcmOptions) -> TcmReport {
    let fit = fit(opts.seed);
    let model = fit.model;
    let mut bwr_rows = Vec::new();
    for &players in &opts.players {
        for &t in &opts.periods_ms {
            let t = Duration::from_millis(t);
            bwr_rows.push(bwr_point(opts.seed, &model, players, t, opts.duration));
        }
    }
    TcmReport {
        options: opts.clone(),
        calibrations: fit.calibrations(),
        choices: choices(),
        fit,
        ch_thinwire: CH_THINWIRE,
        ch_l2tp: CH_L2TP,
        eth_overhead: ETH_OVERHEAD,
        bwr: bwr_rows,
        link: link::sweep(opts, &model),
    }
}

/// The multiplexer configuration of the reproduction: period `t`, bundles that fit a
/// 1500-byte IP packet after a tunnel overhead of `ch` bytes.
pub(crate) fn mux_config(t: Duration, ch: usize) -> TcmConfig {
    TcmConfig {
        period: t,
        mtu: 1500 - ch,
        buffer: BufferPolicy::Large { max_bytes: 1 << 20 },
        ..TcmConfig::default()
    }
}

/// Byte and count totals of one bandwidth run.
#[derive(Default)]
struct Totals {
    native_bytes: u64,
    natives_out: u64,
    native_out_bytes: u64,
    bundles: u64,
    bundle_bytes: u64,
    bundled_payload: u64,
    bundled_packets: u64,
    ks: Vec<usize>,
    exact: bool,
}

/// One point of the bandwidth sweep: `players` players of `model` for `duration`, period `t`.
pub(crate) fn bwr_point(
    seed: u64,
    model: &TrafficModel,
    players: usize,
    t: Duration,
    duration: Duration,
) -> BwrRow {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (players as u64) << 8);
    let packets = game_packets(players, model, duration, &mut rng);
    let config = mux_config(t, CH_THINWIRE);
    let mut mux = Multiplexer::new(config.clone()).expect("valid config");
    let mut demux = Demultiplexer::new(&config).expect("valid config");
    let base = Instant::now();
    let mut tot = Totals {
        exact: true,
        ..Totals::default()
    };
    let mut buf = Vec::new();
    let mut out = |mux: &mut Multiplexer, now: Instant, tot: &mut Totals| {
        while let Some(kind) = mux.poll_output(now, &mut buf) {
            account(kind, &buf, &packets, &mut demux, tot);
        }
    };
    for p in &packets {
        let now = base + p.at;
        while let Some(end) = mux.poll_timeout().filter(|&e| e <= now) {
            mux.handle_timeout(end);
            out(&mut mux, end, &mut tot);
        }
        mux.push(now, &p.bytes).expect("game packet");
        tot.native_bytes += p.bytes.len() as u64;
    }
    if let Some(end) = mux.poll_timeout() {
        mux.handle_timeout(end);
        out(&mut mux, end, &mut tot);
    }
    tot.exact &= mux.stats().packets_out() == packets.len() as u64;
    row(
        players,
        t,
        duration,
        &tot,
        mux.stats().hold_mean(),
        packets.len(),
    )
}

/// Accounts one output of the multiplexer and checks what the demultiplexer restores.
fn account(
    kind: Output,
    buf: &[u8],
    packets: &[traffic::GamePacket],
    demux: &mut Demultiplexer,
    tot: &mut Totals,
) {
    match kind {
        Output::Native => {
            tot.natives_out += 1;
            tot.native_out_bytes += buf.len() as u64;
            tot.ks.push(1);
        }
        Output::Bundle => {
            let mut exact = true;
            let mut payload = 0;
            let k = demux
                .handle_bundle(buf, &mut |p| {
                    let sent = traffic::seq_of(p).and_then(|s| packets.get(s as usize));
                    exact &= sent.is_some_and(|s| s.bytes == p);
                    payload += (p.len() - NH) as u64;
                })
                .unwrap_or(0);
            tot.exact &= exact;
            tot.bundles += 1;
            tot.bundle_bytes += buf.len() as u64;
            tot.bundled_payload += payload;
            tot.bundled_packets += k as u64;
            tot.ks.push(k);
        }
    }
}

fn row(players: usize, t: Duration, d: Duration, tot: &Totals, hold: Duration, n: usize) -> BwrRow {
    let secs = d.as_secs_f64();
    let kbps = |bytes: f64| bytes * 8.0 / secs / 1000.0;
    let native = tot.native_bytes as f64;
    let mux_bytes = |ch: usize| {
        tot.native_out_bytes as f64 + tot.bundle_bytes as f64 + (tot.bundles * ch as u64) as f64
    };
    let out_packets = (tot.bundles + tot.natives_out) as f64;
    let k = KStats::from_counts(tot.ks.iter().copied());
    let bundled = tot.bundled_packets.max(1) as f64;
    // Per bundled packet: record bytes minus payload (the bundle's version byte goes to CH).
    let mh_rh = (tot.bundle_bytes - tot.bundles - tot.bundled_payload) as f64 / bundled;
    let payload = (native - (n * NH) as f64) / n.max(1) as f64;
    let formula = |ch: usize| {
        bwr(&BwrInputs {
            k,
            ch: ch as f64 + 1.0,
            nh: NH as f64,
            mh: 1.0,
            rh: mh_rh - 1.0,
            payload,
        })
    };
    BwrRow {
        players,
        period_ms: t.as_millis() as u64,
        native_ip_kbps: kbps(native),
        native_eth_kbps: kbps(native + (n * ETH_OVERHEAD) as f64),
        mux_ip_kbps: kbps(mux_bytes(CH_THINWIRE)),
        mux_eth_kbps: kbps(mux_bytes(CH_THINWIRE) + out_packets * ETH_OVERHEAD as f64),
        native_pps: n as f64 / secs,
        mux_pps: out_packets / secs,
        bwr_measured: mux_bytes(CH_THINWIRE) / native,
        bwr_formula: formula(CH_THINWIRE),
        bwr_measured_l2tp: mux_bytes(CH_L2TP) / native,
        bwr_formula_l2tp: formula(CH_L2TP),
        bwr_predicted: bwr(&BwrInputs {
            k: KStats::poisson(n as f64 * t.as_secs_f64() / secs),
            ch: CH_THINWIRE as f64 + 1.0,
            nh: NH as f64,
            mh: 1.0,
            rh: 5.0,
            payload,
        }),
        bwr_asymptote: (mh_rh + payload) / (NH as f64 + payload),
        mh_rh,
        k_mean: k.mean,
        p_single: k.p_single,
        mean_bundle_bytes: if tot.bundles == 0 {
            0.0
        } else {
            tot.bundle_bytes as f64 / tot.bundles as f64 + CH_THINWIRE as f64
        },
        mean_hold_ms: hold.as_secs_f64() * 1000.0,
        exact: tot.exact,
    }
}
