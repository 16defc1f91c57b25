//! A model of SCTP (RFC 4960) as Wu et al. (MTAP 2009) configured it: one
//! association per client carrying every message on ONE ordered reliable
//! stream (the usual game setup), with ns-2's SCTP agent defaults.
//!
//! Modelled: one DATA chunk per message (message boundaries kept; 16-byte
//! chunk header, payload padded to 4 bytes), chunks bundled into packets of
//! at most `mtu` bytes (20-byte IPv4 + 12-byte common header), selective
//! acknowledgements (SACK chunks with gap blocks, 16 + 4 bytes per block)
//! bundled with data when there is any, delayed SACKs (every second packet
//! or after `sack_delay`; at once while the receiver sees a gap), fast
//! retransmit of a TSN reported missing by `fast_rtx_reports` SACKs (once per
//! TSN), RFC 4960's RTO (SRTT + 4 RTTVAR, `rto_min`..`rto_max`, doubled on
//! each T3 expiry, Karn's rule), and byte-counted congestion control (initial
//! cwnd `initial_cwnd_mtus` MTUs, ns-2's `initialCwndMultiplier_`; slow start
//! and congestion avoidance only while the window is fully used, halving to
//! at least 4 MTUs on fast retransmit, one MTU after T3). Delivery is in TSN
//! order (one stream): head-of-line blocking as with TCP. Not modelled:
//! association setup, multi-homing, heartbeats, receiver window limits.
//!
//! The sender half (SACK processing, timers, congestion control, packet
//! building) is in `sctp/sender.rs`, the receiver half in `sctp/receiver.rs`.

mod receiver;
mod sender;

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::{add_counter, Counters, OutMessage, Protocol, RttEstimator, SimEndpoint, Transmit};
use crate::workload::ClassSpec;

/// Parameters of the SCTP model (defaults: ns-2's `Agent/SCTP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SctpConfig {
    /// Largest packet on the wire (ns-2 `MTU_` 1500).
    pub mtu: u32,
    /// Initial retransmission timeout (ns-2 `rtoInitial_` 3 s).
    pub rto_initial: Duration,
    /// Lower bound of the RTO (ns-2 `rtoMin_` 1 s; RFC 4960 RTO.Min).
    pub rto_min: Duration,
    /// Upper bound of the RTO (ns-2 `rtoMax_` 60 s).
    pub rto_max: Duration,
    /// Delayed SACK timer (ns-2 `sackDelay_` 200 ms).
    pub sack_delay: Duration,
    /// Missing reports that trigger fast retransmit (RFC 4960: 3).
    pub fast_rtx_reports: u32,
    /// Initial congestion window in MTUs (ns-2 `initialCwndMultiplier_` 2).
    pub initial_cwnd_mtus: u32,
}

impl Default for SctpConfig {
    fn default() -> Self {
        SctpConfig {
            mtu: 1500,
            rto_initial: Duration::from_secs(3),
            rto_min: Duration::from_secs(1),
            rto_max: Duration::from_secs(60),
            sack_delay: Duration::from_millis(200),
            fast_rtx_reports: 3,
            initial_cwnd_mtus: 2,
        }
    }
}

/// IPv4 header bytes.
const IP: u32 = 20;
/// SCTP common header bytes.
const COMMON: u32 = 12;
/// DATA chunk header bytes.
const DATA_HDR: u32 = 16;
/// SACK chunk header bytes (without gap blocks).
const SACK_HDR: u32 = 16;

/// A SACK chunk: cumulative TSN and gap blocks (inclusive TSN ranges above it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sack {
    /// Highest TSN received in sequence (`None`: nothing yet).
    pub cum: Option<u64>,
    /// Received TSN ranges above `cum`, inclusive, ascending.
    pub gaps: Vec<(u64, u64)>,
}

/// An SCTP packet: DATA chunks (TSN, message id, payload size) and an
/// optional SACK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SctpPacket {
    /// DATA chunks.
    pub data: Vec<(u64, u64, u32)>,
    /// SACK chunk.
    pub sack: Option<Sack>,
    /// Damaged on the wire (fails the CRC32c, dropped).
    pub corrupted: bool,
}

dropped_when_corrupted!(SctpPacket);

#[derive(Debug, Clone)]
struct Chunk {
    tsn: u64,
    id: u64,
    size: u32,
    /// Last transmission (None: not sent yet).
    sent: Option<Instant>,
    tx_count: u32,
    gap_acked: bool,
    missing: u32,
    fast_done: bool,
    marked: bool,
}

