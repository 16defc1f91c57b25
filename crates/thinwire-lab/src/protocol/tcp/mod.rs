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
//! the congestion control (Reno, or CUBIC as Linux 2.6.23 ran it:
//! `tcp/cubic.rs`, with DSACK-driven undo), the RTO formula (RFC 6298 with a 200 ms floor, or Linux's SRTT +
//! max(4·RTTVAR, 200 ms)), the receiver's acknowledgement policy, SACK
//! (a scoreboard of the receiver's out-of-order blocks: SACKed segments are
//! neither counted in flight nor resent), Linux's retransmission collapsing,
//! and the thin-stream modifications of Petlund et al. (NetGames 2008) and
//! Griwodz & Halvorsen (NOSSDAV 2006). Per-packet retransmission counters
//! (`tcp/rtx.rs`) measure what those papers report.
//!
//! The sender's handling of acknowledgements and timeouts is in
//! `tcp/recovery.rs`, the building of outgoing segments in `tcp/transmit.rs`
//! and the receiver half in `tcp/receiver.rs`.

mod config;
mod cubic;
mod receiver;
mod recovery;
mod rtx;
mod transmit;

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

pub use config::{AckStyle, Congestion, RtoStyle, TcpConfig, TcpVariant};
pub use rtx::{RtxCounters, MAX_RTX_TRACKED};

use super::{add_counter, Counters, OutMessage, Protocol, RttEstimator, SimEndpoint, Transmit};
use crate::workload::ClassSpec;
use cubic::Cubic;
use rtx::Part;

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
    /// Timestamp option ([`TcpConfig::timestamps`]): the sender's clock when
    /// it sent the segment (TSval), `None` without timestamps.
    pub ts_val: Option<Instant>,
    /// Timestamp option: the peer's TSval this segment echoes (TSecr).
    pub ts_ecr: Option<Instant>,
}

dropped_when_corrupted!(TcpSegment);

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
    /// Window reductions undone because DSACKs showed them spurious.
    pub undos: u64,
    /// Timeouts shown spurious by a timestamp echo (lost marks withdrawn).
    pub loss_undos: u64,
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
    rtt: RttEstimator,
    rto: Duration,
    rto_at: Option<Instant>,
    force_retransmit: bool,
    last_new_send: Option<Instant>,
    cubic: Cubic,
    undo: Undo,
    /// RFC 2861 state: the most segments in flight while the window was not
    /// full (`snd_cwnd_used`), and when the window was last full or
    /// validated (`snd_cwnd_stamp`).
    cwnd_used: usize,
    cwnd_stamp: Option<Instant>,
    /// With timestamps: when the latest timeout retransmitted, while it may
    /// still be shown spurious (Linux's `retrans_stamp` with `undo_marker`).
    loss_undo_at: Option<Instant>,
    /// ssthresh before that timeout's reduction (`prior_ssthresh`).
    loss_prior_ssthresh: f64,
    // Receiver.
    rcv_nxt: u64,
    ooo: BTreeMap<u64, u64>,
    bounds: BTreeMap<u64, u64>,
    unacked_segments: u32,
    unacked_bytes: u64,
    last_data_rx: Option<Instant>,
    delack_at: Option<Instant>,
    ack_pending: bool,
    /// Duplicate data to report in the next acknowledgement's DSACK block.
    dsack: Option<(u64, u64)>,
    /// The TSval to echo (RFC 1323's `TS.Recent`).
    ts_recent: Option<Instant>,
    /// `rcv_nxt` when the last acknowledgement was sent (`rcv_wup`).
    rcv_wup: u64,
    delivered: VecDeque<u64>,
    /// Messages whose last byte a new packet has just carried for the
    /// first time (drained by [`SimEndpoint::poll_first_sent`]), kept only
    /// when `report_first_sent` (endpoints the simulator drives directly).
    first_sent: VecDeque<u64>,
    report_first_sent: bool,
    stats: TcpStats,
    rtx: RtxCounters,
}

/// What undoing the current window reduction needs (Linux's `undo_marker`,
/// `undo_retrans`, `prior_ssthresh`).
#[derive(Debug, Clone, Default)]
struct Undo {
    /// A reduction that may still be undone.
    armed: bool,
    /// Retransmissions of the episode not yet shown spurious by a DSACK.
    retrans: u32,
    /// The stream ranges retransmitted in the episode.
    ranges: Vec<(u64, u64)>,
    /// ssthresh before the reduction (at least 3/4 of the window).
    prior_ssthresh: f64,
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
            rtt: RttEstimator::default(),
            rto: cfg.initial_rto,
            rto_at: None,
            force_retransmit: false,
            last_new_send: None,
            cubic: Cubic::new(),
            undo: Undo::default(),
            cwnd_used: 0,
            cwnd_stamp: None,
            loss_undo_at: None,
            loss_prior_ssthresh: 0.0,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            bounds: BTreeMap::new(),
            unacked_segments: 0,
            unacked_bytes: 0,
            last_data_rx: None,
            delack_at: None,
            ack_pending: false,
            dsack: None,
            ts_recent: None,
            rcv_wup: 0,
            delivered: VecDeque::new(),
            first_sent: VecDeque::new(),
            report_first_sent: false,
            stats: TcpStats::default(),
            rtx: RtxCounters::default(),
        }
    }

    /// An endpoint that also reports when each message first goes on the
    /// wire ([`SimEndpoint::poll_first_sent`]), for the simulator.
    fn reporting(cfg: TcpConfig) -> Self {
        TcpConn {
            report_first_sent: true,
            ..TcpConn::new(cfg, 0)
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
        self.rtt.srtt()
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

    /// Handles an arriving segment.
    pub fn on_segment(&mut self, now: Instant, seg: TcpSegment) {
        if seg.corrupted {
            return;
        }
        self.on_ack(now, seg.ack, seg.len == 0, &seg.sack);
        self.try_undo_loss(seg.ts_ecr);
        if seg.len > 0 {
            self.on_data(now, &seg);
        }
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
            return Some(self.pure_ack(now));
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
        let ts_bytes = if self.cfg.timestamps {
            config::TIMESTAMP_BYTES
        } else {
            0
        };
        Some(Transmit {
            peer: self.peer,
            wire_bytes: (self.cfg.header_bytes + ts_bytes + sack_bytes + seg.len) as usize,
            payload_bytes: Some((self.stats.payload_bytes - before) as usize),
            packet: seg,
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.next_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.on_timeout(now);
    }

    fn poll_delivered(&mut self) -> Option<(u32, u64)> {
        self.poll_message().map(|id| (self.peer, id))
    }

    fn poll_first_sent(&mut self) -> Option<u64> {
        self.first_sent.pop_front()
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
        if self.cfg.dsack_undo {
            add_counter(out, "tcp_undos", s.undos as f64);
        }
        if self.cfg.timestamps {
            add_counter(out, "tcp_loss_undos", s.loss_undos as f64);
        }
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
        TcpConn::reporting(self.config)
    }
    fn new_server(
        &self,
        _clients: u32,
        _seed: u64,
        _now: Instant,
        _classes: &[ClassSpec],
    ) -> TcpConn {
        TcpConn::reporting(self.config)
    }
}

#[cfg(test)]
mod tests;
