//! One connection: handshake state, channels, loss recovery and timers.
//!
//! A connection never sees the network or the clock: the [`Endpoint`](crate::Endpoint) hands it
//! parsed packets and `now`, and asks it for datagrams and for its next deadline. The struct and
//! its constructors live here; its work is split by job into sibling files:
//!
//! | file | job |
//! |---|---|
//! | `send.rs` | the application's sends and deadline sends |
//! | `transmit.rs` | building the next datagram: handshake, ACK, CLOSE, data, bundling |
//! | `receive.rs` | one validating walk over an incoming packet's frames, then applying them |
//! | `handshake.rs` | the client's Challenge / Accept / Refuse / version-negotiation input |
//! | `path.rs` | validating a new peer address before moving to it |
//! | `loss.rs` | acknowledgements, loss detection, the retransmission timeout |
//! | `repair.rs` | the repair policy of reliable channels: copies per stage, repairs in time |
//! | `close.rs` | graceful close, draining, resets, telling the application why it ended |
//! | `events.rs` | the events the application has not taken yet |
//! | `memory.rs` | the bytes held of the endpoint's memory budget; the close over budget |
//! | `timer.rs` | the timer table and which timers run in which state |
//! | `state.rs`, `stats.rs` | the state machine's states, the counters |
//! | `counters.rs` | a connection's counters, packed small while it is idle |

mod active;
mod channel_list;
mod close;
mod counters;
mod events;
mod handshake;
#[cfg(test)]
mod layout;
mod loss;
mod memory;
mod path;
mod prefetch;
mod receive;
mod repair;
mod send;
mod state;
mod stats;
mod timer;
mod transmit;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::channel::{RecvChannel, SendChannel};
use crate::config::TransportConfig;
use crate::crypto::{CipherSuite, PacketKeys, RESET_TOKEN_LEN};
use crate::deadline::{DeadlineOptions, DeadlineReceiver, DeadlineSender};
use crate::event::Event;
use crate::pack::{Pack, Packer, Parked, Unpacker};
use crate::policy::PolicyCache;
use crate::recovery::{ns, ReceivedPackets};
use crate::wire::{ChannelKind, ConnectionId};

use crate::stamp::Stamp;
use active::LazyActive;
use handshake::HandshakeInfo;
pub(crate) use handshake::{peer_max_ack_delay, ClientHandshake};
use loss::Recovery;
pub(crate) use memory::SEND_MESSAGE_OVERHEAD;
pub(crate) use receive::IncomingPacket;
pub use send::SendMode;
pub(crate) use state::State;
pub use stats::{
    ChannelStats, ConnectionCounters, ConnectionStats, DeadlineStats, FrameStats, PathStats,
    PayloadStats, RecoveryStats, SecurityStats, UdpStats,
};
use timer::Timers;

/// Which side opened the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Client,
    Server,
}

/// What a new connection starts from, on either side.
#[derive(Debug)]
pub(crate) struct Setup {
    /// The peer's address.
    pub(crate) remote: SocketAddr,
    /// The connection id this side issued.
    pub(crate) local_cid: ConnectionId,
    /// The channel classes, indexed by channel number.
    pub(crate) channels: Vec<ChannelKind>,
    /// The client endpoint's instance number (the handshake's identity, with `nonce`).
    pub(crate) instance: u64,
    /// The client's handshake nonce.
    pub(crate) nonce: u64,
    /// The endpoint's transport configuration.
    pub(crate) config: Arc<TransportConfig>,
    /// Where deadline and repair policies are looked up.
    pub(crate) policies: PolicyCache,
    /// This connection's randomness, drawn from the endpoint's seeded generator: a client
    /// makes its handshake's ephemeral key from it ([`ClientHandshake::seed`]). (A server's
    /// connection draws it too, so that the generator's sequence does not depend on the side.)
    pub(crate) seed: [u8; 32],
    /// The endpoint's start: every moment and deadline of the connection counts from it.
    pub(crate) epoch: Instant,
}

/// What a server learns of the client from its Connect.
#[derive(Debug)]
pub(crate) struct ClientParams {
    /// The client's connection id.
    pub(crate) cid: ConnectionId,
    /// The client's maximum ACK delay (already capped).
    pub(crate) max_ack_delay: Duration,
    /// The round trip Challenge -> Connect took, if measurable.
    pub(crate) handshake_rtt: Option<Duration>,
    /// The packet keys the handshake gave.
    pub(crate) keys: PacketKeys,
    /// The Accept datagram (resent as is while the client may not have it).
    pub(crate) accept: Vec<u8>,
}

