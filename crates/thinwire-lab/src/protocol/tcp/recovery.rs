//! The sender's reaction to acknowledgements and timeouts: RTT estimation and
//! the RTO, SACK scoreboard, congestion window growth, NewReno fast
//! recovery and the retransmission timer's expiry.

use std::time::{Duration, Instant};

use super::config::{LINEAR_RTO_PACKETS, THIN_PACKETS};
use super::{Congestion, RtoStyle, TcpConn, Undo};

impl TcpConn {
    /// The RTO from the current estimate, without backoff.
    fn rto_from_estimate(&self) -> Duration {
        let Some(srtt) = self.rtt.srtt() else {
            return self.cfg.initial_rto;
        };
        let dev = (self.rtt.rttvar() * 4).max(Duration::from_millis(1));
        let rto = match self.cfg.rto_style {
            RtoStyle::Rfc6298 => (srtt + dev).max(self.cfg.min_rto),
            RtoStyle::Linux => srtt + dev.max(self.cfg.min_rto),
        };
        let rto = if self.cfg.linear_rto && self.segs.len() < LINEAR_RTO_PACKETS {
            // Griwodz & Halvorsen, Sec. 4.4: (srtt >> 3) + min(srtt >> 4, rttvar),
            // where Linux's rttvar is the deviation term with its 200 ms floor.
            let linux_dev = dev.max(self.cfg.min_rto);
            srtt + (srtt / 2).min(linux_dev)
        } else {
            rto
        };
        rto.min(self.cfg.max_rto)
    }

    fn rtt_sample(&mut self, r: Duration) {
        self.rtt.sample(r);
    }

    /// Marks segments covered by the receiver's SACK blocks.
    fn on_sack(&mut self, blocks: &[(u64, u64)]) {
        for &(lo, hi) in blocks {
            for s in self.segs.iter_mut() {
                if s.start >= lo && s.end <= hi {
                    s.sacked = true;
                    s.lost = false;
                }
            }
        }
    }

    /// Marks the first segment neither SACKed nor acknowledged as lost and
    /// asks for its retransmission.
    fn mark_first_hole_lost(&mut self) {
        if let Some(s) = self.segs.iter_mut().find(|s| !s.sacked) {
            s.lost = true;
        }
        self.force_retransmit = true;
    }

    /// Slow-start threshold after a loss: half the flight (RFC 5681), the
    /// congestion window times Reno's `loss_beta_pct` as Linux computes it,
    /// or CUBIC's. Arms the undo of the reduction.
    fn loss_ssthresh(&mut self) -> f64 {
        if self.cfg.dsack_undo {
            self.undo = Undo {
                armed: true,
                retrans: 0,
                ranges: Vec::new(),
                // `tcp_current_ssthresh`.
                prior_ssthresh: self.ssthresh.max(self.cwnd * 0.75),
            };
        }
        match (self.cfg.linux_cwnd, self.cfg.congestion) {
            (true, Congestion::Cubic) => f64::from(self.cubic.on_loss(self.cwnd as u32)),
            (true, Congestion::Reno) => {
                (self.cwnd * f64::from(self.cfg.loss_beta_pct) / 100.0).max(2.0)
            }
            (false, _) => (self.pipe() as f64 / 2.0).max(2.0),
        }
    }

    /// Window growth on an acknowledgement of `acked` segments outside
    /// recovery, when the flight filled the window.
    fn grow(&mut self, now: Instant, acked: u32) {
        match (self.cfg.linux_cwnd, self.cfg.congestion) {
            (true, Congestion::Cubic) => {
                if self.cwnd <= self.ssthresh {
                    // `tcp_slow_start` without ABC: one segment per ACK.
                    self.cwnd += 1.0;
                } else {
                    self.cwnd = f64::from(self.cubic.cong_avoid(now, self.cwnd as u32));
                }
            }
            _ if self.cwnd < self.ssthresh => self.cwnd += f64::from(acked.min(2)),
            _ => self.cwnd += f64::from(acked) / self.cwnd,
        }
    }

