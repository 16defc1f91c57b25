//! A model of TCP NewReno carrying length-prefixed game messages.
//!
//! One ordered, reliable byte stream per direction and client. Modelled:
//! slow start and congestion avoidance (window counted in segments, as Linux
//! does), fast retransmit and NewReno fast recovery (RFC 6582), the
//! retransmission timer with exponential backoff, delayed acknowledgements
//! (immediately for out-of-order data or when a hole is filled), Nagle off,
//! MSS 1448, and 40 bytes of IPv4+TCP headers per packet. Acknowledgements
//! ride on data segments when there are any. Messages are framed with a
//! 2-byte length prefix; a message is delivered when all of its bytes and all
//! earlier bytes arrived (head-of-line blocking). Connection setup and
//! teardown are not modelled (the connection is established at time 0).
//!
//! The named variants ([`TcpVariant`], table in `tcp/config.rs`) differ in
//! the RTO formula (RFC 6298 with a 200 ms floor, or Linux's SRTT +
//! max(4·RTTVAR, 200 ms)), the receiver's acknowledgement policy, SACK
//! (a scoreboard of the receiver's out-of-order blocks: SACKed segments are
//! neither counted in flight nor resent), Linux's retransmission collapsing,
//! and the thin-stream modifications of Petlund et al. (NetGames 2008) and
//! Griwodz & Halvorsen (NOSSDAV 2006). Per-packet retransmission counters
//! (`tcp/rtx.rs`) measure what those papers report.

mod config;
mod rtx;

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use thinwire_netmodel::Corruptible;

pub use config::{AckStyle, RtoStyle, TcpConfig, TcpVariant};
use config::{LINEAR_RTO_PACKETS, LINUX_RCV_MSS, THIN_PACKETS};
pub use rtx::{RtxCounters, MAX_RTX_TRACKED};

use super::{add_counter, Counters, OutMessage, Protocol, SimEndpoint, Transmit};
use crate::workload::ClassSpec;
use rtx::Part;

/// SACK blocks a receiver reports at most (RFC 2018 with timestamps: 3).
const MAX_SACK_BLOCKS: usize = 3;

/// A TCP segment (data and/or acknowledgement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSegment {
    /// Stream offset of the first payload byte.
    pub seq: u64,
    /// Payload length (0 for a pure acknowledgement).
    pub len: u32,
    /// Cumulative acknowledgement: next stream byte expected.
    pub ack: u64,
    /// SACK blocks: out-of-order ranges `[start, end)` the receiver holds
    /// (empty without SACK).
    pub sack: Vec<(u64, u64)>,
    /// Messages ending in this segment: (end offset, message id). Stands for
    /// the length prefixes the receiver would parse.
    pub ends: Vec<(u64, u64)>,
    /// The first transmission of this segment's newest data (a new packet,
    /// not a retransmission). Simulator bookkeeping, not on the wire.
    pub fresh: bool,
    /// Damaged on the wire (fails the checksum, dropped by the receiver).
    pub corrupted: bool,
}

impl Corruptible for TcpSegment {
    fn bit_len(&self) -> usize {
        8
    }
    fn flip_bit(&mut self, _bit: usize) {
        self.corrupted = true;
    }
}

/// Counters of one connection endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Data segments sent, retransmissions included.
    pub data_segments: u64,
    /// Pure acknowledgements sent.
    pub pure_acks: u64,
    /// Retransmitted segments.
    pub retransmissions: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Fast retransmits (entries into fast recovery).
    pub fast_retransmits: u64,
    /// Application payload bytes sent (prefixes excluded, retransmissions included).
    pub payload_bytes: u64,
    /// New packets that also carried earlier unacknowledged data (RDB).
    pub rdb_bundles: u64,
    /// Data segments received on their first transmission (the receiver's count).
    pub fresh_received: u64,
}

#[derive(Debug, Clone)]
struct Seg {
    start: u64,
    end: u64,
    tx_count: u32,
    last_sent: Instant,
    lost: bool,
    sacked: bool,
    /// Original packets whose data this segment holds, in stream order.
    parts: Vec<Part>,
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    start: u64,
    end: u64,
    id: u64,
}