/// A connection's deadline delivery: both directions and the channel defaults.
#[derive(Debug)]
struct Deadline {
    tx: DeadlineSender,
    rx: DeadlineReceiver,
    /// Per channel: deadline options that every `send` on it uses by default.
    channel_default: Vec<Option<DeadlineOptions>>,
}

/// What the next datagrams must carry besides data: set by timers and input, cleared when
/// written.
#[derive(Debug, Default, Clone, Copy)]
struct Due {
    /// A handshake packet (Hello, Connect).
    handshake: bool,
    /// The server's Accept, again.
    accept: bool,
    /// A CLOSE frame.
    close: bool,
    /// A PING (the keepalive timer fired).
    ping: bool,
    /// A retransmission timeout fired: one packet may go regardless of the congestion window.
    probe: bool,
    /// Working out the earliest timer again: the state changed since it was last worked out
    /// (`poll_deadline` does it).
    timers: bool,
}

/// What a connection's packets move: its packet numbers and loss recovery for what it sends,
/// the record of what it received for its ACKs. Both rest packed while the connection is idle, in one allocation
/// ([`Parked`]): an idle connection keeps them in 70-100 bytes instead of 400.
#[derive(Debug)]
struct Flow {
    /// The number of the next packet this side sends.
    next_pn: u64,
    recovery: Recovery,
    rx: ReceivedPackets,
}

/// Packs only a settled flow: nothing in flight ([`Recovery`] says when it cannot be packed).
impl Pack for Flow {
    fn pack(&self, p: &mut Packer) -> bool {
        p.u64(self.next_pn);
        self.recovery.pack(p) && self.rx.pack(p)
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        Self {
            next_pn: u.u64(),
            recovery: Recovery::unpack(u),
            rx: ReceivedPackets::unpack(u),
        }
    }
}

/// When the CLOSE frame was last sent, and when the graceful close began.
#[derive(Debug, Default, Clone, Copy)]
struct CloseTimes {
    /// [`Stamp::NONE`] until the first CLOSE.
    last_sent: Stamp,
    /// [`Stamp::NONE`] until the graceful close begins.
    started: Stamp,
}

/// A connection: its identity and handshake, then one part per job (keys, channels, send
/// queues, loss recovery, acknowledgements, timers, what is due), then the cold parts.
#[derive(Debug)]
pub(crate) struct Connection {
    side: Side,
    state: State,
    remote: SocketAddr,
    local_cid: ConnectionId,
    remote_cid: Option<ConnectionId>,
    handshake: HandshakeInfo,
    /// Packet protection, once the handshake is done.
    keys: Option<PacketKeys>,
    /// Client: the server's reset token for its connection id (a Reset must carry it).
    peer_reset_token: Option<[u8; RESET_TOKEN_LEN]>,
    /// Server: the Accept datagram, kept until the client's first authenticated packet shows
    /// that it has it.
    accept_packet: Option<Box<[u8]>>,
    path: path::PathState,
    config: Arc<TransportConfig>,
    channels: channel_list::ChannelList,
    /// The channels' send states, made at the first message sent (`ensure_send`).
    send: Box<[SendChannel]>,
    /// The channels' receive states, made at the first message received (`ensure_recv`).
    recv: Box<[RecvChannel]>,
    /// The send queues, scratch lists and packet-building state, boxed while data moves.
    active: LazyActive,
    /// Packet numbers, loss recovery and acknowledgements, packed while the connection rests.
    flow: Parked<Flow>,
    /// The timers, and the base of every [`Stamp`] below: the endpoint's start.
    timers: Timers,
    /// When the last authenticated packet arrived.
    last_rx: Stamp,
    /// When the last packet of any kind left (keepalives are only needed when nothing does).
    last_tx: Stamp,
    due: Due,
    close: CloseTimes,
    /// Events the application has not taken yet, oldest first (the endpoint keeps their
    /// order across connections: `endpoint/events.rs`).
    events: VecDeque<Event>,
    /// How many of `events` the endpoint was told of ([`announce_events`](Self::announce_events)).
    announced: u32,
    /// The events held since the application last took them all went over [`EVENTS_KEPT`]
    /// (`events.rs`): their room is kept for the next burst, not given back at once.
    ///
    /// [`EVENTS_KEPT`]: events::EVENTS_KEPT
    events_burst: bool,
    /// Deadline delivery's state, made when the connection first sends or receives a deadline
    /// message (most connections never do).
    deadline: Option<Box<Deadline>>,
    /// Where deadline and repair policies are looked up.
    policies: PolicyCache,
    /// The counters ([`stats`](Self::stats) adds the gauges and the channels).
    stats: counters::Counters,
    /// Whether idle memory was given back, and what moved since.
    rest: timer::Rest,
}

