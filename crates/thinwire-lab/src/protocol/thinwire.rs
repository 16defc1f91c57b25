//! thinwire itself (the real `thinwire_proto::Endpoint`) in the simulator.
//!
//! Clients each own an endpoint with one connection to the server; the server
//! owns one endpoint (one socket) for all clients. Message identity travels
//! in the payload: the first 8 bytes carry the message id (payloads shorter
//! than 8 bytes are padded to 8; the padding counts as wire bytes only).
//! Connection setup (the cookie and Noise NK handshake) is part of the run; a
//! client whose connection ends reconnects.
//!
//! Packets are encrypted as in any thinwire deployment (AEAD, 16-byte tag per
//! packet, 8-byte connection ids), unless the configuration is the explicit
//! opt-out [`ThinwireProtocol::insecure_cleartext`]. Every run's server holds
//! the same static key ([`lab_server_key`]): its value changes nothing the lab
//! measures (sizes and timing are the same for every key, and the simulator
//! does not charge CPU time), while the handshakes' ephemeral keys still come
//! from each endpoint's seed.
//!
//! Configurations with deadline delivery ([`ThinwireProtocol::deadline`]) send
//! every message that carries a deadline with `Endpoint::send_deadline`
//! (erasure-coded shards in stages, parity by the configured
//! [`DeadlineParity`]), using the message's deadline and target; messages
//! without a deadline, and messages too large for 64 shards, go through the
//! ordinary channels. A deadline message that waited for the connection to
//! be established is sent with the time left to its deadline, or as an
//! ordinary message when none is left.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{
    ChannelKind, ConnectionHandle, ConnectionStats, DeadlineOptions, Endpoint, EndpointConfig,
    Event, PublicKey, SendError, ServerConfig, ServerKey, TransportConfig,
};

use super::{
    ChannelSemantics, DeadlineParity, Mapping, OutMessage, Protocol, SimEndpoint, Transmit,
};
use crate::workload::ClassSpec;

/// The suffix of the cleartext opt-out's protocol names.
pub(super) const INSECURE_SUFFIX: &str = "-insecure-cleartext";

/// IPv4 + UDP header bytes added to every datagram.
const IP_UDP: usize = 28;
/// Bytes of message id at the start of every payload.
const ID_BYTES: usize = 8;

fn server_addr() -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 4433))
}

fn client_addr(c: u32) -> SocketAddr {
    let [_, b, cc, d] = c.to_be_bytes();
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 1 + b, cc, d), 5000))
}

fn client_of(addr: SocketAddr) -> Option<u32> {
    match addr {
        SocketAddr::V4(a) => {
            let [a0, b, c, d] = a.ip().octets();
            if a0 != 10 || b == 0 || a.port() != 5000 {
                return None;
            }
            Some(u32::from_be_bytes([0, b - 1, c, d]))
        }
        SocketAddr::V6(_) => None,
    }
}

/// The static key pair of every simulated thinwire server (derived from a
/// fixed seed, computed once).
pub fn lab_server_key() -> &'static ServerKey {
    static KEY: OnceLock<ServerKey> = OnceLock::new();
    KEY.get_or_init(|| {
        ServerKey::generate(crate::seed::bytes32(0, crate::seed::THINWIRE_SERVER_KEY))
    })
}

fn kind(s: ChannelSemantics) -> ChannelKind {
    match s {
        ChannelSemantics::ReliableOrdered => ChannelKind::ReliableOrdered,
        ChannelSemantics::ReliableUnordered => ChannelKind::ReliableUnordered,
        ChannelSemantics::LatestReliable => ChannelKind::LatestReliable,
    }
}

