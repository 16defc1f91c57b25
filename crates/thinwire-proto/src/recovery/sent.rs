//! The ledger of sent packets and loss detection (thin-stream and standard rules).

use std::collections::VecDeque;
use std::time::Duration;

use crate::pack::{Pack, Packer, Unpacker};
use crate::stamp::Stamp;
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
    /// When it was sent.
    pub(crate) time_sent: Stamp,
    /// Declared lost (kept a while to detect spurious retransmissions).
    pub(crate) lost: bool,
    /// Carries data sent after a loss of it (a retransmission or a repair copy): its outcome
    /// feeds the repeat-loss estimate.
    pub(crate) repair: bool,
    /// Carries repair copies only: never in flight (recorded as lost from the start), so that
    /// neither its loss nor the receiver not acknowledging it promptly triggers anything; an
    /// acknowledgement of it still acknowledges its data.
    pub(crate) copy: bool,
    /// When an acknowledgement of a later packet first indicated this one may be lost
    /// ([`Stamp::NONE`]: none has).
    pub(crate) indicated_at: Stamp,
    /// Message data carried (first transmissions, retransmissions and bundled copies alike).
    pub(crate) chunks: Vec<ChunkRef>,
    /// A deadline-message shard carried, if any.
    pub(crate) shard: Option<crate::deadline::ShardRef>,
}

