//! One interface over the three transports, so that every measurement is written once:
//! [`BenchHost`] is a socket with any number of connections, driven by the calling thread
//! like ENet's `enet_host_service` (thinwire's blocking `Host` has the same shape; KCP gets a
//! small host in `peers/kcp.rs`).

use std::fmt::Debug;
use std::hash::Hash;
use std::net::SocketAddrV4;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// The three transports compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// thinwire's blocking `Host` (encrypted unless `--insecure-cleartext`).
    Thinwire,
    /// ENet 1.3 (Debian's libenet), through `thinwire-enet`.
    Enet,
    /// KCP (the `kcp` crate) over UDP, fast mode.
    Kcp,
}

impl Protocol {
    /// All three, in the order they run and are shown.
    pub const ALL: [Protocol; 3] = [Protocol::Thinwire, Protocol::Enet, Protocol::Kcp];

    /// The name shown in tables and plots.
    pub fn label(self) -> &'static str {
        match self {
            Protocol::Thinwire => "thinwire",
            Protocol::Enet => "ENet",
            Protocol::Kcp => "KCP",
        }
    }

    /// Why this transport cannot run a measurement, if it cannot: KCP has no unreliable
    /// delivery, ENet may be missing from the build, and an ENet host holds at most 4095 peers.
    pub(crate) fn not_applicable(self, reliable: bool, peers: usize) -> Option<String> {
        match self {
            Protocol::Kcp if !reliable => Some("KCP is reliable-only".into()),
            Protocol::Enet if !thinwire_enet::available() => {
                Some("built without libenet (apt-get install libenet-dev)".into())
            }
            Protocol::Enet if peers > ENET_MAX_PEERS => Some(format!(
                "an ENet 1.3 host holds at most {ENET_MAX_PEERS} peers (ENET_PROTOCOL_MAXIMUM_PEER_ID)"
            )),
            _ => None,
        }
    }
}

/// Most peers one ENet 1.3 host can hold (`ENET_PROTOCOL_MAXIMUM_PEER_ID`).
pub(crate) const ENET_MAX_PEERS: usize = 0xFFF;

/// Where a server listens and what a client needs to reach it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ServerInfo {
    /// The server's loopback address (IPv4: ENet 1.3 has no IPv6).
    pub(crate) addr: SocketAddrV4,
    /// thinwire: the server's public key (64 hex digits).
    pub(crate) key: Option<String>,
}

/// Settings every host of a run shares.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub(crate) struct HostOptions {
    /// thinwire: both ends use the INSECURE cleartext opt-out.
    pub(crate) cleartext: bool,
}

/// What [`BenchHost::service`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev<C> {
    /// A connection is up (ours completed, or a peer's was accepted).
    Connected(C),
    /// A message arrived: its length and its first eight bytes (little endian), which the
    /// round-trip measurement uses as a sequence number.
    Message {
        /// The connection.
        conn: C,
        /// Whether it came on the reliable channel.
        reliable: bool,
        /// Its length in bytes.
        len: usize,
        /// Its first eight bytes.
        tag: u64,
    },
    /// A connection ended.
    Disconnected(C),
}

/// A UDP socket with connections, driven by the calling thread.
pub(crate) trait BenchHost: Sized {
    /// Identifies a connection of this host.
    type Conn: Copy + Eq + Hash + Debug;

    /// A server on 127.0.0.1 (any port) for up to `capacity` connections.
    fn server(capacity: usize, opts: HostOptions) -> Result<Self, String>;
    /// A client host on 127.0.0.1 (any port) for up to `capacity` connections.
    fn client(capacity: usize, opts: HostOptions) -> Result<Self, String>;
    /// What clients need to reach this (server) host.
    fn info(&self) -> ServerInfo;
    /// Starts a connection; [`Ev::Connected`] follows from [`service`](Self::service).
    fn connect(&mut self, to: &ServerInfo) -> Result<Self::Conn, String>;
    /// Processes the network for at most `timeout`, appending events to `out`; returns as
    /// soon as some were appended. `Duration::ZERO` only handles what has arrived.
    fn service(&mut self, timeout: Duration, out: &mut Vec<Ev<Self::Conn>>) -> Result<(), String>;
    /// Queues a message on the reliable (ordered) or the unreliable channel. `Ok(false)`: the
    /// transport refused it for now (its send window is full); try again later.
    fn send(&mut self, conn: Self::Conn, reliable: bool, data: &Bytes) -> Result<bool, String>;
    /// Whether the transport holds data for `conn` that its window kept off the wire at the
    /// last flush: a sender backs off until it is false.
    fn backlogged(&self, conn: Self::Conn) -> bool;
    /// Sends everything queued.
    fn flush(&mut self);
}

/// A payload of `len` bytes whose first eight carry `tag` (little endian).
pub(crate) fn tagged(len: usize, tag: u64) -> Bytes {
    let mut v = vec![0x5a; len.max(8)];
    v[..8].copy_from_slice(&tag.to_le_bytes());
    v.truncate(len.max(8));
    Bytes::from(v)
}

/// The tag of a received payload (0 when shorter than eight bytes).
pub(crate) fn tag_of(data: &[u8]) -> u64 {
    data.get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}
