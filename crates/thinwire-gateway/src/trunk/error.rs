//! Errors, split by who is at fault: the caller ([`GatewayError`]) or the trunk peer
//! ([`FrameError`], which is counted and dropped, never returned to the application).

use thinwire_proto::{ConfigError, ConnectError, SendError};
use thiserror::Error;

/// A gateway call failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GatewayError {
    /// One of the endpoint configurations is unusable (the caller's).
    #[error("invalid {which} configuration: {source}")]
    Config {
        /// Which configuration: `players`, `trunk` or `upstream`.
        which: &'static str,
        /// What is wrong with it.
        source: ConfigError,
    },
    /// A [`TrunkOptions`](super::TrunkOptions) value is unusable (the caller's).
    #[error("invalid trunk options: {0}")]
    Options(&'static str),
    /// The trunk connection could not even be started (the caller's configuration).
    #[error("cannot open the trunk: {0}")]
    Connect(#[from] ConnectError),
    /// The server gateway's allowed peers are unusable (the caller's).
    #[error("invalid peers: {0}")]
    Peers(String),
    /// The trunk is not connected now (the network's or the peer gateway's): try later.
    #[error("the trunk is not up")]
    TrunkNotUp,
    /// The trunk connection refused the message (too large, or its send buffer is full).
    #[error("the trunk refused the message: {0}")]
    Send(#[from] SendError),
}

/// A trunk frame does not parse (the peer gateway's fault; counted and dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum FrameError {
    /// The frame ends before a field it announces.
    #[error("truncated frame")]
    Truncated,
    /// The type byte is not one this version knows.
    #[error("unknown frame type {0:#04x}")]
    UnknownType(u8),
    /// A flow id does not fit 32 bits.
    #[error("flow id out of range")]
    FlowOutOfRange,
    /// A FlowOpen lists no channel or more than 64.
    #[error("bad channel count {0}")]
    ChannelCount(u8),
    /// A FlowOpen names a channel kind code that does not exist.
    #[error("unknown channel kind {0}")]
    ChannelKind(u8),
    /// A FlowOpen's address family byte is neither 4 nor 6.
    #[error("unknown address family {0}")]
    AddressFamily(u8),
    /// A FlowClose reason is longer than 64 bytes.
    #[error("close reason of {0} bytes")]
    ReasonTooLong(u8),
    /// A FlowOpen's claims carry more than 256 bytes of user data.
    #[error("claims user data of {0} bytes")]
    UserDataTooLong(u16),
    /// A Batch entry has length 0, or is not a Data frame without a deadline.
    #[error("bad batch entry")]
    BatchEntry,
    /// Bytes follow a frame that has no trailing payload.
    #[error("trailing bytes")]
    Trailing,
}

/// A read past the end of a frame (from the shared [`codec`](thinwire_proto::codec) reader).
impl From<thinwire_proto::codec::Truncated> for FrameError {
    fn from(_: thinwire_proto::codec::Truncated) -> Self {
        FrameError::Truncated
    }
}
