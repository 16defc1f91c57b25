//! Acknowledgements, loss detection (thin-stream and standard rules) and the retransmission
//! timeout.

use std::time::{Duration, Instant};

use super::Connection;
use crate::config::TransportConfig;
use crate::pack::{Pack, Packer, Unpacker};
use crate::recovery::{Congestion, LossEstimates, RttEstimator, SentPacket, SentPackets};
use crate::stamp::Stamp;
use crate::wire::AckFrame;

/// Retransmission timeouts in a row, with nothing acknowledged, that a thin stream takes at a
/// linear pace before backing off exponentially like any other: Linux's thin-stream linear
/// timeouts use the same budget (`TCP_THIN_LINEAR_RETRIES`, 6), after Petlund et al.
const THIN_LINEAR_RTOS: u32 = 6;

/// No retransmission timeout to tell a late ACK by ([`Recovery::rto_mark`]; no packet number
/// reaches it).
const NO_MARK: u64 = u64::MAX;

/// Loss recovery: the packets in flight, the round-trip and loss estimates, the congestion
/// window, and the state of the retransmission timeout.
#[derive(Debug)]
pub(super) struct Recovery {
    pub(super) sent: SentPackets,
    pub(super) rtt: RttEstimator,
    pub(super) cc: Congestion,
    /// Loss rates: mean, after a loss, and of acknowledgements.
    pub(super) estimates: LossEstimates,
    /// When the reordering window or time threshold of a packet not yet declared lost ends
    /// ([`Stamp::NONE`]: no such packet).
    pub(super) loss_time: Stamp,
    /// The next packet number when the retransmission timeout last fired ([`NO_MARK`]: it has
    /// not fired since the connection started or since the last spurious timeout): an ACK
    /// whose largest is a packet below it that the timeout declared lost was merely late (a
    /// spurious timeout, RFC 4015).
    pub(super) rto_mark: u64,
    pub(super) peer_max_ack_delay: Duration,
    /// The ACK delay the peer has been reporting: the largest, decaying by 1/16 per ACK (the
    /// timeout allows this much for the peer's ACK delay, never more than its maximum: a
    /// peer that acknowledges at once, as thin streams' reliable data is, costs no margin).
    pub(super) ack_delay_seen: Option<Duration>,
    /// Exponent of the retransmission timeout's backoff.
    pub(super) backoff: u32,
    /// Retransmission timeouts in a row since data was last acknowledged.
    pub(super) rto_streak: u32,
}

/// Packs what an idle connection's recovery keeps (nothing in flight: [`SentPackets`] says
/// when it cannot be packed).
impl Pack for Recovery {
    fn pack(&self, p: &mut Packer) -> bool {
        if !self.sent.pack(p) {
            return false;
        }
        self.rtt.pack(p);
        self.cc.pack(p);
        self.estimates.pack(p);
        p.stamp(self.loss_time);
        // NO_MARK is most of u64's range: one byte as 0, any mark as itself plus one
        p.u64(self.rto_mark.wrapping_add(1));
        p.duration(self.peer_max_ack_delay);
        p.opt_duration(self.ack_delay_seen);
        p.u64(u64::from(self.backoff));
        p.u64(u64::from(self.rto_streak));
        true
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        Self {
            sent: SentPackets::unpack(u),
            rtt: RttEstimator::unpack(u),
            cc: Congestion::unpack(u),
            estimates: LossEstimates::unpack(u),
            loss_time: u.stamp(),
            rto_mark: u.u64().wrapping_sub(1),
            peer_max_ack_delay: u.duration(),
            ack_delay_seen: u.opt_duration(),
            backoff: u32::try_from(u.u64()).unwrap_or(0),
            rto_streak: u32::try_from(u.u64()).unwrap_or(0),
        }
    }
}

