//! The ack frame and its range arithmetic (RFC 9000 §19.3).

use std::ops::RangeInclusive;

use smallvec::SmallVec;

use super::{varint, DecodeError, Reader, MAX_ACK_RANGES};

/// The ranges of an ack frame: up to four (the usual SACK-like count) without allocating.
pub type AckRanges = SmallVec<[RangeInclusive<u64>; 4]>;

/// Frame type byte of an ack frame.
pub(crate) const ACK_TYPE: u8 = 0x02;

/// Type of the short form of an ACK: one range and no ACK delay (the common case of a thin
/// stream's immediate acknowledgement), `08 largest first_range`: two bytes fewer.
pub(crate) const ACK_SHORT_TYPE: u8 = 0x08;

/// An ack frame: which packet numbers the sender of the frame received.
///
/// `ranges` are in descending order, the first contains `largest` (its
/// end is `largest`), and no two overlap or touch (there is at least one
/// missing packet number between consecutive ranges). At most
/// [`MAX_ACK_RANGES`] ranges.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AckFrame {
    /// Largest packet number acknowledged.
    pub largest: u64,
    /// Time between receiving `largest` and sending this frame, µs.
    pub ack_delay_us: u64,
    /// Acknowledged packet numbers, highest range first.
    pub ranges: AckRanges,
}

impl AckFrame {
    /// Build an ack frame from ranges of received packet numbers given
    /// highest first.
    ///
    /// Overlapping or adjacent ranges are merged; empty ranges (start >
    /// end) and the parts of ranges lying above an earlier one are ignored.
    /// Keeps the highest `min(max_ranges, MAX_ACK_RANGES)` merged ranges
    /// (dropping older ones only loses information the peer already has or
    /// will retransmit). `None` if no range is left (or `max_ranges` is 0).
    pub fn from_ranges(
        ranges_desc: impl Iterator<Item = RangeInclusive<u64>>,
        ack_delay_us: u64,
        max_ranges: usize,
    ) -> Option<AckFrame> {
        let max_ranges = max_ranges.min(MAX_ACK_RANGES);
        if max_ranges == 0 {
            return None;
        }
        let mut ranges = AckRanges::new();
        for r in ranges_desc {
            let (start, mut end) = (*r.start(), *r.end());
            if let Some(last) = ranges.last_mut() {
                let (last_start, last_end) = (*last.start(), *last.end());
                // Ignore whatever lies above an earlier range (not descending).
                end = end.min(last_end);
                if start <= end && end.saturating_add(1) >= last_start {
                    // Overlapping or adjacent: extend the last range down.
                    *last = last_start.min(start)..=last_end;
                    continue;
                }
            }
            if start > end {
                continue;
            }
            if ranges.len() == max_ranges {
                break;
            }
            ranges.push(start..=end);
        }
        let largest = *ranges.first()?.end();
        Some(AckFrame {
            largest,
            ack_delay_us,
            ranges,
        })
    }