    /// DSACK blocks (below the cumulative `ack`) that show retransmissions
    /// of the current episode unnecessary; when all were, the reduction is
    /// undone (`tcp_try_undo_dsack`, `tcp_undo_cwr`).
    fn on_dsack(&mut self, ack: u64, sack: &[(u64, u64)]) {
        if !self.cfg.dsack_undo || !self.undo.armed {
            return;
        }
        for &(lo, hi) in sack.iter().filter(|b| b.1 <= ack) {
            if let Some(i) = self.undo.ranges.iter().position(|r| r.0 <= lo && hi <= r.1) {
                self.undo.ranges.swap_remove(i);
                self.undo.retrans = self.undo.retrans.saturating_sub(1);
                if self.undo.retrans == 0 {
                    self.undo.armed = false;
                    self.stats.undos += 1;
                    self.cwnd = f64::from(self.cubic.undo_cwnd(self.cwnd as u32)).max(self.cwnd);
                    self.ssthresh = self.ssthresh.max(self.undo.prior_ssthresh);
                    // Back to the open state: nothing is considered lost.
                    self.in_recovery = false;
                    self.force_retransmit = false;
                    for s in &mut self.segs {
                        s.lost = false;
                    }
                }
            }
        }
    }

    /// Processes the acknowledgement fields of an arriving segment.
    pub(super) fn on_ack(&mut self, now: Instant, ack: u64, pure: bool, sack: &[(u64, u64)]) {
        // Linux grows the window only when the flight filled it
        // (`tcp_is_cwnd_limited`): an application-limited thin stream keeps
        // the window it uses.
        let cwnd_limited = !self.cfg.linux_cwnd || self.window_used();
        if ack > self.snd_una && ack <= self.snd_max {
            self.on_new_ack(now, ack, sack, cwnd_limited);
        } else if ack == self.snd_una && !self.segs.is_empty() {
            self.on_dup_ack(pure, sack);
        }
        self.on_dsack(ack, sack);
    }

    /// Linux's `tcp_is_cwnd_limited`: the flight fills the window, or (with
    /// TSO/GSO) leaves less than a third of it free.
    fn window_used(&self) -> bool {
        let (pipe, cwnd) = (self.pipe() as f64, self.cwnd.floor());
        pipe >= cwnd || (self.cfg.gso_cwnd_limited && (cwnd - pipe) * 3.0 < cwnd)
    }

    /// New data acknowledged up to `ack`.
    fn on_new_ack(&mut self, now: Instant, ack: u64, sack: &[(u64, u64)], cwnd_limited: bool) {
        let (acked_segs, sample) = self.take_acked(now, ack);
        if let Some(r) = sample {
            self.rtt_sample(r);
            self.cubic.rtt_sample(r);
        }
        if !self.in_recovery && acked_segs > 0 {
            self.cubic.on_acked(acked_segs);
        }
        self.on_sack(sack);
        // New acknowledgement: the backoff is cleared.
        self.rto = self.rto_from_estimate();
        self.dupacks = 0;
        if self.in_recovery {
            if ack >= self.recover {
                // Full acknowledgement: leave fast recovery.
                self.in_recovery = false;
                self.cwnd = self.ssthresh;
            } else {
                // Partial acknowledgement: retransmit the next hole.
                self.cwnd = (self.cwnd - f64::from(acked_segs) + 1.0).max(1.0);
                self.mark_first_hole_lost();
            }
        } else if cwnd_limited {
            self.grow(now, acked_segs);
        }
        self.rto_at = if self.segs.is_empty() {
            None
        } else {
            Some(now + self.rto)
        };
    }

    /// Drops the segments and messages acknowledged by `ack` (trimming a
    /// partially acknowledged segment) and advances `snd_una`. Returns the
    /// number of whole segments acknowledged and the RTT sample to take.
    fn take_acked(&mut self, now: Instant, ack: u64) -> (u32, Option<Duration>) {
        let mut acked_segs = 0u32;
        // Karn's rule as Linux applies it without timestamps: the RTT is sampled from
        // the oldest segment this acknowledgement covers, and not at all when it covers
        // a retransmitted one (its later segments were sent long before the
        // retransmission that this acknowledgement answers, so their "RTT" would include
        // the timeout, inflate the RTO, and feed on itself).
        let mut sample = None;
        let mut retransmitted_acked = false;
        while let Some(s) = self.segs.front() {
            if s.end <= ack {
                if s.tx_count > 1 {
                    retransmitted_acked = true;
                } else if sample.is_none() {
                    sample = Some(now - s.last_sent);
                }
                acked_segs += 1;
                if let Some(s) = self.segs.pop_front() {
                    for p in &s.parts {
                        self.rtx.on_acked(p);
                    }
                }
            } else {
                break;
            }
        }
        if let Some(s) = self.segs.front_mut() {
            // Partially acknowledged segment: trim it.
            if s.start < ack {
                s.start = ack;
                let done = s.parts.partition_point(|p| p.end <= ack);
                for p in s.parts.drain(..done) {
                    self.rtx.on_acked(&p);
                }
            }
        }
        self.snd_una = ack;
        while self.msgs.front().is_some_and(|m| m.end <= ack) {
            self.msgs.pop_front();
        }
        (acked_segs, sample.filter(|_| !retransmitted_acked))
    }

