//! Moments as signed nanoseconds from a base, the endpoint's start: 8 bytes where an `Instant`
//! takes 16 and an `Option<Instant>` 16, exact both ways (an `Instant` minus another is a whole
//! number of nanoseconds, and adding it back gives the same `Instant`), and ordered by plain
//! integer comparison. A connection makes them from `Instant`s (`Timers::stamp`); the
//! endpoint's timer table keeps its deadlines the same way.

use std::time::{Duration, Instant};

/// No moment: after every moment (a timer not armed).
const UNSET: i64 = i64::MAX;

/// A moment as signed nanoseconds from the base, or [`Stamp::NONE`]. Stamps order as their
/// moments, [`Stamp::NONE`] after every moment. (Moments 292 years or more from the base
/// saturate.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Stamp(pub(crate) i64);

/// No moment.
impl Default for Stamp {
    fn default() -> Self {
        Stamp::NONE
    }
}

impl Stamp {
    /// No moment (the `None` of an optional one).
    pub(crate) const NONE: Stamp = Stamp(UNSET);

    /// The nanoseconds from the base, unless this is [`Stamp::NONE`].
    #[cfg(test)]
    pub(crate) fn get(self) -> Option<i64> {
        (self.0 != UNSET).then_some(self.0)
    }

    /// This moment plus `d` (saturating below [`Stamp::NONE`]); none stays none.
    pub(crate) fn after(self, d: Duration) -> Stamp {
        if self == Stamp::NONE {
            self
        } else {
            Stamp(self.0.saturating_add(nanos(d)).min(UNSET - 1))
        }
    }

    /// This moment minus `d`, unless that is before the earliest moment a stamp holds (or
    /// this is no moment).
    pub(crate) fn before(self, d: Duration) -> Option<Stamp> {
        if self == Stamp::NONE {
            return None;
        }
        self.0.checked_sub(nanos(d)).map(Stamp)
    }

    /// The time from `earlier` to this moment (zero if `earlier` is not earlier); `None` when
    /// either is no moment.
    pub(crate) fn since(self, earlier: Stamp) -> Option<Duration> {
        if self == Stamp::NONE || earlier == Stamp::NONE {
            return None;
        }
        Some(Duration::from_nanos(
            u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0),
        ))
    }
}

/// `d` in nanoseconds (below [`UNSET`]).
pub(crate) fn nanos(d: Duration) -> i64 {
    /// Whole seconds below which a duration's nanoseconds stay below [`UNSET`].
    const MAX_SECS: u64 = (UNSET as u64) / 1_000_000_000 - 1;
    if d.as_secs() <= MAX_SECS {
        (d.as_secs() * 1_000_000_000 + u64::from(d.subsec_nanos())) as i64
    } else {
        UNSET - 1
    }
}

/// `at - from` in signed nanoseconds, below [`UNSET`] (a moment 292 years or more away
/// saturates).
pub(crate) fn signed_nanos(at: Instant, from: Instant) -> i64 {
    match at.checked_duration_since(from) {
        Some(d) => nanos(d),
        None => -nanos(from - at),
    }
}

/// The instant `offset` nanoseconds from `base`: the inverse of [`signed_nanos`], exact.
pub(crate) fn instant_at(base: Instant, offset: i64) -> Instant {
    let d = Duration::from_nanos(offset.unsigned_abs());
    if offset >= 0 {
        base + d
    } else {
        base - d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Durations convert to the nanosecond up to the limit and saturate below [`UNSET`] past
    /// it, and instants go to offsets and back exactly, on either side of the base.
    #[test]
    fn conversions_are_exact_and_saturate() {
        assert_eq!(nanos(Duration::ZERO), 0);
        assert_eq!(nanos(Duration::new(3, 7)), 3_000_000_007);
        let max = Duration::from_nanos(UNSET as u64 - 1);
        assert!(nanos(max) < UNSET);
        assert_eq!(nanos(Duration::MAX), UNSET - 1);
        let secs = (UNSET as u64) / 1_000_000_000 - 1;
        assert_eq!(
            nanos(Duration::new(secs, 999_999_999)),
            (secs * 1_000_000_000 + 999_999_999) as i64
        );
        let base = Instant::now() + Duration::from_secs(10);
        for off in [-7_000_000_123i64, -1, 0, 1, 42_000_000_001] {
            let at = instant_at(base, off);
            assert_eq!(signed_nanos(at, base), off);
            assert_eq!(instant_at(base, signed_nanos(at, base)), at);
        }
        let s = Stamp(5);
        assert_eq!(s.after(Duration::from_nanos(3)), Stamp(8));
        assert_eq!(Stamp::NONE.after(Duration::from_secs(1)), Stamp::NONE);
        assert_eq!(Stamp(8).since(s), Some(Duration::from_nanos(3)));
        assert_eq!(s.since(Stamp(8)), Some(Duration::ZERO));
        assert_eq!(s.since(Stamp::NONE), None);
        assert!(Stamp(i64::MIN) < s && s < Stamp::NONE);
    }
}
