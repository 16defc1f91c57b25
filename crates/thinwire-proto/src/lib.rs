//! # thinwire-proto
//!
//! The sans-IO core of thinwire, a transport for the thin streams of online games: small
//! messages sent every 20-600 ms, judged by how late the worst of them arrive.
//!
//! No sockets, no clock, no threads. Datagrams and `now` go in, datagrams, events and the next
//! deadline come out:
//!
//! ```text
//!             ┌──────────────────────── Endpoint ─────────────────────────┐
//!  datagram ─►│ handle_datagram ─► route by connection id ─► Connection   │─► poll_transmit ─► datagram
//!  now      ─►│ handle_timeout  ─► earliest timers          ├ channels    │─► poll_event    ─► app
//!  app      ─►│ connect / send(.., SendMode) / close        ├ recovery    │─► poll_timeout  ─► timer
//!             │ stateless cookie handshake (no state before the echo)     │
//!             └───────────────────────────────────────────────────────────┘
//! ```
//!
//! Two endpoints in one process, the datagrams handed over in memory (a runtime writes them to
//! a UDP socket instead, and sleeps until [`Endpoint::poll_timeout`]):
//!
//! ```
//! use std::net::SocketAddr;
//! use std::time::{Duration, Instant};
//! use thinwire_proto::{
//!     ChannelKind, Endpoint, EndpointConfig, Event, SendMode, ServerConfig, ServerKey,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut now = Instant::now();
//! // Seeds fixed for the example; a runtime draws them (and the server's secret) from the OS.
//! let key = ServerKey::generate([7; 32]);
//! let server_public = key.public();
//! let config = ServerConfig { key: Some(key), ..ServerConfig::default() };
//! let mut server = Endpoint::new(EndpointConfig::new([1; 32]), Some(config), now)?;
//! let mut client = Endpoint::new(EndpointConfig::new([2; 32]), None, now)?;
//! let client_addr: SocketAddr = "192.0.2.1:5000".parse()?;
//! let server_addr: SocketAddr = "192.0.2.2:7777".parse()?;
//!
//! let channels = [ChannelKind::ReliableOrdered];
//! let conn = client.connect(now, server_addr, &server_public, &channels)?;
//! client.send(now, conn, 0, "hello".into(), SendMode::Plain)?; // goes out after the handshake
//!
//! let mut buf = Vec::new();
//! let mut received = None;
//! for _ in 0..100 {
//!     // Datagrams go both ways until neither side has one to send.
//!     let mut moved = true;
//!     while moved {
//!         moved = false;
//!         while let Some(t) = client.poll_transmit(now, &mut buf) {
//!             server.handle_datagram(now, client_addr, &buf[..t.size]);
//!             moved = true;
//!         }
//!         while let Some(t) = server.poll_transmit(now, &mut buf) {
//!             client.handle_datagram(now, server_addr, &buf[..t.size]);
//!             moved = true;
//!         }
//!     }
//!     while let Some((_, event)) = server.poll_event() {
//!         if let Event::Message(msg) = event {
//!             received = Some(msg.data);
//!         }
//!     }
//!     while client.poll_event().is_some() {}
//!     if received.is_some() {
//!         break;
//!     }
//!     // Nothing left to move: time passes to the earliest timer.
//!     let next = [client.poll_timeout(), server.poll_timeout()].into_iter().flatten().min();
//!     now = next.unwrap_or(now).max(now + Duration::from_millis(1));
//!     client.handle_timeout(now);
//!     server.handle_timeout(now);
//! }
//! assert_eq!(received.as_deref(), Some(&b"hello"[..]));
//! # Ok(()) }
//! ```
//!
//! See [`Endpoint`] for the call order, [`ChannelKind`] for the delivery classes,
//! [`TransportConfig`] for the thin-stream mechanisms, and `docs/PROTOCOL.md` for the wire format,
//! states and timers.
//!
//! # Public API
//! What a runtime needs, and nothing else:
//! - the state machine: [`Endpoint`], [`ConnectionHandle`], [`SendMode`], [`Transmit`];
//! - configuration: [`EndpointConfig`], [`ServerConfig`], [`TransportConfig`], [`ChannelKind`],
//!   [`DeadlineOptions`], [`ParityMode`], [`PolicyCache`], [`RepairTarget`];
//! - output: [`Event`], [`Message`], [`DeadlineStatus`], [`EndpointStats`], and
//!   [`ConnectionStats`] with its parts ([`PathStats`], the counters of [`ConnectionCounters`],
//!   [`ChannelStats`]);
//! - errors, by who is at fault: [`ConfigError`], [`ConnectError`], [`SendError`] (the caller),
//!   [`PeerError`] (the peer), [`DisconnectReason`] (why a connection ended);
//! - [`policy`]: how many packets to send, by its two models: [`policy::deadline`] (packets per
//!   round trip of a deadline message) and [`policy::repair`] (copies per retransmission of
//!   reliable thin streams, whose rounds [`thin_rto`], the thin-stream retransmission timeout,
//!   spaces); `thinwire policy` prints both;
//! - [`codec`]: the QUIC varints and bounds-checked reader the wire format is made of, for
//!   protocols built on thinwire (the gateway's trunk frames).
//!
//! The core emits `tracing` events under `thinwire_proto::…` targets: handshake steps (at
//! `trace` for each datagram), handshake failures with their reason, refusals with the limit
//! that refused, closes with who closed (`local`, `peer`, `timeout`), path validation, key
//! updates and memory-budget closes (at `debug`). Nothing is logged per packet above `trace`.
//!
//! Three cargo features open more: `testing` (the `testing::Pair` harness in simulated time, for
//! tests and benchmarks), `fuzzing` (the `wire` codec, for the fuzz targets and the wire
//! benchmark) and `serde` (`Serialize` and `Deserialize` for the statistics).
#![forbid(unsafe_code)]

