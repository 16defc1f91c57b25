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
    add_counter, ChannelSemantics, Counters, DeadlineParity, Mapping, OutMessage, Protocol,
    SimEndpoint, Transmit,
};
use crate::workload::ClassSpec;

/// The suffix of the cleartext opt-out's protocol names.
pub(super) const INSECURE_SUFFIX: &str = "-insecure-cleartext";
/// What precedes `N` in the `-kN` suffix of a deadline configuration cutting
/// every deadline message into `N` data shards.
pub(super) const SHARDS_INFIX: &str = "-k";

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
        ChannelSemantics::Unreliable => ChannelKind::Unreliable,
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
    /// Data shards per deadline message (`-kN` in the name): every deadline
    /// message is cut into `N` data shards of `ceil(size / N)` bytes, as
    /// Pangolin's experiments cut a 2 KB message into `k` packets (Zhang et
    /// al., CoNEXT 2011, Sec. 7.3.2). `None`: the transport's
    /// `deadline_shard_size` (512 bytes). Only with [`Self::deadline`].
    pub deadline_shards: Option<u8>,
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
        let name = match self.deadline {
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
        };
        match self.deadline_shards {
            Some(k) => format!("{name}{SHARDS_INFIX}{k}"),
            None => name,
        }
    }

    /// A client or server endpoint around `ep`, not connected yet.
    fn endpoint(&self, ep: Endpoint, is_server: bool, classes: &[ClassSpec]) -> ThinwireEndpoint {
        let (channels, class_channel) = self.channels(classes);
        ThinwireEndpoint {
            ep,
            is_server,
            deadline: self.deadline,
            deadline_shards: self.deadline_shards,
            channels,
            class_channel,
            conn: None,
            by_client: HashMap::new(),
            by_conn: HashMap::new(),
            waiting: HashMap::new(),
            buf: Vec::with_capacity(1500),
            delivered: VecDeque::new(),
            payload: HashMap::new(),
            established: false,
            sent: SentCounts::default(),
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
    deadline_shards: Option<u8>,
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
    /// Client side: whether the connection to the server was established
    /// (datagrams before it are handshake, not counted in [`Self::sent`]).
    established: bool,
    /// What this endpoint sent on established connections, for the named
    /// counters (see [`SimEndpoint::add_counters`]).
    sent: SentCounts,
}

/// Datagrams with payload and their bytes that one endpoint sent on
/// established connections, and the message bytes its application handed
/// over: the sending side's own view, as Pangolin counts overhead (every byte
/// the sender transmits, headers included, over the message bytes; Zhang et
/// al., CoNEXT 2011, Sec. 7.3.2). The handshake, keepalives, acknowledgement-
/// only packets and the peer's acknowledgements are not in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SentCounts {
    /// Datagrams that carried payload, on established connections.
    datagrams: u64,
    /// Their bytes on the wire (IPv4 and UDP headers included).
    wire_bytes: u64,
    /// Bytes of the messages the application sent (each counted once).
    message_bytes: u64,
    /// Payload bytes sent per connection when last looked at.
    payload_seen: HashMap<ConnectionHandle, u64>,
}