/// thinwire in a named configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinwireProtocol {
    /// Thin-stream features on (default transport) or off (TCP-like).
    pub thin: bool,
    /// Class-to-channel mapping.
    pub mapping: Mapping,
    /// Deadline delivery for messages that carry a deadline, with this
    /// parity mode; `None`: such messages are sent like any other.
    pub deadline: Option<DeadlineParity>,
    /// **No packet encryption** (`EndpointConfig::insecure_cleartext` on
    /// both ends): for measuring what encryption costs, never what thinwire
    /// is. `false`: packets are AEAD-sealed, as in every deployment.
    pub insecure_cleartext: bool,
}

/// Deadline-delivery counters of thinwire endpoints (summed over
/// connections; sender-side counts come from the sending endpoint,
/// receiver-side counts from the receiving one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeadlineCounters {
    /// Deadline messages queued by senders.
    pub messages: u64,
    /// Deadline messages whose shards the receiver acknowledged.
    pub completed: u64,
    /// Deadline messages the sender gave up (four deadlines without completion).
    pub abandoned: u64,
    /// Recovery (parity) shards sent: proactive parity and repairs alike (a
    /// stage resending for missing shards sends fresh recovery shards while
    /// any are left).
    pub parity_shards: u64,
    /// Payload bytes of recovery shards.
    pub parity_bytes: u64,
    /// Payload bytes sent again after a loss (repeated shards and ordinary
    /// retransmissions).
    pub retransmitted_bytes: u64,
    /// Deadline messages decoded by receivers.
    pub delivered: u64,
    /// Deadline messages decoded after their deadline, by the receiver's
    /// estimate.
    pub late: u64,
}

impl DeadlineCounters {
    fn from_stats(s: &ConnectionStats) -> Self {
        DeadlineCounters {
            messages: s.deadline_messages_sent,
            completed: s.deadline_completed,
            abandoned: s.deadline_abandoned,
            parity_shards: s.parity_shards,
            parity_bytes: s.payload_bytes_parity,
            retransmitted_bytes: s.payload_bytes_retransmitted,
            delivered: s.deadline_delivered,
            late: s.deadline_late,
        }
    }

    /// Adds `other` to these counters.
    pub fn add(&mut self, other: &DeadlineCounters) {
        self.messages += other.messages;
        self.completed += other.completed;
        self.abandoned += other.abandoned;
        self.parity_shards += other.parity_shards;
        self.parity_bytes += other.parity_bytes;
        self.retransmitted_bytes += other.retransmitted_bytes;
        self.delivered += other.delivered;
        self.late += other.late;
    }
}

/// Last read of a connection's counters.
#[derive(Debug, Clone, Copy, Default)]
struct Snapshot {
    payload: u64,
    deadline: DeadlineCounters,
}

impl Snapshot {
    fn of(s: &ConnectionStats) -> Self {
        Snapshot {
            payload: s.payload_bytes_sent(),
            deadline: DeadlineCounters::from_stats(s),
        }
    }
}

impl ThinwireProtocol {
    /// The transport configuration: thin-stream defaults, or TCP-like.
    pub fn transport(&self) -> TransportConfig {
        if self.thin {
            TransportConfig::default()
        } else {
            TransportConfig::tcp_like()
        }
    }

    /// The endpoint configuration of a client or server seeded with `seed`:
    /// the transport, and cleartext only for the opt-out.
    pub fn endpoint_config(&self, seed: u64) -> EndpointConfig {
        let mut cfg = EndpointConfig::new(crate::seed::bytes32(seed, crate::seed::THINWIRE_KEY));
        cfg.transport = Arc::new(self.transport());
        if self.insecure_cleartext {
            cfg = cfg.insecure_cleartext();
        }
        cfg
    }