/// One end of a modelled TCP connection (sender and receiver halves).
#[derive(Debug)]
pub struct TcpConn {
    cfg: TcpConfig,
    peer: u32,
    // Sender.
    msgs: VecDeque<Msg>,
    segs: VecDeque<Seg>,
    snd_una: u64,
    snd_max: u64,
    stream_end: u64,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    in_recovery: bool,
    recover: u64,
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    rto_at: Option<Instant>,
    force_retransmit: bool,
    last_new_send: Option<Instant>,
    // Receiver.
    rcv_nxt: u64,
    ooo: BTreeMap<u64, u64>,
    bounds: BTreeMap<u64, u64>,
    unacked_segments: u32,
    unacked_bytes: u64,
    last_data_rx: Option<Instant>,
    delack_at: Option<Instant>,
    ack_pending: bool,
    delivered: VecDeque<u64>,
    stats: TcpStats,
    rtx: RtxCounters,
}

impl TcpConn {
    /// A connection endpoint talking to `peer`.
    pub fn new(cfg: TcpConfig, peer: u32) -> Self {
        TcpConn {
            cfg,
            peer,
            msgs: VecDeque::new(),
            segs: VecDeque::new(),
            snd_una: 0,
            snd_max: 0,
            stream_end: 0,
            cwnd: f64::from(cfg.initial_cwnd.max(1)),
            ssthresh: f64::INFINITY,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            srtt: None,
            rttvar: Duration::ZERO,
            rto: cfg.initial_rto,
            rto_at: None,
            force_retransmit: false,
            last_new_send: None,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            bounds: BTreeMap::new(),
            unacked_segments: 0,
            unacked_bytes: 0,
            last_data_rx: None,
            delack_at: None,
            ack_pending: false,
            delivered: VecDeque::new(),
            stats: TcpStats::default(),
            rtx: RtxCounters::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }

    /// Retransmission counters by retransmission count.
    pub fn rtx_counters(&self) -> &RtxCounters {
        &self.rtx
    }

    /// Current retransmission timeout (including backoff).
    pub fn rto(&self) -> Duration {
        self.rto
    }

    /// Smoothed RTT, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// Congestion window in segments.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Appends a message to the outgoing stream.
    pub fn send_message(&mut self, msg: &OutMessage) {
        let start = self.stream_end;
        let end = start + u64::from(self.cfg.prefix_bytes) + u64::from(msg.size);
        self.msgs.push_back(Msg {
            start,
            end,
            id: msg.id,
        });
        self.stream_end = end;
    }

    /// Segments in flight (sent, not acknowledged, not SACKed, not marked lost).
    fn pipe(&self) -> usize {
        self.segs.iter().filter(|s| !s.lost && !s.sacked).count()
    }

    /// The RTO from the current estimate, without backoff.
    fn rto_from_estimate(&self) -> Duration {
        let Some(srtt) = self.srtt else {
            return self.cfg.initial_rto;
        };
        let dev = (self.rttvar * 4).max(Duration::from_millis(1));
        let rto = match self.cfg.rto_style {
            RtoStyle::Rfc6298 => (srtt + dev).max(self.cfg.min_rto),
            RtoStyle::Linux => srtt + dev.max(self.cfg.min_rto),
        };
        let rto = if self.cfg.linear_rto && self.segs.len() < LINEAR_RTO_PACKETS {
            // Griwodz & Halvorsen, Sec. 4.4: (srtt >> 3) + min(srtt >> 4, rttvar),
            // where Linux's rttvar is the deviation term with its 200 ms floor.
            let linux_dev = dev.max(self.cfg.min_rto);
            srtt + (srtt / 2).min(linux_dev)
        } else {
            rto
        };
        rto.min(self.cfg.max_rto)
    }

    fn rtt_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                let diff = srtt.abs_diff(r);
                self.rttvar = self.rttvar * 3 / 4 + diff / 4;
                self.srtt = Some(srtt * 7 / 8 + r / 8);
            }
        }
    }

    /// Marks segments covered by the receiver's SACK blocks.
    fn on_sack(&mut self, blocks: &[(u64, u64)]) {
        for &(lo, hi) in blocks {
            for s in self.segs.iter_mut() {
                if s.start >= lo && s.end <= hi {
                    s.sacked = true;
                    s.lost = false;
                }
            }
        }
    }

    /// Marks the first segment neither SACKed nor acknowledged as lost and
    /// asks for its retransmission.
    fn mark_first_hole_lost(&mut self) {
        if let Some(s) = self.segs.iter_mut().find(|s| !s.sacked) {
            s.lost = true;
        }
        self.force_retransmit = true;
    }

    /// Slow-start threshold after a loss: half the flight (RFC 5681), or half
    /// the congestion window as Linux's Reno computes it.
    fn loss_ssthresh(&self) -> f64 {
        if self.cfg.linux_cwnd {
            (self.cwnd * f64::from(self.cfg.loss_beta_pct) / 100.0).max(2.0)
        } else {
            (self.pipe() as f64 / 2.0).max(2.0)
        }
    }

    fn on_ack(&mut self, now: Instant, ack: u64, pure: bool, sack: &[(u64, u64)]) {
        // Linux grows the window only when the flight filled it
        // (`tcp_is_cwnd_limited`): an application-limited thin stream keeps
        // the window it uses.
        let cwnd_limited = !self.cfg.linux_cwnd || self.pipe() as f64 >= self.cwnd.floor();
        if ack > self.snd_una && ack <= self.snd_max {
            // New data acknowledged.
            let mut acked_segs = 0u32;
            // Karn's rule as Linux applies it without timestamps: the RTT is sampled from
            // the oldest segment this acknowledgement covers, and not at all when it covers
            // a retransmitted one (its later segments were sent long before the
            // retransmission that this acknowledgement answers, so their "RTT" would include
            // the timeout, inflate the RTO, and feed on itself).
            let mut sample = None;
            let mut retransmitted_acked = false;
            while let Some(s) = self.segs.front() {
                if s.end <= ack {
                    if s.tx_count > 1 {
                        retransmitted_acked = true;
                    } else if sample.is_none() {
                        sample = Some(now - s.last_sent);
                    }
                    acked_segs += 1;
                    if let Some(s) = self.segs.pop_front() {
                        for p in &s.parts {
                            self.rtx.on_acked(p);
                        }
                    }
                } else {
                    break;
                }
            }
            if let Some(s) = self.segs.front_mut() {
                // Partially acknowledged segment: trim it.
                if s.start < ack {
                    s.start = ack;
                    let done = s.parts.partition_point(|p| p.end <= ack);
                    for p in s.parts.drain(..done) {
                        self.rtx.on_acked(&p);
                    }
                }
            }
            self.snd_una = ack;
            while self.msgs.front().is_some_and(|m| m.end <= ack) {
                self.msgs.pop_front();
            }
            if let Some(r) = sample.filter(|_| !retransmitted_acked) {
                self.rtt_sample(r);
            }
            self.on_sack(sack);
            // New acknowledgement: the backoff is cleared.
            self.rto = self.rto_from_estimate();
            self.dupacks = 0;
            if self.in_recovery {
                if ack >= self.recover {
                    // Full acknowledgement: leave fast recovery.
                    self.in_recovery = false;
                    self.cwnd = self.ssthresh;
                } else {
                    // Partial acknowledgement: retransmit the next hole.
                    self.cwnd = (self.cwnd - f64::from(acked_segs) + 1.0).max(1.0);
                    self.mark_first_hole_lost();
                }
            } else if !cwnd_limited {
            } else if self.cwnd < self.ssthresh {
                self.cwnd += f64::from(acked_segs.min(2));
            } else {
                self.cwnd += f64::from(acked_segs) / self.cwnd;
            }
            self.rto_at = if self.segs.is_empty() {
                None
            } else {
                Some(now + self.rto)
            };
            return;
        }
        if ack != self.snd_una || self.segs.is_empty() {
            return;
        }
        self.on_sack(sack);
        // With SACK any acknowledgement reporting out-of-order data is a
        // duplicate; without, only pure ones (RFC 5681).
        let duplicate = if self.cfg.sack_dupacks {
            !sack.is_empty()
        } else {
            pure
        };
        if !duplicate {
            return;
        }
        self.dupacks += 1;
        let threshold = if self.cfg.thin_dupack && self.segs.len() < THIN_PACKETS {
            1
        } else {
            self.cfg.dupack_threshold
        };
        if self.in_recovery {
            self.cwnd += 1.0;
        } else if self.dupacks >= threshold && self.snd_una >= self.recover {
            self.stats.fast_retransmits += 1;
            self.ssthresh = self.loss_ssthresh();
            self.cwnd = self.ssthresh + f64::from(threshold);
            self.in_recovery = true;
            self.recover = self.snd_max;
            self.mark_first_hole_lost();
        }
    }

    fn on_rto(&mut self, now: Instant) {
        if self.segs.is_empty() {
            self.rto_at = None;
            return;
        }
        self.stats.timeouts += 1;
        self.ssthresh = self.loss_ssthresh();
        self.cwnd = 1.0;
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = self.snd_max;
        for s in &mut self.segs {
            if !s.sacked {
                s.lost = true;
            }
        }
        // `packets_out` in Linux counts every unacknowledged segment.
        let out = self.segs.len();
        let linear = (self.cfg.linear_rto && out < LINEAR_RTO_PACKETS)
            || (self.cfg.thin_linear_timeouts && out < THIN_PACKETS);
        self.rto = if linear {
            self.rto_from_estimate()
        } else {
            (self.rto * 2).min(self.cfg.max_rto)
        };
        self.rto_at = Some(now + self.rto);
    }

    fn on_data(&mut self, now: Instant, seg: &TcpSegment) {
        let start = seg.seq;
        let end = seg.seq + u64::from(seg.len);
        if seg.fresh {
            self.stats.fresh_received += 1;
        }
        // Linux leaves delayed-ACK mode when data arrives after an idle gap
        // longer than its RTO (`tcp_event_data_recv`).
        let idle = self
            .last_data_rx
            .is_none_or(|t| now.saturating_duration_since(t) > self.rto);
        self.last_data_rx = Some(now);
        for &(e, id) in &seg.ends {
            if e > self.rcv_nxt {
                self.bounds.insert(e, id);
            }
        }
        if end <= self.rcv_nxt {
            // Entirely duplicate: acknowledge at once.
            self.ack_pending = true;
            return;
        }
        if start > self.rcv_nxt {
            // Out of order: keep it and send a duplicate acknowledgement.
            let e = self.ooo.entry(start).or_insert(end);
            *e = (*e).max(end);
            self.ack_pending = true;
            return;
        }
        let had_hole = !self.ooo.is_empty();
        let before = self.rcv_nxt;
        self.rcv_nxt = end;
        while let Some((&s, &e)) = self.ooo.first_key_value() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo.pop_first();
        }
        while let Some((&e, &id)) = self.bounds.first_key_value() {
            if e > self.rcv_nxt {
                break;
            }
            self.delivered.push_back(id);
            self.bounds.pop_first();
        }
        if had_hole {
            self.ack_pending = true;
            return;
        }
        self.unacked_segments += 1;
        self.unacked_bytes += self.rcv_nxt - before;
        let now_ack = match self.cfg.ack_style {
            AckStyle::EverySecond => self.unacked_segments >= 2,
            AckStyle::Linux => idle || self.unacked_bytes > LINUX_RCV_MSS,
        };
        if now_ack {
            self.ack_pending = true;
        } else if self.delack_at.is_none() {
            self.delack_at = Some(now + self.cfg.delayed_ack);
        }
    }

    /// The receiver's SACK blocks (merged out-of-order ranges, lowest first).
    fn sack_blocks(&self) -> Vec<(u64, u64)> {
        if !self.cfg.sack_dupacks {
            return Vec::new();
        }
        let mut blocks: Vec<(u64, u64)> = Vec::new();
        for (&s, &e) in &self.ooo {
            match blocks.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => {
                    if blocks.len() == MAX_SACK_BLOCKS {
                        break;
                    }
                    blocks.push((s, e));
                }
            }
        }
        blocks
    }

    /// Handles an arriving segment.
    pub fn on_segment(&mut self, now: Instant, seg: TcpSegment) {
        if seg.corrupted {
            return;
        }
        self.on_ack(now, seg.ack, seg.len == 0, &seg.sack);
        if seg.len > 0 {
            self.on_data(now, &seg);
        }
    }

    fn build(&mut self, start: u64, end: u64, fresh: bool) -> TcpSegment {
        let prefix = u64::from(self.cfg.prefix_bytes);
        let first = self.msgs.partition_point(|m| m.end <= start);
        let mut ends = Vec::new();
        let mut prefix_overlap = 0u64;
        for m in self.msgs.iter().skip(first) {
            if m.start >= end {
                break;
            }
            let p_end = m.start + prefix;
            let lo = m.start.max(start);
            let hi = p_end.min(end);
            if hi > lo {
                prefix_overlap += hi - lo;
            }
            if m.end > start && m.end <= end {
                ends.push((m.end, m.id));
            }
        }
        let len = end - start;
        self.stats.data_segments += 1;
        self.stats.payload_bytes += len - prefix_overlap;
        // The acknowledgement rides along.
        self.clear_ack_state();
        TcpSegment {
            seq: start,
            len: len as u32,
            ack: self.rcv_nxt,
            sack: self.sack_blocks(),
            ends,
            fresh,
            corrupted: false,
        }
    }

    fn clear_ack_state(&mut self) {
        self.ack_pending = false;
        self.unacked_segments = 0;
        self.unacked_bytes = 0;
        self.delack_at = None;
    }

    /// Retransmits segment `i` (collapsing the next one into it first when
    /// the configuration says so).
    fn retransmit(&mut self, now: Instant, i: usize) -> TcpSegment {
        let mss = u64::from(self.cfg.mss);
        if self.cfg.retrans_collapse && i + 1 < self.segs.len() {
            let (a, b) = (&self.segs[i], &self.segs[i + 1]);
            if 2 * (a.end - a.start) < mss && b.end - a.start <= mss && !b.sacked {
                if let Some(b) = self.segs.remove(i + 1) {
                    let a = &mut self.segs[i];
                    a.end = b.end;
                    a.tx_count = a.tx_count.max(b.tx_count);
                    a.parts.extend(b.parts);
                }
            }
        }
        let s = &mut self.segs[i];
        s.lost = false;
        s.tx_count += 1;
        s.last_sent = now;
        self.rtx.on_retransmit(&mut s.parts, now);
        let (start, end) = (s.start, s.end);
        self.stats.retransmissions += 1;
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto);
        }
        self.build(start, end, false)
    }

    /// Sends the next new data, bundling earlier unacknowledged data with it
    /// when redundant data bundling is on.
    fn send_new(&mut self, now: Instant) -> TcpSegment {
        let mss = u64::from(self.cfg.mss);
        if self.cfg.linux_cwnd && self.segs.is_empty() {
            self.restart_after_idle(now);
        }
        self.last_new_send = Some(now);
        let start = self.snd_max;
        let end = (start + mss).min(self.stream_end);
        let mut seg = Seg {
            start,
            end,
            tx_count: 1,
            last_sent: now,
            lost: false,
            sacked: false,
            parts: vec![Part::new(end, now)],
        };
        self.rtx.data_packets += 1;
        if self.cfg.rdb {
            // Petlund et al., Sec. 3: the newest unacknowledged segments that fit
            // with the new data in one MSS ride along (the sequence number is the
            // oldest bundled byte; the packet replaces the segments it carries).
            let fits = self
                .segs
                .iter()
                .rev()
                .take_while(|s| end - s.start <= mss)
                .count();
            if fits > 0 {
                self.stats.rdb_bundles += 1;
                let mut parts = Vec::new();
                for s in self.segs.drain(self.segs.len() - fits..) {
                    seg.start = seg.start.min(s.start);
                    parts.extend(s.parts);
                }
                parts.append(&mut seg.parts);
                seg.parts = parts;
            }
        }
        let pkt_start = seg.start;
        self.segs.push_back(seg);
        self.snd_max = end;
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto);
        }
        self.build(pkt_start, end, true)
    }

    /// Linux's `tcp_cwnd_restart` (slow start after idle): new data after
    /// more than one RTO with nothing in flight halves the window for each
    /// RTO of silence, down to the initial window.
    fn restart_after_idle(&mut self, now: Instant) {
        let Some(last) = self.last_new_send else {
            return;
        };
        let mut idle = now.saturating_duration_since(last);
        let restart = f64::from(self.cfg.initial_cwnd.max(1)).min(self.cwnd);
        if idle <= self.rto {
            return;
        }
        while idle > self.rto && self.cwnd > restart {
            idle -= self.rto;
            self.cwnd = (self.cwnd / 2.0).floor();
        }
        self.cwnd = self.cwnd.max(restart);
    }

    /// Next segment to send, if any.
    pub fn poll_segment(&mut self, now: Instant) -> Option<TcpSegment> {
        let can_send = self.force_retransmit || (self.pipe() as f64) < self.cwnd.floor().max(1.0);
        if can_send {
            if let Some(i) = self.segs.iter().position(|s| s.lost) {
                self.force_retransmit = false;
                return Some(self.retransmit(now, i));
            }
            self.force_retransmit = false;
            if self.snd_max < self.stream_end {
                return Some(self.send_new(now));
            }
        }
        if self.ack_pending {
            self.clear_ack_state();
            self.stats.pure_acks += 1;
            return Some(TcpSegment {
                seq: self.snd_max,
                len: 0,
                ack: self.rcv_nxt,
                sack: self.sack_blocks(),
                ends: Vec::new(),
                fresh: false,
                corrupted: false,
            });
        }
        None
    }

    /// Earliest timer.
    pub fn next_timeout(&self) -> Option<Instant> {
        match (self.rto_at, self.delack_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires due timers.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.delack_at.is_some_and(|t| t <= now) {
            self.delack_at = None;
            self.ack_pending = true;
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.on_rto(now);
        }
    }

    /// Next message delivered in order to the application.
    pub fn poll_message(&mut self) -> Option<u64> {
        self.delivered.pop_front()
    }
}

