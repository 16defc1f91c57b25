//! The receiver's record of packet numbers: duplicate detection and what the next ACK says.

use std::collections::VecDeque;
use std::ops::RangeInclusive;
use std::time::Duration;

use super::Rate;
use crate::pack::{Pack, Packer, Unpacker};
use crate::stamp::Stamp;

/// Received packet numbers as disjoint ranges (ascending), plus ack scheduling state.
///
/// At most `max_ranges` ranges are kept; when more would be needed the oldest range is forgotten
/// and everything at or below it counts as already received (`floor`), so memory per peer is
/// bounded and old duplicates are still dropped.
#[derive(Debug)]
pub(crate) struct ReceivedPackets {
    ranges: VecDeque<RangeInclusive<u64>>,
    floor: Option<u64>,
    max_ranges: usize,
    /// When the largest packet arrived.
    largest_at: Stamp,
    /// Ack-eliciting packets received since the last ACK was sent.
    pub(crate) unacked_eliciting: u32,
    /// Whether an ACK should go out at the next opportunity.
    pub(crate) immediate: bool,
    /// When a delayed ACK falls due ([`Stamp::NONE`]: none is pending).
    pub(crate) deadline: Stamp,
    /// Whether an ack-eliciting packet arrived since the last ACK (what makes an ACK worth
    /// sending or piggybacking: the peer does not track packets that elicit none).
    pub(crate) changed: bool,
    /// Packets of any kind received since the last ACK.
    unacked_any: u32,
    /// Outgoing packets that still carry an ACK frame without news (ACK redundancy).
    pub(crate) repeats_left: u8,
    /// An ACK-only packet is to be sent once more (`deadline` says when).
    pub(crate) repeat_armed: bool,
    /// Estimated loss rate of incoming packets (gaps in the packet numbers; reordering
    /// counts as loss), over about the last 256 packets.
    loss: Rate,
    /// Bytes of the largest packet received (what a repeated ACK protects).
    pub(crate) largest_len: usize,
    /// The largest packet number of each of the last [`ACK_SETTLE`] ACKs sent (a ring).
    reported: [u64; ACK_SETTLE],
    acks_sent: u64,
}

/// Packets that elicit no ACK (the peer's own ACKs) after which an ACK frame rides in the next
/// outgoing ack-eliciting packet anyway: the peer learns which of them arrived, so that its
/// packet numbers, encoded relative to what it knows was received, stay one byte long (an ACK
/// frame every 32 packets instead of a second packet-number byte in each).
const NON_ELICITING_ACK_EVERY: u32 = 32;

/// Packets after an ACK with news that carry an ACK frame again (when they go anyway).
const ACK_REPEATS: u8 = 2;

/// ACKs after which a range is settled: a range wholly below the largest packet number of
/// the ACK sent this many ACKs ago was in every ACK since, so the peer has it unless all of
/// them were lost, and later ACKs leave it out (a thin stream's gaps never fill, since
/// retransmissions take new numbers, so without this every ACK after a loss would repeat
/// the old ranges).
const ACK_SETTLE: usize = 3;

impl ReceivedPackets {
    pub(crate) fn new(max_ranges: usize) -> Self {
        Self {
            ranges: VecDeque::new(),
            floor: None,
            max_ranges: max_ranges.max(1),
            largest_at: Stamp::NONE,
            unacked_eliciting: 0,
            immediate: false,
            deadline: Stamp::NONE,
            changed: false,
            unacked_any: 0,
            repeats_left: 0,
            repeat_armed: false,
            loss: Rate::default(),
            largest_len: 0,
            reported: [0; ACK_SETTLE],
            acks_sent: 0,
        }
    }

    /// The largest packet number received.
    pub(crate) fn largest(&self) -> Option<u64> {
        self.ranges.back().map(|r| *r.end())
    }

    /// Whether `pn` was already received (or is too old to tell, which is treated as received).
    pub(crate) fn contains(&self, pn: u64) -> bool {
        if self.floor.is_some_and(|f| pn <= f) {
            return true;
        }
        // search from the newest range: the common case is a recent packet
        self.ranges.iter().rev().any(|r| r.contains(&pn))
    }

    /// Whether a gap is open below the largest packet number received (a thin stream's gaps
    /// never fill: retransmissions take new numbers).
    pub(crate) fn gap_open(&self) -> bool {
        self.ranges.len() > 1
    }

