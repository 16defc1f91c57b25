//! A model of TCP NewReno carrying length-prefixed game messages.
//!
//! One ordered, reliable byte stream per direction and client. Modelled:
//! slow start and congestion avoidance (window counted in segments, as Linux
//! does), fast retransmit after 3 duplicate acknowledgements and NewReno fast
//! recovery (RFC 6582; no SACK), the retransmission timer of RFC 6298 with a
//! 200 ms floor, 1 s initial value and exponential backoff, delayed
//! acknowledgements (every second segment or after 200 ms, immediately for
//! out-of-order data or when a hole is filled), Nagle off, MSS 1448, and 40
//! bytes of IPv4+TCP headers per packet. Acknowledgements ride on data
//! segments when there are any; as in RFC 5681 only pure acknowledgements
//! count as duplicates. Messages are framed with a 2-byte length prefix; a
//! message is delivered when all of its bytes and all earlier bytes arrived
//! (head-of-line blocking). Connection setup and teardown are not modelled (the
//! connection is established at time 0).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use thinwire_netmodel::Corruptible;

use super::{OutMessage, Protocol, SimEndpoint, Transmit};
use crate::workload::ClassSpec;

/// Parameters of the TCP model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpConfig {
    /// Maximum segment size (payload bytes per segment).
    pub mss: u32,
    /// IPv4 + TCP header bytes per packet.
    pub header_bytes: u32,
    /// Length prefix per message in the stream.
    pub prefix_bytes: u32,
    /// Initial retransmission timeout.
    pub initial_rto: Duration,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout.
    pub max_rto: Duration,
    /// Delayed-acknowledgement timeout.
    pub delayed_ack: Duration,
    /// Duplicate acknowledgements that trigger fast retransmit.
    pub dupack_threshold: u32,
    /// Initial congestion window in segments.
    pub initial_cwnd: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            header_bytes: 40,
            prefix_bytes: 2,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(120),
            delayed_ack: Duration::from_millis(200),
            dupack_threshold: 3,
            initial_cwnd: 10,
        }
    }
}

/// A TCP segment (data and/or acknowledgement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSegment {
    /// Stream offset of the first payload byte.
    pub seq: u64,
    /// Payload length (0 for a pure acknowledgement).
    pub len: u32,
    /// Cumulative acknowledgement: next stream byte expected.
    pub ack: u64,
    /// Messages ending in this segment: (end offset, message id). Stands for
    /// the length prefixes the receiver would parse.
    pub ends: Vec<(u64, u64)>,
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
}