impl Recovery {
    /// This state with the sent packets forgotten, their counts kept (tests of the packed
    /// form, which packs only a recovery that remembers no packet).
    #[cfg(test)]
    pub(super) fn forgetting_packets(&self) -> Recovery {
        Recovery {
            sent: self.sent.forgetting_packets(),
            rtt: self.rtt.clone(),
            cc: self.cc.clone(),
            estimates: self.estimates,
            ..*self
        }
    }

    /// Nothing sent yet: the configured initial RTT and windows.
    pub(super) fn new(config: &TransportConfig) -> Self {
        Self {
            sent: SentPackets::default(),
            rtt: RttEstimator::new(config.initial_rtt),
            cc: Congestion::new(config.initial_window, config.min_window, config.max_window),
            estimates: LossEstimates::default(),
            loss_time: Stamp::NONE,
            rto_mark: NO_MARK,
            peer_max_ack_delay: Duration::ZERO,
            ack_delay_seen: None,
            backoff: 0,
            rto_streak: 0,
        }
    }
}

impl Connection {
    /// An ACK frame arrived at `now`, moment `at`.
    pub(super) fn on_ack_frame(&mut self, (now, at): (Instant, Stamp), ack: &AckFrame) {
        let recovery = &mut self.flow.recovery;
        let largest_before = recovery.sent.largest_acked();
        let delay = Duration::from_micros(ack.ack_delay_us);
        let seen = recovery
            .ack_delay_seen
            .map_or(delay, |d| (d - d / 16).max(delay));
        recovery.ack_delay_seen = Some(seen);
        let mut acked = std::mem::take(&mut self.active.get_mut().scratch.acked);
        self.flow.recovery.sent.on_ack(ack, &mut acked);
        let mut new_data_acked = false;
        let mut late_ack = false;
        for (pn, packet) in &acked {
            if packet.copy {
                // repair copies only: never in flight, nothing to count
            } else if packet.lost {
                self.stats.live().recovery.spurious_losses += 1;
                self.flow.recovery.estimates.on_spurious(packet.repair);
                // declared lost by the timeout, and this ACK was sent for it (it is the
                // largest acknowledged, so nothing sent later prompted it): the
                // acknowledgement was late, not lost. (A lost ACK is followed by one that a
                // later packet prompted.)
                late_ack |= *pn == ack.largest
                    && self.flow.recovery.rto_mark != NO_MARK
                    && *pn < self.flow.recovery.rto_mark;
            } else {
                new_data_acked = true;
                let recovery = &mut self.flow.recovery;
                recovery.cc.on_ack(packet.time_sent);
                recovery.estimates.on_outcome(false, packet.repair);
            }
            if *pn == ack.largest && largest_before.is_none_or(|l| ack.largest > l) {
                let sample = at.since(packet.time_sent).unwrap_or_default();
                let rtt = &mut self.flow.recovery.rtt;
                rtt.update(sample, delay);
                if late_ack {
                    rtt.on_spurious_timeout(sample);
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
            self.flow.recovery.sent.recycle(packet.chunks);
        }
        self.active.get_mut().scratch.acked = acked;
        if late_ack {
            // the timeout was spurious: undo its backoff (RFC 4015's response)
            self.stats.live().recovery.spurious_timeouts += 1;
            self.flow.recovery.rto_mark = NO_MARK;
            new_data_acked = true;
        }
        if new_data_acked {
            let recovery = &mut self.flow.recovery;
            recovery.backoff = 0;
            recovery.rto_streak = 0;
        }

        self.detect_losses(at);
    }

    pub(super) fn loss_rule(&self) -> crate::recovery::LossRule {
        let srtt = self.flow.recovery.rtt.srtt();
        crate::recovery::LossRule {
            thin: self.is_thin(),
            thin_window: srtt / self.config.thin_reorder_divisor,
            rtt: self.flow.recovery.rtt.latest(),
            packet_threshold: 3,
            retention: self.rto() * 4,
        }
    }

    /// Declares the packets lost that the loss rule says are, at moment `now`.
    pub(super) fn detect_losses(&mut self, now: Stamp) {
        let rule = self.loss_rule();
        let mut lost = std::mem::take(&mut self.active.get_mut().scratch.acked);
        let loss_time = self.flow.recovery.sent.detect_lost(now, rule, &mut lost);
        self.flow.recovery.loss_time = loss_time;
        if rule.thin && !lost.is_empty() {
            self.stats.live().recovery.thin_fast_losses += lost.len() as u64;
        }
        for (pn, packet) in lost.drain(..) {
            self.on_packet_lost(now, pn, packet);
        }
        self.active.get_mut().scratch.acked = lost;
    }

    /// Packet `pn` was declared lost at moment `now`: its reliable data goes again.
    pub(super) fn on_packet_lost(&mut self, now: Stamp, pn: u64, packet: SentPacket) {
        self.stats.live().recovery.packets_lost += 1;
        let recovery = &mut self.flow.recovery;
        recovery.estimates.on_outcome(true, packet.repair);
        recovery.cc.on_loss(packet.time_sent, now);
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
                self.active.get_mut().queues.retransmit.push_back(c);
            }
        }
        self.flow.recovery.sent.recycle(packet.chunks);
    }

