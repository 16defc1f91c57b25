//! The endpoint: owns every connection of one socket, routes datagrams to them, answers
//! handshakes statelessly, and merges their timers, transmits and events.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{EndpointConfig, ServerConfig, TransportConfig};
use crate::connection::{Connection, ConnectionStats};
use crate::cookie::{self, CookieInput};
use crate::error::{ConfigError, ConnectError, SendError};
use crate::event::Event;
use crate::wire::{self, ChannelKind, ConnectionId, LongPacket, ShortHeader};

/// Identifies a connection within its endpoint. Never reused by the same endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionHandle(pub u64);

impl std::fmt::Display for ConnectionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "conn#{}", self.0)
    }
}

/// A datagram to send: the bytes are the first `size` bytes of the buffer given to
/// [`Endpoint::poll_transmit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub destination: SocketAddr,
    /// Its length.
    pub size: usize,
}

/// Counters of the endpoint as a whole: what arrived that no connection took, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams handed to `handle_datagram`.
    pub datagrams_received: u64,
    /// Datagrams produced by `poll_transmit`.
    pub datagrams_sent: u64,
    /// Dropped: the packet did not parse.
    pub dropped_malformed: u64,
    /// Dropped: short header for a connection id this endpoint does not know.
    pub dropped_unknown_connection: u64,
    /// Dropped: handshake packet of another protocol version.
    pub dropped_version: u64,
    /// Dropped: Connect whose cookie was forged, expired or bound to someone else.
    pub dropped_bad_cookie: u64,
    /// Dropped: handshake packet this endpoint cannot use (not a server, wrong state, wrong sender).
    pub dropped_unexpected: u64,
    /// Dropped: a Connect arrived while `max_connections` were held.
    pub dropped_connection_limit: u64,
    /// Dropped: a stateless reply was due but the reply queue was full.
    pub dropped_reply_queue_full: u64,
    /// Challenges sent (one per Hello, no state kept).
    pub challenges_sent: u64,
    /// Resets sent for unknown connection ids.
    pub resets_sent: u64,
    /// Connections accepted.
    pub connections_accepted: u64,
}

/// The peer's advertised max ack delay, capped at 10 s so that a hostile value cannot stall our
/// retransmission timer.
fn peer_max_ack_delay(us: u64) -> Duration {
    Duration::from_micros(us.min(10_000_000))
}

/// A thinwire endpoint: the sans-IO heart of one UDP socket.
///
/// # Call order
/// ```text
///  socket datagram ──► handle_datagram(now, from, bytes) ─┐
///  timer expired   ──► handle_timeout(now) ───────────────┤
///  application     ──► connect / send / send_latest / close┤
///                                                          ▼
///                      loop { poll_transmit(now, buf) } ──► socket
///                      loop { poll_event() }            ──► application
///                      poll_timeout()                   ──► arm the one timer
/// ```
/// After every `handle_*` or application call, drain `poll_transmit` until it returns `None`,
/// drain `poll_event`, then sleep until `poll_timeout` or the next datagram. Time is only ever
/// the `now` passed in; it must not go backwards.
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    transport: Arc<TransportConfig>,
    server: Option<ServerConfig>,
    epoch: Instant,
    rng: ChaCha8Rng,
    cookie_key: [u8; 32],
    instance: u64,
    next_handle: u64,
    conns: HashMap<ConnectionHandle, Connection>,
    by_cid: HashMap<ConnectionId, ConnectionHandle>,
    by_remote: HashMap<(SocketAddr, ConnectionId), ConnectionHandle>,
    handshakes: HashMap<(SocketAddr, u64, u64), ConnectionHandle>,
    timers: BTreeSet<(Instant, ConnectionHandle)>,
    timer_of: HashMap<ConnectionHandle, Instant>,
    dirty: VecDeque<ConnectionHandle>,
    dirty_set: HashSet<ConnectionHandle>,
    replies: VecDeque<(SocketAddr, Vec<u8>)>,
    events: VecDeque<(ConnectionHandle, Event)>,
    stats: EndpointStats,
}