#[derive(Debug, Clone)]
struct Seg {
    start: u64,
    end: u64,
    tx_count: u32,
    last_sent: Instant,
    lost: bool,
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
    // Receiver.
    rcv_nxt: u64,
    ooo: BTreeMap<u64, u64>,
    bounds: BTreeMap<u64, u64>,
    unacked_segments: u32,
    delack_at: Option<Instant>,
    ack_pending: bool,
    delivered: VecDeque<u64>,
    stats: TcpStats,
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
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            bounds: BTreeMap::new(),
            unacked_segments: 0,
            delack_at: None,
            ack_pending: false,
            delivered: VecDeque::new(),
            stats: TcpStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }

    /// Current retransmission timeout (including backoff).
    pub fn rto(&self) -> Duration {
        self.rto
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

    /// Segments in flight (sent, not acknowledged, not marked lost).
    fn pipe(&self) -> usize {
        self.segs.iter().filter(|s| !s.lost).count()
    }

    fn rto_from_estimate(&self) -> Duration {
        match self.srtt {
            None => self.cfg.initial_rto,
            Some(srtt) => {
                let g = Duration::from_millis(1);
                (srtt + (self.rttvar * 4).max(g)).clamp(self.cfg.min_rto, self.cfg.max_rto)
            }
        }
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

    fn on_ack(&mut self, now: Instant, ack: u64, pure: bool) {
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
                    self.segs.pop_front();
                } else {
                    break;
                }
            }
            if let Some(s) = self.segs.front_mut() {
                // Partially acknowledged segment: trim it.
                if s.start < ack {
                    s.start = ack;
                }
            }
            self.snd_una = ack;
            while self.msgs.front().is_some_and(|m| m.end <= ack) {
                self.msgs.pop_front();
            }
            if let Some(r) = sample.filter(|_| !retransmitted_acked) {
                self.rtt_sample(r);
            }
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
                    if let Some(s) = self.segs.front_mut() {
                        s.lost = true;
                    }
                    self.force_retransmit = true;
                }
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
        } else if pure && ack == self.snd_una && !self.segs.is_empty() {
            // Duplicate acknowledgement.
            self.dupacks += 1;
            if self.in_recovery {
                self.cwnd += 1.0;
            } else if self.dupacks == self.cfg.dupack_threshold && self.snd_una >= self.recover {
                self.stats.fast_retransmits += 1;
                let flight = self.pipe() as f64;
                self.ssthresh = (flight / 2.0).max(2.0);
                self.cwnd = self.ssthresh + f64::from(self.cfg.dupack_threshold);
                self.in_recovery = true;
                self.recover = self.snd_max;
                if let Some(s) = self.segs.front_mut() {
                    s.lost = true;
                }
                self.force_retransmit = true;
            }
        }
    }

    fn on_rto(&mut self, now: Instant) {
        if self.segs.is_empty() {
            self.rto_at = None;
            return;
        }
        self.stats.timeouts += 1;
        let flight = self.pipe() as f64;
        self.ssthresh = (flight / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = self.snd_max;
        for s in &mut self.segs {
            s.lost = true;
        }
        self.rto = (self.rto * 2).min(self.cfg.max_rto);
        self.rto_at = Some(now + self.rto);
    }

    fn on_data(&mut self, now: Instant, seg: &TcpSegment) {
        let start = seg.seq;
        let end = seg.seq + u64::from(seg.len);
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
        } else {
            self.unacked_segments += 1;
            if self.unacked_segments >= 2 {
                self.ack_pending = true;
            } else if self.delack_at.is_none() {
                self.delack_at = Some(now + self.cfg.delayed_ack);
            }
        }
    }

    /// Handles an arriving segment.
    pub fn on_segment(&mut self, now: Instant, seg: TcpSegment) {
        if seg.corrupted {
            return;
        }
        self.on_ack(now, seg.ack, seg.len == 0);
        if seg.len > 0 {
            self.on_data(now, &seg);
        }
    }

    fn build(&mut self, start: u64, end: u64) -> TcpSegment {
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
        self.ack_pending = false;
        self.unacked_segments = 0;
        self.delack_at = None;
        TcpSegment {
            seq: start,
            len: len as u32,
            ack: self.rcv_nxt,
            ends,
            corrupted: false,
        }
    }

    /// Next segment to send, if any.
    pub fn poll_segment(&mut self, now: Instant) -> Option<TcpSegment> {
        let can_send = self.force_retransmit || (self.pipe() as f64) < self.cwnd.floor().max(1.0);
        if can_send {
            if let Some(i) = self.segs.iter().position(|s| s.lost) {
                self.force_retransmit = false;
                let s = &mut self.segs[i];
                s.lost = false;
                s.tx_count += 1;
                s.last_sent = now;
                let (start, end) = (s.start, s.end);
                self.stats.retransmissions += 1;
                if self.rto_at.is_none() {
                    self.rto_at = Some(now + self.rto);
                }
                return Some(self.build(start, end));
            }
            self.force_retransmit = false;
            if self.snd_max < self.stream_end {
                let start = self.snd_max;
                let end = (start + u64::from(self.cfg.mss)).min(self.stream_end);
                self.segs.push_back(Seg {
                    start,
                    end,
                    tx_count: 1,
                    last_sent: now,
                    lost: false,
                });
                self.snd_max = end;
                if self.rto_at.is_none() {
                    self.rto_at = Some(now + self.rto);
                }
                return Some(self.build(start, end));
            }
        }
        if self.ack_pending {
            self.ack_pending = false;
            self.unacked_segments = 0;
            self.delack_at = None;
            self.stats.pure_acks += 1;
            return Some(TcpSegment {
                seq: self.snd_max,
                len: 0,
                ack: self.rcv_nxt,
                ends: Vec::new(),
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
        Some(Transmit {
            peer: self.peer,
            wire_bytes: (self.cfg.header_bytes + seg.len) as usize,
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
}

/// The TCP model as a [`Protocol`].
#[derive(Debug, Clone, Default)]
pub struct TcpModel {
    /// Parameters.
    pub config: TcpConfig,
}

impl Protocol for TcpModel {
    type Packet = TcpSegment;
    type Endpoint = TcpConn;

    fn name(&self) -> String {
        "tcp-model".into()
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
