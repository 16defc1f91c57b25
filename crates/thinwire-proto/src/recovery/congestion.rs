//! A packet-counting NewReno congestion controller that leaves thin streams alone.
//!
//! The window is counted in packets, not bytes: game packets are small and what loads a congested
//! router queue is the packet rate as much as the bytes. The window never shrinks below
//! `min_window` (by default the thin-stream threshold, 4 packets), so a stream with fewer packets in
//! flight than that is never held back, while a connection that stops being thin is bounded and
//! halves its window once per round trip with loss (RFC 5681 / RFC 6582 behaviour in packet units).

use std::time::Instant;

/// Congestion window state.
#[derive(Debug, Clone)]
pub(crate) struct Congestion {
    window: f64,
    ssthresh: f64,
    min_window: f64,
    max_window: f64,
    recovery_start: Option<Instant>,
}

impl Congestion {
    /// A controller with the given initial, minimum and maximum windows (packets).
    pub(crate) fn new(initial: u32, min: u32, max: u32) -> Self {
        Self {
            window: initial.max(min) as f64,
            ssthresh: f64::INFINITY,
            min_window: min as f64,
            max_window: max.max(min) as f64,
            recovery_start: None,
        }
    }

    /// The current window in whole packets.
    pub(crate) fn window(&self) -> u32 {
        self.window as u32
    }

    /// Whether another packet may be sent with `in_flight` packets outstanding.
    pub(crate) fn can_send(&self, in_flight: usize) -> bool {
        (in_flight as f64) < self.window.floor()
    }

    /// One packet sent at `sent` was acknowledged.
    pub(crate) fn on_ack(&mut self, sent: Instant) {
        if self.recovery_start.is_some_and(|start| sent <= start) {
            return; // acks of packets sent before the loss do not grow the window
        }
        if self.window < self.ssthresh {
            self.window += 1.0; // slow start
        } else {
            self.window += 1.0 / self.window; // congestion avoidance: +1 packet per RTT
        }
        self.window = self.window.min(self.max_window);
    }

    /// A packet sent at `sent` was declared lost at `now`; reacts once per recovery period.
    pub(crate) fn on_loss(&mut self, sent: Instant, now: Instant) {
        if self.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        self.recovery_start = Some(now);
        self.window = (self.window / 2.0).max(self.min_window);
        self.ssthresh = self.window;
    }

    /// A retransmission timeout fired on a non-thin connection: collapse to the minimum window.
    pub(crate) fn on_timeout(&mut self, now: Instant) {
        self.ssthresh = (self.window / 2.0).max(self.min_window);
        self.window = self.min_window;
        self.recovery_start = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn halves_once_per_recovery_and_never_below_min() {
        let t0 = Instant::now();
        let mut c = Congestion::new(16, 4, 1000);
        c.on_loss(t0, t0 + Duration::from_millis(10));
        assert_eq!(c.window(), 8);
        // a second loss of a packet sent before recovery started: no further reduction
        c.on_loss(
            t0 + Duration::from_millis(5),
            t0 + Duration::from_millis(11),
        );
        assert_eq!(c.window(), 8);
        c.on_loss(
            t0 + Duration::from_millis(20),
            t0 + Duration::from_millis(30),
        );
        assert_eq!(c.window(), 4);
        c.on_loss(
            t0 + Duration::from_millis(40),
            t0 + Duration::from_millis(50),
        );
        assert_eq!(c.window(), 4);
        assert!(c.can_send(3));
        assert!(!c.can_send(4));
    }

    #[test]
    fn grows_in_slow_start_then_linearly() {
        let t0 = Instant::now();
        let mut c = Congestion::new(4, 4, 1000);
        for _ in 0..4 {
            c.on_ack(t0);
        }
        assert_eq!(c.window(), 8);
        c.on_loss(t0, t0);
        let w = c.window();
        for _ in 0..w {
            c.on_ack(t0 + Duration::from_millis(1));
        }
        // congestion avoidance: about one packet more per window's worth of acks
        assert_eq!(c.window(), w);
        let mut acks = w;
        while c.window() == w {
            c.on_ack(t0 + Duration::from_millis(1));
            acks += 1;
        }
        assert_eq!(c.window(), w + 1);
        assert!(acks <= w + 2, "{acks}");
    }
}