    /// The security setting in words, for reports: `encrypted (AEAD, 16 B
    /// tag)` or `INSECURE cleartext`, with what it means on the wire.
    pub fn security(&self) -> &'static str {
        if self.insecure_cleartext {
            "INSECURE cleartext (packets neither encrypted nor authenticated; the Noise NK \
             handshake still runs; 8-byte connection ids)"
        } else {
            "encrypted (AEAD, 16 B tag per packet; Noise NK handshake; 8-byte connection ids)"
        }
    }

    /// The name without the security suffix.
    fn configuration_name(&self) -> String {
        let base = match (self.thin, self.mapping) {
            (true, Mapping::SingleOrdered) => "thinwire".into(),
            (false, Mapping::SingleOrdered) => "thinwire-thin-off".into(),
            (true, m) => format!("thinwire-{}", m.as_str()),
            (false, m) => format!("thinwire-thin-off-{}", m.as_str()),
        };
        match self.deadline {
            None => base,
            Some(d) => {
                let full = d.protocol_name();
                if base == "thinwire" {
                    full
                } else {
                    let suffix = full.strip_prefix("thinwire-").unwrap_or(&full);
                    format!("{base}-{suffix}")
                }
            }
        }
    }

    /// A client or server endpoint around `ep`, not connected yet.
    fn endpoint(&self, ep: Endpoint, is_server: bool, classes: &[ClassSpec]) -> ThinwireEndpoint {
        let (channels, class_channel) = self.channels(classes);
        ThinwireEndpoint {
            ep,
            is_server,
            deadline: self.deadline,
            channels,
            class_channel,
            conn: None,
            by_client: HashMap::new(),
            by_conn: HashMap::new(),
            waiting: HashMap::new(),
            buf: Vec::with_capacity(1500),
            delivered: VecDeque::new(),
            payload: HashMap::new(),
        }
    }

    /// The channels to open and, for each class, its channel and kind.
    pub fn channels(
        &self,
        classes: &[ClassSpec],
    ) -> (Vec<ChannelKind>, Vec<(u8, ChannelSemantics)>) {
        let per_class = self.mapping.channels(classes);
        let n = per_class
            .iter()
            .map(|(c, _)| usize::from(*c) + 1)
            .max()
            .unwrap_or(1);
        let mut kinds = vec![ChannelKind::ReliableOrdered; n];
        for (ch, s) in &per_class {
            kinds[usize::from(*ch)] = kind(*s);
        }
        (kinds, per_class)
    }
}

/// One thinwire endpoint (a client's, or the server's).
#[derive(Debug)]
pub struct ThinwireEndpoint {
    ep: Endpoint,
    is_server: bool,
    deadline: Option<DeadlineParity>,
    channels: Vec<ChannelKind>,
    class_channel: Vec<(u8, ChannelSemantics)>,
    /// Client side: the connection to the server.
    conn: Option<ConnectionHandle>,
    /// Server side: connections by client, and clients by connection.
    by_client: HashMap<u32, ConnectionHandle>,
    by_conn: HashMap<ConnectionHandle, u32>,
    /// Server side: messages for clients not connected yet, with the time
    /// the application sent them.
    waiting: HashMap<u32, VecDeque<(Instant, OutMessage)>>,
    buf: Vec<u8>,
    delivered: VecDeque<(u32, u64)>,
    /// Last seen counters per connection, and datagrams sent to that
    /// connection's peer since they were read.
    payload: HashMap<ConnectionHandle, (Snapshot, u32)>,
}

impl ThinwireEndpoint {
    fn payload_of(&self, msg: &OutMessage) -> Bytes {
        let mut v = vec![0u8; (msg.size as usize).max(ID_BYTES)];
        v[..ID_BYTES].copy_from_slice(&msg.id.to_be_bytes());
        Bytes::from(v)
    }