    /// When the retransmission timeout expires ([`Stamp::NONE`]: nothing is in flight, and
    /// the timeout is not computed).
    pub(super) fn rto_deadline(&self) -> Stamp {
        if !self.config.ack_pairs {
            let oldest = self.flow.recovery.sent.oldest_in_flight();
            if oldest == Stamp::NONE {
                return Stamp::NONE;
            }
            return oldest.after(self.rto());
        }
        let [even, odd] = self.flow.recovery.sent.oldest_in_flight_by_parity();
        if even == Stamp::NONE && odd == Stamp::NONE {
            return Stamp::NONE;
        }
        let rto = self.rto();
        // no moment stays none
        even.after(self.rto_wait(rto, 0))
            .min(odd.after(self.rto_wait(rto, 1)))
    }

    /// How long packet `pn` waits for its ACK before the timeout declares it lost: the RTO
    /// (`rto`, from [`rto`](Self::rto)), and with paired ACKs, for an even packet (whose ACK
    /// the peer may hold), the peer's maximum ACK delay on top.
    fn rto_wait(&self, rto: Duration, pn: u64) -> Duration {
        if self.config.ack_pairs && pn % 2 == 0 {
            rto + self.flow.recovery.peer_max_ack_delay
        } else {
            rto
        }
    }

    pub(super) fn on_loss_timer(&mut self, now: Instant) {
        let now = self.timers.stamp(now);
        if self.flow.recovery.loss_time <= now {
            self.detect_losses(now);
        }
        if self.rto_deadline() <= now {
            self.stats.live().recovery.rto_expirations += 1;
            self.flow.recovery.rto_mark = self.flow.next_pn;
            let rto = self.rto();
            let cutoffs = [0, 1].map(|pn| now.before(self.rto_wait(rto, pn)).unwrap_or(now));
            self.flow.recovery.rto_streak = self.flow.recovery.rto_streak.saturating_add(1);
            if !self.is_thin() {
                // standard behaviour: exponential backoff, window collapse
                self.flow.recovery.backoff = (self.flow.recovery.backoff + 1).min(16);
                self.flow.recovery.cc.on_timeout(now);
            } else if self.flow.recovery.rto_streak > THIN_LINEAR_RTOS {
                // the thin-stream budget is spent and nothing came back: the peer is probably
                // gone, so stop probing it at a linear pace
                self.flow.recovery.backoff = (self.flow.recovery.backoff + 1).min(16);
            }
            let retention = self.loss_rule().retention;
            let lost =
                self.flow
                    .recovery
                    .sent
                    .expire(now, |pn| cutoffs[(pn % 2) as usize], retention);
            for (pn, p) in lost {
                self.on_packet_lost(now, pn, p);
            }
            self.due.probe = true;
        }
    }
}
