//! # thinwire
//!
//! The runtime of thinwire, a UDP transport for the thin streams of online games: it drives
//! the sans-IO core [`thinwire_proto`] over real sockets (IPv4 and IPv6).
//!
//! Two front ends on the same core:
//!
//! * **async** (tokio): [`Endpoint::bind`], [`Endpoint::connect`], [`Endpoint::accept`], then
//!   [`Connection::send`] (with a [`SendMode`]: plain, latest value of a key, or deadline) /
//!   [`Connection::recv`] / [`Connection::close`]. One driver task per endpoint owns the socket: it sleeps until the
//!   socket is readable, the application queued something, or the core's next timer is due.
//!   It hands received messages to the application before sending the acknowledgements they
//!   ask for (held at most 1 ms), so that an answer queued at once carries them.
//! * **blocking**: [`Host`] with [`Host::service`] returning [`HostEvent`]s (connected,
//!   message, disconnected) like ENet's `enet_host_service`, for plain game loops.
//!
//! Every connection is encrypted and authenticated: a Noise NK handshake proves the server
//! holds the static key its clients were given ([`Endpoint::public_key`], or a matchmaking
//! backend's [`ConnectToken`]), and every packet after it is sealed with an AEAD
//! (ChaCha20-Poly1305 or AES-256-GCM, 16 bytes per packet). [`Config::insecure_cleartext`]
//! turns that off for trusted networks and measurements only. [`keys`] draws a server's key
//! from the operating system and keeps it in files (the secret one created 0600).
//!
//! Socket I/O is batched on Linux: `recvmmsg` and GRO on receive (the socket set up by
//! `quinn-udp`, which also does the I/O on other systems), and on send one `sendmmsg` per
//! flush carrying up to 64 GSO trains to any destinations, so a server fanning out to many
//! clients pays one system call for dozens of datagrams (`IoStats` counts them). Fault injection ([`FaultConfig`]: drop, delay, jitter, duplicate) can be
//! turned on per endpoint to test a game under a bad network.
//!
//! Operators see what happens through `tracing` events (targets `thinwire::…` here,
//! `thinwire_proto::…` in the core; `RUST_LOG=thinwire=debug` selects both): handshake steps
//! and failures with their reason, refusals and the limit that refused, closes and who closed,
//! path validation, key updates. Two features open more: `serde` (the statistics serialise)
//! and `metrics` (`metrics`: every counter for Prometheus, and a `/metrics` responder).
//!
//! Channel classes ([`ChannelKind`]), chosen per channel when connecting:
//!
//! | class | use it for |
//! |---|---|
//! | [`ChannelKind::ReliableOrdered`] | chat, inventory, anything that must arrive in order |
//! | [`ChannelKind::ReliableUnordered`] | attacks, hits: every one must arrive, none waits for another |
//! | [`ChannelKind::Unreliable`] | voice, cosmetic effects: late is useless |
//! | [`ChannelKind::UnreliableSequenced`] | input and state snapshots: only the newest matters |
//! | [`ChannelKind::LatestReliable`] | positions per entity: the newest value per key must arrive |
//!
//! ```no_run
//! use thinwire::{ChannelKind, Config, Endpoint, PublicKey, SendMode};
//!
//! # async fn demo(server_key: PublicKey) -> Result<(), Box<dyn std::error::Error>> {
//! // `server_key`: the server's public key, shipped with the game (64 hex digits parse into it)
//! let endpoint = Endpoint::bind("0.0.0.0:0".parse()?, Config::client())?;
//! let channels = [ChannelKind::LatestReliable, ChannelKind::ReliableOrdered];
//! let conn = endpoint
//!     .connect("127.0.0.1:7777".parse()?, server_key, &channels)
//!     .await?;
//! conn.send(0, &b"x=10,y=20"[..], SendMode::Latest { key: 42 })?; // position of entity 42
//! conn.send(1, &b"hello"[..], SendMode::Plain)?; // chat
//! while let Ok(msg) = conn.recv().await {
//!     println!("channel {}: {:?}", msg.channel, msg.data);
//! }
//! println!("closed: {:?}", conn.close_reason());
//! # Ok(()) }
//! ```
// Unsafe code (denied by the workspace) only in `io/mmsg.rs`, the `sendmmsg` and `recvmmsg`
// system calls.

mod batch;
mod config;
mod connection;
mod driver;
mod endpoint;
mod engine;
mod error;
mod host;
mod io;
pub mod keys;
#[cfg(feature = "metrics")]
pub mod metrics;
mod prefetch;
mod shared;
mod stats;

pub use batch::SendBatch;
pub use config::{Config, FaultConfig};
pub use connection::Connection;
pub use endpoint::Endpoint;
pub use error::{BindError, ConnectError, ConnectionError, SendError};
pub use host::{Host, HostEvent};
pub use shared::DROP_CLOSE_CODE;
pub use stats::{EndpointStats, FaultStats, IoStats};

pub use thinwire_netmodel::{LinkConfig, LinkStats, LossModel};
pub use thinwire_proto::{
    ChannelKind, ChannelStats, CipherSuite, ConnectToken, ConnectionCounters, ConnectionHandle,
    ConnectionStats, DeadlineOptions, DeadlineStatus, DisconnectReason, KeyParseError,
    MemoryBudget, Message, ParityMode, PeerError, PublicKey, RefuseReason, RepairTarget, SendMode,
    ServerConfig, ServerKey, TokenClaims, TokenError, TokenKey, TokenPolicy, TransportConfig,
    CLOSE_MEMORY_BUDGET,
};

/// The sans-IO core, re-exported for the types its errors and events carry.
pub use thinwire_proto as proto;

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