impl Connection {
    /// The state both sides start from; the caller sets its side's specifics, then calls
    /// `update_timers`.
    fn new(side: Side, state: State, now: Instant, setup: Setup) -> Self {
        let Setup {
            remote,
            local_cid,
            channels,
            instance,
            nonce,
            config,
            policies,
            seed: _,
            epoch,
        } = setup;
        let timers = Timers::new(epoch);
        let started = timers.stamp(now);
        let handshake = HandshakeInfo {
            origin: remote,
            instance,
            nonce,
            started,
            client: None,
        };
        Self {
            side,
            state,
            remote,
            local_cid,
            remote_cid: None,
            handshake,
            keys: None,
            peer_reset_token: None,
            accept_packet: None,
            path: path::PathState::default(),
            channels: channels.into(),
            send: Box::default(),
            recv: Box::default(),
            active: LazyActive::default(),
            flow: Parked::new(Flow {
                next_pn: 0,
                recovery: Recovery::new(&config),
                rx: ReceivedPackets::new(config.max_ack_ranges),
            }),
            timers,
            last_rx: started,
            last_tx: started,
            due: Due::default(),
            close: CloseTimes::default(),
            events: VecDeque::new(),
            announced: 0,
            events_burst: false,
            deadline: None,
            policies,
            stats: counters::Counters::default(),
            rest: timer::Rest::Awake,
            config,
        }
    }

    /// A client connection that will send its Hello at the next transmit.
    pub(crate) fn new_client(now: Instant, setup: Setup, client: ClientHandshake) -> Self {
        let mut c = Self::new(Side::Client, State::AwaitingChallenge, now, setup);
        c.handshake.client = Some(Box::new(client));
        c.due.handshake = true;
        c.update_timers();
        c
    }

    /// A server connection created from a Connect whose cookie checked out.
    pub(crate) fn new_server(now: Instant, setup: Setup, client: ClientParams) -> Self {
        let mut c = Self::new(Side::Server, State::Established, now, setup);
        c.remote_cid = Some(client.cid);
        c.flow.recovery.peer_max_ack_delay = client.max_ack_delay;
        if let Some(rtt) = client.handshake_rtt {
            c.flow.recovery.rtt.update(rtt, Duration::ZERO);
        }
        c.keys = Some(client.keys);
        c.accept_packet = Some(client.accept.into_boxed_slice());
        c.due.accept = true;
        // room for this one event only (a push would make room for four): most connections
        // then stay idle
        c.events.reserve_exact(1);
        c.events.push_back(Event::Connected {
            remote: c.remote,
            incoming: true,
        });
        c.update_timers();
        c
    }

