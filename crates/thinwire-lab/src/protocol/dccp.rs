//! A model of DCCP (RFC 4340) with CCID 2, TCP-like congestion control
//! (RFC 4341), as the unreliable baseline of Wu et al. (MTAP 2009).
//!
//! Every message is one DCCP-Data packet (20-byte IPv4 + 16-byte generic
//! header with 48-bit sequence numbers), never retransmitted, delivered on
//! arrival in any order (duplicates dropped). The receiver acknowledges every
//! `ack_ratio` data packets (CCID 2's initial Ack Ratio, 2) or after
//! `delayed_ack` (RFC 4341 asks for at least one acknowledgement per window;
//! the timer stands in for that), with DCCP-Ack packets (IPv4 + 16 + 8-byte
//! acknowledgement subheader + an Ack Vector of `ack_vector_bytes`), or
//! piggybacked on its own data (DCCP-DataAck). The sender keeps a window of
//! `cwnd` data packets in flight (pipe): a packet is lost when three packets
//! sent after it are acknowledged, or at the RTO (RFC 6298 estimate, at least
//! `rto_min`); slow start and congestion avoidance in packets; a loss halves
//! the window once per window of data; a timeout sets it to 1. Messages wait
//! in the sender's queue while the window is full. Not modelled:
//! acknowledgements of acknowledgements, Ack Ratio changes, connection setup.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::{add_counter, Counters, OutMessage, Protocol, RttEstimator, SimEndpoint, Transmit};
use crate::workload::ClassSpec;

/// Parameters of the DCCP/CCID 2 model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DccpConfig {
    /// Data packets per acknowledgement (CCID 2's initial Ack Ratio).
    pub ack_ratio: u32,
    /// Longest wait before acknowledging received data.
    pub delayed_ack: Duration,
    /// Initial window in packets (RFC 4341 / RFC 3390 for small packets: 4).
    pub initial_cwnd: u32,
    /// Lower bound of the RTO (RFC 6298: 1 s).
    pub rto_min: Duration,
    /// Initial RTO (RFC 6298: 1 s).
    pub rto_initial: Duration,
    /// Bytes of the Ack Vector option on an acknowledgement.
    pub ack_vector_bytes: u32,
}

impl Default for DccpConfig {
    fn default() -> Self {
        DccpConfig {
            ack_ratio: 2,
            delayed_ack: Duration::from_millis(200),
            initial_cwnd: 4,
            rto_min: Duration::from_secs(1),
            rto_initial: Duration::from_secs(1),
            ack_vector_bytes: 4,
        }
    }
}

/// IPv4 + DCCP generic header (X = 1) bytes.
const DATA_HDR: u32 = 20 + 16;
/// Acknowledgement subheader bytes.
const ACK_SUB: u32 = 8;

/// A DCCP packet: data (sequence number, message id), an acknowledgement
/// (the data sequence numbers received recently, standing for the Ack
/// Vector), or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DccpPacket {
    /// Data: (data sequence number, message id).
    pub data: Option<(u64, u64)>,
    /// Acknowledged data sequence numbers (the Ack Vector's content).
    pub acks: Vec<u64>,
    /// Damaged on the wire (fails the checksum, dropped).
    pub corrupted: bool,
}

dropped_when_corrupted!(DccpPacket);

/// One end of a modelled DCCP connection with CCID 2 in both directions.
#[derive(Debug)]
pub struct DccpConn {
    cfg: DccpConfig,
    // Sender.
    queue: VecDeque<(u64, u32)>,
    next_seq: u64,
    /// Data packets in flight: seq -> send time.
    outstanding: BTreeMap<u64, Instant>,
    /// Highest data sequence number acknowledged so far.
    high_acked: Option<u64>,
    cwnd: f64,
    ssthresh: f64,
    /// Losses of packets sent before this sequence number do not halve again.
    recover: u64,
    rtt: RttEstimator,
    rto: Duration,
    rto_at: Option<Instant>,
    // Receiver.
    seen: BTreeMap<u64, ()>,
    to_ack: Vec<u64>,
    unacked: u32,
    ack_at: Option<Instant>,
    ack_now: bool,
    delivered: VecDeque<u64>,
    // Counters.
    data_packets: u64,
    ack_packets: u64,
    losses: u64,
    timeouts: u64,
}

impl DccpConn {
    /// A fresh connection end.
    pub fn new(cfg: DccpConfig) -> Self {
        DccpConn {
            cfg,
            queue: VecDeque::new(),
            next_seq: 0,
            outstanding: BTreeMap::new(),
            high_acked: None,
            cwnd: f64::from(cfg.initial_cwnd.max(1)),
            ssthresh: f64::INFINITY,
            recover: 0,
            rtt: RttEstimator::default(),
            rto: cfg.rto_initial,
            rto_at: None,
            seen: BTreeMap::new(),
            to_ack: Vec::new(),
            unacked: 0,
            ack_at: None,
            ack_now: false,
            delivered: VecDeque::new(),
            data_packets: 0,
            ack_packets: 0,
            losses: 0,
            timeouts: 0,
        }
    }

