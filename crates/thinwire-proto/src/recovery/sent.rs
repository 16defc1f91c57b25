//! The ledger of sent packets and loss detection (thin-stream and standard rules).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::wire::AckFrame;

/// One piece of message data carried by a packet: a fragment of message `seq` on `channel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ChunkRef {
    pub(crate) channel: u8,
    pub(crate) seq: u64,
    pub(crate) frag: u32,
}

/// What the sender remembers of an ack-eliciting packet until it is acknowledged or given up
/// (packets carrying only ACK or padding are not recorded).
#[derive(Debug, Clone)]
pub(crate) struct SentPacket {
    pub(crate) time_sent: Instant,
    /// Declared lost (kept a while to detect spurious retransmissions).
    pub(crate) lost: bool,
    /// When an acknowledgement of a later packet first indicated this one may be lost.
    pub(crate) indicated_at: Option<Instant>,
    /// Message data carried (first transmissions, retransmissions and bundled copies alike).
    pub(crate) chunks: Vec<ChunkRef>,
    /// A deadline-message shard carried, if any.
    pub(crate) shard: Option<crate::deadline::ShardRef>,
}

impl SentPacket {
    /// Marks the packet lost, keeping the entry (for spurious-loss detection) but handing its
    /// chunks to the caller in the returned copy.
    fn declare_lost(&mut self) -> SentPacket {
        self.lost = true;
        SentPacket {
            time_sent: self.time_sent,
            lost: true,
            indicated_at: self.indicated_at,
            chunks: std::mem::take(&mut self.chunks),
            shard: self.shard,
        }
    }
}

/// How losses are declared; filled by the connection from its configuration and RTT.
///
/// Thin mode: one indication (an acknowledgement of a later packet) suffices. The packet is lost
/// once `time_sent + rtt + thin_window` has passed (the RACK rule, RFC 8985, with a short
/// reordering window), so a packet sent well before the acknowledged one is retransmitted the
/// moment the indication arrives. Standard mode: three indications, as TCP's duplicate-ack
/// threshold; otherwise only the retransmission timeout recovers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LossRule {
    pub(crate) thin: bool,
    pub(crate) thin_window: Duration,
    /// The RTT of the latest sample.
    pub(crate) rtt: Duration,
    /// Standard mode: reordering threshold in packets (3, as for TCP's duplicate acks).
    pub(crate) packet_threshold: u64,
    /// How long declared-lost packets are remembered for spurious-loss detection.
    pub(crate) retention: Duration,
}

/// Sent packets by packet number.
#[derive(Debug, Default)]
pub(crate) struct SentPackets {
    map: BTreeMap<u64, SentPacket>,
    /// Entries not declared lost.
    in_flight: usize,
    largest_acked: Option<u64>,
}

impl SentPackets {
    /// Packets neither acknowledged nor declared lost.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub(crate) fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    pub(crate) fn on_sent(&mut self, pn: u64, packet: SentPacket) {
        self.in_flight += 1;
        self.map.insert(pn, packet);
    }

    /// Send time of the oldest packet in flight (the RTO is armed from it).
    pub(crate) fn oldest_in_flight(&self) -> Option<Instant> {
        self.map.values().find(|p| !p.lost).map(|p| p.time_sent)
    }

    /// Removes and returns the packets newly acknowledged by `ack`, oldest first.
    pub(crate) fn on_ack(&mut self, ack: &AckFrame) -> Vec<(u64, SentPacket)> {
        let mut acked = Vec::new();
        for range in ack.ranges.iter().rev() {
            // one lookup per acknowledged packet, no list of keys to collect first
            while let Some(pn) = self.map.range(range.clone()).next().map(|(pn, _)| *pn) {
                let p = self.map.remove(&pn).expect("just found");
                if !p.lost {
                    self.in_flight -= 1;
                }
                acked.push((pn, p));
            }
        }
        if self.largest_acked.is_none_or(|l| ack.largest > l) {
            self.largest_acked = Some(ack.largest);
        }
        acked
    }

    /// Declares losses by `rule` at `now`. Returns the newly lost packets (their chunks taken out,
    /// the entries kept as `lost`) and when the next loss check is due.
    pub(crate) fn detect_lost(
        &mut self,
        now: Instant,
        rule: LossRule,
    ) -> (Vec<(u64, SentPacket)>, Option<Instant>) {
        let mut lost = Vec::new();
        let mut next: Option<Instant> = None;
        if let Some(largest) = self.largest_acked {
            for (&pn, p) in self.map.range_mut(..largest) {
                if p.lost {
                    continue;
                }
                let indicated = *p.indicated_at.get_or_insert(now);
                let due = if rule.thin {
                    Some(indicated.max(p.time_sent + rule.rtt + rule.thin_window))
                } else if largest >= pn + rule.packet_threshold {
                    Some(now)
                } else {
                    None
                };
                let Some(due) = due else { continue };
                if due <= now {
                    self.in_flight -= 1;
                    lost.push((pn, p.declare_lost()));
                } else {
                    next = Some(next.map_or(due, |n: Instant| n.min(due)));
                }
            }
        }
        self.forget_lost(now, rule.retention);
        (lost, next)
    }

    /// Forgets declared-lost packets sent more than `retention` ago (they are kept until then
    /// only to recognise spurious losses). Without it, a peer that never acknowledges would
    /// grow the map by one entry per probe.
    fn forget_lost(&mut self, now: Instant, retention: Duration) {
        if let Some(horizon) = now.checked_sub(retention) {
            self.map.retain(|_, p| !(p.lost && p.time_sent < horizon));
        }
    }

    /// Packets remembered: in flight, or declared lost within the retention time.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn tracked(&self) -> usize {
        self.map.len()
    }

    /// Declares lost every packet in flight sent at or before `cutoff` (retransmission timeout)
    /// and forgets lost packets older than `retention`.
    pub(crate) fn expire(
        &mut self,
        now: Instant,
        cutoff: Instant,
        retention: Duration,
    ) -> Vec<(u64, SentPacket)> {
        let mut lost = Vec::new();
        for (&pn, p) in self.map.iter_mut() {
            if p.lost || p.time_sent > cutoff {
                continue;
            }
            self.in_flight -= 1;
            lost.push((pn, p.declare_lost()));
        }
        self.forget_lost(now, retention);
        lost
    }
}
