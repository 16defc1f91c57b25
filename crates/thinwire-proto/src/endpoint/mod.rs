//! The endpoint: owns every connection of one socket, routes datagrams to them, answers
//! handshakes statelessly (`handshake.rs`), and merges their timers, transmits and events.
//!
//! | file | job |
//! |---|---|
//! | `send.rs` | the application's sends, channel settings and close |
//! | `handshake.rs` | long-header packets: Hello, Connect, the client's side, Resets, replies |
//! | `queue.rs`, `admission.rs` | Connects waiting for their Noise read; the read and the Accept |
//! | `limits.rs`, `prefix.rs` | per-source budgets and counts; per-prefix counts under pressure |
//! | `budget.rs` | the memory budget: held bytes per connection and source, fair shares |
//! | `table.rs`, `stats.rs` | the connections and their timers; the endpoint's counters |
//! | `cids.rs`, `peers.rs` | connections by the id this endpoint issued; by peer address and id |
//! | `events.rs` | the order of the application's events across connections |

mod admission;
mod budget;
mod cids;
mod events;
mod handshake;
mod limits;
mod peers;
mod prefetch;
mod prefix;
mod queue;
mod send;
mod stats;
mod table;
mod timers;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{EndpointConfig, ServerConfig, TransportConfig};
use crate::connection::{
    ClientHandshake, Connection, ConnectionCounters, ConnectionStats, IncomingPacket, Setup,
};
use crate::crypto::{
    CipherSuite, ConnectToken, PathKey, PublicKey, ResetKeys, ServerKey, TokenClaims,
};
use crate::error::{ConfigError, ConnectError};
use crate::wire::{self, ChannelKind, ConnectionId, LongPacket, ShortHeader};
use budget::MemoryLedger;
use cids::CidIndex;
use limits::SourceLimits;
use peers::PeerIndex;
use queue::HandshakeQueue;
use table::ConnTable;

pub use prefetch::Lookahead;
pub use stats::EndpointStats;

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