    /// Congestion window in packets.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    fn rtt_sample(&mut self, r: Duration) {
        self.rtt.sample(r);
        self.rto = self.rtt.rto().unwrap_or(r).max(self.cfg.rto_min);
    }

    fn on_acks(&mut self, now: Instant, acks: &[u64]) {
        let mut newly = 0u32;
        for &seq in acks {
            if let Some(sent) = self.outstanding.remove(&seq) {
                newly += 1;
                // Never retransmitted: every sample is valid.
                if self.high_acked.is_none_or(|h| seq > h) {
                    self.rtt_sample(now - sent);
                }
            }
            self.high_acked = Some(self.high_acked.map_or(seq, |h| h.max(seq)));
        }
        // A packet is lost when three packets sent after it are acknowledged:
        // here, when the highest acknowledged sequence number is three past it.
        let mut lost = Vec::new();
        if let Some(h) = self.high_acked {
            for &seq in self.outstanding.keys() {
                if seq + 3 <= h {
                    lost.push(seq);
                } else {
                    break;
                }
            }
        }
        for seq in &lost {
            self.outstanding.remove(seq);
        }
        if !lost.is_empty() {
            self.losses += lost.len() as u64;
            if lost.iter().any(|&s| s >= self.recover) {
                self.ssthresh = (self.cwnd / 2.0).max(2.0);
                self.cwnd = self.ssthresh;
                self.recover = self.next_seq;
            }
        } else if newly > 0 {
            if self.cwnd < self.ssthresh {
                self.cwnd += f64::from(newly);
            } else {
                self.cwnd += f64::from(newly) / self.cwnd;
            }
        }
        if newly > 0 || !lost.is_empty() {
            self.rto_at = (!self.outstanding.is_empty()).then(|| now + self.rto);
        }
    }

    fn on_timeout_rto(&mut self, now: Instant) {
        self.rto_at = None;
        if self.outstanding.is_empty() {
            return;
        }
        self.timeouts += 1;
        self.losses += self.outstanding.len() as u64;
        self.outstanding.clear();
        self.ssthresh = (self.cwnd / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.recover = self.next_seq;
        self.rto = (self.rto * 2).min(Duration::from_secs(64));
        let _ = now;
    }

    fn on_data(&mut self, now: Instant, seq: u64, id: u64) {
        self.to_ack.push(seq);
        if self.seen.insert(seq, ()).is_none() {
            self.delivered.push_back(id);
            // Keep the duplicate filter bounded.
            while self.seen.len() > 4096 {
                self.seen.pop_first();
            }
        }
        self.unacked += 1;
        if self.unacked >= self.cfg.ack_ratio.max(1) {
            self.ack_now = true;
        } else if self.ack_at.is_none() {
            self.ack_at = Some(now + self.cfg.delayed_ack);
        }
    }

    fn take_acks(&mut self) -> Vec<u64> {
        self.unacked = 0;
        self.ack_at = None;
        self.ack_now = false;
        std::mem::take(&mut self.to_ack)
    }
}

impl SimEndpoint for DccpConn {
    type Packet = DccpPacket;

    fn send(&mut self, _now: Instant, _peer: u32, msg: &OutMessage) {
        self.queue.push_back((msg.id, msg.size.max(1)));
    }

