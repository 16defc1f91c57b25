//! The workload's two free parameters (mean payload and mean inter-arrival time per player),
//! fitted to what the paper states about its traffic, never to a result.
//!
//! The paper gives three facts about the traffic it offers to the router (Sec. IV): the 20
//! players' native traffic, "319 kbps a nivel eth", and the mean multiplexed packet for 20
//! players, "608 bytes" at T = 25 ms and "1192" at T = 50 ms. With n the packets per ms of all
//! players, P the mean payload, MH+RH the bytes a bundled packet carries besides its payload
//! and CH the bytes a bundle carries once:
//!
//! ```text
//! native, Ethernet level:  n·(P + NH + ETH)     = 319 kbit/s
//! mean bundle at T:        CH + n·T·(MH+RH + P) = 608 B (T = 25), 1192 B (T = 50)
//! ```
//!
//! The two bundle facts give the content rate r = n·(MH+RH+P) (least squares; their intercept
//! agrees with CH), so the facts fix two combinations of three unknowns. The third, MH+RH, is
//! the gateway's own: measured on its compressor (a COMPRESSED record plus the periodic FULL
//! refreshes), not chosen. Then n = (native − r) / (NH + ETH − MH−RH) and P = r/n − MH−RH.
//! MH+RH hardly depends on the payload or the rate, so the measurement is repeated with the
//! solved model until it settles (three rounds).
//!
//! The saving is a result and is not an input: at the Ethernet level it follows from the facts
//! alone (319 − (608 + ETH)·8/25 kbit/s), at the IP level it depends on the split between
//! headers and payload, which is what the fit decides.

use std::time::Duration;

use serde::Serialize;

use super::traffic::{TrafficModel, ETH_OVERHEAD, NH};
use super::{bwr_point, CH_L2TP};

/// Players of the published traffic facts.
const PLAYERS: usize = 20;
/// "El ancho de banda del tráfico nativo es de 319 kbps a nivel eth" (Sec. IV), kbit/s.
const NATIVE_ETH_KBPS: f64 = 319.0;
/// "en el primer caso son 608 bytes, mientras que en el segundo son 1192" (Sec. IV):
/// (T in ms, mean multiplexed packet in bytes).
const BUNDLES: [(u64, f64); 2] = [(25, 608.0), (50, 1192.0)];
/// The model the MH+RH measurement starts from (any plausible one: MH+RH barely moves).
const START: TrafficModel = TrafficModel {
    mean_payload: 61.0,
    mean_iat: Duration::from_micros(53_700),
};
/// Simulated length of each MH+RH measurement.
const PROBE: Duration = Duration::from_secs(10);

/// The fit: its inputs, the measured header bytes and the values found.
#[derive(Debug, Clone, Serialize)]
pub struct TrafficFit {
    /// Players of the facts.
    pub players: usize,
    /// Native traffic of `players` at Ethernet level, kbit/s (the fact).
    pub native_eth_kbps: f64,
    /// (T ms, mean multiplexed packet bytes) (the facts).
    pub bundles: Vec<(u64, f64)>,
    /// Bytes a bundle carries once: the paper's CH (IPv4 20 + L2TP 4 + PPP 1) plus the
    /// gateway's 1-byte bundle version.
    pub ch: f64,
    /// Native IPv4/UDP header, bytes.
    pub nh: f64,
    /// Ethernet bytes counted per packet.
    pub eth: f64,
    /// MH+RH per bundled packet, measured on the gateway's compressor, bytes.
    pub mh_rh: f64,
    /// The bundle facts' content rate n·(MH+RH+P), bytes per ms.
    pub content_rate: f64,
    /// The intercept of the two bundle facts (what they imply for CH), bytes.
    pub implied_ch: f64,
    /// All players' packets per second.
    pub packets_per_s: f64,
    /// The model found.
    pub model: TrafficModel,
}

impl TrafficFit {
    /// The calibrations in words: each parameter, the facts it meets (quoted) and its value.
    pub fn calibrations(&self) -> Vec<String> {
        let b = |i: usize| self.bundles[i];
        vec![
            format!(
                "game traffic, mean inter-arrival time per player = {:.1} ms and mean payload = \
                 {:.1} B: solved jointly from 'El ancho de banda del tráfico nativo es de 319 \
                 kbps a nivel eth' ({} players, {} B of MAC header per packet) and 'en el primer \
                 caso son 608 bytes, mientras que en el segundo son 1192' (mean multiplexed \
                 packet at T = {} and {} ms; least squares, content rate {:.2} B/ms, intercept \
                 {:.1} B against CH {:.0} B)",
                self.model.mean_iat.as_secs_f64() * 1000.0,
                self.model.mean_payload,
                self.players,
                self.eth,
                b(0).0,
                b(1).0,
                self.content_rate,
                self.implied_ch,
                self.ch,
            ),
            format!(
                "MH+RH = {:.2} B per bundled packet: not fitted, measured on the gateway's \
                 compressor (IPHC-like COMPRESSED record with its length prefix, plus the FULL \
                 refresh every 32 packets of a flow) on this traffic",
                self.mh_rh
            ),
        ]
    }
}

/// Fits the workload (see the module docs); `seed` drives the MH+RH measurement runs.
pub fn fit(seed: u64) -> TrafficFit {
    let (sum_tb, sum_tt, sum_t, sum_b) =
        BUNDLES
            .iter()
            .fold((0.0, 0.0, 0.0, 0.0), |(tb, tt, t0, b0), &(t, b)| {
                let t = t as f64;
                (tb + t * b, tt + t * t, t0 + t, b0 + b)
            });
    let ch = CH_L2TP as f64 + 1.0;
    // Least squares through the known CH: (B − CH) = r·T.
    let content_rate = (sum_tb - ch * sum_t) / sum_tt;
    // Free intercept, only to show that the facts agree with CH.
    let k = BUNDLES.len() as f64;
    let slope = (k * sum_tb - sum_t * sum_b) / (k * sum_tt - sum_t * sum_t);
    let implied_ch = (sum_b - slope * sum_t) / k;
    let native = NATIVE_ETH_KBPS * 1000.0 / 8.0 / 1000.0; // bytes per ms
    let mut model = START;
    let mut mh_rh = 0.0;
    let mut n = 0.0;
    for _ in 0..3 {
        mh_rh = bwr_point(seed, &model, PLAYERS, Duration::from_millis(25), PROBE).mh_rh;
        n = (native - content_rate) / ((NH + ETH_OVERHEAD) as f64 - mh_rh);
        model = TrafficModel {
            mean_payload: content_rate / n - mh_rh,
            mean_iat: Duration::from_secs_f64(PLAYERS as f64 / n / 1000.0),
        };
    }
    TrafficFit {
        players: PLAYERS,
        native_eth_kbps: NATIVE_ETH_KBPS,
        bundles: BUNDLES.to_vec(),
        ch,
        nh: NH as f64,
        eth: ETH_OVERHEAD as f64,
        mh_rh,
        content_rate,
        implied_ch,
        packets_per_s: n * 1000.0,
        model,
    }
}
