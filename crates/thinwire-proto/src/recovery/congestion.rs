//! A packet-counting NewReno congestion controller that leaves thin streams alone.
//!
//! The window is counted in packets, not bytes: game packets are small and what loads a congested
//! router queue is the packet rate as much as the bytes. The window never shrinks below
//! `min_window` (by default the thin-stream threshold, 4 packets), so a stream with fewer packets in
//! flight than that is never held back, while a connection that stops being thin is bounded and
//! halves its window once per round trip with loss (RFC 5681 / RFC 6582 behaviour in packet units).
//!
//! A connection that carries many flows (a gateway's trunk) can be given a *weight* N: it then
//! behaves like N NewReno flows, as MulTCP does (Crowcroft & Oechslin, "Differentiated end-to-end
//! Internet services using a weighted proportional fair sharing TCP", CCR 1998): N packets more
//! per round trip in congestion avoidance, a cut of 1/(2N) of the window per loss event, and a
//! timeout costs 1/N of it (one of the N flows timing out), so the aggregate takes N flows'
//! share of a bottleneck, no more, and is still congestion-controlled.

use crate::pack::{Pack, Packer, Unpacker};
use crate::stamp::Stamp;

/// Congestion window state.
#[derive(Debug, Clone)]
pub(crate) struct Congestion {
    window: f64,
    ssthresh: f64,
    min_window: f64,
    max_window: f64,
    /// When the current recovery period began ([`Stamp::NONE`]: none has).
    recovery_start: Stamp,
    /// N: how many flows the connection stands for (1 for an ordinary connection).
    weight: f64,
}

impl Congestion {
    /// A controller with the given initial, minimum and maximum windows (packets).
    pub(crate) fn new(initial: u32, min: u32, max: u32) -> Self {
        Self {
            window: initial.max(min) as f64,
            ssthresh: f64::INFINITY,
            min_window: min as f64,
            max_window: max.max(min) as f64,
            recovery_start: Stamp::NONE,
            weight: 1.0,
        }
    }

    /// Sets N, the number of flows this connection carries (at least 1).
    pub(crate) fn set_weight(&mut self, flows: u32) {
        self.weight = f64::from(flows.max(1));
    }

    /// N, the number of flows the connection carries.
    pub(crate) fn weight(&self) -> usize {
        self.weight as usize
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
    pub(crate) fn on_ack(&mut self, sent: Stamp) {
        if self.recovery_start != Stamp::NONE && sent <= self.recovery_start {
            return; // acks of packets sent before the loss do not grow the window
        }
        if self.window < self.ssthresh {
            self.window += 1.0; // slow start
        } else {
            // congestion avoidance: +N packets per RTT
            self.window += self.weight / self.window;
        }
        self.window = self.window.min(self.max_window);
    }

    /// A packet sent at `sent` was declared lost at `now`; reacts once per recovery period.
    pub(crate) fn on_loss(&mut self, sent: Stamp, now: Stamp) {
        if self.recovery_start != Stamp::NONE && sent <= self.recovery_start {
            return;
        }
        self.recovery_start = now;
        self.window = (self.window * (1.0 - 0.5 / self.weight)).max(self.min_window);
        self.ssthresh = self.window;
    }

    /// A retransmission timeout fired on a non-thin connection: collapse to the minimum window
    /// (with weight N, one of the N flows collapses: the window loses 1/N of itself).
    pub(crate) fn on_timeout(&mut self, now: Stamp) {
        self.ssthresh = (self.window * (1.0 - 0.5 / self.weight)).max(self.min_window);
        self.window = if self.weight > 1.0 {
            (self.window * (1.0 - 1.0 / self.weight)).max(self.min_window)
        } else {
            self.min_window
        };
        self.recovery_start = now;
    }
}

impl Pack for Congestion {
    fn pack(&self, p: &mut Packer) -> bool {
        p.f64(self.window);
        p.f64(self.ssthresh);
        p.f64(self.min_window);
        p.f64(self.max_window);
        p.stamp(self.recovery_start);
        p.f64(self.weight);
        true
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        Self {
            window: u.f64(),
            ssthresh: u.f64(),
            min_window: u.f64(),
            max_window: u.f64(),
            recovery_start: u.stamp(),
            weight: u.f64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// `ms` milliseconds after the base.
    fn t(ms: u64) -> Stamp {
        Stamp(0).after(Duration::from_millis(ms))
    }

    #[test]
    fn halves_once_per_recovery_and_never_below_min() {
        let mut c = Congestion::new(16, 4, 1000);
        c.on_loss(t(0), t(10));
        assert_eq!(c.window(), 8);
        // a second loss of a packet sent before recovery started: no further reduction
        c.on_loss(t(5), t(11));
        assert_eq!(c.window(), 8);
        c.on_loss(t(20), t(30));
        assert_eq!(c.window(), 4);
        c.on_loss(t(40), t(50));
        assert_eq!(c.window(), 4);
        assert!(c.can_send(3));
        assert!(!c.can_send(4));
    }

    #[test]
    fn a_weighted_window_acts_as_n_flows() {
        let mut one = Congestion::new(100, 4, 10_000);
        let mut ten = Congestion::new(100, 4, 10_000);
        ten.set_weight(10);
        one.on_loss(t(0), t(1));
        ten.on_loss(t(0), t(1));
        assert_eq!(one.window(), 50, "one flow halves");
        assert_eq!(
            ten.window(),
            95,
            "one of ten flows halves: 1/20 of the aggregate"
        );
        // a window's worth of acks: one packet more for one flow, ten for ten flows
        let (w1, w10) = (one.window(), ten.window());
        for _ in 0..w1 {
            one.on_ack(t(2));
        }
        for _ in 0..w10 {
            ten.on_ack(t(2));
        }
        assert!((w1..=w1 + 1).contains(&one.window()), "{}", one.window());
        assert!(
            (w10 + 9..=w10 + 10).contains(&ten.window()),
            "{}",
            ten.window()
        );
        // a timeout: one flow of ten collapses
        ten.on_timeout(t(3));
        assert!((94..=95).contains(&ten.window()), "{}", ten.window());
        one.on_timeout(t(3));
        assert_eq!(one.window(), 4);
    }

    #[test]
    fn grows_in_slow_start_then_linearly() {
        let mut c = Congestion::new(4, 4, 1000);
        for _ in 0..4 {
            c.on_ack(t(0));
        }
        assert_eq!(c.window(), 8);
        c.on_loss(t(0), t(0));
        let w = c.window();
        for _ in 0..w {
            c.on_ack(t(1));
        }
        // congestion avoidance: about one packet more per window's worth of acks
        assert_eq!(c.window(), w);
        let mut acks = w;
        while c.window() == w {
            c.on_ack(t(1));
            acks += 1;
        }
        assert_eq!(c.window(), w + 1);
        assert!(acks <= w + 2, "{acks}");
    }
}
