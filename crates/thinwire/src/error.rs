//! Errors of the runtime, split by who is at fault:
//!
//! * the caller (local misuse): [`SendError::Rejected`] and [`ConnectError::Rejected`] pass the
//!   core's [`thinwire_proto::SendError`] / [`thinwire_proto::ConnectError`] through unchanged;
//! * the peer or the connection's end: [`ConnectionError::Disconnected`] carries the core's
//!   [`DisconnectReason`] (closed locally or by the peer, timed out, reset by a restarted peer,
//!   refused by the server, protocol violation);
//! * the operating system: [`BindError::Io`] and [`ConnectionError::EndpointFailed`].

use std::io;
use std::sync::Arc;

use thinwire_proto::DisconnectReason;
use thiserror::Error;

/// Why a connection can no longer be used.
#[derive(Debug, Clone, Error)]
pub enum ConnectionError {
    /// The connection ended; the reason says how (peer or local closure, timeout, reset).
    #[error("connection ended: {0}")]
    Disconnected(#[from] DisconnectReason),
    /// The endpoint was shut down and its connections with it.
    #[error("endpoint closed")]
    EndpointClosed,
    /// The endpoint's socket failed and its driver stopped.
    #[error("endpoint stopped by an I/O error: {0}")]
    EndpointFailed(Arc<io::Error>),
}

impl ConnectionError {
    /// The protocol's disconnect reason, when the connection itself ended.
    pub fn reason(&self) -> Option<&DisconnectReason> {
        match self {
            ConnectionError::Disconnected(r) => Some(r),
            _ => None,
        }
    }
}

/// A message could not be queued.
#[derive(Debug, Clone, Error)]
pub enum SendError {
    /// The core refused it: unknown channel, wrong call for the channel's class, message too
    /// large, send buffer full (retry later) or a connection that is already closing.
    #[error(transparent)]
    Rejected(#[from] thinwire_proto::SendError),
    /// The connection is gone, and this is why.
    #[error(transparent)]
    Closed(#[from] ConnectionError),
}

/// Opening a connection failed.
#[derive(Debug, Clone, Error)]
pub enum ConnectError {
    /// The core refused to start it (bad channel list, no free connection id, a connect
    /// token without an address).
    #[error(transparent)]
    Rejected(#[from] thinwire_proto::ConnectError),
    /// The handshake did not complete: refused by the server
    /// ([`DisconnectReason::Refused`]: full, too many connections from this address or, when
    /// nearly full, from this network, bad connect token, no common cipher suite, or
    /// [`RefuseReason::UnknownServerKey`](thinwire_proto::RefuseReason::UnknownServerKey):
    /// the server could not read a handshake written to another key; its text says which), no
    /// common protocol version, or no answer in time
    /// ([`DisconnectReason::HandshakeTimedOut`]: "the server did not answer").
    #[error("handshake failed: {0}")]
    Handshake(DisconnectReason),
    /// The endpoint is shut down or failed.
    #[error(transparent)]
    Endpoint(ConnectionError),
}

/// Creating an endpoint or host failed.
#[derive(Debug, Error)]
pub enum BindError {
    /// The socket could not be created, bound or configured.
    #[error("socket: {0}")]
    Io(#[from] io::Error),
    /// The transport configuration is unusable.
    #[error("configuration: {0}")]
    Config(#[from] thinwire_proto::ConfigError),
    /// The fault-injection configuration is unusable.
    #[error("fault injection: {0}")]
    Faults(#[from] thinwire_netmodel::ConfigError),
    /// [`Endpoint::bind`](crate::Endpoint::bind) needs a running tokio runtime.
    #[error("Endpoint::bind must be called inside a tokio runtime")]
    NoRuntime,
}