    /// Sent packets remembered (tests of the memory bounds).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn sent_tracked(&self) -> usize {
        self.flow.recovery.sent.tracked()
    }

    /// Bytes the receive channels really hold for reassembly (tests of the memory bounds).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn reassembly_held_bytes(&self) -> usize {
        self.recv
            .iter()
            .map(RecvChannel::reassembly_held_bytes)
            .sum()
    }

    /// Messages under reassembly (tests of the memory bounds).
    #[cfg(test)]
    pub(crate) fn partial_messages(&self) -> usize {
        self.recv.iter().map(RecvChannel::partial_count).sum()
    }

    /// The server's reset token, as a client learned it (tests of the attacks).
    #[cfg(test)]
    pub(crate) fn peer_reset_token(&self) -> Option<[u8; RESET_TOKEN_LEN]> {
        self.peer_reset_token
    }

    /// The peer's address (it follows NAT rebinding).
    pub(crate) fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// The connection id this side issued (the peer's packets carry it).
    pub(crate) fn local_cid(&self) -> ConnectionId {
        self.local_cid
    }

    /// The peer's connection id, once known.
    pub(crate) fn remote_cid(&self) -> Option<ConnectionId> {
        self.remote_cid
    }

    /// The address the connection started from (it may have moved since): the source it
    /// was admitted from and is counted against.
    pub(crate) fn origin(&self) -> SocketAddr {
        self.handshake.origin
    }

    /// Whether the handshake was the client's `(instance, nonce)`: what a server recognises a
    /// repeated Connect by, besides the client's address and id.
    pub(crate) fn handshake_is(&self, instance: u64, nonce: u64) -> bool {
        (self.handshake.instance, self.handshake.nonce) == (instance, nonce)
    }

    /// The client's Connect came again (our Accept was lost): send the Accept again, unless
    /// the client has shown it has it.
    pub(crate) fn resend_accept(&mut self) {
        self.due.accept = self.accept_packet.is_some();
    }

    /// The cipher suite protecting this connection's packets, once the handshake is done.
    pub(crate) fn cipher_suite(&self) -> Option<CipherSuite> {
        self.keys.as_ref().map(PacketKeys::suite)
    }

    /// Bytes of each packet left for frames once the tag is counted.
    fn frame_room(&self) -> usize {
        let tag = self.cipher_suite().map_or(0, CipherSuite::overhead);
        self.config.max_datagram_size.saturating_sub(tag)
    }

    /// Makes the channels' send states, at the first message sent: a connection that never
    /// sends holds none.
    fn ensure_send(&mut self) {
        if self.send.is_empty() {
            let target = self.config.repair;
            self.send = self
                .channels
                .iter()
                .map(|k| {
                    let mut ch = SendChannel::new(*k);
                    ch.repair = target.filter(|_| k.is_reliable());
                    ch
                })
                .collect();
        }
    }

    /// Makes the channels' receive states, at the first message received.
    fn ensure_recv(&mut self) {
        if self.recv.is_empty() {
            let keys = self.latest_keys_per_channel();
            self.recv = self
                .channels
                .iter()
                .map(|k| RecvChannel::new(*k, keys))
                .collect();
        }
    }

    /// The deadline state, made on first use.
    fn deadline_mut(&mut self) -> &mut Deadline {
        let policies = &self.policies;
        self.deadline.get_or_insert_with(|| {
            Box::new(Deadline {
                tx: DeadlineSender::new(policies.clone()),
                rx: DeadlineReceiver::default(),
                channel_default: Vec::new(),
            })
        })
    }

    /// Sets how many flows this connection carries (congestion weight).
    pub(crate) fn set_congestion_weight(&mut self, flows: u32) {
        self.flow.recovery.cc.set_weight(flows);
    }

    /// Whether the peer opened the connection (a server's connection).
    pub(crate) fn is_incoming(&self) -> bool {
        self.side == Side::Server
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Sequence numbers of `channel`'s messages the sender still holds: from the oldest not
    /// acknowledged (on an unreliable channel, not sent) to the next a send takes (`None`: no
    /// such channel).
    pub(crate) fn send_window(&self, channel: u8) -> Option<std::ops::Range<u64>> {
        if usize::from(channel) >= self.channels.len() {
            return None;
        }
        Some(self.send.get(usize::from(channel)).map_or(0..0, |ch| {
            // an unreliable channel's unsent messages are the newest
            ch.msgs.oldest().unwrap_or(ch.next_seq - ch.unsent as u64)..ch.next_seq
        }))
    }

    pub(crate) fn channels(&self) -> &[ChannelKind] {
        &self.channels
    }

    /// Whether the connection may count as thin now.
    /// Thin while fewer than `thin_threshold` packets per flow carried are in flight: a trunk
    /// of N thin flows (congestion weight N) recovers as they would have separately.
    fn is_thin(&self) -> bool {
        self.is_thin_with(&self.flow.recovery)
    }

    /// [`is_thin`](Self::is_thin) with loss recovery `r` (a resting connection's, unpacked for
    /// a look: [`stats`](Self::stats)).
    fn is_thin_with(&self, r: &Recovery) -> bool {
        let threshold = self.config.thin_threshold.saturating_mul(r.cc.weight());
        self.config.thin_streams && r.sent.in_flight() < threshold
    }

    /// The retransmission timeout including backoff, clamped to the configured bounds.
    fn rto(&self) -> Duration {
        self.rto_with(&self.flow.recovery)
    }

    /// [`rto`](Self::rto) with loss recovery `r`.
    fn rto_with(&self, r: &Recovery) -> Duration {
        let thin = self.is_thin_with(r);
        // While thin, the margin for the peer's ACK delay is the delay it has been reporting
        // (a thin stream's packets are acknowledged one by one, so the reported delay is the
        // whole of it); otherwise its announced maximum, since an ACK of several packets
        // reports only how long the newest waited. A peer that may hold ACKs for its own
        // sending (ACKs on the tick) is allowed its maximum even while thin: a held ACK's
        // delay follows the phase of the two ends' sending, which the last report does not
        // predict. This end takes it that the peer does when it holds its own ACKs
        // (`immediate_ack` off) or when the peer announced a longer ACK delay than its own.
        let reported =
            self.config.immediate_ack && r.peer_max_ack_delay <= self.config.max_ack_delay;
        let ack_delay = match r.ack_delay_seen {
            // paired ACKs: an odd packet is acknowledged at once, and the timeout of an even
            // one adds the peer's maximum ACK delay (`rto_deadline`)
            _ if self.config.ack_pairs => Duration::ZERO,
            Some(seen) if thin && reported => seen.min(r.peer_max_ack_delay),
            _ => r.peer_max_ack_delay,
        };
        // in nanoseconds, as the estimator computes it (the same result, a tenth of the work)
        let (min_rto, max_rto) = (ns(self.config.min_rto), ns(self.config.max_rto));
        let base = r
            .rtt
            .rto_ns(thin, ns(self.config.timer_granularity), ns(ack_delay))
            .clamp(min_rto, max_rto);
        Duration::from_nanos(base.saturating_mul(1 << r.backoff.min(16)).min(max_rto))
    }

    /// The counters of [`stats`](Self::stats), without the gauges and channels.
    pub(crate) fn counters(&self) -> ConnectionCounters {
        let mut s = self.stats.get();
        if let Some(d) = &self.deadline {
            let d = &d.tx.stats;
            s.deadline.messages_sent = d.messages;
            s.deadline.completed = d.completed;
            s.deadline.abandoned = d.abandoned;
            s.payload_bytes.first += d.data_bytes_first;
            s.payload_bytes.retransmitted += d.bytes_repeated;
            s.payload_bytes.parity = d.parity_bytes;
            s.deadline.parity_shards = d.parity_shards;
        }
        if let Some(k) = &self.keys {
            s.security.key_updates_sent = k.updates_sent;
            s.security.key_updates_received = k.updates_received;
        }
        s
    }

    pub(crate) fn stats(&self) -> ConnectionStats {
        let mut s = ConnectionStats::default();
        s.set_counters(self.counters());
        // a resting connection's state is read unpacked for the look, and stays packed
        s.path = self.flow.peek(|flow| {
            let r = &flow.recovery;
            PathStats {
                srtt: r.rtt.srtt(),
                rttvar: r.rtt.rttvar(),
                min_rtt: r.rtt.min_rtt(),
                rto: self.rto_with(r),
                loss_estimate: r.estimates.loss(),
                repeat_loss_estimate: r.estimates.repeat_loss(),
                ack_loss_estimate: r.estimates.ack_loss(),
                repair_plan: self.repair_plan(r),
                cwnd: r.cc.window(),
                in_flight: r.sent.in_flight(),
                thin: self.is_thin_with(r),
            }
        });
        s.channels = self
            .channels
            .iter()
            .enumerate()
            .map(|(i, &kind)| {
                let (tx, rx) = (self.send.get(i), self.recv.get(i));
                ChannelStats {
                    kind,
                    send_queue_messages: tx.map_or(0, |c| c.held_messages()),
                    send_queue_bytes: tx.map_or(0, |c| c.queued_bytes),
                    recv_waiting_messages: rx.map_or(0, RecvChannel::waiting_messages),
                    recv_buffered_bytes: rx.map_or(0, |c| c.buffered_bytes),
                }
            })
            .collect();
        s
    }
}
