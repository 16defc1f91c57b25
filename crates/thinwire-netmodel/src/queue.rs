//! Bandwidth-limited queue in front of a link.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::config::QueueLimit;

/// Serializer state: packets waiting for or being put on the wire.
#[derive(Debug, Clone, Default)]
pub(super) struct Serializer {
    /// Time at which the serializer becomes idle.
    busy_until: Option<Instant>,
    /// Packets not fully serialized yet: (serialization end, size).
    backlog: VecDeque<(Instant, usize)>,
    /// Sum of the sizes in `backlog`.
    backlog_bytes: usize,
}

/// Result of offering a packet to the serializer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admission {
    /// The packet leaves the serializer (last bit on the wire) at this time.
    Departs(Instant),
    /// The queue limit dropped the packet.
    Dropped,
}

/// Time to serialize `size` bytes at `bps` bits per second (rounded up to the
/// nanosecond).
pub(super) fn serialization_time(size: usize, bps: u64) -> Duration {
    let bits = size as u128 * 8;
    let nanos = (bits * 1_000_000_000).div_ceil(bps as u128);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

impl Serializer {
    /// Bytes queued or being serialized at `now`.
    pub(super) fn backlog_bytes(&mut self, now: Instant) -> usize {
        self.expire(now);
        self.backlog_bytes
    }

    fn expire(&mut self, now: Instant) {
        while let Some(&(end, size)) = self.backlog.front() {
            if end <= now {
                self.backlog.pop_front();
                self.backlog_bytes -= size;
            } else {
                break;
            }
        }
    }

    /// Offers a packet of `size` bytes at `now`.
    pub(super) fn admit(
        &mut self,
        now: Instant,
        size: usize,
        bps: Option<u64>,
        limit: QueueLimit,
    ) -> Admission {
        let Some(bps) = bps else {
            return Admission::Departs(now);
        };
        self.expire(now);
        let start = match self.busy_until {
            Some(t) if t > now => t,
            _ => now,
        };
        match limit {
            QueueLimit::Unlimited => {}
            QueueLimit::Bytes(max) => {
                if self.backlog_bytes + size > max {
                    return Admission::Dropped;
                }
            }
            QueueLimit::Time(max) => {
                if start - now > max {
                    return Admission::Dropped;
                }
            }
            QueueLimit::Packets(max) => {
                // After `expire`, the front of the backlog is on the wire; the
                // others wait.
                if self.backlog.len().saturating_sub(1) >= max {
                    return Admission::Dropped;
                }
            }
        }
        let end = start + serialization_time(size, bps);
        self.busy_until = Some(end);
        self.backlog.push_back((end, size));
        self.backlog_bytes += size;
        Admission::Departs(end)
    }

    /// Queueing delay a packet sent at `now` would see before its
    /// serialization starts.
    pub(super) fn queue_delay(&self, now: Instant) -> Duration {
        match self.busy_until {
            Some(t) if t > now => t - now,
            _ => Duration::ZERO,
        }
    }
}
