//! One connection: handshake state, channels, loss recovery and timers.
//!
//! A connection never sees the network or the clock: the [`Endpoint`](crate::Endpoint) hands it
//! parsed packets and `now`, and asks it for datagrams and for its next deadline.

mod state;
mod stats;
mod timer;
mod transmit;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::channel::{Delivered, RecvChannel, RecvOutcome, SendChannel, SEND_WINDOW};
use crate::config::TransportConfig;
use crate::deadline::{
    DeadlineOptions, DeadlineReceiver, DeadlineSender, ShardOutcome, StageContext,
};
use crate::error::{DisconnectReason, PeerError, SendError};
use crate::event::{Event, Message};
use crate::recovery::{
    ChunkRef, Congestion, ReceivedPackets, RttEstimator, SentPacket, SentPackets,
};
use crate::wire::{self, AckFrame, ChannelKind, ConnectionId, Frame};

pub(crate) use state::State;
pub use stats::{ChannelStats, ConnectionStats};
use timer::{Timer, TimerTable};

/// Which side opened the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Client,
    Server,
}

/// Handshake parameters a client remembers (and a server echoes in its Accept).
#[derive(Debug, Clone)]
pub(crate) struct HandshakeInfo {
    pub(crate) instance: u64,
    pub(crate) nonce: u64,
    /// When the last Hello/Connect was sent, and whether it was a retransmission (Karn's rule:
    /// no RTT sample from a retransmitted handshake packet).
    sent_at: Option<Instant>,
    retransmitted: bool,
    started: Instant,
}

/// A connection.
#[derive(Debug)]
pub(crate) struct Connection {
    side: Side,
    pub(crate) state: State,
    pub(crate) remote: SocketAddr,
    pub(crate) local_cid: ConnectionId,
    pub(crate) remote_cid: Option<ConnectionId>,
    pub(crate) handshake: HandshakeInfo,
    config: Arc<TransportConfig>,
    channels: Vec<ChannelKind>,
    send: Vec<SendChannel>,
    recv: Vec<RecvChannel>,
    /// New message data in the order the application sent it.
    pending: VecDeque<ChunkRef>,
    /// Data declared lost, to go before anything new.
    retransmit: VecDeque<ChunkRef>,
    /// Reliable data in order of first transmission, for bundling (acked entries pruned lazily).
    unacked_order: VecDeque<ChunkRef>,
    next_pn: u64,
    sent: SentPackets,
    rtt: RttEstimator,
    cc: Congestion,
    rx: ReceivedPackets,
    peer_max_ack_delay: Duration,
    backoff: u32,
    timers: TimerTable,
    loss_time: Option<Instant>,
    last_rx: Instant,
    /// When the last packet of any kind left (keepalives are only needed when nothing does).
    last_tx: Instant,
    /// A handshake packet (Hello, Connect) is due.
    handshake_due: bool,
    /// The server must (re)send its Accept.
    pub(crate) accept_due: bool,
    /// A CLOSE frame is due.
    close_due: bool,
    last_close_sent: Option<Instant>,
    close_started: Option<Instant>,
    ping_due: bool,
    /// A retransmission timeout fired: one packet may go regardless of the congestion window.
    probe_due: bool,
    pub(crate) events: Vec<Event>,
    deadline_tx: DeadlineSender,
    deadline_rx: DeadlineReceiver,
    /// Per channel: deadline options that every `send` on it uses by default.
    channel_deadline: Vec<Option<DeadlineOptions>>,
    loss_samples: u64,
    stats: ConnectionStats,
    delivered_scratch: Vec<Delivered>,
}

