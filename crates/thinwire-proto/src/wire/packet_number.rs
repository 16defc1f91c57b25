//! Packet-number truncation and reconstruction (RFC 9000 §17.1, Appendix A).
//!
//! Full packet numbers are `u64` counters starting at 0, one per packet
//! sent. Only the low 1 to 4 bytes go on the wire; the receiver rebuilds the
//! full value as the one closest to the next number it expects.

/// Fewest bytes (1..=4) that let the receiver rebuild `full`.
///
/// The chosen length represents more than twice as many values as the
/// distance between `full` and the largest packet number the peer has
/// acknowledged (`full + 1` when nothing was acknowledged yet), so that the
/// peer, whose largest received number is at least `largest_acked`, decodes
/// the right value. Returns 4 when even 4 bytes are not enough (more than
/// 2^31 packets in flight, which the connection never allows).
pub fn pn_encode_len(full: u64, largest_acked: Option<u64>) -> usize {
    let distance = match largest_acked {
        Some(acked) => full.saturating_sub(acked),
        None => full.saturating_add(1),
    };
    // 2^(8 len) > 2 distance  <=>  distance < 2^(8 len - 1)
    (1..=4)
        .find(|&len| distance < 1u64 << (8 * len - 1))
        .unwrap_or(4)
}

/// Low `len` bytes of `full`, as written in a short header.
pub fn pn_truncate(full: u64, len: usize) -> u64 {
    let len = len.clamp(1, 4);
    full & ((1u64 << (8 * len)) - 1)
}

/// Rebuild a full packet number from its `len`-byte truncation.
///
/// Returns the number whose low `len` bytes equal `truncated` and that is
/// closest to `largest_received + 1` (0 when nothing was received yet),
/// exactly as the RFC 9000 Appendix A.3 algorithm. Total: `len` is
/// clamped to `1..=4`, bits of `truncated` above `len` bytes are ignored,
/// and the arithmetic cannot overflow (with `largest_received == u64::MAX`
/// the result saturates at `u64::MAX`).
pub fn pn_decode(truncated: u64, len: usize, largest_received: Option<u64>) -> u64 {
    let len = len.clamp(1, 4) as u32;
    let expected = match largest_received {
        Some(l) => u128::from(l) + 1,
        None => 0,
    };
    let win: u128 = 1 << (8 * len);
    let hwin = win / 2;
    let mask = win - 1;
    let candidate = (expected & !mask) | (u128::from(truncated) & mask);
    let out = if candidate + hwin <= expected && candidate < (1u128 << 62) - win {
        candidate + win
    } else if candidate > expected + hwin && candidate >= win {
        candidate - win
    } else {
        candidate
    };
    // `expected` can be 2^64 (largest_received = u64::MAX); saturate.
    u64::try_from(out).unwrap_or(u64::MAX)
}