    /// Sends `msg`, which the application sent `waited` ago.
    fn send_on(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        msg: &OutMessage,
        waited: Duration,
    ) {
        let Some(&(ch, sem)) = self.class_channel.get(usize::from(msg.class)) else {
            return;
        };
        let data = self.payload_of(msg);
        if let (Some(parity), Some(deadline)) = (self.deadline, msg.deadline) {
            let left = deadline.saturating_sub(waited);
            if !left.is_zero() {
                let opts = DeadlineOptions {
                    parity: parity.mode(),
                    ..DeadlineOptions::new(left, msg.target)
                };
                match self.ep.send_deadline(now, conn, ch, data.clone(), opts) {
                    // Too large for 64 shards: an ordinary message below.
                    Err(SendError::MessageTooLarge { .. }) => {}
                    // Sent, or refused (connection gone): the message is lost.
                    _ => return,
                }
            }
        }
        // A refused send (connection gone, buffer full) means the message is lost.
        let _ = match sem {
            ChannelSemantics::LatestReliable => self.ep.send_latest(now, conn, ch, msg.key, data),
            _ => self.ep.send(now, conn, ch, data),
        };
    }

    fn drain_events(&mut self, now: Instant) {
        while let Some((h, ev)) = self.ep.poll_event() {
            match ev {
                Event::Connected { remote, .. } => {
                    if self.is_server {
                        if let Some(c) = client_of(remote) {
                            self.by_client.insert(c, h);
                            self.by_conn.insert(h, c);
                            if let Some(q) = self.waiting.remove(&c) {
                                for (at, m) in q {
                                    self.send_on(now, h, &m, now.saturating_duration_since(at));
                                }
                            }
                        }
                    }
                }
                Event::Message(m) => {
                    if m.data.len() >= ID_BYTES {
                        let mut id = [0u8; ID_BYTES];
                        id.copy_from_slice(&m.data[..ID_BYTES]);
                        let peer = if self.is_server {
                            self.by_conn.get(&h).copied()
                        } else {
                            Some(0)
                        };
                        if let Some(peer) = peer {
                            self.delivered.push_back((peer, u64::from_be_bytes(id)));
                        }
                    }
                }
                Event::Disconnected { .. } => {
                    if self.is_server {
                        if let Some(c) = self.by_conn.remove(&h) {
                            if self.by_client.get(&c) == Some(&h) {
                                self.by_client.remove(&c);
                            }
                        }
                    } else if self.conn == Some(h) {
                        // Reconnect, as a game client would.
                        self.conn = self
                            .ep
                            .connect(now, server_addr(), &server_key(), &self.channels)
                            .ok();
                    }
                }
            }
        }
    }

    /// Re-reads the counters of `h` every 128 datagrams, so that a
    /// connection that later disappears still counts (almost) fully.
    fn note_transmit(&mut self, h: ConnectionHandle) {
        let entry = self.payload.entry(h).or_insert((Snapshot::default(), 127));
        entry.1 += 1;
        if entry.1 >= 128 {
            entry.1 = 0;
            if let Some(s) = self.ep.connection_stats(h) {
                entry.0 = Snapshot::of(&s);
            }
        }
    }

    /// The latest counters of every connection this endpoint had.
    fn snapshots(&self) -> HashMap<ConnectionHandle, Snapshot> {
        let mut seen: HashMap<ConnectionHandle, Snapshot> =
            self.payload.iter().map(|(h, v)| (*h, v.0)).collect();
        let live: Vec<ConnectionHandle> = if self.is_server {
            self.by_conn.keys().copied().collect()
        } else {
            self.conn.into_iter().collect()
        };
        for h in live {
            if let Some(s) = self.ep.connection_stats(h) {
                seen.insert(h, Snapshot::of(&s));
            }
        }
        seen
    }
}

impl SimEndpoint for ThinwireEndpoint {
    type Packet = Vec<u8>;

    fn send(&mut self, now: Instant, peer: u32, msg: &OutMessage) {
        if self.is_server {
            match self.by_client.get(&peer) {
                Some(&h) => self.send_on(now, h, msg, Duration::ZERO),
                None => self.waiting.entry(peer).or_default().push_back((now, *msg)),
            }
        } else if let Some(h) = self.conn {
            self.send_on(now, h, msg, Duration::ZERO);
        }
        self.drain_events(now);
    }