    /// An acknowledgement of nothing new while data is outstanding.
    fn on_dup_ack(&mut self, pure: bool, sack: &[(u64, u64)]) {
        self.on_sack(sack);
        // With SACK any acknowledgement reporting out-of-order data is a
        // duplicate; without, only pure ones (RFC 5681).
        let duplicate = if self.cfg.sack_dupacks {
            // DSACK blocks (below the acknowledgement) report old data.
            sack.iter().any(|b| b.1 > self.snd_una)
        } else {
            pure
        };
        if !duplicate {
            return;
        }
        self.dupacks += 1;
        let threshold = if self.cfg.thin_dupack && self.segs.len() < THIN_PACKETS {
            1
        } else {
            self.cfg.dupack_threshold
        };
        if self.in_recovery {
            self.cwnd += 1.0;
        } else if self.dupacks >= threshold && self.snd_una >= self.recover {
            self.stats.fast_retransmits += 1;
            self.ssthresh = self.loss_ssthresh();
            self.cwnd = self.ssthresh + f64::from(threshold);
            self.in_recovery = true;
            self.recover = self.snd_max;
            self.mark_first_hole_lost();
        }
    }

    /// With timestamps, after a timeout: an acknowledgement echoing a clock
    /// older than the timeout's retransmission answers an original
    /// transmission, so the timeout was spurious; the segments it marked
    /// lost are not resent and the window is restored (Linux 2.6's
    /// `tcp_try_undo_loss`, `tcp_undo_cwr`). The episode ends when
    /// everything sent before the timeout is acknowledged.
    pub(super) fn try_undo_loss(&mut self, ts_ecr: Option<Instant>) {
        let Some(stamp) = self.loss_undo_at else {
            return;
        };
        if self.snd_una >= self.recover {
            self.loss_undo_at = None;
        } else if ts_ecr.is_some_and(|e| e < stamp) {
            self.loss_undo_at = None;
            self.stats.loss_undos += 1;
            for s in &mut self.segs {
                s.lost = false;
            }
            self.force_retransmit = false;
            self.cwnd = self.cwnd.max(self.ssthresh * 2.0);
            self.ssthresh = self.ssthresh.max(self.loss_prior_ssthresh);
        }
    }

    /// The retransmission timer expired.
    pub(super) fn on_rto(&mut self, now: Instant) {
        if self.segs.is_empty() {
            self.rto_at = None;
            return;
        }
        self.stats.timeouts += 1;
        // A first timeout (nothing resent yet) may later be shown spurious.
        self.loss_undo_at =
            (self.cfg.timestamps && self.segs.iter().all(|s| s.tx_count == 1)).then_some(now);
        self.loss_prior_ssthresh = self.ssthresh.max(self.cwnd * 0.75);
        self.ssthresh = self.loss_ssthresh();
        self.cwnd = 1.0;
        // `TCP_CA_Loss`: CUBIC starts over (`bictcp_reset`).
        self.cubic.on_timeout();
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = self.snd_max;
        for s in &mut self.segs {
            if !s.sacked {
                s.lost = true;
            }
        }
        // `packets_out` in Linux counts every unacknowledged segment.
        let out = self.segs.len();
        let linear = (self.cfg.linear_rto && out < LINEAR_RTO_PACKETS)
            || (self.cfg.thin_linear_timeouts && out < THIN_PACKETS);
        self.rto = if linear {
            self.rto_from_estimate()
        } else {
            (self.rto * 2).min(self.cfg.max_rto)
        };
        self.rto_at = Some(now + self.rto);
    }
}
