//! Acknowledgements, loss detection (thin-stream and standard rules) and the retransmission
//! timeout.

use std::time::{Duration, Instant};

use super::Connection;

use crate::recovery::SentPacket;
use crate::wire::AckFrame;

/// Retransmission timeouts in a row, with nothing acknowledged, that a thin stream takes at a
/// linear pace before backing off exponentially like any other: Linux's thin-stream linear
/// timeouts use the same budget (`TCP_THIN_LINEAR_RETRIES`, 6), after Petlund et al.
const THIN_LINEAR_RTOS: u32 = 6;

impl Connection {
    pub(super) fn on_ack_frame(&mut self, now: Instant, ack: &AckFrame) {
        let largest_before = self.sent.largest_acked();
        let delay = Duration::from_micros(ack.ack_delay_us);
        let seen = self
            .ack_delay_seen
            .map_or(delay, |d| (d - d / 16).max(delay));
        self.ack_delay_seen = Some(seen);
        let mut acked = std::mem::take(&mut self.acked_scratch);
        self.sent.on_ack(ack, &mut acked);
        let mut new_data_acked = false;
        let mut late_ack = false;
        for (pn, packet) in &acked {
            if packet.copy {
                // repair copies only: never in flight, nothing to count
            } else if packet.lost {
                self.stats.recovery.spurious_losses += 1;
                self.estimates.on_spurious(packet.repair);
                // declared lost by the timeout, and this ACK was sent for it (it is the
                // largest acknowledged, so nothing sent later prompted it): the
                // acknowledgement was late, not lost. (A lost ACK is followed by one that a
                // later packet prompted.)
                late_ack |= *pn == ack.largest && self.rto_mark.is_some_and(|m| *pn < m);
            } else {
                new_data_acked = true;
                self.cc.on_ack(packet.time_sent);
                self.estimates.on_outcome(false, packet.repair);
            }
            if *pn == ack.largest && largest_before.is_none_or(|l| ack.largest > l) {
                let sample = now.saturating_duration_since(packet.time_sent);
                self.rtt
                    .update(sample, Duration::from_micros(ack.ack_delay_us));
                if late_ack {
                    self.rtt.on_spurious_timeout(sample);
                }
            }
            for c in &packet.chunks {
                if !packet.lost || packet.copy {
                    self.note_repair_acked(now, *c);
                }
                if let Some(ch) = self.send.get_mut(c.channel as usize) {
                    ch.on_chunk_acked(c.seq, c.frag);
                }
            }
            if let Some(s) = packet.shard {
                if let Some(d) = &mut self.deadline {
                    d.tx.on_acked(s);
                }
            }
        }
        for (_, packet) in acked.drain(..) {
            self.sent.recycle(packet.chunks);
        }
        self.acked_scratch = acked;
        if late_ack {
            // the timeout was spurious: undo its backoff (RFC 4015's response)
            self.stats.recovery.spurious_timeouts += 1;
            self.rto_mark = None;
            new_data_acked = true;
        }
        if new_data_acked {
            self.backoff = 0;
            self.rto_streak = 0;
        }

        self.detect_losses(now);
    }

    pub(super) fn loss_rule(&self) -> crate::recovery::LossRule {
        let srtt = self.rtt.srtt();
        crate::recovery::LossRule {
            thin: self.is_thin(),
            thin_window: srtt / self.config.thin_reorder_divisor,
            rtt: self.rtt.latest(),
            packet_threshold: 3,
            retention: self.rto() * 4,
        }
    }

    pub(super) fn detect_losses(&mut self, now: Instant) {
        let rule = self.loss_rule();
        let mut lost = std::mem::take(&mut self.acked_scratch);
        self.loss_time = self.sent.detect_lost(now, rule, &mut lost);
        if rule.thin {
            self.stats.recovery.thin_fast_losses += lost.len() as u64;
        }
        for (pn, packet) in lost.drain(..) {
            self.on_packet_lost(now, pn, packet);
        }
        self.acked_scratch = lost;
    }

    pub(super) fn on_packet_lost(&mut self, now: Instant, pn: u64, packet: SentPacket) {
        self.stats.recovery.packets_lost += 1;
        self.estimates.on_outcome(true, packet.repair);
        self.cc.on_loss(packet.time_sent, now);
        for &c in &packet.chunks {
            let Some(ch) = self.send.get_mut(c.channel as usize) else {
                continue;
            };
            if !ch.kind.is_reliable() {
                continue;
            }
            let Some(msg) = ch.msgs.get_mut(c.seq) else {
                continue;
            };
            let Some(f) = msg.frags.get_mut(c.frag as usize) else {
                continue;
            };
            if !f.acked && !f.queued && f.last_pn == Some(pn) {
                f.queued = true;
                self.retransmit.push_back(c);
            }
        }
        self.sent.recycle(packet.chunks);
    }

    pub(super) fn rto_deadline(&self) -> Option<Instant> {
        if !self.config.ack_pairs {
            return self.sent.oldest_in_flight().map(|t| t + self.rto());
        }
        let [even, odd] = self.sent.oldest_in_flight_by_parity();
        let even = even.map(|t| t + self.rto_wait(0));
        let odd = odd.map(|t| t + self.rto_wait(1));
        even.into_iter().chain(odd).min()
    }

    /// How long packet `pn` waits for its ACK before the timeout declares it lost: the RTO,
    /// and with paired ACKs, for an even packet (whose ACK the peer may hold), the peer's
    /// maximum ACK delay on top.
    fn rto_wait(&self, pn: u64) -> Duration {
        let rto = self.rto();
        if self.config.ack_pairs && pn % 2 == 0 {
            rto + self.peer_max_ack_delay
        } else {
            rto
        }
    }

    pub(super) fn on_loss_timer(&mut self, now: Instant) {
        if self.loss_time.is_some_and(|t| t <= now) {
            self.detect_losses(now);
        }
        if self.rto_deadline().is_some_and(|t| t <= now) {
            self.stats.recovery.rto_expirations += 1;
            self.rto_mark = Some(self.next_pn);
            let cutoffs = [0, 1].map(|pn| now.checked_sub(self.rto_wait(pn)).unwrap_or(now));
            self.rto_streak = self.rto_streak.saturating_add(1);
            if !self.is_thin() {
                // standard behaviour: exponential backoff, window collapse
                self.backoff = (self.backoff + 1).min(16);
                self.cc.on_timeout(now);
            } else if self.rto_streak > THIN_LINEAR_RTOS {
                // the thin-stream budget is spent and nothing came back: the peer is probably
                // gone, so stop probing it at a linear pace
                self.backoff = (self.backoff + 1).min(16);
            }
            let retention = self.loss_rule().retention;
            let lost = self
                .sent
                .expire(now, |pn| cutoffs[(pn % 2) as usize], retention);
            for (pn, p) in lost {
                self.on_packet_lost(now, pn, p);
            }
            self.probe_due = true;
        }
    }
}
