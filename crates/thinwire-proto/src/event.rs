//! What an endpoint tells its application.

use std::net::SocketAddr;

use bytes::Bytes;

use crate::error::DisconnectReason;

/// An application event of one connection, from [`Endpoint::poll_event`](crate::Endpoint::poll_event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed (client) or a new connection was accepted (server).
    Connected {
        /// The peer's address.
        remote: SocketAddr,
        /// Whether the peer opened the connection.
        incoming: bool,
    },
    /// A message arrived.
    Message(Message),
    /// The connection ended; its handle is no longer valid.
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
}

/// A received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The channel it arrived on.
    pub channel: u8,
    /// Its sequence number within the channel (`None` on unreliable channels, which carry none).
    pub seq: Option<u64>,
    /// Its key, on latest-value channels.
    pub key: Option<u64>,
    /// The payload.
    pub data: Bytes,
    /// For deadline messages: the deadline and whether it was met.
    pub deadline: Option<crate::DeadlineStatus>,
}
