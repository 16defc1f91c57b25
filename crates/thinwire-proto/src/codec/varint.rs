//! QUIC variable-length integers (RFC 9000 §16).
//!
//! The two most significant bits of the first byte give the encoded length:
//! `00` = 1 byte (6-bit value), `01` = 2 bytes (14 bits), `10` = 4 bytes
//! (30 bits), `11` = 8 bytes (62 bits). The rest is the value, big-endian.
//! Encoders always use the shortest form; [`Reader::varint`](super::Reader::varint) accepts
//! any form.

/// The largest encodable value, 2^62 - 1.
pub const MAX: u64 = (1 << 62) - 1;

/// Number of bytes [`write()`] uses for `v` (1, 2, 4 or 8).
///
/// Values above [`MAX`] are reported as 8 bytes (what [`write()`] emits after
/// clamping them).
pub fn encoded_len(v: u64) -> usize {
    if v < 1 << 6 {
        1
    } else if v < 1 << 14 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// Append the shortest encoding of `v` to `out`.
///
/// `v` must be at most [`MAX`]; a larger value is a caller bug: it trips a
/// debug assertion and is clamped to [`MAX`] in release builds.
pub fn write(v: u64, out: &mut Vec<u8>) {
    debug_assert!(v <= MAX, "varint value {v} exceeds 2^62-1");
    let v = v.min(MAX);
    match encoded_len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xC000_0000_0000_0000).to_be_bytes()),
    }
}
