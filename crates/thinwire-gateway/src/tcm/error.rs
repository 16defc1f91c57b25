//! TCM errors, split by who is at fault.

use thiserror::Error;

/// What went wrong in the TCM multiplexer or demultiplexer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TcmError {
    // --- the caller ---
    /// The caller pushed an empty packet.
    #[error("empty packet")]
    EmptyPacket,
    /// The caller pushed a packet longer than a record can carry (32767 bytes).
    #[error("packet of {0} bytes is too long for a TCM record")]
    PacketTooLong(usize),
    /// The configuration is inconsistent; the text says which field.
    #[error("invalid TCM configuration: {0}")]
    InvalidConfig(&'static str),
    // --- the peer (or the path) ---
    /// The bundle does not start with the supported version byte.
    #[error("unsupported bundle version byte {0:#04x}")]
    BadVersion(u8),
    /// A length prefix or a record runs past the end of the bundle.
    #[error("truncated bundle")]
    Truncated,
}