impl Connection {
    /// The state both sides start from; the caller sets its side's specifics, then calls
    /// `update_timers`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        side: Side,
        state: State,
        now: Instant,
        remote: SocketAddr,
        local_cid: ConnectionId,
        remote_cid: Option<ConnectionId>,
        channels: Vec<ChannelKind>,
        instance: u64,
        nonce: u64,
        config: Arc<TransportConfig>,
    ) -> Self {
        let handshake = HandshakeInfo {
            instance,
            nonce,
            sent_at: None,
            retransmitted: false,
            started: now,
        };
        let send = channels.iter().map(|k| SendChannel::new(*k)).collect();
        let recv = channels
            .iter()
            .map(|k| RecvChannel::new(*k, config.max_latest_keys))
            .collect();
        Self {
            side,
            state,
            remote,
            local_cid,
            remote_cid,
            handshake,
            channels,
            send,
            recv,
            pending: VecDeque::new(),
            retransmit: VecDeque::new(),
            unacked_order: VecDeque::new(),
            next_pn: 0,
            sent: SentPackets::default(),
            rtt: RttEstimator::new(config.initial_rtt),
            cc: Congestion::new(config.initial_window, config.min_window, config.max_window),
            rx: ReceivedPackets::new(config.max_ack_ranges),
            peer_max_ack_delay: Duration::ZERO,
            backoff: 0,
            timers: TimerTable::default(),
            loss_time: None,
            last_rx: now,
            last_tx: now,
            handshake_due: false,
            accept_due: false,
            close_due: false,
            last_close_sent: None,
            close_started: None,
            ping_due: false,
            probe_due: false,
            events: Vec::new(),
            deadline_tx: DeadlineSender::default(),
            deadline_rx: DeadlineReceiver::default(),
            channel_deadline: Vec::new(),
            loss_samples: 0,
            stats: ConnectionStats::default(),
            delivered_scratch: Vec::new(),
            config,
        }
    }

    /// A client connection that will send its Hello at the next transmit.
    pub(crate) fn new_client(
        now: Instant,
        remote: SocketAddr,
        local_cid: ConnectionId,
        channels: Vec<ChannelKind>,
        instance: u64,
        nonce: u64,
        config: Arc<TransportConfig>,
    ) -> Self {
        let mut c = Self::new(
            Side::Client,
            State::AwaitingChallenge,
            now,
            remote,
            local_cid,
            None,
            channels,
            instance,
            nonce,
            config,
        );
        c.handshake_due = true;
        c.update_timers();
        c
    }

    /// A server connection created from a Connect whose cookie checked out.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_server(
        now: Instant,
        remote: SocketAddr,
        local_cid: ConnectionId,
        remote_cid: ConnectionId,
        channels: Vec<ChannelKind>,
        instance: u64,
        nonce: u64,
        peer_max_ack_delay: Duration,
        handshake_rtt: Option<Duration>,
        config: Arc<TransportConfig>,
    ) -> Self {
        let mut c = Self::new(
            Side::Server,
            State::Established,
            now,
            remote,
            local_cid,
            Some(remote_cid),
            channels,
            instance,
            nonce,
            config,
        );
        c.peer_max_ack_delay = peer_max_ack_delay;
        if let Some(rtt) = handshake_rtt {
            c.rtt.update(rtt, Duration::ZERO);
        }
        c.accept_due = true;
        c.events.push(Event::Connected {
            remote,
            incoming: true,
        });
        c.update_timers();
        c
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    pub(crate) fn channels(&self) -> &[ChannelKind] {
        &self.channels
    }

    /// Whether the connection may count as thin now.
    fn is_thin(&self) -> bool {
        self.config.thin_streams && self.sent.in_flight() < self.config.thin_threshold
    }

    /// The retransmission timeout including backoff, clamped to the configured bounds.
    fn rto(&self) -> Duration {
        let base = self
            .rtt
            .rto(
                self.is_thin(),
                self.config.timer_granularity,
                self.peer_max_ack_delay,
            )
            .clamp(self.config.min_rto, self.config.max_rto);
        base.saturating_mul(1 << self.backoff.min(16))
            .min(self.config.max_rto)
    }

    // ---------------------------------------------------------------- application calls

    /// Makes every later `send` on `channel` a deadline message with `opts` (`None`: back to the
    /// channel's own class). Latest-value channels keep their semantics and refuse a default.
    pub(crate) fn set_channel_deadline(
        &mut self,
        channel: u8,
        opts: Option<DeadlineOptions>,
    ) -> Result<(), SendError> {
        let kind = *self
            .channels
            .get(channel as usize)
            .ok_or(SendError::UnknownChannel(channel))?;
        if kind.has_key() {
            return Err(SendError::WrongChannelKind {
                channel,
                kind,
                expected: "send_latest",
            });
        }
        if let Some(o) = opts {
            if o.deadline.is_zero() || !(o.target > 0.0 && o.target < 1.0) {
                return Err(SendError::InvalidDeadline);
            }
        }
        if self.channel_deadline.len() < self.channels.len() {
            self.channel_deadline.resize(self.channels.len(), None);
        }
        self.channel_deadline[channel as usize] = opts;
        Ok(())
    }

    /// Queues a message. `key` is required on latest-value channels and refused elsewhere.
    pub(crate) fn send(
        &mut self,
        now: Instant,
        channel: u8,
        key: Option<u64>,
        data: Bytes,
    ) -> Result<(), SendError> {
        if key.is_none() {
            if let Some(opts) = self
                .channel_deadline
                .get(channel as usize)
                .copied()
                .flatten()
            {
                return self.send_deadline(now, channel, data, opts).map(|_| ());
            }
        }
        if !self.state.is_open() {
            return Err(SendError::ConnectionClosed);
        }
        let kind = *self
            .channels
            .get(channel as usize)
            .ok_or(SendError::UnknownChannel(channel))?;
        match (kind.has_key(), key.is_some()) {
            (true, false) => {
                return Err(SendError::WrongChannelKind {
                    channel,
                    kind,
                    expected: "send_latest",
                })
            }
            (false, true) => {
                return Err(SendError::WrongChannelKind {
                    channel,
                    kind,
                    expected: "send",
                })
            }
            _ => {}
        }
        if let Some(k) = key.filter(|k| *k > wire::varint::MAX) {
            return Err(SendError::KeyOutOfRange(k));
        }
        let frag_size = self.config.max_unfragmented();
        let max = if kind.is_reliable() {
            self.config.max_message_size
        } else {
            frag_size
        };
        if data.len() > max {
            return Err(SendError::MessageTooLarge {
                size: data.len(),
                max,
            });
        }
        let queued: usize = self.send.iter().map(|c| c.queued_bytes).sum();
        let ch = &mut self.send[channel as usize];
        if queued + data.len() > self.config.send_buffer || ch.msgs.len() >= SEND_WINDOW {
            return Err(SendError::BufferFull);
        }
        let (seq, _replaced) = ch.push(data, key, frag_size);
        let msg = &mut ch.msgs.get_mut(&seq).expect("just pushed");
        for (frag, state) in msg.frags.iter_mut().enumerate() {
            state.queued = true;
            self.pending.push_back(ChunkRef {
                channel,
                seq,
                frag: frag as u32,
            });
        }
        self.update_timers();
        Ok(())
    }

    /// Queues a deadline message (see [`crate::deadline`]); returns its id.
    pub(crate) fn send_deadline(
        &mut self,
        now: Instant,
        channel: u8,
        data: Bytes,
        opts: DeadlineOptions,
    ) -> Result<u64, SendError> {
        if !self.state.is_open() {
            return Err(SendError::ConnectionClosed);
        }
        if usize::from(channel) >= self.channels.len() {
            return Err(SendError::UnknownChannel(channel));
        }
        if opts.deadline.is_zero() || !(opts.target > 0.0 && opts.target < 1.0) {
            return Err(SendError::InvalidDeadline);
        }
        // a shard frame costs at most ~40 bytes of framing
        let max_shard = self.config.max_unfragmented().saturating_sub(40).max(2);
        let shard = opts
            .shard_size
            .unwrap_or(self.config.deadline_shard_size)
            .clamp(2, max_shard);
        let max = shard * usize::from(wire::MAX_SHARDS_K);
        if data.len() > max || data.is_empty() {
            return Err(SendError::MessageTooLarge {
                size: data.len(),
                max,
            });
        }
        let ctx = self.stage_context();
        let id = self.deadline_tx.push(now, channel, &data, opts, shard, ctx);
        self.update_timers();
        Ok(id)
    }

    /// One stage of a deadline message lasts one round trip plus an RTO-like margin,
    /// `SRTT + max(G, min(4 * RTTVAR, SRTT / 4))` (no minimum, no backoff): the shards of a
    /// stage leave back to back and on a jittery FIFO path the last one's acknowledgement
    /// comes late, so a tighter stage would count shards that arrived as missing and repair
    /// them needlessly. The cap matters right after the handshake, when RTTVAR is still about
    /// half the RTT: without it the first messages of a connection would get stages of 3 RTTs,
    /// too long to repair anything in time. It is `SRTT / 4` rather than the thin RTO's
    /// `SRTT / 2` because a deadline of two round trips (Pangolin's 500 ms at 250 ms) leaves
    /// `2 RTT - RTT/2` for the stages: two stages fit only if a stage is under 1.5 RTT, and a
    /// stage too long costs a missed deadline while one too short costs a spare shard.
    fn stage_context(&self) -> StageContext {
        let srtt = self.rtt.srtt();
        StageContext {
            stage_len: srtt
                + self
                    .rtt
                    .variance_margin(srtt / 4, self.config.timer_granularity),
            one_way: srtt / 2,
            loss: self.stats.loss_estimate,
        }
    }

    /// Starts a graceful close: outstanding reliable data is delivered first (up to the close
    /// timeout), then CLOSE is sent.
    pub(crate) fn close(&mut self, now: Instant, code: u64, reason: Vec<u8>) {
        match self.state {
            State::Established => {
                self.state = State::Closing { code, reason };
                self.close_started = Some(now);
                self.maybe_finish_close(now);
            }
            State::AwaitingChallenge | State::AwaitingAccept { .. } => {
                // nothing to tell a server that keeps no state yet
                self.finish(DisconnectReason::LocallyClosed);
            }
            _ => {}
        }
        self.update_timers();
    }

    fn has_reliable_data(&self) -> bool {
        self.deadline_tx.len() > 0
            || !self.retransmit.is_empty()
            || self
                .send
                .iter()
                .any(|c| c.kind.is_reliable() && !c.msgs.is_empty())
    }

    fn maybe_finish_close(&mut self, now: Instant) {
        if let State::Closing { code, reason } = &self.state {
            if !self.has_reliable_data() {
                let (code, reason) = (*code, reason.clone());
                self.enter_draining(now, Some(DisconnectReason::LocallyClosed), code, reason);
            }
        }
    }

    fn enter_draining(
        &mut self,
        now: Instant,
        report: Option<DisconnectReason>,
        code: u64,
        reason: Vec<u8>,
    ) {
        let until = now + self.rto() * 3;
        self.state = State::Draining {
            report,
            code,
            reason,
            until,
        };
        self.close_due = true;
        self.pending.clear();
        self.retransmit.clear();
    }

    /// Ends the connection at once and tells the application why.
    fn finish(&mut self, reason: DisconnectReason) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.events.push(Event::Disconnected { reason });
        }
    }

    /// The peer's endpoint reset the connection (it no longer knows it).
    pub(crate) fn on_reset(&mut self) {
        match self.state {
            State::Draining { .. } | State::Closed => self.state = State::Closed,
            _ => self.finish(DisconnectReason::PeerReset),
        }
    }

    // ---------------------------------------------------------------- handshake input

    /// The server's Challenge arrived (client).
    pub(crate) fn on_challenge(
        &mut self,
        now: Instant,
        from: SocketAddr,
        nonce: u64,
        cookie: Vec<u8>,
    ) -> bool {
        if self.state != State::AwaitingChallenge
            || from != self.remote
            || nonce != self.handshake.nonce
        {
            return false;
        }
        self.handshake_rtt_sample(now);
        self.state = State::AwaitingAccept { cookie };
        self.handshake_due = true;
        self.handshake.retransmitted = false;
        self.update_timers();
        true
    }

    /// The server's Accept arrived (client).
    pub(crate) fn on_accept(
        &mut self,
        now: Instant,
        from: SocketAddr,
        nonce: u64,
        server_cid: ConnectionId,
        peer_max_ack_delay: Duration,
    ) -> bool {
        if !matches!(self.state, State::AwaitingAccept { .. })
            || from != self.remote
            || nonce != self.handshake.nonce
        {
            return false;
        }
        self.handshake_rtt_sample(now);
        self.remote_cid = Some(server_cid);
        self.peer_max_ack_delay = peer_max_ack_delay;
        self.state = State::Established;
        self.handshake_due = false;
        self.last_rx = now;
        self.last_tx = now;
        self.events.push(Event::Connected {
            remote: self.remote,
            incoming: false,
        });
        self.update_timers();
        true
    }

    /// The peer supports none of our versions (client, before the Challenge).
    pub(crate) fn on_version_negotiation(&mut self, from: SocketAddr, supported: Vec<u32>) {
        if self.state == State::AwaitingChallenge
            && from == self.remote
            && !supported.contains(&wire::VERSION)
        {
            self.finish(PeerError::VersionMismatch(supported).into());
        }
    }

    fn handshake_rtt_sample(&mut self, now: Instant) {
        if let (Some(sent), false) = (self.handshake.sent_at, self.handshake.retransmitted) {
            self.rtt
                .update(now.saturating_duration_since(sent), Duration::ZERO);
        }
    }

    // ---------------------------------------------------------------- data input

    /// A short-header packet for this connection. `payload` is everything after the header.
    pub(crate) fn handle_packet(
        &mut self,
        now: Instant,
        from: SocketAddr,
        pn_truncated: u64,
        pn_len: usize,
        payload: &[u8],
        datagram_len: usize,
    ) {
        if !self.state.is_data() && !matches!(self.state, State::Draining { .. }) {
            // a client still in its handshake cannot answer yet; the data will come again
            return;
        }
        let pn = wire::pn_decode(pn_truncated, pn_len, self.rx.largest());
        if self.rx.contains(pn) {
            self.stats.duplicate_packets += 1;
            self.rx.immediate = true; // our ACK may have been lost
            self.update_timers();
            return;
        }
        // Parse and validate the whole packet before acting on any of it.
        let mut frames = Vec::new();
        for f in wire::frames(payload, &self.channels) {
            match f {
                Ok(f) => frames.push(f),
                Err(_) => {
                    self.stats.malformed_packets += 1;
                    return;
                }
            }
        }
        let acks_unsent = frames
            .iter()
            .any(|f| matches!(f, Frame::Ack(a) if a.largest >= self.next_pn));
        if acks_unsent {
            self.stats.malformed_packets += 1;
            return;
        }
        if !self.frames_plausible(&frames) {
            // an honest peer never sends these; most likely corruption that passed UDP's checksum
            self.stats.malformed_packets += 1;
            return;
        }
        if let State::Draining { .. } = self.state {
            if frames.iter().any(|f| matches!(f, Frame::Close { .. })) {
                // both sides closed: done
                if let State::Draining {
                    report: Some(r), ..
                } = std::mem::replace(&mut self.state, State::Closed)
                {
                    self.events.push(Event::Disconnected { reason: r });
                }
            } else if self.last_close_sent.is_none_or(|t| now >= t + self.rto()) {
                self.close_due = true;
            }
            return;
        }
        if !self.receive_buffer_allows(&frames, payload.len()) {
            self.stats.dropped_buffer_full += 1;
            return;
        }
        let out_of_order = self.rx.insert(pn, now);
        self.last_rx = now;
        self.stats.packets_received += 1;
        self.stats.bytes_received += datagram_len as u64;
        if from != self.remote && self.rx.largest() == Some(pn) {
            // NAT rebinding: follow the newest packet's source address
            self.remote = from;
            self.stats.migrations += 1;
        }
        let eliciting = frames.iter().any(Frame::is_ack_eliciting);
        let frames_had_shard = frames.iter().any(|f| matches!(f, Frame::Shard(_)));
        let mut completed = false;
        for frame in frames {
            match frame {
                Frame::Ack(ack) => self.on_ack_frame(now, &ack),
                Frame::Close { code, reason } => {
                    let reason = reason.to_vec();
                    self.events.push(Event::Disconnected {
                        reason: DisconnectReason::ClosedByPeer {
                            code,
                            reason: reason.clone(),
                        },
                    });
                    self.enter_draining(now, None, code, reason);
                    self.update_timers();
                    return;
                }
                Frame::Message(m) => completed |= self.on_message_frame(m),
                // acknowledgements of deadline shards are never delayed (frames_had_shard)
                Frame::Shard(f) => self.on_shard_frame(&f),
                Frame::Padding(_) | Frame::Ping => {}
            }
        }
        if eliciting {
            self.rx.unacked_eliciting += 1;
            let immediate_rule = frames_had_shard || (self.config.immediate_ack && completed);
            if out_of_order || immediate_rule || self.rx.unacked_eliciting >= 2 {
                self.rx.immediate = true;
            } else if self.rx.deadline.is_none() {
                self.rx.deadline = Some(now + self.config.max_ack_delay);
            }
        }
        self.maybe_finish_close(now);
        self.update_timers();
    }

    /// Whether every message frame is one an honest peer could send: a reliable channel's
    /// sequence number never lands beyond its receive window. Checked before anything in the
    /// packet is applied, so a damaged packet cannot move a channel's state.
    fn frames_plausible(&self, frames: &[Frame<'_>]) -> bool {
        frames.iter().all(|f| match f {
            Frame::Message(m) => {
                let ch = &self.recv[m.channel as usize];
                match m.seq {
                    Some(s) => ch.in_window(wire::seq_expand(s, ch.expected())),
                    None => true,
                }
            }
            _ => true,
        })
    }

    /// Refuses a packet whose out-of-order data would overflow the receive buffer, unless it
    /// carries the next in-order message of some channel (which frees buffer space).
    fn receive_buffer_allows(&self, frames: &[Frame<'_>], len: usize) -> bool {
        let buffered: usize = self.recv.iter().map(|c| c.buffered_bytes).sum();
        if buffered + len <= self.config.recv_buffer {
            return true;
        }
        frames.iter().any(|f| match f {
            Frame::Message(m) => {
                let ch = &self.recv[m.channel as usize];
                match m.seq {
                    Some(s) => ch.is_next(wire::seq_expand(s, ch.expected())),
                    None => true,
                }
            }
            _ => false,
        })
    }

    /// Returns whether a message was delivered.
    fn on_message_frame(&mut self, m: wire::MessageFrame<'_>) -> bool {
        let idx = m.channel as usize;
        let ch = &mut self.recv[idx];
        let seq = m.seq.map(|s| wire::seq_expand(s, ch.expected()));
        let frag = m.fragment.map(|f| (f.index, f.count));
        let mut out = std::mem::take(&mut self.delivered_scratch);
        match ch.on_frame(seq, m.key, frag, m.payload, &mut out) {
            RecvOutcome::Accepted => {}
            RecvOutcome::Duplicate => self.stats.duplicate_frames += 1,
            RecvOutcome::Refused => self.stats.refused_frames += 1,
        }
        let delivered = !out.is_empty();
        for d in out.drain(..) {
            self.stats.messages_delivered += 1;
            self.events.push(Event::Message(Message {
                channel: m.channel,
                seq: d.seq,
                key: d.key,
                data: d.data,
                deadline: None,
            }));
        }
        self.delivered_scratch = out;
        delivered
    }

    fn on_shard_frame(&mut self, f: &wire::ShardFrame<'_>) {
        match self.deadline_rx.on_shard(f, self.rtt.srtt() / 2) {
            ShardOutcome::Stored => {}
            ShardOutcome::Duplicate => self.stats.duplicate_frames += 1,
            ShardOutcome::Refused => self.stats.refused_frames += 1,
            ShardOutcome::Decoded {
                channel,
                data,
                status,
            } => {
                self.stats.deadline_delivered += 1;
                if status.late {
                    self.stats.deadline_late += 1;
                    if !self.config.deliver_late {
                        return;
                    }
                }
                self.stats.messages_delivered += 1;
                self.events.push(Event::Message(Message {
                    channel,
                    seq: None,
                    key: None,
                    data,
                    deadline: Some(status),
                }));
            }
        }
    }

    fn on_ack_frame(&mut self, now: Instant, ack: &AckFrame) {
        let largest_before = self.sent.largest_acked();
        let acked = self.sent.on_ack(ack);
        let mut new_data_acked = false;
        for (pn, packet) in &acked {
            if packet.lost {
                self.stats.spurious_losses += 1;
            } else {
                new_data_acked = true;
                self.cc.on_ack(packet.time_sent);
                self.note_loss_sample(false);
            }
            if *pn == ack.largest && largest_before.is_none_or(|l| ack.largest > l) {
                let sample = now.saturating_duration_since(packet.time_sent);
                self.rtt
                    .update(sample, Duration::from_micros(ack.ack_delay_us));
            }
            for c in &packet.chunks {
                if let Some(ch) = self.send.get_mut(c.channel as usize) {
                    ch.on_chunk_acked(c.seq, c.frag);
                }
            }
            if let Some(s) = packet.shard {
                self.deadline_tx.on_acked(s);
            }
        }
        if new_data_acked {
            self.backoff = 0;
        }
        self.detect_losses(now);
    }

    /// Loss estimate: the plain mean of the first 256 packet outcomes, then an EWMA over about
    /// the last 256 (the FEC policy needs a steady estimate: a short window swings a 2% path
    /// between 0% and 6% and buys parity it does not need).
    fn note_loss_sample(&mut self, lost: bool) {
        const WINDOW: u64 = 256;
        self.loss_samples = (self.loss_samples + 1).min(WINDOW);
        let x = if lost { 1.0 } else { 0.0 };
        self.stats.loss_estimate += (x - self.stats.loss_estimate) / self.loss_samples as f64;
    }

    fn loss_rule(&self) -> crate::recovery::LossRule {
        let srtt = self.rtt.srtt();
        crate::recovery::LossRule {
            thin: self.is_thin(),
            thin_window: srtt / self.config.thin_reorder_divisor,
            rtt: self.rtt.latest(),
            packet_threshold: 3,
            retention: self.rto() * 4,
        }
    }

    fn detect_losses(&mut self, now: Instant) {
        let rule = self.loss_rule();
        let (lost, next) = self.sent.detect_lost(now, rule);
        self.loss_time = next;
        if rule.thin {
            self.stats.thin_fast_losses += lost.len() as u64;
        }
        for (pn, packet) in lost {
            self.on_packet_lost(now, pn, packet);
        }
    }

    fn on_packet_lost(&mut self, now: Instant, pn: u64, packet: SentPacket) {
        self.stats.packets_lost += 1;
        self.note_loss_sample(true);
        self.cc.on_loss(packet.time_sent, now);
        for c in packet.chunks {
            let Some(ch) = self.send.get_mut(c.channel as usize) else {
                continue;
            };
            if !ch.kind.is_reliable() {
                continue;
            }
            let Some(msg) = ch.msgs.get_mut(&c.seq) else {
                continue;
            };
            let Some(f) = msg.frags.get_mut(c.frag as usize) else {
                continue;
            };
            if !f.acked && !f.queued && f.last_pn == Some(pn) {
                f.queued = true;
                self.retransmit.push_back(c);
            }
        }
    }

    // ---------------------------------------------------------------- timers

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        for t in self.timers.take_expired(now) {
            match t {
                Timer::LossDetection => self.on_loss_timer(now),
                Timer::Ack => self.rx.immediate = true,
                Timer::Keepalive => self.ping_due = true,
                Timer::Idle => self.finish(DisconnectReason::TimedOut),
                Timer::Handshake => {
                    self.handshake_due = true;
                    self.handshake.retransmitted = true;
                }
                Timer::HandshakeTimeout => self.finish(DisconnectReason::HandshakeTimedOut),
                Timer::Close => {
                    if let State::Closing { code, reason } = &self.state {
                        let (code, reason) = (*code, reason.clone());
                        self.enter_draining(
                            now,
                            Some(DisconnectReason::LocallyClosed),
                            code,
                            reason,
                        );
                    }
                }
                Timer::Deadline => {
                    let ctx = self.stage_context();
                    self.deadline_tx.on_timeout(now, ctx);
                }
                Timer::Drain => {
                    if let State::Draining {
                        report: Some(r), ..
                    } = std::mem::replace(&mut self.state, State::Closed)
                    {
                        self.events.push(Event::Disconnected { reason: r });
                    }
                }
            }
            if self.state == State::Closed {
                break;
            }
        }
        self.update_timers();
    }

    fn rto_deadline(&self) -> Option<Instant> {
        self.sent.oldest_in_flight().map(|t| t + self.rto())
    }

    fn on_loss_timer(&mut self, now: Instant) {
        if self.loss_time.is_some_and(|t| t <= now) {
            self.detect_losses(now);
        }
        if self.rto_deadline().is_some_and(|t| t <= now) {
            self.stats.rto_expirations += 1;
            let cutoff = now.checked_sub(self.rto()).unwrap_or(now);
            if !self.is_thin() {
                // standard behaviour: exponential backoff, window collapse
                self.backoff = (self.backoff + 1).min(16);
                self.cc.on_timeout(now);
            }
            let lost = self.sent.expire(cutoff);
            for (pn, p) in lost {
                self.on_packet_lost(now, pn, p);
            }
            self.probe_due = true;
        }
    }

    fn update_timers(&mut self) {
        let cfg = &self.config;
        let mut t = TimerTable::default();
        match &self.state {
            State::AwaitingChallenge | State::AwaitingAccept { .. } => {
                if !self.handshake_due {
                    t.set(
                        Timer::Handshake,
                        self.handshake.sent_at.map(|s| s + cfg.handshake_retry),
                    );
                }
                t.set(
                    Timer::HandshakeTimeout,
                    Some(self.handshake.started + cfg.handshake_timeout),
                );
            }
            State::Established | State::Closing { .. } => {
                let loss = match (self.loss_time, self.rto_deadline()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                t.set(Timer::LossDetection, loss);
                if !self.rx.immediate {
                    t.set(Timer::Ack, self.rx.deadline);
                }
                // Any packet (an ACK too) keeps NAT mappings and the peer's idle timer alive, and
                // with data in flight the retransmission timer probes the path already. The
                // server waits a quarter longer, so in a spell of silence only the client pings
                // (the server's ACK of it resets the server's own keepalive).
                if !self.ping_due && self.sent.in_flight() == 0 {
                    let interval = match self.side {
                        Side::Client => cfg.keepalive_interval,
                        Side::Server => cfg.keepalive_interval * 5 / 4,
                    };
                    t.set(Timer::Keepalive, Some(self.last_tx + interval));
                }
                t.set(Timer::Idle, Some(self.last_rx + cfg.idle_timeout));
                t.set(Timer::Deadline, self.deadline_tx.next_timeout());
                if let (State::Closing { .. }, Some(s)) = (&self.state, self.close_started) {
                    t.set(Timer::Close, Some(s + cfg.close_timeout));
                }
            }
            State::Draining { until, .. } => t.set(Timer::Drain, Some(*until)),
            State::Closed => {}
        }
        self.timers = t;
    }

    // ---------------------------------------------------------------- statistics

    pub(crate) fn stats(&self) -> ConnectionStats {
        let mut s = self.stats.clone();
        let d = &self.deadline_tx.stats;
        s.deadline_messages_sent = d.messages;
        s.deadline_completed = d.completed;
        s.deadline_abandoned = d.abandoned;
        s.payload_bytes_first += d.data_bytes_first;
        s.payload_bytes_retransmitted += d.bytes_repeated;
        s.payload_bytes_parity = d.parity_bytes;
        s.parity_shards = d.parity_shards;
        s.srtt = self.rtt.srtt();
        s.rttvar = self.rtt.rttvar();
        s.min_rtt = self.rtt.min_rtt();
        s.rto = self.rto();
        s.cwnd = self.cc.window();
        s.in_flight = self.sent.in_flight();
        s.thin = self.is_thin();
        s.channels = self
            .send
            .iter()
            .zip(&self.recv)
            .map(|(tx, rx)| ChannelStats {
                kind: tx.kind,
                send_queue_messages: tx.msgs.len(),
                send_queue_bytes: tx.queued_bytes,
                recv_waiting_messages: rx.waiting_messages(),
                recv_buffered_bytes: rx.buffered_bytes,
            })
            .collect();
        s
    }
}