impl Endpoint {
    /// A new endpoint; with a `server` configuration it accepts incoming connections.
    pub fn new(
        config: EndpointConfig,
        server: Option<ServerConfig>,
        now: Instant,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut rng = ChaCha8Rng::from_seed(config.rng_seed);
        let mut cookie_key = [0u8; 32];
        rng.fill_bytes(&mut cookie_key);
        let instance = rng.random();
        Ok(Self {
            transport: config.transport.clone(),
            config,
            server,
            epoch: now,
            rng,
            cookie_key,
            instance,
            next_handle: 0,
            conns: HashMap::new(),
            by_cid: HashMap::new(),
            by_remote: HashMap::new(),
            handshakes: HashMap::new(),
            timers: BTreeSet::new(),
            timer_of: HashMap::new(),
            dirty: VecDeque::new(),
            dirty_set: HashSet::new(),
            replies: VecDeque::new(),
            events: VecDeque::new(),
            stats: EndpointStats::default(),
        })
    }

    /// The endpoint's counters.
    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// Number of connections held (in any state).
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Statistics of one connection.
    pub fn connection_stats(&self, conn: ConnectionHandle) -> Option<ConnectionStats> {
        self.conns.get(&conn).map(Connection::stats)
    }

    /// The peer address of a connection (it follows NAT rebinding).
    pub fn remote_address(&self, conn: ConnectionHandle) -> Option<SocketAddr> {
        self.conns.get(&conn).map(|c| c.remote)
    }

    /// The channel classes of a connection.
    pub fn channels(&self, conn: ConnectionHandle) -> Option<&[ChannelKind]> {
        self.conns.get(&conn).map(Connection::channels)
    }

    /// The transport configuration in use.
    pub fn transport_config(&self) -> &TransportConfig {
        &self.transport
    }

    fn fresh_cid(&mut self) -> Option<ConnectionId> {
        let len = self.config.cid_len;
        for _ in 0..64 {
            let mut bytes = [0u8; 8];
            self.rng.fill_bytes(&mut bytes[..len]);
            let cid = ConnectionId::new(&bytes[..len]).expect("valid length");
            if !self.by_cid.contains_key(&cid) {
                return Some(cid);
            }
        }
        None
    }

    fn new_handle(&mut self) -> ConnectionHandle {
        let h = ConnectionHandle(self.next_handle);
        self.next_handle += 1;
        h
    }

    /// Opens a connection to `remote` with the given channel classes (1 to 64; channel `i` of
    /// the connection is `channels[i]`). Messages may be sent at once; they go out when the
    /// handshake completes. [`Event::Connected`] or [`Event::Disconnected`] follows.
    pub fn connect(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        channels: &[ChannelKind],
    ) -> Result<ConnectionHandle, ConnectError> {
        if channels.is_empty() || channels.len() > wire::MAX_CHANNELS {
            return Err(ConnectError::ChannelCount(channels.len()));
        }
        let cid = self.fresh_cid().ok_or(ConnectError::NoConnectionId)?;
        let nonce = self.rng.random();
        let conn = Connection::new_client(
            now,
            remote,
            cid,
            channels.to_vec(),
            self.instance,
            nonce,
            self.transport.clone(),
        );
        let h = self.new_handle();
        self.by_cid.insert(cid, h);
        self.conns.insert(h, conn);
        self.touched(h);
        Ok(h)
    }

    /// Queues a message on a channel that is not latest-value.
    pub fn send(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        channel: u8,
        data: Bytes,
    ) -> Result<(), SendError> {
        self.send_inner(now, conn, channel, None, data)
    }

    /// Queues the newest value for `key` on a latest-value channel; it replaces an older value
    /// for the same key that the peer has not acknowledged yet.
    pub fn send_latest(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        channel: u8,
        key: u64,
        data: Bytes,
    ) -> Result<(), SendError> {
        self.send_inner(now, conn, channel, Some(key), data)
    }

