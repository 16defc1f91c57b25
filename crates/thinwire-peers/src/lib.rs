//! # thinwire-peers
//!
//! The real transport stacks thinwire is measured against, behind one interface, so that the
//! loopback bench (`thinwire bench`) and the real-kernel emulator (`thinwire lab run
//! --emulate`) drive the same adapters:
//!
//! ```text
//!  thinwire-bench (loopback, 127.0.0.1:0)      thinwire-emu (a namespace's address, fixed port)
//!            │                                              │
//!            └──────────────► PeerHost ◄────────────────────┘
//!                               ├─ ThinwireHost  thinwire's blocking Host
//!                               ├─ EnetHost      ENet 1.3 through thinwire-enet
//!                               ├─ KcpHost       KCP sessions over one UDP socket
//!                               └─ GnsHost       GameNetworkingSockets through thinwire-gns
//! ```
//!
//! A [`PeerHost`] is a socket with any number of connections, driven by the calling thread
//! like ENet's `enet_host_service`. Call order: [`open`](PeerHost::open) a host from a
//! [`HostSpec`] (where it binds, its role, how many connections, the channel classes every
//! connection carries) and the stack's own settings; a client
//! [`connect`](PeerHost::connect)s to a server's [`ServerInfo`]; then the thread loops
//! [`service`](PeerHost::service) (what arrived, as [`Event`]s), [`send`](PeerHost::send)
//! (messages queued) and [`flush`](PeerHost::flush) (onto the wire).
//!
//! Channel classes are thinwire's [`ChannelKind`]s, the richest vocabulary of the four;
//! each adapter maps them onto its stack (thinwire: as they are; ENet: reliable packets for
//! the reliable and latest-value classes, unsequenced packets for the unreliable ones; KCP:
//! one reliable ordered stream, which refuses unreliable sends; GNS: reliable or unreliable
//! messages on its one lane, reported on the spec's first channel of their class).
//!
//! ENet is linked when the system has it; GNS is loaded at run time from the library
//! `tools/build-gns.sh` builds (`THINWIRE_GNS_LIB`). Without them their hosts fail to open,
//! saying why.
//!
//! Every payload starts with an eight-byte tag ([`tagged`]), which the receiving side reads
//! back ([`tag_of`]) without copying the message: the bench's round-trip sequence numbers,
//! the emulator's message indices.
#![forbid(unsafe_code)]

mod enet;
mod gns;
mod kcp;
mod thinwire;

use std::fmt::Debug;
use std::hash::Hash;
use std::net::{SocketAddr, SocketAddrV4};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

pub use crate::enet::{EnetHost, ENET_MAX_PEERS};
pub use crate::gns::{GnsHost, GnsWait};
pub use crate::kcp::{KcpHost, KcpMode};
pub use crate::thinwire::{send_on_connection, ThinwireHost};
pub use ::thinwire::{ChannelKind, ConnectionStats, DeadlineOptions};

/// A server's or a client's host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Accepts connections.
    Server,
    /// Opens connections.
    Client,
}

/// Where and how a host is opened.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    /// The local address (port 0: any free port). IPv4: ENet 1.3 has no IPv6.
    pub bind: SocketAddrV4,
    /// Server or client.
    pub role: Role,
    /// Connections the host is sized for (ENet preallocates exactly this many peers).
    pub capacity: usize,
    /// The channel classes every connection carries, by channel index.
    pub channels: Vec<ChannelKind>,
}

/// Where a server listens and what a client needs to reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// The server's address.
    pub addr: SocketAddrV4,
    /// thinwire: the server's public key (64 hex digits).
    pub key: Option<String>,
}

/// What [`PeerHost::service`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<C> {
    /// A connection is up (ours completed, or a peer's was accepted).
    Connected(C),
    /// A message arrived: its length and its tag (see [`tag_of`]).
    Message {
        /// The connection.
        conn: C,
        /// The channel it came on.
        channel: u8,
        /// Its length in bytes.
        len: usize,
        /// Its first eight bytes, little endian.
        tag: u64,
    },
    /// A connection ended.
    Disconnected(C),
}