impl SentPacket {
    /// Marks the packet lost, keeping the entry (for spurious-loss detection) with its chunks,
    /// and returns a copy of it whose chunk list is `list` filled with them: the caller
    /// queues those for retransmission, and a late acknowledgement of the entry still
    /// acknowledges the data (so a spurious loss cancels the copies of its retransmission).
    fn declare_lost(&mut self, mut list: Vec<ChunkRef>) -> SentPacket {
        self.lost = true;
        list.clear();
        list.extend_from_slice(&self.chunks);
        SentPacket {
            time_sent: self.time_sent,
            lost: true,
            repair: self.repair,
            copy: self.copy,
            indicated_at: self.indicated_at,
            chunks: list,
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

/// Spare chunk lists kept for reuse (a packet's list goes back when it is acknowledged).
const SPARE_LISTS: usize = 16;

/// Sent packets in packet-number order: recorded (ack-eliciting) packets only, each with its
/// number, and an emptied entry for one acknowledged or forgotten while older ones are still
/// held. Packet numbers only grow, so recording is a push at the back, acknowledging the
/// oldest a pop at the front, and finding a range a binary search: no search tree, no
/// allocation per packet once the deque and the spare chunk lists have grown to the
/// connection's usual flight. ACK-only packets leave no entry, so a peer that makes this side
/// acknowledge much while one packet waits cannot grow it.
#[derive(Debug, Default)]
pub(crate) struct SentPackets {
    /// The entries and the spare lists: boxed, made when a packet is recorded or a list
    /// given back, and dropped by [`release_idle`](Self::release_idle) when nothing is
    /// remembered (an idle connection holds a pointer, not two empty lists).
    held: Option<Box<Held>>,
    /// Entries not declared lost.
    in_flight: usize,
    largest_acked: Option<u64>,
}

/// What [`SentPackets`] holds while packets are remembered.
#[derive(Debug, Default)]
struct Held {
    /// `(packet number, packet)`, numbers ascending; `None` once acknowledged or forgotten.
    window: VecDeque<(u64, Option<SentPacket>)>,
    /// Cleared chunk lists, for the next packets.
    spare: Vec<Vec<ChunkRef>>,
}

impl Held {
    /// Takes back a chunk list, up to [`SPARE_LISTS`] of them.
    fn recycle(&mut self, mut list: Vec<ChunkRef>) {
        if self.spare.len() < SPARE_LISTS {
            list.clear();
            self.spare.push(list);
        }
    }
}

/// What no entries read as.
static EMPTY: VecDeque<(u64, Option<SentPacket>)> = VecDeque::new();

impl SentPackets {
    /// Hints the box of entries (the window's ends are one pointer further, which the
    /// stages of a hint do not reach).
    pub(crate) fn prefetch(&self, hint: crate::prefetch::Hint) {
        if let Some(h) = &self.held {
            hint.value(&**h);
        }
    }

    /// Packets neither acknowledged nor declared lost.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub(crate) fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// An empty chunk list for the next packet (a recycled one when there is one).
    pub(crate) fn chunk_list(&mut self) -> Vec<ChunkRef> {
        self.held
            .as_mut()
            .and_then(|h| h.spare.pop())
            .unwrap_or_default()
    }

    /// The entries, oldest first.
    fn window(&self) -> &VecDeque<(u64, Option<SentPacket>)> {
        self.held.as_ref().map_or(&EMPTY, |h| &h.window)
    }

    /// What is held, made now if need be.
    fn held_mut(&mut self) -> &mut Held {
        self.held.get_or_insert_with(Box::default)
    }

    /// Takes back a chunk list that is no longer needed.
    pub(crate) fn recycle(&mut self, list: Vec<ChunkRef>) {
        if list.capacity() > 0 {
            self.held_mut().recycle(list);
        }
    }

    pub(crate) fn on_sent(&mut self, pn: u64, packet: SentPacket) {
        self.in_flight += 1;
        debug_assert!(
            self.window().back().is_none_or(|(last, _)| pn > *last),
            "packet numbers grow"
        );
        self.held_mut().window.push_back((pn, Some(packet)));
    }

    /// Records a packet of repair copies: remembered (its acknowledgement acknowledges its
    /// data) but not in flight, so no timer or loss rule looks at it.
    pub(crate) fn on_sent_copies(&mut self, pn: u64, mut packet: SentPacket) {
        packet.lost = true;
        packet.copy = true;
        self.held_mut().window.push_back((pn, Some(packet)));
    }

    /// What these packets would be with nothing remembered: the counts alone (tests of the
    /// packed form, which keeps only those).
    #[cfg(test)]
    pub(crate) fn forgetting_packets(&self) -> SentPackets {
        SentPackets {
            held: None,
            in_flight: self.in_flight,
            largest_acked: self.largest_acked,
        }
    }

    /// Gives back the spare lists, and the window's memory when nothing is remembered.
    pub(crate) fn release_idle(&mut self) {
        if let Some(h) = self.held.as_deref_mut() {
            if h.window.is_empty() {
                self.held = None;
            } else {
                h.spare = Vec::new();
            }
        }
    }

    /// Drops the holes at the front, so the front is the oldest remembered packet.
    fn trim(&mut self) {
        let Some(h) = self.held.as_deref_mut() else {
            return;
        };
        while matches!(h.window.front(), Some((_, None))) {
            h.window.pop_front();
        }
        if h.window.is_empty() && h.window.capacity() > 64 {
            // a burst is over: give its memory back
            h.window = VecDeque::new();
        }
    }

    fn entries(&self) -> impl Iterator<Item = (u64, &SentPacket)> + '_ {
        self.window()
            .iter()
            .filter_map(|(pn, p)| Some((*pn, p.as_ref()?)))
    }

    /// Send time of the oldest packet in flight (the RTO is armed from it; [`Stamp::NONE`]:
    /// nothing is in flight).
    pub(crate) fn oldest_in_flight(&self) -> Stamp {
        self.entries()
            .find(|(_, p)| !p.lost)
            .map_or(Stamp::NONE, |(_, p)| p.time_sent)
    }

    /// Send times of the oldest packets in flight with an even and with an odd number (paired
    /// ACKs: the peer may hold the ACK of an even one).
    pub(crate) fn oldest_in_flight_by_parity(&self) -> [Stamp; 2] {
        let mut found = [Stamp::NONE; 2];
        for (pn, p) in self.entries().filter(|(_, p)| !p.lost) {
            let slot = &mut found[(pn % 2) as usize];
            if *slot == Stamp::NONE {
                *slot = p.time_sent;
            }
            if found.iter().all(|s| *s != Stamp::NONE) {
                break;
            }
        }
        found
    }

    /// Moves the packets newly acknowledged by `ack` into `acked`, oldest first.
    pub(crate) fn on_ack(&mut self, ack: &AckFrame, acked: &mut Vec<(u64, SentPacket)>) {
        if let Some(h) = self.held.as_deref_mut() {
            for range in ack.ranges.iter().rev() {
                let (lo, hi) = (*range.start(), *range.end());
                let first = h.window.partition_point(|(pn, _)| *pn < lo);
                for (pn, slot) in h.window.range_mut(first..) {
                    if *pn > hi {
                        break;
                    }
                    if let Some(p) = slot.take() {
                        if !p.lost {
                            self.in_flight -= 1;
                        }
                        acked.push((*pn, p));
                    }
                }
            }
        }
        if self.largest_acked.is_none_or(|l| ack.largest > l) {
            self.largest_acked = Some(ack.largest);
        }
        self.trim();
    }

    /// Declares losses by `rule` at `now`: the newly lost packets (their chunks taken out, the
    /// entries kept as `lost`) go into `lost`. Returns when the next loss check is due.
    pub(crate) fn detect_lost(
        &mut self,
        now: Stamp,
        rule: LossRule,
        lost: &mut Vec<(u64, SentPacket)>,
    ) -> Stamp {
        let mut next = Stamp::NONE;
        if let (Some(largest), Some(h)) = (self.largest_acked, self.held.as_deref_mut()) {
            for (pn, slot) in h.window.iter_mut() {
                let pn = *pn;
                if pn >= largest {
                    break;
                }
                let Some(p) = slot.as_mut().filter(|p| !p.lost) else {
                    continue;
                };
                if p.indicated_at == Stamp::NONE {
                    p.indicated_at = now;
                }
                let due = if rule.thin {
                    Some(
                        p.indicated_at
                            .max(p.time_sent.after(rule.rtt).after(rule.thin_window)),
                    )
                } else if largest >= pn + rule.packet_threshold {
                    Some(now)
                } else {
                    None
                };
                let Some(due) = due else { continue };
                if due <= now {
                    self.in_flight -= 1;
                    lost.push((pn, p.declare_lost(h.spare.pop().unwrap_or_default())));
                } else {
                    next = next.min(due);
                }
            }
        }
        self.forget_lost(now, rule.retention);
        next
    }

    /// Forgets declared-lost packets sent more than `retention` ago (they are kept until then
    /// only to recognise spurious losses). Without it, a peer that never acknowledges would
    /// grow the window by one entry per probe.
    fn forget_lost(&mut self, now: Stamp, retention: Duration) {
        if let Some(horizon) = now.before(retention) {
            let Some(h) = self.held.as_deref_mut() else {
                return;
            };
            for i in 0..h.window.len() {
                let slot = &mut h.window[i].1;
                if slot
                    .as_ref()
                    .is_some_and(|p| p.lost && p.time_sent < horizon)
                {
                    if let Some(list) = slot.take().map(|p| p.chunks) {
                        h.recycle(list);
                    }
                }
            }
            self.trim();
        }
    }

    /// Entries held: packets in flight or declared lost within the retention time, and the
    /// emptied entries between them (what the ledger's memory grows with).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn tracked(&self) -> usize {
        self.window().len()
    }

    /// Declares lost every packet in flight sent at or before `cutoff` (retransmission timeout)
    /// and forgets lost packets older than `retention`.
    pub(crate) fn expire(
        &mut self,
        now: Stamp,
        cutoff: impl Fn(u64) -> Stamp,
        retention: Duration,
    ) -> Vec<(u64, SentPacket)> {
        let mut lost = Vec::new();
        let Some(h) = self.held.as_deref_mut() else {
            return lost;
        };
        for (pn, slot) in h.window.iter_mut() {
            let Some(p) = slot.as_mut() else { continue };
            if p.lost || p.time_sent > cutoff(*pn) {
                continue;
            }
            self.in_flight -= 1;
            lost.push((*pn, p.declare_lost(h.spare.pop().unwrap_or_default())));
        }
        self.forget_lost(now, retention);
        lost
    }
}

/// Packs only what an idle sender keeps: nothing remembered, so no packet and no spare list.
impl Pack for SentPackets {
    fn pack(&self, p: &mut Packer) -> bool {
        if self.held.is_some() {
            return false;
        }
        p.u64(self.in_flight as u64);
        p.opt_u64(self.largest_acked);
        true
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        Self {
            held: None,
            in_flight: usize::try_from(u.u64()).unwrap_or(0),
            largest_acked: u.opt_u64(),
        }
    }
}