    /// Queues a deadline message on `channel`: it is erasure-coded into shards and sent in
    /// stages so that it arrives within `opts.deadline` with probability `opts.target`
    /// (see [`DeadlineOptions`](crate::DeadlineOptions)). It is delivered as soon as it can be
    /// decoded, with [`Message::deadline`](crate::Message::deadline) set, whatever the
    /// channel's class. Returns the message id.
    pub fn send_deadline(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        channel: u8,
        data: Bytes,
        opts: crate::DeadlineOptions,
    ) -> Result<u64, SendError> {
        let c = self
            .conns
            .get_mut(&conn)
            .ok_or(SendError::UnknownConnection)?;
        let id = c.send_deadline(now, channel, data, opts)?;
        self.touched(conn);
        Ok(id)
    }

    /// Sets (or with `None` clears) deadline options that every later [`send`](Self::send) on
    /// `channel` of `conn` uses: the channel-default form of deadline delivery.
    pub fn set_channel_deadline(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        opts: Option<crate::DeadlineOptions>,
    ) -> Result<(), SendError> {
        let c = self
            .conns
            .get_mut(&conn)
            .ok_or(SendError::UnknownConnection)?;
        c.set_channel_deadline(channel, opts)
    }

    fn send_inner(
        &mut self,
        now: Instant,
        h: ConnectionHandle,
        channel: u8,
        key: Option<u64>,
        data: Bytes,
    ) -> Result<(), SendError> {
        let conn = self.conns.get_mut(&h).ok_or(SendError::UnknownConnection)?;
        conn.send(now, channel, key, data)?;
        self.touched(h);
        Ok(())
    }