/// Header bytes per packet of Pangolin (12 B) with IPv4 and UDP (28 B), for
/// the counter that prices thinwire's payload at Pangolin's header size.
const PANGOLIN_HEADER_BYTES: u64 = 40;

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
                    shard_size: self
                        .deadline_shards
                        .map(|k| data.len().div_ceil(usize::from(k.max(1)))),
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
                    self.established |= !self.is_server;
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

    /// Counts a datagram of `wire_bytes` just sent on `h` in [`Self::sent`]
    /// if it carried payload (keepalives and acknowledgements do not).
    fn count_data_datagram(&mut self, h: ConnectionHandle, wire_bytes: usize) {
        let Some(now) = self.ep.connection_stats(h).map(|s| s.payload_bytes_sent()) else {
            return;
        };
        let before = self.sent.payload_seen.insert(h, now).unwrap_or(0);
        if now > before {
            self.sent.datagrams += 1;
            self.sent.wire_bytes += wire_bytes as u64;
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
        self.sent.message_bytes += u64::from(msg.size);
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
            if self.is_server || self.established {
                self.count_data_datagram(h, t.size + IP_UDP);
            }
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

    /// `tw_{side}_datagrams`, `tw_{side}_wire_bytes`, `tw_{side}_message_bytes`,
    /// `tw_{side}_payload_bytes` (payload sent: copies, repairs and parity
    /// included) and `tw_{side}_bytes_at_40b_header` (that payload plus 40
    /// bytes per datagram: thinwire's traffic priced at Pangolin's header
    /// size), with `side` `server` or `client`. Datagrams count from the
    /// connection's establishment on and only those with payload (no
    /// handshake, keepalives or acknowledgement-only packets).
    fn add_counters(&self, out: &mut Counters) {
        let side = if self.is_server { "server" } else { "client" };
        let payload = self.payload_bytes_sent().unwrap_or(0);
        let s = &self.sent;
        for (name, v) in [
            ("datagrams", s.datagrams),
            ("wire_bytes", s.wire_bytes),
            ("message_bytes", s.message_bytes),
            ("payload_bytes", payload),
            (
                "bytes_at_40b_header",
                payload + PANGOLIN_HEADER_BYTES * s.datagrams,
            ),
        ] {
            add_counter(out, &format!("tw_{side}_{name}"), v as f64);
        }
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

    use crate::protocol::ProtocolSpec;
    use crate::sim::{run, RunOutput, SimSetup};
    use crate::workload::{MessagingWorkload, WorkloadSpec};
    use thinwire_netmodel::{LinkConfig, LossModel};

    fn thinwire(name: &str) -> ThinwireProtocol {
        match ProtocolSpec::parse(name) {
            Some(ProtocolSpec::Thinwire(t)) => t,
            other => panic!("{name}: {other:?}"),
        }
    }

    /// Two 2 KB messages to each of 3 clients over `down` (RTT all on it).
    fn two_messages(name: &str, down: LinkConfig) -> RunOutput {
        let setup = SimSetup {
            clients: 3,
            access_up: vec![LinkConfig::default()],
            access_down: vec![down],
            bottleneck: None,
            cross: (None, None),
            duration: Duration::from_millis(2500),
            drain: Duration::from_secs(3),
            seed: 3,
        };
        let w = [WorkloadSpec::Messaging(MessagingWorkload {
            start: Duration::from_secs(1),
            ..MessagingWorkload::default()
        })];
        run(&thinwire(name), &setup, &w, &mut |_| {})
    }

    #[test]
    fn shard_suffix_parses_and_round_trips() {
        for (name, k) in [
            ("thinwire-deadline-k2", 2),
            ("thinwire-fec+3-k2", 2),
            ("thinwire-rtx-only-k64", 64),
        ] {
            let t = thinwire(name);
            assert_eq!(t.deadline_shards, Some(k), "{name}");
            assert!(t.deadline.is_some());
            assert_eq!(t.name(), name);
        }
        let t = thinwire("thinwire-deadline-k5-insecure-cleartext");
        assert_eq!((t.deadline_shards, t.insecure_cleartext), (Some(5), true));
        assert_eq!(t.name(), "thinwire-deadline-k5-insecure-cleartext");
        for bad in [
            "thinwire-k2",
            "thinwire-deadline-k0",
            "thinwire-deadline-k02",
            "thinwire-deadline-k65",
            "thinwire-deadline-k",
            "thinwire-deadline-k2-k3",
            "thinwire-deadline-insecure-cleartext-k2",
        ] {
            assert_eq!(ProtocolSpec::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn k_shards_are_k_datagrams_and_counters_leave_out_handshake_and_acks() {
        let link = LinkConfig::default().with_delay(Duration::from_millis(100));
        for (name, k) in [
            ("thinwire-rtx-only-k2", 2.0),
            ("thinwire-deadline-k3", 3.0),
            ("thinwire-deadline", 4.0),
        ] {
            let out = two_messages(name, link.clone());
            assert_eq!(out.messages.len(), 6);
            assert!(out.messages.iter().all(|m| m.delivered_us.is_some()));
            let c = |n: &str| out.counters.get(n).copied().unwrap_or(f64::NAN);
            // lossless: exactly k data datagrams per message, nothing else
            assert_eq!(c("tw_server_message_bytes"), 6.0 * 2048.0, "{name}");
            assert_eq!(c("tw_server_datagrams"), 6.0 * k, "{name}");
            assert!(c("tw_server_payload_bytes") >= 6.0 * 2048.0, "{name}");
            assert_eq!(
                c("tw_server_bytes_at_40b_header"),
                c("tw_server_payload_bytes") + 40.0 * 6.0 * k,
                "{name}"
            );
            // thinwire's own headers are larger than Pangolin's 40 bytes
            let wire = c("tw_server_wire_bytes") - c("tw_server_payload_bytes");
            assert!(wire > 40.0 * 6.0 * k, "{name}: {wire}");
            // the clients sent no messages, hence no data datagrams
            assert_eq!(c("tw_client_datagrams"), 0.0, "{name}");
        }
    }

    #[test]
    fn repairs_and_parity_count_as_datagrams() {
        let lossy = LinkConfig {
            loss: LossModel::Bernoulli { p: 0.3 },
            ..LinkConfig::default().with_delay(Duration::from_millis(50))
        };
        let out = two_messages("thinwire-fec+2-k2", lossy);
        let c = |n: &str| out.counters.get(n).copied().unwrap_or(f64::NAN);
        // every stage sends at least the 2 missing shards plus 2 parity shards
        assert!(c("tw_server_datagrams") >= 6.0 * 4.0, "{out:?}");
        assert!(c("tw_server_payload_bytes") >= 2.0 * c("tw_server_message_bytes"));
    }

    #[test]
    fn client_addresses_round_trip() {
        for c in [0u32, 1, 255, 256, 65_535, 100_000] {
            assert_eq!(client_of(client_addr(c)), Some(c));
        }
        assert_eq!(client_of(server_addr()), None);
    }
}
