//! The trunk: many players' thinwire connections carried as one, between an
//! [`EdgeGateway`] near the players and a [`ServerGateway`] near the game server.
//!
//! ```text
//!  players ──thinwire──► EdgeGateway ══ trunk (one thinwire connection) ══► ServerGateway ──thinwire──► game server
//!  (Side::Local)          one flow per player: FlowOpen / Data / FlowClose    one connection per flow   (Side::Local)
//!                         held and pushed every period T                      (trusted_sources = its IP)
//! ```
//!
//! - Players connect to the edge exactly as to the game server (Noise handshake to the edge's
//!   [`players_public_key`](EdgeGateway::players_public_key)). Each becomes a **flow**: a
//!   FlowOpen with its channel kinds goes to the server gateway, which opens an ordinary
//!   thinwire connection to the game server with those channels and relays both ways.
//! - The trunk has four channels ([`frame::TRUNK_CHANNELS`]): 0 ReliableOrdered for control,
//!   1 ReliableUnordered for reliable player data, 2 Unreliable for unreliable data and TCM
//!   bundles, 3 LatestReliable for latest-value player data. Ordered player channels travel unordered with per-(flow, channel) sequence
//!   numbers and are reordered by the receiving gateway, so one player's loss never holds
//!   back another's channel (see `inbound.rs`).
//! - Messages toward the trunk are held and pushed together, at most
//!   [`TrunkOptions::period`] after the first of a batch and less when traffic is sparse (see
//!   `hold.rs`); latest-value, unreliable and deadline data go first, bulk reliable data only
//!   while the trunk's reliable queue is short.
//! - Every buffer is bounded ([`TrunkOptions`], `inbound::LATEST_KEYS`, the event queue);
//!   frames that do not parse are counted ([`GatewayStats::bad_frames`]) and dropped.
//!
//! # Call order (both gateways)
//! ```text
//!  datagram on a socket ──► handle_datagram(now, side, from, bytes)
//!  timer expired        ──► handle_timeout(now)
//!  TCM                  ──► send_bundle(now, bytes)
//!                           loop { poll_transmit(now, buf) } ──► (side, transmit) to that socket
//!                           loop { poll_event() }            ──► application
//!                           poll_timeout()                   ──► arm the one timer
//! ```
//! `docs/GATEWAY.md` §2 specifies the frames byte by byte, the timers and the bounds.
//! `testing` (feature `testing`) runs a game server, both gateways and players in
//! simulated time.

pub mod close;
mod config;
mod early;
mod edge;
mod error;
mod fin;
mod flow;
pub mod frame;
mod hold;
mod inbound;
mod push;
mod relay;
mod server;
mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod varint;

#[cfg(test)]
mod tests;

pub use config::{EdgeConfig, ServerGatewayConfig, TrunkOptions};
pub use edge::{EdgeGateway, RECONNECT_DELAY};
pub use error::{FrameError, GatewayError};
pub use frame::Frame;
pub use server::ServerGateway;
pub use stats::{GatewayStats, LinkCounters};

/// Which of a gateway's two sockets a datagram came to or leaves from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The players' socket at the edge; the socket facing the game server at the server
    /// gateway.
    Local,
    /// The trunk socket.
    Trunk,
}

/// What a gateway tells its application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewayEvent {
    /// The trunk connection is up.
    TrunkUp,
    /// The trunk connection ended (every flow ended with it).
    TrunkDown {
        /// Why.
        reason: String,
    },
    /// A flow is open end to end: at the server gateway when its game-server connection
    /// connected, at the edge when the server gateway said so.
    FlowOpened {
        /// The flow.
        flow: u32,
    },
    /// A flow ended (either side closed it, or it was refused or overflowed).
    FlowClosed {
        /// The flow.
        flow: u32,
    },
    /// A TCM bundle arrived over the trunk.
    Bundle(bytes::Bytes),
}
