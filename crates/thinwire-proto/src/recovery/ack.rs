//! The receiver's record of packet numbers: duplicate detection and what the next ACK says.

use std::collections::VecDeque;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

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
    largest_at: Option<Instant>,
    /// Ack-eliciting packets received since the last ACK was sent.
    pub(crate) unacked_eliciting: u32,
    /// Whether an ACK should go out at the next opportunity.
    pub(crate) immediate: bool,
    /// When a delayed ACK falls due, if one is pending.
    pub(crate) deadline: Option<Instant>,
    /// Whether anything new arrived since the last ACK (ack-eliciting or not).
    pub(crate) changed: bool,
}

impl ReceivedPackets {
    pub(crate) fn new(max_ranges: usize) -> Self {
        Self {
            ranges: VecDeque::new(),
            floor: None,
            max_ranges: max_ranges.max(1),
            largest_at: None,
            unacked_eliciting: 0,
            immediate: false,
            deadline: None,
            changed: false,
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

    /// Records `pn` (must not be `contains`ed). Returns true when it arrived out of order: not
    /// exactly one above the largest, or while a gap is open below it.
    pub(crate) fn insert(&mut self, pn: u64, now: Instant) -> bool {
        let largest = self.largest();
        let in_order = match largest {
            None => true,
            Some(l) => pn == l + 1 && self.ranges.len() == 1,
        };
        if largest.is_none_or(|l| pn > l) {
            self.largest_at = Some(now);
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
        self.changed = true;
        !in_order
    }

    /// Ranges newest first, for an ACK frame.
    pub(crate) fn ranges_desc(&self) -> impl Iterator<Item = RangeInclusive<u64>> + '_ {
        self.ranges.iter().rev().cloned()
    }

    /// How long the largest packet has waited for its ACK.
    pub(crate) fn ack_delay(&self, now: Instant) -> Duration {
        self.largest_at
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default()
    }

    /// Whether an ACK must be sent now.
    pub(crate) fn ack_due(&self, now: Instant) -> bool {
        self.immediate || self.deadline.is_some_and(|d| d <= now)
    }

    /// Bookkeeping after an ACK went out.
    pub(crate) fn on_ack_sent(&mut self) {
        self.unacked_eliciting = 0;
        self.immediate = false;
        self.deadline = None;
        self.changed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_detects_order() {
        let now = Instant::now();
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
    fn bounded_ranges_raise_floor() {
        let now = Instant::now();
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
