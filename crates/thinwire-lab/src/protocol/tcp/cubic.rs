//! CUBIC congestion control as Linux 2.6.23 ran it by default (`tcp_cubic.c`,
//! "CUBIC v2.1", kernels 2.6.22 to 2.6.24).
//!
//! * Decrease: after a loss `ssthresh = max(cwnd · 819/1024, 2)` (β = 0.8);
//!   the window before the loss becomes `W_max`, reduced to
//!   `cwnd · (1 + β)/2` when it is below the previous `W_max` ("fast
//!   convergence").
//! * Growth in congestion avoidance: the target window one minimum RTT ahead
//!   follows `W(t) = C·(t − K)³ + W_max` with `C = 410/1024 ≈ 0.4` per s³ and
//!   `K = ∛((W_max − cwnd)/C)`, t counted from the first acknowledgement
//!   after the loss (the epoch); the window grows by one segment every `cnt`
//!   acknowledgements, `cnt = cwnd / (target − cwnd)`, at most 20 while no
//!   `W_max` is known, at least as fast as a Reno flow of the same β would
//!   ("TCP friendliness"), scaled by the measured packets per ACK (delayed
//!   ACKs), recomputed at most every 1/32 s while the window is unchanged.
//! * A retransmission timeout (state `TCP_CA_Loss`) forgets everything,
//!   `W_max` included.
//! * Undo of a spurious reduction restores `max(cwnd, W_max)`.

use std::time::{Duration, Instant};

/// β scaled by 1024 (`beta = 819` in 2.6.23).
pub(crate) const BETA: u32 = 819;
/// The cubic constant C in segments per s³ (`bic_scale · 10 / 1024`).
pub(crate) const C: f64 = 410.0 / 1024.0;
/// Reno-equivalent growth of the "TCP friendly" estimate: one segment per
/// `cwnd · BETA_SCALE / 8` acknowledgements (`8·(1024+β) / 3 / (1024−β)`).
const BETA_SCALE: u32 = 8 * (1024 + BETA) / 3 / (1024 - BETA);
/// Fixed-point shift of the delayed-ACK ratio.
const ACK_RATIO_SHIFT: u32 = 4;
/// Minimum time between recomputations of `cnt` at an unchanged window.
const UPDATE_GAP: Duration = Duration::from_micros(31_250);

/// CUBIC's per-connection state (`struct bictcp`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Cubic {
    /// Acknowledgements per window increment.
    cnt: u32,
    /// `W_max`: the window before the last reduction (0: none known).
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: Option<Instant>,
    origin: f64,
    /// Seconds from the epoch start to the plateau at `W_max`.
    k: f64,
    delay_min: Option<Duration>,
    epoch_start: Option<Instant>,
    ack_cnt: u32,
    tcp_cwnd: u32,
    /// Packets per ACK, scaled by 16 (`delayed_ack`; starts at 2).
    delayed_ack: u32,
    /// Acknowledgements since the last increment (`snd_cwnd_cnt`).
    cwnd_cnt: u32,
}

impl Cubic {
    /// Fresh state (`bictcp_init`).
    pub(crate) fn new() -> Self {
        Cubic {
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            ..Cubic::default()
        }
    }

    /// `W_max` (0 while none is known).
    #[cfg(test)]
    pub(crate) fn w_max(&self) -> u32 {
        self.last_max_cwnd
    }

    /// Seconds from the start of the growth epoch to the plateau at `W_max`.
    #[cfg(test)]
    pub(crate) fn k(&self) -> f64 {
        self.k
    }

