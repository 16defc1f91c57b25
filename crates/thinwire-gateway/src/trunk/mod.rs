//! The trunk: many players' thinwire connections carried as one, between an
//! [`EdgeGateway`] near the players and a [`ServerGateway`] near the game server.
//!
//! ```text
//!  players ──thinwire──► EdgeGateway ══ trunk (one thinwire connection) ══► ServerGateway ──thinwire──► game server
//!  (Side::Local)          one flow per player: FlowOpen / Data / FlowClose    one connection per flow   (Side::Local)
//!                         held and pushed every period T                      (trusted_sources = its IP)
//!  more edges ══ their own trunks ══════════════════════════════════════════►  (flows keyed by trunk)
//! ```
//!
//! - An edge opens its trunk with its [`TrunkCredential`] (a connect token minted with the
//!   operator key, carrying its peer id); the server gateway's trunk endpoint requires such
//!   tokens and admits a trunk only if its id is among its [`TrunkPeer`]s (`server.rs`,
//!   `credential.rs`). An edge whose trunk ends dials again with backoff (`edge.rs`).
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
//!   while the trunk's reliable queue is short, its small messages together as Batch frames
//!   (`push.rs`).
//! - A player with an identity (FlowOpen claims) moves between edges without the game server
//!   seeing a disconnect: the server gateway parks its flow when the trunk or the player is
//!   lost and a FlowOpen with the same client id from any trunk takes it over (`resume.rs`,
//!   [`TrunkOptions::resume_grace`]).
//! - Every buffer is bounded ([`TrunkOptions`], `inbound::LATEST_KEYS`, the event queue);
//!   frames that do not parse are counted ([`GatewayStats::bad_frames`]) and dropped.
//!
//! # Call order (both gateways)
//! ```text
//!  at start             ──► set_unix_time(now, unix)  (credential and token expiry)
//!  datagram on a socket ──► handle_datagram(now, side, from, bytes)
//!  timer expired        ──► handle_timeout(now)
//!  TCM                  ──► send_bundle(now, [peer,] bytes)
//!                           loop { poll_transmit(now, buf) } ──► (side, transmit) to that socket
//!                           loop { poll_event() }            ──► application
//!                           poll_timeout()                   ──► arm the one timer
//! ```
//! `docs/GATEWAY.md` §2 specifies the frames byte by byte, the timers and the bounds.
//! `testing` (feature `testing`) runs a game server, both gateways and players in
//! simulated time.

pub mod close;
mod config;
mod credential;
mod early;
mod edge;
mod error;
mod fin;
mod flow;
pub mod frame;
mod hold;
mod inbound;
mod link;
mod log;
mod peer;
mod push;
mod relay;
mod resume;
mod seq8;
mod server;
mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::time::Duration;

use thinwire_proto::DisconnectReason;

#[cfg(test)]
mod tests;

pub use config::{EdgeConfig, ServerGatewayConfig, TrunkOptions, UpstreamTokens};
pub use credential::{
    mint_trunk_credential, CredentialError, CredentialSpec, TrunkCredential, MAX_PEER_NAME,
};
pub use edge::{EdgeGateway, EDGE_TRUNK_CID_LEN, REDIAL_MAX, REDIAL_MIN};
pub use error::{FrameError, GatewayError};
pub use frame::Frame;
pub use peer::{source_allowed, Cidr, TrunkPeer};
pub use server::{ServerGateway, TrunkStatus, SERVER_TRUNK_CID_LEN};
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

/// What a gateway tells its application. `peer` is always the id of the edge (or tcm-local)
/// the trunk belongs to (its credential's), at both ends of the trunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewayEvent {
    /// A trunk connection is up (at the server gateway: admitted).
    TrunkUp {
        /// Whose trunk.
        peer: u64,
    },
    /// A trunk ended, or (edge) could not be opened; every flow it carried ended with it.
    /// [`close::describe`] words the reason for a log.
    TrunkDown {
        /// Whose trunk.
        peer: u64,
        /// Why, as the core reported it: a refused credential is
        /// `Refused(InvalidToken)`, a peer the server gateway does not list is
        /// `ClosedByPeer { code: NOT_ADMITTED, .. }`, an unreachable server gateway
        /// `HandshakeTimedOut`.
        reason: DisconnectReason,
        /// Edge: when it dials again.
        redial_in: Option<Duration>,
    },
    /// Server gateway: a trunk with a valid credential was closed at once, without a flow or
    /// a bundle accepted from it.
    TrunkRefused {
        /// The id its credential carries.
        peer: u64,
        /// Why (its close code is [`close::Refusal::code`]).
        reason: close::Refusal,
    },
    /// A flow is open end to end: at the server gateway when its game-server connection
    /// connected, at the edge when the server gateway said so.
    FlowOpened {
        /// Whose trunk carries it.
        peer: u64,
        /// The flow (its id on that trunk).
        flow: u32,
    },
    /// A flow ended (either side closed it, or it was refused or overflowed).
    FlowClosed {
        /// Whose trunk carried it.
        peer: u64,
        /// The flow.
        flow: u32,
    },
    /// Server gateway: a flow whose player carried an identity lost its trunk flow (the
    /// trunk went down, or the edge lost the player). It is **parked**: its game-server
    /// connection stays open for [`TrunkOptions::resume_grace`], waiting for the player to
    /// come back through any edge with the same client id. Ends in [`FlowResumed`],
    /// [`FlowResumeExpired`] or (the game server closed it meanwhile) [`FlowClosed`] with
    /// this `peer` and `flow`.
    ///
    /// [`FlowResumed`]: GatewayEvent::FlowResumed
    /// [`FlowResumeExpired`]: GatewayEvent::FlowResumeExpired
    /// [`FlowClosed`]: GatewayEvent::FlowClosed
    FlowParked {
        /// Whose trunk carried it.
        peer: u64,
        /// Its id on that trunk.
        flow: u32,
        /// The player's client id (its connect token's).
        client_id: u64,
    },
    /// Server gateway: a player came back with the client id of a parked flow, or of a flow
    /// open on another trunk flow (it moved for a better round trip; the old flow was closed
    /// with [`close::MOVED`]). Flow `flow` of `peer` carries on over the same game-server
    /// connection: the game server saw no disconnect. Stands for this flow's
    /// [`FlowOpened`](GatewayEvent::FlowOpened).
    FlowResumed {
        /// The trunk that carries it now.
        peer: u64,
        /// Its id on that trunk.
        flow: u32,
        /// The player's client id.
        client_id: u64,
        /// The trunk that carried it before.
        from_peer: u64,
        /// Its id there.
        from_flow: u32,
    },
    /// Server gateway: a parked flow's grace ran out without the player coming back: its
    /// game-server connection is closed.
    FlowResumeExpired {
        /// The trunk that carried it last.
        peer: u64,
        /// Its id there.
        flow: u32,
        /// The player's client id.
        client_id: u64,
    },
    /// A TCM bundle arrived over the trunk of `peer`.
    Bundle {
        /// Whose trunk carried it: tcm-remote restores its packets only from that peer's
        /// prefixes.
        peer: u64,
        /// The bundle.
        bundle: bytes::Bytes,
    },
}