/// One message for [`PeerHost::send`]: its bytes, and what a latest-value channel or
/// deadline delivery need (stacks without them ignore both).
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The payload.
    pub data: &'a Bytes,
    /// Its key on a latest-value channel: a newer value for the key supersedes it.
    pub key: u64,
    /// thinwire: send it with deadline delivery, with these options.
    pub deadline: Option<DeadlineOptions>,
}

impl<'a> Outgoing<'a> {
    /// A plain message: key 0, no deadline.
    pub fn new(data: &'a Bytes) -> Self {
        Self {
            data,
            key: 0,
            deadline: None,
        }
    }
}

/// A UDP socket with connections, driven by the calling thread.
pub trait PeerHost: Sized {
    /// Identifies a connection of this host.
    type Conn: Copy + Eq + Hash + Debug;
    /// The stack's own settings: thinwire's `Config`, KCP's [`KcpMode`], nothing for ENet and
    /// GNS.
    type Settings;

    /// Opens a host as `spec` says.
    fn open(spec: &HostSpec, settings: &Self::Settings) -> Result<Self, String>;
    /// What clients need to reach this (server) host.
    fn info(&self) -> ServerInfo;
    /// Starts a connection with the host's channels; [`Event::Connected`] follows from
    /// [`service`](Self::service).
    fn connect(&mut self, to: &ServerInfo) -> Result<Self::Conn, String>;
    /// The peer address of a connection.
    fn remote(&self, conn: Self::Conn) -> Option<SocketAddr>;
    /// Processes the network for at most `timeout`, appending events to `out`; returns as
    /// soon as some were appended. `Duration::ZERO` only handles what has arrived.
    fn service(
        &mut self,
        timeout: Duration,
        out: &mut Vec<Event<Self::Conn>>,
    ) -> Result<(), String>;
    /// Queues a message on `channel`. `Ok(false)`: the transport refused it for now (its
    /// send window is full); try again later.
    fn send(&mut self, conn: Self::Conn, channel: u8, msg: Outgoing<'_>) -> Result<bool, String>;
    /// Whether the transport holds data for `conn` that its window kept off the wire at the
    /// last flush: a sender backs off until it is false.
    fn backlogged(&self, conn: Self::Conn) -> bool;
    /// Sends everything queued.
    fn flush(&mut self);
    /// The stack's own statistics of a connection: thinwire's; `None` for the others.
    fn stats(&self, _conn: Self::Conn) -> Option<ConnectionStats> {
        None
    }
}

/// A payload of `len` bytes (at least eight) whose first eight carry `tag` (little endian).
pub fn tagged(len: usize, tag: u64) -> Bytes {
    let mut v = vec![0x5a; len.max(8)];
    v[..8].copy_from_slice(&tag.to_le_bytes());
    Bytes::from(v)
}

/// The tag of a received payload (0 when shorter than eight bytes).
pub fn tag_of(data: &[u8]) -> u64 {
    data.get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Whether a class is delivered reliably (every class but the unreliable ones): ENet sends it
/// as reliable packets, GNS as reliable messages, KCP carries it.
fn is_reliable(kind: ChannelKind) -> bool {
    !matches!(
        kind,
        ChannelKind::Unreliable | ChannelKind::UnreliableSequenced
    )
}

/// Whether `channel` of a host whose channels' classes are `reliable` is a reliable one, or
/// the error of a send on a channel the host does not have (`stack` names the transport).
fn reliable_channel(reliable: &[bool], channel: u8, stack: &str) -> Result<bool, String> {
    reliable
        .get(usize::from(channel))
        .copied()
        .ok_or_else(|| format!("{stack} send: no channel {channel}"))
}

/// The address of a socket as IPv4 (an IPv6 one: the loopback address with its port).
fn v4(addr: SocketAddr) -> SocketAddrV4 {
    match addr {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(a) => SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, a.port()),
    }
}

#[cfg(test)]
mod tests;