    /// Closes a connection gracefully: queued reliable data is delivered first (up to the close
    /// timeout), then the peer is told. [`Event::Disconnected`] follows.
    pub fn close(&mut self, now: Instant, conn: ConnectionHandle, code: u64, reason: &[u8]) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.close(now, code, reason.to_vec());
            self.touched(conn);
        }
    }

    /// Processes one received UDP datagram from `from`. Malformed or unexpected datagrams are
    /// dropped and counted in [`EndpointStats`]; they never affect other connections.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        self.stats.datagrams_received += 1;
        if wire::is_long_header(datagram) {
            match LongPacket::decode(datagram) {
                Ok(p) => self.handle_long(now, from, p, datagram.len()),
                Err(_) => self.stats.dropped_malformed += 1,
            }
            return;
        }
        let (hdr, offset) = match ShortHeader::decode(datagram, self.config.cid_len) {
            Ok(x) => x,
            Err(_) => {
                self.stats.dropped_malformed += 1;
                return;
            }
        };
        let Some(&h) = self.by_cid.get(&hdr.dst_cid) else {
            self.stats.dropped_unknown_connection += 1;
            self.send_reset(from, hdr.dst_cid, datagram.len());
            return;
        };
        let Some(conn) = self.conns.get_mut(&h) else {
            return;
        };
        let old_remote = conn.remote;
        conn.handle_packet(
            now,
            from,
            hdr.pn_truncated,
            hdr.pn_len as usize,
            &datagram[offset..],
            datagram.len(),
        );
        if conn.remote != old_remote {
            if let Some(rc) = conn.remote_cid {
                self.by_remote.remove(&(old_remote, rc));
                self.by_remote.insert((conn.remote, rc), h);
            }
        }
        self.touched(h);
    }

    fn queue_reply(&mut self, to: SocketAddr, bytes: Vec<u8>) -> bool {
        let max = self.server.as_ref().map_or(1024, |s| s.max_stateless_queue);
        if self.replies.len() >= max {
            self.stats.dropped_reply_queue_full += 1;
            return false;
        }
        self.replies.push_back((to, bytes));
        true
    }

    fn send_reset(&mut self, to: SocketAddr, cid: ConnectionId, received_len: usize) {
        let mut out = Vec::new();
        LongPacket::Reset {
            version: wire::VERSION,
            cid,
        }
        .encode(&mut out);
        // A Reset (8-15 bytes) may exceed a tiny packet such as a keepalive; like QUIC's
        // stateless reset it is capped below three times the packet that triggered it, so a
        // spoofed flood gains an attacker little.
        if out.len() < 3 * received_len && self.queue_reply(to, out) {
            self.stats.resets_sent += 1;
        }
    }

    fn handle_long(&mut self, now: Instant, from: SocketAddr, packet: LongPacket, len: usize) {
        match packet {
            LongPacket::Hello {
                version,
                src_cid,
                instance,
                nonce,
            } => {
                if self.server.is_none() {
                    self.stats.dropped_unexpected += 1;
                    return;
                }
                if version != wire::VERSION {
                    self.stats.dropped_version += 1;
                    let mut out = Vec::new();
                    LongPacket::VersionNegotiation {
                        dst_cid: src_cid,
                        supported: vec![wire::VERSION],
                    }
                    .encode(&mut out);
                    if out.len() <= len {
                        self.queue_reply(from, out);
                    }
                    return;
                }
                let input = CookieInput {
                    addr: from,
                    cid: &src_cid,
                    instance,
                    nonce,
                };
                let cookie = cookie::mint(&self.cookie_key, &input, self.now_ms(now));
                let mut out = Vec::new();
                LongPacket::Challenge {
                    version: wire::VERSION,
                    dst_cid: src_cid,
                    nonce,
                    cookie,
                }
                .encode(&mut out);
                if out.len() <= len && self.queue_reply(from, out) {
                    self.stats.challenges_sent += 1;
                }
            }
            LongPacket::Connect {
                version,
                src_cid,
                instance,
                nonce,
                cookie,
                max_ack_delay_us,
                channels,
            } => {
                self.handle_connect(
                    now,
                    from,
                    version,
                    src_cid,
                    instance,
                    nonce,
                    &cookie,
                    max_ack_delay_us,
                    channels,
                );
            }
            LongPacket::Challenge {
                dst_cid,
                nonce,
                cookie,
                ..
            } => {
                let ok = self.with_conn(dst_cid, |c| c.on_challenge(now, from, nonce, cookie));
                if !ok {
                    self.stats.dropped_unexpected += 1;
                }
            }
            LongPacket::Accept {
                dst_cid,
                src_cid,
                nonce,
                max_ack_delay_us,
                ..
            } => {
                let delay = peer_max_ack_delay(max_ack_delay_us);
                let ok = self.with_conn(dst_cid, |c| c.on_accept(now, from, nonce, src_cid, delay));
                if ok {
                    if let Some(&h) = self.by_cid.get(&dst_cid) {
                        self.by_remote.insert((from, src_cid), h);
                    }
                } else {
                    self.stats.dropped_unexpected += 1;
                }
            }
            LongPacket::Reset { cid, .. } => match self.by_remote.get(&(from, cid)).copied() {
                Some(h) => {
                    if let Some(c) = self.conns.get_mut(&h) {
                        c.on_reset();
                    }
                    self.touched(h);
                }
                None => self.stats.dropped_unexpected += 1,
            },
            LongPacket::VersionNegotiation { dst_cid, supported } => {
                self.with_conn(dst_cid, |c| {
                    c.on_version_negotiation(from, supported);
                    true
                });
            }
        }
    }

    fn with_conn(&mut self, cid: ConnectionId, f: impl FnOnce(&mut Connection) -> bool) -> bool {
        let Some(&h) = self.by_cid.get(&cid) else {
            return false;
        };
        let Some(c) = self.conns.get_mut(&h) else {
            return false;
        };
        let r = f(c);
        self.touched(h);
        r
    }

    fn now_ms(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_millis() as u64
    }

    #[allow(clippy::too_many_arguments)]
    fn handle_connect(
        &mut self,
        now: Instant,
        from: SocketAddr,
        version: u32,
        client_cid: ConnectionId,
        instance: u64,
        nonce: u64,
        cookie: &[u8],
        max_ack_delay_us: u64,
        channels: Vec<ChannelKind>,
    ) {
        let Some(server) = &self.server else {
            self.stats.dropped_unexpected += 1;
            return;
        };
        if version != wire::VERSION {
            self.stats.dropped_version += 1;
            return;
        }
        let lifetime = server.cookie_lifetime.as_millis() as u64;
        let max_conns = server.max_connections;
        let now_ms = self.now_ms(now);
        let input = CookieInput {
            addr: from,
            cid: &client_cid,
            instance,
            nonce,
        };
        if cookie::verify(&self.cookie_key, &input, cookie, now_ms, lifetime).is_err() {
            self.stats.dropped_bad_cookie += 1;
            return;
        }
        if let Some(&h) = self.handshakes.get(&(from, instance, nonce)) {
            // our Accept was lost: say it again
            if let Some(c) = self.conns.get_mut(&h) {
                c.accept_due = true;
            }
            self.touched(h);
            return;
        }
        if self.conns.len() >= max_conns {
            self.stats.dropped_connection_limit += 1;
            return;
        }
        let Some(cid) = self.fresh_cid() else {
            self.stats.dropped_connection_limit += 1;
            return;
        };
        // the cookie carries its issue time: Challenge -> Connect took one round trip
        let issued = u64::from_be_bytes(cookie[..8].try_into().expect("verified length"));
        let rtt = Duration::from_millis(now_ms.saturating_sub(issued));
        let conn = Connection::new_server(
            now,
            from,
            cid,
            client_cid,
            channels,
            instance,
            nonce,
            peer_max_ack_delay(max_ack_delay_us),
            (!rtt.is_zero()).then_some(rtt),
            self.transport.clone(),
        );
        let h = self.new_handle();
        self.by_cid.insert(cid, h);
        self.by_remote.insert((from, client_cid), h);
        self.handshakes.insert((from, instance, nonce), h);
        self.conns.insert(h, conn);
        self.stats.connections_accepted += 1;
        self.touched(h);
    }

    /// Processes expired timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(at, h)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            self.timer_of.remove(&h);
            if let Some(c) = self.conns.get_mut(&h) {
                c.handle_timeout(now);
            }
            self.touched(h);
        }
    }

    /// The earliest instant at which `handle_timeout` has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|(t, _)| *t)
    }

    /// The next datagram to send, written into `buf` (which is cleared first).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        if let Some((to, bytes)) = self.replies.pop_front() {
            buf.clear();
            buf.extend_from_slice(&bytes);
            self.stats.datagrams_sent += 1;
            return Some(Transmit {
                destination: to,
                size: buf.len(),
            });
        }
        while let Some(&h) = self.dirty.front() {
            let out = self
                .conns
                .get_mut(&h)
                .and_then(|c| c.poll_transmit(now, buf));
            match out {
                Some(destination) => {
                    self.refresh(h);
                    self.stats.datagrams_sent += 1;
                    return Some(Transmit {
                        destination,
                        size: buf.len(),
                    });
                }
                None => {
                    self.dirty.pop_front();
                    self.dirty_set.remove(&h);
                    self.refresh(h);
                }
            }
        }
        None
    }

    /// The next application event.
    pub fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        self.events.pop_front()
    }

    /// After anything touched connection `h`: collect its events, re-arm its timer, mark it as
    /// possibly having something to send, and forget it once closed.
    fn touched(&mut self, h: ConnectionHandle) {
        if self.dirty_set.insert(h) {
            self.dirty.push_back(h);
        }
        self.refresh(h);
    }

    fn refresh(&mut self, h: ConnectionHandle) {
        let Some(conn) = self.conns.get_mut(&h) else {
            return;
        };
        for e in conn.events.drain(..) {
            self.events.push_back((h, e));
        }
        let closed = conn.is_closed();
        let next = conn.poll_timeout();
        if let Some(old) = self.timer_of.remove(&h) {
            self.timers.remove(&(old, h));
        }
        if closed {
            self.remove(h);
            return;
        }
        if let Some(t) = next {
            self.timers.insert((t, h));
            self.timer_of.insert(h, t);
        }
    }

    fn remove(&mut self, h: ConnectionHandle) {
        if let Some(conn) = self.conns.remove(&h) {
            self.by_cid.remove(&conn.local_cid);
            if let Some(rc) = conn.remote_cid {
                if self.by_remote.get(&(conn.remote, rc)) == Some(&h) {
                    self.by_remote.remove(&(conn.remote, rc));
                }
            }
            let key = (conn.remote, conn.handshake.instance, conn.handshake.nonce);
            if self.handshakes.get(&key) == Some(&h) {
                self.handshakes.remove(&key);
            }
        }
        if self.dirty_set.remove(&h) {
            self.dirty.retain(|x| *x != h);
        }
    }
}