    fn receive(&mut self, now: Instant, _peer: u32, p: DccpPacket) {
        if p.corrupted {
            return;
        }
        if !p.acks.is_empty() {
            self.on_acks(now, &p.acks);
        }
        if let Some((seq, id)) = p.data {
            self.on_data(now, seq, id);
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<DccpPacket>> {
        let window_open = (self.outstanding.len() as f64) < self.cwnd.floor().max(1.0);
        if window_open {
            if let Some((id, size)) = self.queue.pop_front() {
                let seq = self.next_seq;
                self.next_seq += 1;
                self.outstanding.insert(seq, now);
                if self.rto_at.is_none() {
                    self.rto_at = Some(now + self.rto);
                }
                self.data_packets += 1;
                // Pending acknowledgements ride along (DCCP-DataAck).
                let acks = if self.to_ack.is_empty() {
                    Vec::new()
                } else {
                    self.take_acks()
                };
                let hdr = if acks.is_empty() {
                    DATA_HDR
                } else {
                    DATA_HDR + ACK_SUB + self.cfg.ack_vector_bytes
                };
                return Some(Transmit {
                    peer: 0,
                    wire_bytes: (hdr + size) as usize,
                    payload_bytes: Some(size as usize),
                    packet: DccpPacket {
                        data: Some((seq, id)),
                        acks,
                        corrupted: false,
                    },
                });
            }
        }
        if self.ack_now && !self.to_ack.is_empty() {
            self.ack_packets += 1;
            let acks = self.take_acks();
            return Some(Transmit {
                peer: 0,
                wire_bytes: (DATA_HDR + ACK_SUB + self.cfg.ack_vector_bytes) as usize,
                payload_bytes: Some(0),
                packet: DccpPacket {
                    data: None,
                    acks,
                    corrupted: false,
                },
            });
        }
        None
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        match (self.rto_at, self.ack_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.ack_at.is_some_and(|t| t <= now) {
            self.ack_at = None;
            self.ack_now = true;
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.on_timeout_rto(now);
        }
    }

    fn poll_delivered(&mut self) -> Option<(u32, u64)> {
        self.delivered.pop_front().map(|id| (0, id))
    }

    fn add_counters(&self, out: &mut Counters) {
        add_counter(out, "dccp_data_packets", self.data_packets as f64);
        add_counter(out, "dccp_ack_packets", self.ack_packets as f64);
        add_counter(out, "dccp_losses", self.losses as f64);
        add_counter(out, "dccp_timeouts", self.timeouts as f64);
    }
}

/// The DCCP/CCID 2 model as a [`Protocol`] (`dccp-model`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DccpModel {
    /// Parameters.
    pub config: DccpConfig,
}

impl Protocol for DccpModel {
    type Packet = DccpPacket;
    type Endpoint = DccpConn;

    fn name(&self) -> String {
        "dccp-model".into()
    }
    fn model(&self) -> bool {
        true
    }
    fn server_per_client(&self) -> bool {
        true
    }
    fn new_client(&self, _: u32, _: u32, _: u64, _: Instant, _: &[ClassSpec]) -> DccpConn {
        DccpConn::new(self.config)
    }
    fn new_server(&self, _: u32, _: u64, _: Instant, _: &[ClassSpec]) -> DccpConn {
        DccpConn::new(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn msg(id: u64) -> OutMessage {
        crate::protocol::test_message(id, 25)
    }

    fn pass(from: &mut DccpConn, to: &mut DccpConn, now: Instant, drop: impl Fn(u64) -> bool) {
        while let Some(tx) = from.poll_transmit(now) {
            let lost = tx.packet.data.is_some_and(|(s, _)| drop(s));
            if !lost {
                to.receive(now, 0, tx.packet);
            }
        }
    }

    #[test]
    fn lost_data_is_not_retransmitted_and_halves_the_window() {
        let t0 = Instant::now();
        let mut a = DccpConn::new(DccpConfig::default());
        let mut b = DccpConn::new(DccpConfig::default());
        for i in 0..4 {
            a.send(t0, 0, &msg(i));
        }
        // Four packets fit the initial window; the second is lost.
        pass(&mut a, &mut b, t0, |s| s == 1);
        assert_eq!(a.data_packets, 4);
        let got: Vec<u64> = std::iter::from_fn(|| b.poll_delivered().map(|d| d.1)).collect();
        assert_eq!(got, vec![0, 2, 3]);
        // Three packets arrived: one acknowledgement at the Ack Ratio, the
        // third after the delayed-ack timer.
        pass(&mut b, &mut a, t0, |_| false);
        b.handle_timeout(t0 + 200 * MS);
        pass(&mut b, &mut a, t0 + 200 * MS, |_| false);
        // Seq 1 is only two behind the highest acknowledged (3): not yet lost.
        assert_eq!(a.losses, 0);
        a.send(t0 + 200 * MS, 0, &msg(4));
        pass(&mut a, &mut b, t0 + 200 * MS, |_| false);
        b.handle_timeout(t0 + 400 * MS);
        pass(&mut b, &mut a, t0 + 400 * MS, |_| false);
        assert_eq!(a.losses, 1);
        // Slow start took the window from 4 to 7 (three acknowledged), the
        // loss halves it.
        assert!((a.cwnd() - 3.5).abs() < 1e-9, "{}", a.cwnd());
        assert!(a.outstanding.is_empty());
        // Nothing was sent twice.
        assert_eq!(a.data_packets, 5);
    }

    #[test]
    fn full_window_holds_messages_and_timeout_resets_it() {
        let t0 = Instant::now();
        let mut a = DccpConn::new(DccpConfig::default());
        for i in 0..6 {
            a.send(t0, 0, &msg(i));
        }
        let mut n = 0;
        while a.poll_transmit(t0).is_some() {
            n += 1;
        }
        assert_eq!(n, 4, "initial window of four packets");
        // No acknowledgement: the RTO (1 s) declares them lost, window 1.
        let t = a.poll_timeout().expect("rto");
        assert_eq!(t - t0, Duration::from_secs(1));
        a.handle_timeout(t);
        assert_eq!(a.timeouts, 1);
        assert_eq!(a.cwnd(), 1.0);
        assert!(a.poll_transmit(t).is_some());
        assert!(a.poll_transmit(t).is_none(), "window of one");
    }
}