    /// True when `pn` lies in one of the ranges.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn contains(&self, pn: u64) -> bool {
        // Ranges are descending: find the first whose start is <= pn.
        let i = self.ranges.partition_point(|r| *r.start() > pn);
        self.ranges.get(i).is_some_and(|r| pn <= *r.end())
    }

    /// Exact number of bytes [`encode_ack`] writes, type byte included.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn encoded_len(&self) -> usize {
        let (first_range, extra) = self.wire_fields();
        let extra_len: usize = extra
            .clone()
            .map(|(gap, len)| varint::encoded_len(gap) + varint::encoded_len(len))
            .sum();
        if self.is_short() {
            return 1 + varint::encoded_len(self.largest) + varint::encoded_len(first_range);
        }
        1 + varint::encoded_len(self.largest)
            + varint::encoded_len(self.ack_delay_us)
            + varint::encoded_len(extra.count() as u64)
            + varint::encoded_len(first_range)
            + extra_len
    }

    /// The first-range field and the (gap, range_len) pairs to write.
    ///
    /// Robust against frames built by hand that break the invariants: the
    /// pairs stop at the first range that does not lie strictly below the
    /// previous one (with a gap) and after [`MAX_ACK_RANGES`] - 1 extra
    /// ranges, so the encoding never acknowledges more than `ranges` say.
    fn wire_fields(&self) -> (u64, impl Iterator<Item = (u64, u64)> + Clone + '_) {
        let first_start = self
            .ranges
            .first()
            .map(|r| *r.start())
            .filter(|&s| s <= self.largest)
            .unwrap_or(self.largest);
        let extra = self.ranges.iter().skip(1).take(MAX_ACK_RANGES - 1).scan(
            first_start,
            |prev_start, r| {
                let (start, end) = (*r.start(), *r.end());
                // RFC 9000 §19.3.1: largest = previous smallest - gap - 2.
                let gap = prev_start.checked_sub(end)?.checked_sub(2)?;
                let len = end.checked_sub(start)?;
                *prev_start = start;
                Some((gap, len))
            },
        );
        (self.largest - first_start, extra)
    }

    /// Parse the body of an ack frame (after the type byte).
    /// Whether the frame is written in the short form (`08`): no range beyond the first on
    /// the wire and an ACK delay of zero.
    fn is_short(&self) -> bool {
        self.ack_delay_us == 0 && self.wire_fields().1.next().is_none()
    }

    /// Decodes the body of a short ACK (`08 largest first_range`).
    pub(crate) fn decode_short_body(r: &mut Reader<'_>) -> Result<AckFrame, DecodeError> {
        let largest = r.varint()?;
        let first_range = r.varint()?;
        let smallest = largest
            .checked_sub(first_range)
            .ok_or(DecodeError::BadAck)?;
        let mut ranges = AckRanges::new();
        ranges.push(smallest..=largest);
        Ok(AckFrame {
            largest,
            ack_delay_us: 0,
            ranges,
        })
    }

    pub(crate) fn decode_body(r: &mut Reader<'_>) -> Result<AckFrame, DecodeError> {
        let largest = r.varint()?;
        let ack_delay_us = r.varint()?;
        let extra_count = r.varint()?;
        if extra_count > (MAX_ACK_RANGES - 1) as u64 {
            return Err(DecodeError::BadAck);
        }
        let first_range = r.varint()?;
        let mut smallest = largest
            .checked_sub(first_range)
            .ok_or(DecodeError::BadAck)?;
        let mut ranges = AckRanges::new();
        ranges.push(smallest..=largest);
        for _ in 0..extra_count {
            let gap = r.varint()?;
            let len = r.varint()?;
            let end = smallest
                .checked_sub(gap)
                .and_then(|v| v.checked_sub(2))
                .ok_or(DecodeError::BadAck)?;
            smallest = end.checked_sub(len).ok_or(DecodeError::BadAck)?;
            ranges.push(smallest..=end);
        }
        Ok(AckFrame {
            largest,
            ack_delay_us,
            ranges,
        })
    }
}

/// Append an ack frame (type byte `0x02` and body, or the short form `0x08`).
///
/// Writes `largest`, `ack_delay_us`, the extra-range count, the first range
/// (`largest - ranges[0].start`), then one (gap, range_len) pair per
/// further range. An empty `ranges` acknowledges `largest` alone. A frame
/// with one range and an ACK delay of zero goes in the short form: `08`,
/// `largest`, first range.
pub fn encode_ack(ack: &AckFrame, out: &mut Vec<u8>) {
    let (first_range, extra) = ack.wire_fields();
    if ack.is_short() {
        out.push(ACK_SHORT_TYPE);
        varint::write(ack.largest, out);
        varint::write(first_range, out);
        return;
    }
    out.push(ACK_TYPE);
    varint::write(ack.largest, out);
    varint::write(ack.ack_delay_us, out);
    varint::write(extra.clone().count() as u64, out);
    varint::write(first_range, out);
    for (gap, len) in extra {
        varint::write(gap, out);
        varint::write(len, out);
    }
}