mod channel;
pub mod codec;
mod config;
mod connection;
mod cookie;
mod crypto;
mod deadline;
mod endpoint;
mod error;
mod event;
mod pack;
pub mod policy;
pub mod prefetch;
mod recovery;
mod stamp;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(feature = "fuzzing")]
pub mod wire;
// Without `fuzzing` the codec is private. Its items are `pub` because the `fuzzing` build
// exports them, so `unreachable_pub` (and only it) is expected here; the parts only the tests,
// the fuzz targets and the wire benchmark use are `#[cfg(any(test, feature = "fuzzing"))]`, so
// a normal build has no dead code.
#[cfg(not(feature = "fuzzing"))]
#[allow(unreachable_pub)]
mod wire;

pub use config::{
    EndpointConfig, MemoryBudget, ServerConfig, TokenPolicy, TransportConfig, MAX_ACK_DELAY,
};
pub use connection::{
    ChannelStats, ConnectionCounters, ConnectionStats, DeadlineStats, FrameStats, PathStats,
    PayloadStats, RecoveryStats, SecurityStats, SendMode, UdpStats,
};
pub use crypto::{
    CipherSuite, ConnectToken, KeyParseError, PublicKey, ServerKey, TokenClaims, TokenError,
    TokenKey, MAX_TOKEN_ADDRESSES, MAX_USER_DATA, MIN_KEY_UPDATE_PACKETS,
};
pub use deadline::{DeadlineOptions, DeadlineStatus, ParityMode};
pub use endpoint::{ConnectionHandle, Endpoint, EndpointStats, Lookahead, Transmit};
pub use error::{
    ConfigError, ConnectError, DisconnectReason, PeerError, RefuseReason, SendError,
    CLOSE_MEMORY_BUDGET,
};
pub use event::{Event, Message};
pub use policy::repair::RepairTarget;
pub use policy::PolicyCache;
pub use prefetch::{Prefetcher, PREFETCH_FROM_CONNECTIONS, PREFETCH_STAGES};
pub use recovery::thin_rto;
pub use wire::ChannelKind;

#[cfg(test)]
mod tests;