    fn receive(&mut self, now: Instant, peer: u32, packet: Vec<u8>) {
        let from = if self.is_server {
            client_addr(peer)
        } else {
            server_addr()
        };
        self.ep.handle_datagram(now, from, &packet);
        self.drain_events(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<Vec<u8>>> {
        let t = self.ep.poll_transmit(now, &mut self.buf)?;
        let (peer, conn) = if self.is_server {
            let c = client_of(t.destination).unwrap_or(u32::MAX);
            (c, self.by_client.get(&c).copied())
        } else {
            (0, self.conn)
        };
        if let Some(h) = conn {
            self.note_transmit(h);
        }
        Some(Transmit {
            peer,
            packet: self.buf[..t.size].to_vec(),
            wire_bytes: t.size + IP_UDP,
            payload_bytes: None,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.ep.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.ep.handle_timeout(now);
        self.drain_events(now);
    }

    fn poll_delivered(&mut self) -> Option<(u32, u64)> {
        self.delivered.pop_front()
    }

    fn payload_bytes_sent(&self) -> Option<u64> {
        // Includes retransmitted and parity shards (`payload_bytes_parity`).
        Some(self.snapshots().values().map(|s| s.payload).sum())
    }

    fn deadline_counters(&self) -> Option<DeadlineCounters> {
        self.deadline?;
        let mut total = DeadlineCounters::default();
        for s in self.snapshots().values() {
            total.add(&s.deadline);
        }
        Some(total)
    }
}

impl Protocol for ThinwireProtocol {
    type Packet = Vec<u8>;
    type Endpoint = ThinwireEndpoint;

    /// `thinwire`, `thinwire-thin-off`, `thinwire-{mapping}`, with the deadline
    /// configuration's suffix (`thinwire-deadline`, `thinwire-fec+2`, ...),
    /// and `-insecure-cleartext` last for the opt-out.
    fn name(&self) -> String {
        let name = self.configuration_name();
        if self.insecure_cleartext {
            format!("{name}{INSECURE_SUFFIX}")
        } else {
            name
        }
    }
    fn model(&self) -> bool {
        false
    }
    fn server_per_client(&self) -> bool {
        false
    }
    fn new_client(
        &self,
        _client: u32,
        _clients: u32,
        seed: u64,
        now: Instant,
        classes: &[ClassSpec],
    ) -> ThinwireEndpoint {
        let ep = Endpoint::new(self.endpoint_config(seed), None, now)
            .expect("the default thinwire configuration is valid");
        let mut endpoint = self.endpoint(ep, false, classes);
        endpoint.conn = endpoint
            .ep
            .connect(now, server_addr(), &server_key(), &endpoint.channels)
            .ok();
        endpoint
    }
    fn new_server(
        &self,
        clients: u32,
        seed: u64,
        now: Instant,
        classes: &[ClassSpec],
    ) -> ThinwireEndpoint {
        // Connection ids: the default 8 bytes (random, unguessable, and the
        // length at which a server sends stateless resets).
        let cfg = self.endpoint_config(seed);
        // Every client has its own address: the per-source limits stay at
        // their defaults.
        let server = ServerConfig {
            key: Some(lab_server_key().clone()),
            max_connections: (clients as usize).saturating_mul(2).max(16),
            max_stateless_queue: (clients as usize).max(1024),
            ..ServerConfig::default()
        };
        let ep = Endpoint::new(cfg, Some(server), now)
            .expect("the default thinwire configuration is valid");
        self.endpoint(ep, true, classes)
    }
}

/// The public half of [`lab_server_key`], which every client connects with.
fn server_key() -> PublicKey {
    lab_server_key().public()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_addresses_round_trip() {
        for c in [0u32, 1, 255, 256, 65_535, 100_000] {
            assert_eq!(client_of(client_addr(c)), Some(c));
        }
        assert_eq!(client_of(server_addr()), None);
    }
}
