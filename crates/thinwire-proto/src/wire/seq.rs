//! Message sequence numbers and the compact (8-bit) seq rule.

/// A message sequence number as found on the wire.
///
/// The compact message form carries only the low 8 bits (`bits == 8`);
/// the full form carries the whole number as a varint (`bits == 64`).
/// The connection expands a truncated value with [`seq_expand`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SeqField {
    /// The value read: the low `bits` bits of the sequence number.
    pub value: u64,
    /// How many low bits `value` holds: 8 (compact form) or 64 (full form).
    pub bits: u8,
}

impl SeqField {
    /// A complete sequence number (full form).
    pub fn full(seq: u64) -> Self {
        SeqField {
            value: seq,
            bits: 64,
        }
    }

    /// The low 8 bits of `seq` (compact form).
    pub fn compact(seq: u64) -> Self {
        SeqField {
            value: seq & 0xFF,
            bits: 8,
        }
    }

    /// True when this is a truncated value that needs [`seq_expand`].
    #[cfg(any(test, feature = "testing", feature = "fuzzing"))]
    pub fn is_truncated(&self) -> bool {
        self.bits < 64
    }
}

/// Largest distance |seq - expected| that [`seq_compact_ok`] accepts.
///
/// An 8-bit value decodes correctly when `seq - expected` lies in
/// `-127..=128`; 120 leaves a margin of 7 for off-by-one slack in the
/// caller's bookkeeping of `expected`.
pub const SEQ_COMPACT_MAX_DISTANCE: u64 = 120;

/// The full sequence number that `field` stands for, given the receiver's
/// `expected` value (normally the next sequence number it expects).
///
/// For a truncated field (`bits < 64`): the number congruent to
/// `field.value` modulo `2^bits` closest to `expected`; on a tie the larger
/// one; never below 0 and never above `u64::MAX`. For 8 bits this is
/// correct whenever `seq - expected` lies in `-127..=128`. For `bits >= 64`
/// (or the meaningless 0) the value itself.
pub fn seq_expand(field: SeqField, expected: u64) -> u64 {
    if field.bits == 0 || field.bits >= 64 {
        return field.value;
    }
    let win: i128 = 1 << field.bits;
    let hwin = win / 2;
    let mask = win - 1;
    let expected = i128::from(expected);
    let candidate = (expected & !mask) | (i128::from(field.value) & mask);
    let delta = candidate - expected;
    let out = if delta <= -hwin && candidate + win <= i128::from(u64::MAX) {
        candidate + win
    } else if delta > hwin && candidate >= win {
        candidate - win
    } else {
        candidate
    };
    // `out` is in 0..=u64::MAX by construction.
    u64::try_from(out).unwrap_or(u64::MAX)
}

/// May `seq` be sent in the 8-bit compact form?
///
/// True when every receiver state `expected` in `[receiver_low, sent_high]`
/// (bounds may come in either order) is within
/// [`SEQ_COMPACT_MAX_DISTANCE`] of `seq`, so [`seq_expand`] at the receiver
/// recovers `seq` whatever its exact state. The sender picks
/// `receiver_low` = the lowest `expected` the receiver can still have (for
/// example one past the highest sequence number the peer acknowledged
/// contiguously, or the oldest unacknowledged one) and `sent_high` = the
/// highest `expected` it can have (one past the highest sequence number
/// sent so far). Since |seq - e| is largest at the ends of the interval,
/// checking both ends suffices.
pub fn seq_compact_ok(seq: u64, receiver_low: u64, sent_high: u64) -> bool {
    seq.abs_diff(receiver_low) <= SEQ_COMPACT_MAX_DISTANCE
        && seq.abs_diff(sent_high) <= SEQ_COMPACT_MAX_DISTANCE
}