impl SimEndpoint for TcpConn {
    type Packet = TcpSegment;

    fn send(&mut self, _now: Instant, _peer: u32, msg: &OutMessage) {
        self.send_message(msg);
    }

    fn receive(&mut self, now: Instant, _peer: u32, packet: TcpSegment) {
        self.on_segment(now, packet);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<TcpSegment>> {
        let before = self.stats.payload_bytes;
        let seg = self.poll_segment(now)?;
        // SACK blocks cost 8 bytes each plus 2 for the option (padded to 4).
        let sack_bytes = if seg.sack.is_empty() {
            0
        } else {
            (2 + 8 * seg.sack.len() as u32).next_multiple_of(4)
        };
        Some(Transmit {
            peer: self.peer,
            wire_bytes: (self.cfg.header_bytes + sack_bytes + seg.len) as usize,
            payload_bytes: Some((self.stats.payload_bytes - before) as usize),
            packet: seg,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.on_timeout(now);
    }

    fn poll_delivered(&mut self) -> Option<(u32, u64)> {
        self.poll_message().map(|id| (self.peer, id))
    }

    fn add_counters(&self, out: &mut Counters) {
        let s = &self.stats;
        add_counter(out, "tcp_segments", s.data_segments as f64);
        add_counter(out, "tcp_pure_acks", s.pure_acks as f64);
        add_counter(out, "tcp_retransmissions", s.retransmissions as f64);
        add_counter(out, "tcp_timeouts", s.timeouts as f64);
        add_counter(out, "tcp_fast_retransmits", s.fast_retransmits as f64);
        add_counter(out, "tcp_rdb_bundles", s.rdb_bundles as f64);
        add_counter(out, "tcp_fresh_received", s.fresh_received as f64);
        self.rtx.add_to(out);
    }
}

/// The TCP model as a [`Protocol`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpModel {
    /// Parameters.
    pub config: TcpConfig,
    /// The named variant (gives the name; [`TcpModel::variant`] also sets
    /// `config` from it).
    pub variant: TcpVariant,
}

impl TcpModel {
    /// The model of a named variant with that variant's parameters.
    pub fn variant(variant: TcpVariant) -> Self {
        TcpModel {
            config: variant.config(),
            variant,
        }
    }
}

impl Protocol for TcpModel {
    type Packet = TcpSegment;
    type Endpoint = TcpConn;

    fn name(&self) -> String {
        self.variant.name().into()
    }
    fn model(&self) -> bool {
        true
    }
    fn server_per_client(&self) -> bool {
        true
    }
    fn new_client(
        &self,
        _client: u32,
        _clients: u32,
        _seed: u64,
        _now: Instant,
        _classes: &[ClassSpec],
    ) -> TcpConn {
        TcpConn::new(self.config, 0)
    }
    fn new_server(
        &self,
        _clients: u32,
        _seed: u64,
        _now: Instant,
        _classes: &[ClassSpec],
    ) -> TcpConn {
        TcpConn::new(self.config, 0)
    }
}

#[cfg(test)]
mod tests;
