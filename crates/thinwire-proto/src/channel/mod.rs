//! Channels: independent ordering domains, each of one delivery class ([`ChannelKind`]).
//!
//! The send side keeps every message until it is acknowledged (reliable classes), replaced by a
//! newer value for its key (latest-value), or sent once (unreliable classes). The receive side
//! removes duplicates, reassembles fragments and applies the class's ordering rule.
//!
//! [`ChannelKind`]: crate::wire::ChannelKind

mod recv;
mod send;

pub(crate) use recv::{Delivered, RecvChannel, RecvOutcome, PARTIAL_OVERHEAD, SEEN_SEQ_BYTES};
pub(crate) use send::SendChannel;

/// Messages further than this many sequence numbers ahead of a channel's receive base are
/// refused (the sender keeps at most [`SEND_WINDOW`] messages per channel, so an honest peer
/// never gets there).
pub(crate) const RECV_WINDOW: u64 = 2 * SEND_WINDOW as u64;

/// Most messages a channel keeps unacknowledged (and so in its window) at once.
pub(crate) const SEND_WINDOW: usize = 8192;