impl Chunk {
    fn bytes(&self) -> u32 {
        DATA_HDR + self.size.div_ceil(4) * 4
    }
    fn in_flight(&self) -> bool {
        self.sent.is_some() && !self.gap_acked && !self.marked
    }
}

/// One end of a modelled SCTP association (sender and receiver halves).
#[derive(Debug)]
pub struct SctpAssoc {
    cfg: SctpConfig,
    // Sender.
    chunks: VecDeque<Chunk>,
    next_tsn: u64,
    cwnd: u32,
    ssthresh: u32,
    partial_acked: u32,
    recover: Option<u64>,
    rtt: RttEstimator,
    rto: Duration,
    t3_at: Option<Instant>,
    // Receiver.
    cum: Option<u64>,
    above: BTreeMap<u64, u64>,
    delivered: VecDeque<u64>,
    sack_pending: bool,
    unsacked_packets: u32,
    sack_at: Option<Instant>,
    // Counters.
    packets: u64,
    retransmissions: u64,
    fast_retransmits: u64,
    timeouts: u64,
}

impl SctpAssoc {
    /// A fresh association end.
    pub fn new(cfg: SctpConfig) -> Self {
        SctpAssoc {
            cfg,
            chunks: VecDeque::new(),
            next_tsn: 0,
            cwnd: cfg.initial_cwnd_mtus.max(1) * cfg.mtu,
            ssthresh: u32::MAX,
            partial_acked: 0,
            recover: None,
            rtt: RttEstimator::default(),
            rto: cfg.rto_initial,
            t3_at: None,
            cum: None,
            above: BTreeMap::new(),
            delivered: VecDeque::new(),
            sack_pending: false,
            unsacked_packets: 0,
            sack_at: None,
            packets: 0,
            retransmissions: 0,
            fast_retransmits: 0,
            timeouts: 0,
        }
    }

    /// Current retransmission timeout.
    pub fn rto(&self) -> Duration {
        self.rto
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u32 {
        self.cwnd
    }
}

impl SimEndpoint for SctpAssoc {
    type Packet = SctpPacket;

    fn send(&mut self, _now: Instant, _peer: u32, msg: &OutMessage) {
        let tsn = self.next_tsn;
        self.next_tsn += 1;
        self.chunks.push_back(Chunk {
            tsn,
            id: msg.id,
            size: msg.size.max(1),
            sent: None,
            tx_count: 0,
            gap_acked: false,
            missing: 0,
            fast_done: false,
            marked: false,
        });
    }

    fn receive(&mut self, now: Instant, _peer: u32, p: SctpPacket) {
        if p.corrupted {
            return;
        }
        if let Some(s) = &p.sack {
            self.on_sack(now, s);
        }
        if !p.data.is_empty() {
            self.on_data(now, &p.data);
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<SctpPacket>> {
        // A delayed SACK waits for its timer unless data carries it.
        let (packet, wire) = self.build(now, self.sack_pending)?;
        let payload: u32 = packet.data.iter().map(|d| d.2).sum();
        Some(Transmit {
            peer: 0,
            payload_bytes: Some(payload as usize),
            wire_bytes: wire as usize,
            packet,
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        match (self.t3_at, self.sack_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.sack_at.is_some_and(|t| t <= now) {
            self.sack_at = None;
            self.sack_pending = true;
        }
        if self.t3_at.is_some_and(|t| t <= now) {
            self.on_t3(now);
        }
    }

    fn poll_delivered(&mut self) -> Option<(u32, u64)> {
        self.delivered.pop_front().map(|id| (0, id))
    }

    fn add_counters(&self, out: &mut Counters) {
        add_counter(out, "sctp_packets", self.packets as f64);
        add_counter(out, "sctp_retransmissions", self.retransmissions as f64);
        add_counter(out, "sctp_fast_retransmits", self.fast_retransmits as f64);
        add_counter(out, "sctp_timeouts", self.timeouts as f64);
    }
}

/// The SCTP model as a [`Protocol`] (`sctp-model`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SctpModel {
    /// Parameters.
    pub config: SctpConfig,
}

impl Protocol for SctpModel {
    type Packet = SctpPacket;
    type Endpoint = SctpAssoc;

    fn name(&self) -> String {
        "sctp-model".into()
    }
    fn model(&self) -> bool {
        true
    }
    fn server_per_client(&self) -> bool {
        true
    }
    fn new_client(&self, _: u32, _: u32, _: u64, _: Instant, _: &[ClassSpec]) -> SctpAssoc {
        SctpAssoc::new(self.config)
    }
    fn new_server(&self, _: u32, _: u64, _: Instant, _: &[ClassSpec]) -> SctpAssoc {
        SctpAssoc::new(self.config)
    }
}

#[cfg(test)]
mod tests;