/// A thinwire endpoint: the sans-IO heart of one UDP socket.
///
/// # Call order
/// ```text
///  socket datagram ──► handle_datagram(now, from, bytes) ─┐
///  timer expired   ──► handle_timeout(now) ───────────────┤
///  application     ──► connect / send / close ─────────────┤
///  (server, optional) ► handle_handshakes(now, max) ───────┤
///                                                          ▼
///                      loop { poll_transmit(now, buf) } ──► socket
///                      loop { poll_event() }            ──► application
///                      poll_timeout()                   ──► arm the one timer
/// ```
/// After every `handle_*` or application call, drain `poll_transmit` until it returns `None`,
/// drain `poll_event`, then sleep until `poll_timeout` or the next datagram. Time is only ever
/// the `now` passed in; it must not go backwards. A server reads queued Connects' Noise
/// messages in `handle_timeout`, a few per call (§5.6), after the turn's datagrams.
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    transport: Arc<TransportConfig>,
    server: Option<ServerConfig>,
    epoch: Instant,
    rng: ChaCha8Rng,
    cookie_key: [u8; 32],
    /// The server's static key pair (servers only).
    server_key: Option<ServerKey>,
    reset: ResetKeys,
    /// This endpoint's key for its connections' PATH_CHALLENGE data (`PathKey`): only it
    /// holds it, so no peer can predict a challenge it did not receive.
    path_key: PathKey,
    limits: SourceLimits,
    /// Connections admitted by connect token: their claims, and the handle per client id.
    claims: HashMap<ConnectionHandle, TokenClaims>,
    client_ids: HashMap<u64, ConnectionHandle>,
    /// Unix time at an instant, once the application said (`set_unix_time`).
    unix_clock: Option<(Instant, Duration)>,
    /// Where a received datagram is opened in place.
    scratch: Vec<u8>,
    instance: u64,
    /// The connections, their timers and which may have datagrams to send.
    conns: ConnTable,
    /// Connections by the id this endpoint issued them.
    by_cid: CidIndex,
    /// Where prefetch hints go, and from how many connections on
    /// ([`set_prefetcher`](Self::set_prefetcher)).
    prefetcher: Option<(crate::Prefetcher, usize)>,
    /// Connections by their peer's address and id (Resets, repeated Connects).
    peers: PeerIndex,
    replies: VecDeque<(SocketAddr, Vec<u8>)>,
    /// The order of the events waiting for the application (each connection keeps its own).
    events: events::EventOrder,
    stats: EndpointStats,
    /// The counters of the connections already forgotten, summed.
    closed_counters: ConnectionCounters,
    /// Connects waiting for their Noise read, the read budget, the spent cookies.
    queue: HandshakeQueue,
    /// What the connections hold of the memory budget, in total and per source.
    memory: MemoryLedger,
    /// The latest `now` passed in (what the memory budget's sweep is scheduled from, and what
    /// `poll_timeout` never goes before for queued Connects).
    clock: Instant,
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
        let mut keys = [[0u8; 32]; 3];
        keys.iter_mut().for_each(|k| rng.fill_bytes(k));
        let server_key = server.as_ref().map(|s| {
            s.key
                .clone()
                .unwrap_or_else(|| ServerKey::generate(keys[0]))
        });
        let rates = server.as_ref().map_or((0, 0), |s| {
            (
                s.handshakes_per_second_per_source,
                s.stateless_replies_per_second,
            )
        });
        let memory = config.memory;
        let by_cid = CidIndex::new(config.cid_len);
        Ok(Self {
            reset: ResetKeys::new(server_key.as_ref(), keys[1]),
            path_key: PathKey::derive(&keys[1]),
            limits: SourceLimits::new(keys[2], rates.0, rates.1),
            queue: HandshakeQueue::new(server.as_ref()),
            server_key,
            claims: HashMap::new(),
            client_ids: HashMap::new(),
            unix_clock: None,
            scratch: Vec::with_capacity(2048),
            transport: config.transport.clone(),
            config,
            server,
            epoch: now,
            rng,
            cookie_key,
            instance,
            conns: ConnTable::new(now),
            by_cid,
            prefetcher: None,
            peers: PeerIndex::default(),
            replies: VecDeque::new(),
            events: events::EventOrder::default(),
            stats: EndpointStats::default(),
            closed_counters: ConnectionCounters::default(),
            memory: MemoryLedger::new(memory),
            clock: now,
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

    /// The handles of every connection held, in any state (handles are not numbered in
    /// order: a freed slot is reused under a new handle).
    pub fn connections(&self) -> impl Iterator<Item = ConnectionHandle> + '_ {
        self.conns.handles()
    }

    /// Statistics of one connection.
    pub fn connection_stats(&self, conn: ConnectionHandle) -> Option<ConnectionStats> {
        self.conns.get(conn).map(Connection::stats)
    }

    /// Every connection's counters summed: those held now and those already forgotten, so
    /// that each counter only grows (what a metrics export wants). Visits every connection.
    pub fn connection_counters(&self) -> ConnectionCounters {
        let mut sum = self.closed_counters;
        for h in self.conns.handles() {
            if let Some(c) = self.conns.get(h) {
                sum += c.counters();
            }
        }
        sum
    }

    /// Whether the connection sends message data at its next [`poll_transmit`](Self::poll_transmit)
    /// whatever the application sends: a retransmission is queued or a repair copy is due. A
    /// sender that holds messages back to send them together (the gateway's period T) can
    /// hand them over now, and they ride in that datagram instead of one of their own.
    pub fn repair_due(&self, conn: ConnectionHandle, now: Instant) -> bool {
        self.conns.get(conn).is_some_and(|c| c.repair_due(now))
    }

    /// The sequence numbers of a channel's messages this side still holds: from the oldest
    /// not yet acknowledged (on a reliable channel; sent, on the others) to the one the next
    /// send takes. Every message below the start was acknowledged or given up. A sender that
    /// numbers its own messages inside thinwire's (the gateway's 8-bit flow seqs) learns from
    /// it which of them the peer may still be missing. `None`: no such connection or channel.
    pub fn send_window(&self, conn: ConnectionHandle, channel: u8) -> Option<std::ops::Range<u64>> {
        self.conns.get(conn)?.send_window(channel)
    }

    /// The peer address of a connection (it follows NAT rebinding).
    pub fn remote_address(&self, conn: ConnectionHandle) -> Option<SocketAddr> {
        self.conns.get(conn).map(Connection::remote)
    }

    /// The channel classes of a connection.
    pub fn channels(&self, conn: ConnectionHandle) -> Option<&[ChannelKind]> {
        self.conns.get(conn).map(Connection::channels)
    }

    /// One connection's state (tests that look inside).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn connection(&self, conn: ConnectionHandle) -> Option<&Connection> {
        self.conns.get(conn)
    }

    /// Seals `frames` (encoded frames, see `docs/PROTOCOL.md` §3) as the next packet of
    /// `conn` under its keys, into `buf`: what a hostile peer, which holds its keys, can send.
    /// Nothing is recorded as sent. For attack tests only (features `testing`, `fuzzing`).
    #[cfg(any(test, feature = "testing", feature = "fuzzing"))]
    pub fn seal_raw(
        &mut self,
        conn: ConnectionHandle,
        frames: &[u8],
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        let destination = self.conns.get_mut(conn)?.seal_raw(frames, buf)?;
        Some(Transmit {
            destination,
            size: buf.len(),
        })
    }

    /// The transport configuration in use.
    pub fn transport_config(&self) -> &TransportConfig {
        &self.transport
    }

    /// A server's static public key: what its clients pass to [`connect`](Self::connect).
    /// `None` for an endpoint that is not a server.
    pub fn public_key(&self) -> Option<PublicKey> {
        self.server_key.as_ref().map(ServerKey::public)
    }

    /// What the connect token of an incoming connection said (client id, user data); `None`
    /// for connections admitted without a token.
    pub fn token_claims(&self, conn: ConnectionHandle) -> Option<&TokenClaims> {
        self.claims.get(&conn)
    }

    /// The cipher suite protecting a connection's packets, once its handshake is done.
    pub fn cipher_suite(&self, conn: ConnectionHandle) -> Option<CipherSuite> {
        self.conns.get(conn).and_then(Connection::cipher_suite)
    }

    /// Tells the endpoint the current unix time (seconds since 1970), which only connect-token
    /// expiry needs; the endpoint keeps it up to date from the `now` of later calls. A server
    /// with a token policy refuses every token until it is set.
    pub fn set_unix_time(&mut self, now: Instant, unix: Duration) {
        self.unix_clock = Some((now, unix));
    }

    fn unix_now_s(&self, now: Instant) -> Option<u64> {
        let (at, unix) = self.unix_clock?;
        let t = if now >= at {
            unix + (now - at)
        } else {
            unix.saturating_sub(at - now)
        };
        Some(t.as_secs())
    }

    fn fresh_cid(&mut self) -> Option<ConnectionId> {
        let len = self.config.cid_len;
        for _ in 0..64 {
            let mut bytes = [0u8; 8];
            self.rng.fill_bytes(&mut bytes[..len]);
            let cid = ConnectionId::new(&bytes[..len]).expect("valid length");
            if !self.by_cid.contains(&cid) {
                return Some(cid);
            }
        }
        None
    }

    /// What a new connection of this endpoint starts from.
    fn setup(
        &mut self,
        remote: SocketAddr,
        local_cid: ConnectionId,
        channels: Vec<ChannelKind>,
        (instance, nonce): (u64, u64),
    ) -> Setup {
        Setup {
            remote,
            local_cid,
            channels,
            instance,
            nonce,
            config: self.transport.clone(),
            policies: self.config.policy_cache.clone(),
            seed: self.rng.random(),
            epoch: self.epoch,
        }
    }

    /// Opens a connection to the server at `remote` whose static public key is `server_key`,
    /// with the given channel classes (1 to 64; channel `i` of the connection is
    /// `channels[i]`). The handshake proves the server holds the key; an impostor cannot
    /// complete it. Messages may be sent at once; they go out when the handshake completes.
    /// [`Event::Connected`](crate::Event::Connected) or
    /// [`Event::Disconnected`](crate::Event::Disconnected) follows.
    pub fn connect(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        server_key: &PublicKey,
        channels: &[ChannelKind],
    ) -> Result<ConnectionHandle, ConnectError> {
        self.open(now, remote, *server_key, Vec::new(), channels)
    }

    /// Opens a connection with a connect token from a matchmaking backend: to the token's first
    /// server address, authenticating the server by the token's key, and presenting the
    /// token's sealed claims to the server.
    pub fn connect_with_token(
        &mut self,
        now: Instant,
        token: &ConnectToken,
        channels: &[ChannelKind],
    ) -> Result<ConnectionHandle, ConnectError> {
        let remote = *token
            .addresses()
            .first()
            .ok_or(ConnectError::TokenWithoutAddress)?;
        self.connect_with_token_via(now, token, remote, channels)
    }

    /// [`connect_with_token`](Self::connect_with_token) to `remote` instead of the token's
    /// first address (e.g. the server's name resolved again where the client stands). The
    /// server still checks the token's addresses against its public ones, if it has any.
    pub fn connect_with_token_via(
        &mut self,
        now: Instant,
        token: &ConnectToken,
        remote: SocketAddr,
        channels: &[ChannelKind],
    ) -> Result<ConnectionHandle, ConnectError> {
        let key = PublicKey(token.server_key());
        self.open(now, remote, key, token.private_part().to_vec(), channels)
    }

    fn open(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        server_key: PublicKey,
        token: Vec<u8>,
        channels: &[ChannelKind],
    ) -> Result<ConnectionHandle, ConnectError> {
        if channels.is_empty() || channels.len() > wire::MAX_CHANNELS {
            return Err(ConnectError::ChannelCount(channels.len()));
        }
        let cid = self.fresh_cid().ok_or(ConnectError::NoConnectionId)?;
        let nonce = self.rng.random();
        let setup = self.setup(remote, cid, channels.to_vec(), (self.instance, nonce));
        let client = ClientHandshake {
            server_key,
            token,
            suites: self.config.cipher_suites.clone(),
            connect: None,
            initiator: None,
            seed: setup.seed,
            sent_at: None,
            retransmitted: false,
        };
        let conn = Connection::new_client(now, setup, client);
        let h = self.insert(conn);
        self.by_cid.insert(cid, h);
        self.touched(h);
        Ok(h)
    }

    /// Processes one received UDP datagram from `from`. Malformed or unexpected datagrams are
    /// dropped and counted in [`EndpointStats`]; they never affect other connections.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        self.clock = now;
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
        let Some(h) = self.by_cid.get(&hdr.dst_cid) else {
            self.stats.dropped_unknown_connection += 1;
            self.send_reset(now, from, hdr.dst_cid, false, datagram.len());
            return;
        };
        let budget_room = self.budget_room(h);
        let Some(conn) = self.conns.get_mut(h) else {
            return;
        };
        self.scratch.clear();
        self.scratch.extend_from_slice(datagram);
        let (header, body) = self.scratch.split_at_mut(offset);
        let old_remote = conn.remote();
        let authentic = conn.handle_packet(
            now,
            IncomingPacket {
                from,
                pn_truncated: hdr.pn_truncated,
                pn_len: usize::from(hdr.pn_len),
                header,
                body,
                budget_room,
                path_key: &self.path_key,
            },
        );
        if conn.remote() != old_remote {
            if let Some(rc) = conn.remote_cid() {
                self.peers.remove(old_remote, rc, h);
                self.peers.insert(conn.remote(), rc, h);
            }
        }
        if !authentic {
            // the same answer as for an unknown id, with a token that resets nothing
            self.stats.dropped_unauthenticated += 1;
            self.send_reset(now, from, hdr.dst_cid, true, datagram.len());
        }
        self.touched(h);
    }

    /// The next datagram to send, written into `buf` (which is cleared first).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.clock = now;
        if let Some((to, bytes)) = self.replies.pop_front() {
            buf.clear();
            buf.extend_from_slice(&bytes);
            self.stats.datagrams_sent += 1;
            return Some(Transmit {
                destination: to,
                size: buf.len(),
            });
        }
        while let Some(h) = self.conns.first_dirty() {
            let out = self
                .conns
                .get_mut(h)
                .and_then(|c| c.poll_transmit(now, buf));
            match out {
                Some(destination) => {
                    // re-armed and counted again once it has nothing more to send
                    self.stats.datagrams_sent += 1;
                    return Some(Transmit {
                        destination,
                        size: buf.len(),
                    });
                }
                None => {
                    self.conns.pop_dirty();
                    self.refresh(h);
                    self.prefetch_dirty();
                }
            }
        }
        None
    }

    /// After anything touched connection `h`: collect its events, mark its timer to be worked
    /// out again (when its state changed) and it as possibly having something to send, and
    /// forget it once closed.
    fn touched(&mut self, h: ConnectionHandle) {
        self.conns.mark_dirty(h);
        self.refresh(h);
    }

    fn refresh(&mut self, h: ConnectionHandle) {
        let Some(conn) = self.conns.get_mut(h) else {
            return;
        };
        self.events.announce(h, conn);
        if conn.is_closed() {
            self.remove(h);
            return;
        }
        debug_assert_eq!(conn.deadline_base(), self.epoch, "deadlines share the base");
        let held = conn.held_bytes();
        if conn.timers_changed() {
            self.conns.timer_changed(h);
        }
        self.account(h, held);
    }

    fn remove(&mut self, h: ConnectionHandle) {
        if let Some(claims) = self.claims.remove(&h) {
            if self.client_ids.get(&claims.client_id) == Some(&h) {
                self.client_ids.remove(&claims.client_id);
            }
        }
        let (held, source) = self.conns.held(h).unwrap_or_default();
        if let Some(mut conn) = self.conns.remove(h) {
            self.events.keep_orphans(h, &mut conn);
            self.closed_counters += conn.counters();
            self.memory.remove_connection(h, source, held);
            self.stats.memory_held = self.memory.total() as u64;
            self.by_cid.remove(&conn.local_cid());
            if let Some(rc) = conn.remote_cid() {
                self.peers.remove(conn.remote(), rc, h);
            }
            if conn.is_incoming() {
                // counted against the source it was admitted from (5.6)
                self.limits.remove_connection(&conn.origin());
            }
        }
    }
}