    /// Records `pn` (must not be `contains`ed). Returns true when it arrived out of sequence:
    /// not exactly one above the largest (it opens a gap, or lands below the largest).
    pub(crate) fn insert(&mut self, pn: u64, now: Stamp) -> bool {
        let largest = self.largest();
        let in_order = largest.is_none_or(|l| pn == l + 1);
        if largest.is_none_or(|l| pn > l) {
            self.largest_at = now;
            let skipped = largest.map_or(0, |l| (pn - l - 1).min(64));
            for _ in 0..skipped {
                self.loss.note(true, 256);
            }
            self.loss.note(false, 256);
        }
        // find insertion point (ranges ascending)
        let idx = self.ranges.partition_point(|r| *r.end() < pn);
        let merges_prev = idx > 0 && *self.ranges[idx - 1].end() + 1 == pn;
        let merges_next = idx < self.ranges.len() && *self.ranges[idx].start() == pn + 1;
        match (merges_prev, merges_next) {
            (true, true) => {
                let next_end = *self.ranges[idx].end();
                let start = *self.ranges[idx - 1].start();
                self.ranges[idx - 1] = start..=next_end;
                self.ranges.remove(idx);
            }
            (true, false) => {
                let start = *self.ranges[idx - 1].start();
                self.ranges[idx - 1] = start..=pn;
            }
            (false, true) => {
                let end = *self.ranges[idx].end();
                self.ranges[idx] = pn..=end;
            }
            (false, false) => self.ranges.insert(idx, pn..=pn),
        }
        while self.ranges.len() > self.max_ranges {
            self.ranges.pop_front();
            if let Some(first) = self.ranges.front() {
                // everything below the oldest range kept now counts as received
                self.floor = first.start().checked_sub(1);
            }
        }
        self.unacked_any = self.unacked_any.saturating_add(1);
        !in_order
    }

    /// Gives back the room the ranges grew into beyond those held (an idle connection's
    /// trim): usually one range is left, where a busy moment made room for four or more.
    pub(crate) fn release_idle(&mut self) {
        self.ranges.shrink_to_fit();
    }

    /// Whether enough packets that elicit no ACK arrived since the last ACK that the next
    /// ack-eliciting packet should carry one ([`NON_ELICITING_ACK_EVERY`]).
    pub(crate) fn ack_for_numbering(&self) -> bool {
        self.unacked_any >= NON_ELICITING_ACK_EVERY
    }

    /// The incoming loss rate, once 32 packets have been seen (0 before: a rate from a handful
    /// of packets would repeat ACKs on the strength of one early loss).
    pub(crate) fn loss(&self) -> f64 {
        if self.loss.samples() < 32 {
            0.0
        } else {
            self.loss.value()
        }
    }

    /// Ranges newest first, for an ACK frame: the newest always, older ones until they are
    /// settled ([`ACK_SETTLE`]).
    pub(crate) fn ranges_desc(&self) -> impl Iterator<Item = RangeInclusive<u64>> + '_ {
        let settled = (self.acks_sent >= ACK_SETTLE as u64)
            .then(|| self.reported[(self.acks_sent % ACK_SETTLE as u64) as usize]);
        self.ranges
            .iter()
            .rev()
            .enumerate()
            .filter(move |(i, r)| *i == 0 || settled.is_none_or(|s| *r.end() > s))
            .map(|(_, r)| r.clone())
    }

    /// How long the largest packet has waited for its ACK.
    pub(crate) fn ack_delay(&self, now: Stamp) -> Duration {
        now.since(self.largest_at).unwrap_or_default()
    }

    /// Whether an ACK must be sent now.
    /// (`now` is asked for only when a delayed ACK is pending.)
    pub(crate) fn ack_due(&self, now: impl FnOnce() -> Stamp) -> bool {
        self.immediate || (self.deadline != Stamp::NONE && self.deadline <= now())
    }

    /// Bookkeeping after an ACK went out.
    pub(crate) fn on_ack_sent(&mut self) {
        if let Some(largest) = self.largest() {
            self.reported[(self.acks_sent % ACK_SETTLE as u64) as usize] = largest;
            self.acks_sent += 1;
        }
        self.repeats_left = if self.changed {
            ACK_REPEATS
        } else {
            self.repeats_left.saturating_sub(1)
        };
        self.repeat_armed = false;
        self.unacked_any = 0;
        self.unacked_eliciting = 0;
        self.immediate = false;
        self.deadline = Stamp::NONE;
        self.changed = false;
    }
}

