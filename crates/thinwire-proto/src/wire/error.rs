//! The error type of every wire decoder.

/// Why a datagram, packet or frame could not be decoded.
///
/// Every decoder in [`crate::wire`] is length-checked and returns one of
/// these instead of panicking, whatever bytes it is given.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ended before a field (or a length-prefixed body) was complete.
    #[error("truncated input")]
    Truncated,
    /// A reserved bit (short-header `RRRR`, long-header bits 5-4, message flags) was set.
    #[error("reserved bits set")]
    ReservedBits,
    /// Bit 6 of the first byte (the fixed bit) was 0.
    #[error("fixed bit clear")]
    FixedBitClear,
    /// A short-header parser was given a long header, or a long-header parser a short one.
    #[error("wrong header form")]
    WrongHeaderForm,
    /// The long-header type nibble is not a known packet type.
    #[error("unknown packet type {0}")]
    UnknownPacketType(u8),
    /// The frame type byte is not a known frame type.
    #[error("unknown frame type {0:#04x}")]
    UnknownFrame(u8),
    /// A message frame names a channel index not in the connection's channel table.
    #[error("unknown channel {0}")]
    UnknownChannel(u8),
    /// A Connect packet lists a channel-kind code that is not defined.
    #[error("unknown channel kind {0}")]
    UnknownChannelKind(u8),
    /// A Connect packet's channel count is outside `1..=64`.
    #[error("bad channel count")]
    BadChannelCount,
    /// A connection id length is outside `1..=8` (on the wire or as the local length).
    #[error("bad connection id length")]
    BadCid,
    /// A cookie is longer than [`MAX_COOKIE_LEN`](crate::wire::MAX_COOKIE_LEN).
    #[error("bad cookie length")]
    BadCookie,
    /// An ack frame's range arithmetic underflows or it has more than 256 extra ranges.
    #[error("bad ack frame")]
    BadAck,
    /// A fragment count is outside `2..=1024` or the index is not below the count.
    #[error("bad fragment header")]
    BadFragment,
    /// A close frame's reason is longer than [`MAX_REASON_LEN`](crate::wire::MAX_REASON_LEN).
    #[error("close reason too long")]
    ReasonTooLong,
    /// A VersionNegotiation packet's version field is not 0.
    #[error("version negotiation with non-zero version field")]
    BadVersionField,
    /// A Hello datagram is shorter than [`HELLO_MIN_SIZE`](crate::wire::HELLO_MIN_SIZE).
    #[error("hello datagram shorter than the minimum size")]
    HelloTooShort,
    /// A SHARD frame's k, index, length or message size is impossible.
    #[error("bad shard frame")]
    BadShard,
    /// A handshake message is longer than [`MAX_HANDSHAKE_LEN`](crate::wire::MAX_HANDSHAKE_LEN).
    #[error("handshake message too long")]
    BadHandshake,
    /// A cipher-suite list is empty or longer than [`MAX_SUITES`](crate::wire::MAX_SUITES).
    #[error("bad cipher suite list")]
    BadSuites,
    /// A connect token is longer than [`MAX_TOKEN_LEN`](crate::wire::MAX_TOKEN_LEN).
    #[error("connect token too long")]
    BadToken,
    /// Bytes follow the end of a long-header packet (other than Hello's zero padding).
    #[error("trailing bytes after packet")]
    TrailingBytes,
}

impl From<crate::codec::Truncated> for DecodeError {
    fn from(_: crate::codec::Truncated) -> Self {
        DecodeError::Truncated
    }
}
