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

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use thinwire_netmodel::Corruptible;

use super::{add_counter, Counters, OutMessage, Protocol, SimEndpoint, Transmit};
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

impl Corruptible for SctpPacket {
    fn bit_len(&self) -> usize {
        8
    }
    fn flip_bit(&mut self, _bit: usize) {
        self.corrupted = true;
    }
}

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
    srtt: Option<Duration>,
    rttvar: Duration,
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
            srtt: None,
            rttvar: Duration::ZERO,
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

    fn flight(&self) -> u32 {
        self.chunks
            .iter()
            .filter(|c| c.in_flight())
            .map(Chunk::bytes)
            .sum()
    }

    fn rtt_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = self.rttvar * 3 / 4 + s.abs_diff(r) / 4;
                self.srtt = Some(s * 7 / 8 + r / 8);
            }
        }
        let s = self.srtt.unwrap_or(r);
        self.rto = (s + self.rttvar * 4).clamp(self.cfg.rto_min, self.cfg.rto_max);
    }

    fn min_ssthresh(&self) -> u32 {
        4 * self.cfg.mtu
    }

    fn on_sack(&mut self, now: Instant, sack: &Sack) {
        let flight_before = self.flight();
        let mut newly = 0u32;
        let mut sample = None;
        let cum_advanced = sack
            .cum
            .is_some_and(|c| self.chunks.front().is_some_and(|f| f.tsn <= c));
        if let Some(cum) = sack.cum {
            while self.chunks.front().is_some_and(|c| c.tsn <= cum) {
                if let Some(c) = self.chunks.pop_front() {
                    if !c.gap_acked {
                        newly += c.bytes();
                    }
                    if c.tx_count == 1 {
                        sample = c.sent.map(|t| now - t);
                    }
                }
            }
        }
        let mut highest_gap = None;
        for c in &mut self.chunks {
            let acked = sack.gaps.iter().any(|&(a, b)| (a..=b).contains(&c.tsn));
            if acked && !c.gap_acked {
                c.gap_acked = true;
                c.marked = false;
                newly += c.bytes();
                if c.tx_count == 1 && sample.is_none() {
                    sample = c.sent.map(|t| now - t);
                }
            }
            if acked {
                highest_gap = Some(c.tsn);
            }
        }
        if let Some(r) = sample {
            self.rtt_sample(r);
        }
        // Missing reports for TSNs below the highest gap-acked one.
        let mut fast = false;
        if let Some(h) = highest_gap {
            let threshold = self.cfg.fast_rtx_reports;
            for c in &mut self.chunks {
                if c.tsn >= h {
                    break;
                }
                if !c.gap_acked && c.sent.is_some() && !c.fast_done {
                    c.missing += 1;
                    if c.missing >= threshold {
                        c.fast_done = true;
                        c.marked = true;
                        fast = true;
                    }
                }
            }
        }
        if self
            .recover
            .is_some_and(|r| sack.cum.is_some_and(|c| c >= r))
        {
            self.recover = None;
        }
        if fast {
            self.fast_retransmits += 1;
            if self.recover.is_none() {
                self.ssthresh = (self.cwnd / 2).max(self.min_ssthresh());
                self.cwnd = self.ssthresh;
                self.partial_acked = 0;
                self.recover = self
                    .chunks
                    .iter()
                    .rev()
                    .find(|c| c.sent.is_some())
                    .map(|c| c.tsn);
            }
        } else if cum_advanced && flight_before >= self.cwnd {
            // Grow only while the window is fully used (RFC 4960 7.2.1-2).
            if self.cwnd <= self.ssthresh {
                self.cwnd += newly.min(self.cfg.mtu);
            } else {
                self.partial_acked += newly;
                if self.partial_acked >= self.cwnd {
                    self.partial_acked -= self.cwnd;
                    self.cwnd += self.cfg.mtu;
                }
            }
        }
        if cum_advanced {
            // The earliest outstanding TSN was acknowledged: restart T3.
            let any = self.chunks.iter().any(|c| c.sent.is_some() && !c.gap_acked);
            self.t3_at = any.then(|| now + self.rto);
        }
        if self.chunks.iter().all(|c| c.sent.is_none() || c.gap_acked) {
            self.t3_at = None;
        }
    }

    fn on_t3(&mut self, now: Instant) {
        self.t3_at = None;
        if !self.chunks.iter().any(|c| c.sent.is_some() && !c.gap_acked) {
            return;
        }
        self.timeouts += 1;
        self.ssthresh = (self.cwnd / 2).max(self.min_ssthresh());
        self.cwnd = self.cfg.mtu;
        self.partial_acked = 0;
        self.recover = None;
        self.rto = (self.rto * 2).min(self.cfg.rto_max);
        for c in &mut self.chunks {
            if c.sent.is_some() && !c.gap_acked {
                c.marked = true;
            }
        }
        self.t3_at = Some(now + self.rto);
    }

    fn on_data(&mut self, now: Instant, data: &[(u64, u64, u32)]) {
        let mut gap_or_dup = false;
        for &(tsn, id, _) in data {
            let next = self.cum.map_or(0, |c| c + 1);
            if tsn < next || self.above.contains_key(&tsn) {
                gap_or_dup = true;
                continue;
            }
            self.above.insert(tsn, id);
        }
        // A gap: something above the cumulative TSN is still missing below it.
        // Deliver in order (one stream).
        while let Some((&tsn, &id)) = self.above.first_key_value() {
            if tsn != self.cum.map_or(0, |c| c + 1) {
                break;
            }
            self.above.pop_first();
            self.cum = Some(tsn);
            self.delivered.push_back(id);
        }
        if gap_or_dup || !self.above.is_empty() {
            self.sack_pending = true;
        } else {
            self.unsacked_packets += 1;
            if self.unsacked_packets >= 2 {
                self.sack_pending = true;
            } else if self.sack_at.is_none() {
                self.sack_at = Some(now + self.cfg.sack_delay);
            }
        }
    }

    fn sack(&self) -> Sack {
        let mut gaps: Vec<(u64, u64)> = Vec::new();
        for &tsn in self.above.keys() {
            match gaps.last_mut() {
                Some(g) if g.1 + 1 == tsn => g.1 = tsn,
                _ => gaps.push((tsn, tsn)),
            }
        }
        Sack {
            cum: self.cum,
            gaps,
        }
    }

    /// The next packet: due retransmissions and new chunks, with a SACK when
    /// one is pending (delayed or not); `None` when there is no data to send
    /// and `force_sack` is false.
    fn build(&mut self, now: Instant, force_sack: bool) -> Option<(SctpPacket, u32)> {
        let room = self.cfg.mtu - IP - COMMON;
        let mut used = 0u32;
        let mut data = Vec::new();
        let sack = (force_sack || self.sack_at.is_some()).then(|| self.sack());
        if let Some(s) = &sack {
            used += SACK_HDR + 4 * s.gaps.len() as u32;
        }
        // Retransmissions first (a fast retransmit may exceed the window by
        // one packet), then new chunks while the window allows.
        let mut flight = self.flight();
        let rtx_any = self.chunks.iter().any(|c| c.marked);
        let fast_pending = self
            .chunks
            .iter()
            .any(|c| c.marked && c.fast_done && c.tx_count == 1);
        let allow_rtx = rtx_any && (flight < self.cwnd || fast_pending);
        for c in &mut self.chunks {
            let fits = used + c.bytes() <= room || data.is_empty();
            if !fits {
                break;
            }
            let send = if c.marked {
                allow_rtx
            } else {
                c.sent.is_none() && flight < self.cwnd
            };
            if !send {
                continue;
            }
            if c.sent.is_some() {
                self.retransmissions += 1;
            }
            c.marked = false;
            c.sent = Some(now);
            c.tx_count += 1;
            used += c.bytes();
            flight += c.bytes();
            data.push((c.tsn, c.id, c.size));
        }
        if data.is_empty() && !force_sack {
            return None;
        }
        if !data.is_empty() && self.t3_at.is_none() {
            self.t3_at = Some(now + self.rto);
        }
        if sack.is_some() {
            self.sack_pending = false;
            self.sack_at = None;
            self.unsacked_packets = 0;
        }
        self.packets += 1;
        Some((
            SctpPacket {
                data,
                sack,
                corrupted: false,
            },
            IP + COMMON + used,
        ))
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

    fn poll_timeout(&self) -> Option<Instant> {
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
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn msg(id: u64, size: u32) -> OutMessage {
        OutMessage {
            id,
            class: 0,
            size,
            key: 0,
            deadline: None,
            target: 0.999,
        }
    }

    /// Moves every packet from `a` to `b` after `delay`, dropping those whose
    /// index (counted over the run) is in `drop`; returns delivered ids at `b`
    /// with their times.
    fn run(drop: &[usize], n: u64, gap: Duration) -> (Vec<(u64, Duration)>, SctpAssoc) {
        let t0 = Instant::now();
        let mut a = SctpAssoc::new(SctpConfig::default());
        let mut b = SctpAssoc::new(SctpConfig::default());
        let delay = 100 * MS;
        let mut in_flight: Vec<(Instant, bool, SctpPacket)> = Vec::new();
        let mut sent = 0usize;
        let mut got = Vec::new();
        let mut now = t0;
        let end = t0 + Duration::from_secs(30);
        let mut next_msg = 0u64;
        while now < end {
            if next_msg < n && now >= t0 + gap * next_msg as u32 {
                a.send(now, 0, &msg(next_msg, 25));
                next_msg += 1;
            }
            while let Some(tx) = a.poll_transmit(now) {
                if !drop.contains(&sent) {
                    in_flight.push((now + delay, true, tx.packet));
                }
                sent += 1;
            }
            while let Some(tx) = b.poll_transmit(now) {
                in_flight.push((now + delay, false, tx.packet));
            }
            let (due, rest): (Vec<_>, Vec<_>) = in_flight.drain(..).partition(|p| p.0 <= now);
            in_flight = rest;
            for (_, to_b, p) in due {
                if to_b {
                    b.receive(now, 0, p);
                } else {
                    a.receive(now, 0, p);
                }
            }
            for ep in [&mut a, &mut b] {
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.handle_timeout(now);
                }
            }
            while let Some((_, id)) = b.poll_delivered() {
                got.push((id, now - t0));
            }
            now += MS;
        }
        (got, a)
    }

    #[test]
    fn delivers_in_order_and_recovers_by_fast_retransmit() {
        // 20 messages 10 ms apart; the third packet is lost. Three later
        // packets produce three SACKs reporting it missing: fast retransmit,
        // no timeout, and everything after it waits (one ordered stream).
        let (got, a) = run(&[2], 20, 10 * MS);
        let ids: Vec<u64> = got.iter().map(|g| g.0).collect();
        assert_eq!(ids, (0..20).collect::<Vec<_>>());
        assert_eq!(a.fast_retransmits, 1);
        assert_eq!(a.timeouts, 0);
        // Message 3 was held back behind message 2.
        assert!(got[3].1 >= got[2].1);
        assert!(got[2].1 > Duration::from_millis(200));
    }

    #[test]
    fn a_lone_loss_waits_for_the_one_second_rto() {
        // Messages 2 s apart: no later data to trigger fast retransmit, so
        // the loss is repaired by T3, which is at least RTO.min = 1 s.
        let (got, a) = run(&[0], 3, 2000 * MS);
        assert_eq!(got.len(), 3);
        assert_eq!(a.timeouts, 1);
        assert_eq!(a.fast_retransmits, 0);
        // The first RTO is ns-2's rtoInitial_ of 3 s (no RTT sample yet).
        assert!(got[0].1 >= Duration::from_secs(3), "{:?}", got[0].1);
        assert!(a.rto() >= Duration::from_secs(1));
    }

    #[test]
    fn bundles_chunks_and_counts_headers() {
        let t0 = Instant::now();
        let mut a = SctpAssoc::new(SctpConfig::default());
        for i in 0..3 {
            a.send(t0, 0, &msg(i, 23));
        }
        let tx = a.poll_transmit(t0).expect("packet");
        assert_eq!(tx.packet.data.len(), 3);
        // 20 + 12 + 3 * (16 + 24).
        assert_eq!(tx.wire_bytes, 20 + 12 + 3 * 40);
        assert!(a.poll_transmit(t0).is_none());
        // A lone SACK: 20 + 12 + 16 bytes.
        let mut b = SctpAssoc::new(SctpConfig::default());
        b.receive(t0, 0, tx.packet);
        assert!(b.poll_transmit(t0).is_none(), "SACK is delayed");
        b.handle_timeout(t0 + 200 * MS);
        let s = b.poll_transmit(t0 + 200 * MS).expect("sack");
        assert_eq!(s.wire_bytes, 48);
        assert_eq!(s.packet.sack.expect("sack").cum, Some(2));
    }
}