impl Pack for ReceivedPackets {
    fn pack(&self, p: &mut Packer) -> bool {
        // the ranges ascend and are disjoint: each as the gap from the last one's end and its
        // length, small numbers
        p.u64(self.ranges.len() as u64);
        let mut from = 0;
        for r in &self.ranges {
            p.u64(r.start() - from);
            p.u64(r.end() - r.start());
            from = *r.end();
        }
        p.opt_u64(self.floor);
        p.u64(self.max_ranges as u64);
        p.stamp(self.largest_at);
        p.u64(u64::from(self.unacked_eliciting));
        p.bool(self.immediate);
        p.stamp(self.deadline);
        p.bool(self.changed);
        p.u64(u64::from(self.unacked_any));
        p.u64(u64::from(self.repeats_left));
        p.bool(self.repeat_armed);
        self.loss.pack(p);
        p.u64(self.largest_len as u64);
        for r in self.reported {
            p.u64(r);
        }
        p.u64(self.acks_sent);
        true
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        // each range takes two bytes at least: a damaged count cannot run on
        let n = usize::try_from(u.u64()).unwrap_or(0).min(u.remaining() / 2);
        let mut ranges = VecDeque::with_capacity(n);
        let mut from = 0u64;
        for _ in 0..n {
            let start = from.wrapping_add(u.u64());
            let end = start.wrapping_add(u.u64());
            ranges.push_back(start..=end);
            from = end;
        }
        Self {
            ranges,
            floor: u.opt_u64(),
            max_ranges: usize::try_from(u.u64()).unwrap_or(0),
            largest_at: u.stamp(),
            unacked_eliciting: u32::try_from(u.u64()).unwrap_or(0),
            immediate: u.bool(),
            deadline: u.stamp(),
            changed: u.bool(),
            unacked_any: u32::try_from(u.u64()).unwrap_or(0),
            repeats_left: u8::try_from(u.u64()).unwrap_or(0),
            repeat_armed: u.bool(),
            loss: Rate::unpack(u),
            largest_len: usize::try_from(u.u64()).unwrap_or(0),
            reported: std::array::from_fn(|_| u.u64()),
            acks_sent: u.u64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_detects_order() {
        let now = Stamp(0);
        let mut r = ReceivedPackets::new(8);
        assert!(!r.insert(0, now));
        assert!(!r.insert(1, now));
        assert!(r.insert(3, now)); // gap
        assert!(r.insert(2, now)); // fills the gap: still out of order
        assert_eq!(r.ranges_desc().collect::<Vec<_>>(), vec![0..=3]);
        assert!(!r.insert(4, now));
        assert!(r.contains(2));
        assert!(!r.contains(5));
    }

    #[test]
    fn settled_ranges_leave_the_ack() {
        let now = Stamp(0);
        let mut r = ReceivedPackets::new(8);
        for pn in [0, 1, 2, 4, 5] {
            r.insert(pn, now);
        }
        assert_eq!(r.ranges_desc().collect::<Vec<_>>(), vec![4..=5, 0..=2]);
        // the first three ACKs report the old range...
        for pn in 6..9 {
            assert_eq!(r.ranges_desc().count(), 2, "before pn {pn}");
            r.on_ack_sent();
            r.insert(pn, now);
        }
        // ...after which it is settled: only the newest range is reported
        assert_eq!(r.ranges_desc().collect::<Vec<_>>(), vec![4..=8]);
        // a new gap is reported again
        r.insert(10, now);
        assert_eq!(r.ranges_desc().collect::<Vec<_>>(), vec![10..=10, 4..=8]);
    }

    #[test]
    fn bounded_ranges_raise_floor() {
        let now = Stamp(0);
        let mut r = ReceivedPackets::new(2);
        r.insert(0, now);
        r.insert(2, now);
        r.insert(4, now);
        assert_eq!(r.ranges_desc().count(), 2);
        assert!(r.contains(0));
        assert!(r.contains(1), "below the floor counts as received");
        assert!(!r.contains(3));
    }
}
