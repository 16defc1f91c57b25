//! The thinwire wire format: packets, frames and their encodings.
//!
//! Every UDP datagram carries exactly one packet:
//!
//! * a **short header** ([`ShortHeader`]) followed by frames ([`frames`],
//!   [`Frame`]) for data packets, or
//! * a **long header** packet ([`LongPacket`]) for the handshake and
//!   control (Hello, Challenge, Connect, Accept, Reset, Refuse,
//!   VersionNegotiation).
//!
//! [`is_long_header`] tells the two apart. Fixed-size integers are
//! big-endian; variable-length integers are QUIC varints ([`varint`]).
//! Decoders are length-checked and never panic: they return
//! [`DecodeError`]. Encoders append to a `Vec<u8>`.
//!
//! The normative description, byte by byte, is `docs/PROTOCOL.md`
//! sections 1-4; the golden-byte tests in this module keep the two in
//! step.

mod ack;
mod channel_kind;
mod cid;
mod error;
mod frame;
mod header;
mod packet_number;
mod params;
mod seq;
mod shard;

#[cfg(test)]
mod tests;

pub use ack::{encode_ack, AckFrame};
pub use channel_kind::ChannelKind;
pub use cid::ConnectionId;
pub use error::DecodeError;
pub use frame::{
    encode_close, encode_message, encode_path_challenge, encode_path_response, encode_ping, frames,
    insert_copies, message_frame_len, message_to_last, Fragment, Frame, MessageFrame,
    MessageHeader,
};
pub use header::{is_long_header, LongPacket, ShortHeader, KEY_PHASE_BIT};
pub use packet_number::{pn_decode, pn_encode_len};
pub use params::{AcceptParams, ConnectParams, MAX_SUITES};
pub use seq::{seq_compact_ok, seq_expand, SeqField};
pub use shard::{ShardFrame, MAX_SHARDS_K};
// Only the tests, the fuzz targets and the wire benchmark use these (and the first two the
// `testing` fuzz helpers).
#[cfg(any(test, feature = "testing", feature = "fuzzing"))]
pub use frame::{encode_copies, encode_padding};
#[cfg(any(test, feature = "fuzzing"))]
pub use {
    frame::{close_frame_len, encode_message_last, last_message_frame_len},
    packet_number::pn_truncate,
    params::MAX_TOKEN_LEN,
    seq::SEQ_COMPACT_MAX_DISTANCE,
};
// Named in the public signatures of the `fuzzing` build.
#[cfg(feature = "fuzzing")]
pub use {
    ack::AckRanges,
    frame::{FrameIter, COMPACT_MAX_PAYLOAD},
    header::LongHeaderPrefix,
};

/// QUIC varints, from the public [`codec`](crate::codec) the wire format is built on.
pub use crate::codec::varint;

/// The bounds-checked cursor every wire decoder reads with: the public
/// [`codec::Reader`](crate::codec::Reader), its reads failing with [`DecodeError`].
pub type Reader<'a> = crate::codec::Reader<'a, DecodeError>;

/// The protocol version this crate speaks (`docs/PROTOCOL.md`, version 3).
pub const VERSION: u32 = 3;

/// Minimum size of a datagram carrying a Hello (the encoder pads to it).
///
/// Padding the client's first packet bounds the amplification an attacker
/// spoofing a victim's address can get from the server's replies.
pub const HELLO_MIN_SIZE: usize = 64;

/// Longest connection id, in bytes (the shortest is 1).
pub const MAX_CID_LEN: usize = 8;

/// Longest cookie in Challenge and Connect, in bytes.
pub const MAX_COOKIE_LEN: usize = 64;

/// Longest Noise handshake message in Connect and Accept, in bytes.
pub const MAX_HANDSHAKE_LEN: usize = 1024;

/// Length of a stateless reset token.
pub const RESET_TOKEN_LEN: usize = 16;

/// Length of the data of a PATH_CHALLENGE or PATH_RESPONSE frame.
pub const PATH_DATA_LEN: usize = 8;

/// Most channels a connection can have (a channel index is 6 bits).
pub const MAX_CHANNELS: usize = 64;

/// Longest close reason, in bytes.
pub const MAX_REASON_LEN: usize = 1024;

/// Most ranges in an ack frame (the first plus 256 extra ranges).
pub const MAX_ACK_RANGES: usize = 257;

/// Most fragments a message can be split into.
pub const MAX_FRAGMENT_COUNT: u32 = 1024;

/// Most message and shard frames in one packet: each becomes an event for the application at
/// most, so one datagram cannot make a receiver deliver hundreds of (empty) messages. A sender
/// never packs more; a receiver drops a packet with more as malformed.
pub const MAX_MESSAGES_PER_PACKET: usize = 64;