    /// A loss at window `cwnd` (`bictcp_recalc_ssthresh`): returns ssthresh.
    pub(crate) fn on_loss(&mut self, cwnd: u32) -> u32 {
        self.epoch_start = None;
        self.cwnd_cnt = 0;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            cwnd * (1024 + BETA) / (2 * 1024)
        } else {
            cwnd
        };
        (cwnd * BETA / 1024).max(2)
    }

    /// A retransmission timeout (`TCP_CA_Loss`: `bictcp_reset`).
    pub(crate) fn on_timeout(&mut self) {
        *self = Cubic::new();
    }

    /// The window an undo restores (`bictcp_undo_cwnd`).
    pub(crate) fn undo_cwnd(&self, cwnd: u32) -> u32 {
        cwnd.max(self.last_max_cwnd)
    }

    /// An RTT sample (`delay_min`).
    pub(crate) fn rtt_sample(&mut self, r: Duration) {
        self.delay_min = Some(self.delay_min.map_or(r, |d| d.min(r)));
    }

    /// An acknowledgement of `acked` segments outside recovery
    /// (`bictcp_acked`: the packets-per-ACK ratio).
    pub(crate) fn on_acked(&mut self, acked: u32) {
        // An average with gain 1/16 of the segments each ACK covers, scaled by 16.
        let step = acked.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
        self.delayed_ack = self.delayed_ack.wrapping_add(step).max(1);
    }

    /// Congestion avoidance on one acknowledgement at window `cwnd`: the new
    /// window (`bictcp_cong_avoid`).
    pub(crate) fn cong_avoid(&mut self, now: Instant, cwnd: u32) -> u32 {
        self.update(now, cwnd);
        if self.cwnd_cnt >= self.cnt {
            self.cwnd_cnt = 0;
            cwnd + 1
        } else {
            self.cwnd_cnt += 1;
            cwnd
        }
    }

    /// The cubic target window at `now` (segments), once an epoch started.
    pub(crate) fn target(&self, now: Instant) -> Option<f64> {
        let start = self.epoch_start?;
        let min_rtt = self.delay_min.unwrap_or_default();
        let t = (now + min_rtt)
            .saturating_duration_since(start)
            .as_secs_f64();
        Some(self.origin + C * (t - self.k).powi(3))
    }

    /// `bictcp_update`: recomputes `cnt`.
    fn update(&mut self, now: Instant, cwnd: u32) {
        self.ack_cnt += 1;
        if self.last_cwnd == cwnd
            && self
                .last_time
                .is_some_and(|t| now.saturating_duration_since(t) <= UPDATE_GAP)
        {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = Some(now);
        if self.epoch_start.is_none() {
            self.epoch_start = Some(now);
            self.ack_cnt = 1;
            self.tcp_cwnd = cwnd;
            if self.last_max_cwnd <= cwnd {
                self.k = 0.0;
                self.origin = f64::from(cwnd);
            } else {
                self.k = (f64::from(self.last_max_cwnd - cwnd) / C).cbrt();
                self.origin = f64::from(self.last_max_cwnd);
            }
        }
        let target = self.target(now).unwrap_or(f64::from(cwnd)).floor();
        let w = f64::from(cwnd);
        let mut cnt = if target > w {
            (w / (target - w)) as u32
        } else {
            100 * cwnd
        };
        if self.last_max_cwnd == 0 && cnt > 20 {
            cnt = 20;
        }
        // TCP friendliness: never slower than Reno with the same β.
        let per = (cwnd * BETA_SCALE) >> 3;
        if per > 0 {
            while self.ack_cnt > per {
                self.ack_cnt -= per;
                self.tcp_cwnd += 1;
            }
        }
        if self.tcp_cwnd > cwnd {
            cnt = cnt.min(cwnd / (self.tcp_cwnd - cwnd));
        }
        cnt = (cnt << ACK_RATIO_SHIFT) / self.delayed_ack.max(1);
        self.cnt = cnt.max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_keeps_0_8_of_the_window_and_fast_convergence_lowers_w_max() {
        let mut c = Cubic::new();
        assert_eq!(c.on_loss(100), 79, "100 * 819 / 1024");
        assert_eq!(c.w_max(), 100);
        // A second loss below W_max: W_max = 79 * (1 + 0.8) / 2.
        assert_eq!(c.on_loss(79), 63);
        assert_eq!(c.w_max(), 71);
        assert_eq!(c.undo_cwnd(60), 71);
        c.on_timeout();
        assert_eq!(c.w_max(), 0, "a timeout forgets W_max");
        assert_eq!(c.on_loss(2), 2, "never below 2");
    }

    #[test]
    fn the_window_climbs_the_cubic_curve_back_to_w_max_at_k() {
        let rtt = Duration::from_millis(100);
        let mut c = Cubic::new();
        c.rtt_sample(rtt);
        let mut cwnd = c.on_loss(100);
        let start = Instant::now();
        let mut now = start;
        // One ACK per segment, a window of ACKs per RTT.
        let mut at_half_k = None;
        while now < start + Duration::from_secs(4) {
            let (gap, acks) = (rtt / cwnd, cwnd);
            for _ in 0..acks {
                c.on_acked(1);
                cwnd = c.cong_avoid(now, cwnd);
                now += gap;
            }
            let k = Duration::from_secs_f64(c.k());
            if at_half_k.is_none() && now >= start + k / 2 {
                at_half_k = Some(cwnd);
            }
        }
        // K = cbrt((100 - 79) / 0.4) = 3.74 s.
        assert!((c.k() - 3.744).abs() < 0.01, "K = {}", c.k());
        let half = at_half_k.expect("reached K/2");
        assert!((88..=99).contains(&half), "concave: {half} at K/2");
        assert!((97..=102).contains(&cwnd), "about W_max at K: {cwnd}");
        let plateau = c.target(start + Duration::from_secs_f64(c.k()) - rtt);
        assert!((plateau.expect("epoch") - 100.0).abs() < 1e-6);
    }
}
