//! Channels: independent ordering domains, each of one delivery class ([`ChannelKind`]).
//!
//! The send side keeps every message until it is acknowledged (reliable classes) or replaced by
//! a newer value for its key (latest-value); an unreliable class's message is only counted
//! there, its payload waiting in the connection's send queue until it is sent, once. The
//! receive side removes duplicates, reassembles fragments and applies the class's ordering rule.
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

/// Most messages a channel holds at once: unacknowledged (reliable classes, in its window) or
/// not sent yet (unreliable classes).
pub(crate) const SEND_WINDOW: usize = 8192;
