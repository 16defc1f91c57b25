//! The sender's half of 8-bit flow seqs (`docs/GATEWAY.md` §2, "8-bit seqs"): which messages
//! of a flow's ReliableOrdered channels the receiving gateway may still be missing, so that a
//! seq goes as its low 8 bits only while the next seq the receiver waits for is less than
//! [`SEQ8_WINDOW`] below it ([`expand_seq8`](super::inbound::expand_seq8) is exact then).
//!
//! Every push of such a message into trunk channel 1 is recorded with the core seq of the trunk
//! message that carried it (`Endpoint::send_window(..).end` just before the send). A record is
//! dropped once that core seq is below the start of channel 1's send window: that trunk message
//! was acknowledged, and so was (or given up, which only deadline messages are, and they carry
//! no seq) every one before it. So every message of the channel below L, the lowest seq still
//! recorded for it, reached the receiving gateway before the sender learnt it had; a message S
//! sent after that reaches it later, when the next seq it waits for, E, is at least L. E is at
//! most S, which the trunk delivers once and only now. Hence `S - L < SEQ8_WINDOW` bounds
//! `S - E`. Entries ahead of S in the Batch that carries it count as recorded: the receiver
//! takes them first.
//!
//! The earlier rule (fewer than [`SEQ8_WINDOW`] messages unacknowledged on channel 1) did not
//! bound `S - E`: channel 1 is unordered, so while an early message of a flow is retransmitted
//! the later ones arrive and are acknowledged, and a fast flow can run 256 seqs ahead of E with
//! few messages unacknowledged.

use std::collections::VecDeque;

/// Most a seq may be above the lowest recorded one of its channel to go as its low 8 bits
/// (at most 256: the low 8 bits tell apart 256 seqs from E on); also the most records a flow
/// keeps.
pub(crate) const SEQ8_WINDOW: usize = 240;

/// One push of a ReliableOrdered message into trunk channel 1.
#[derive(Debug, Clone, Copy)]
struct Record {
    core: u64,
    seq: u64,
    channel: u8,
}

/// One flow's record of its ReliableOrdered pushes the receiving gateway may still miss, in
/// push order (so in core seq order, and in seq order per channel). At most [`SEQ8_WINDOW`]
/// records (24 bytes each); pushes past that are not recorded, and the flow sends no 8-bit
/// seq until the newest of them is acknowledged.
#[derive(Debug, Default)]
pub(crate) struct Seq8Log {
    records: VecDeque<Record>,
    /// The newest core seq of pushes that were not recorded (the records were full).
    blind: Option<u64>,
}

impl Seq8Log {
    /// Forgets the pushes carried by core messages below `start` (channel 1's send window).
    pub(crate) fn acked_below(&mut self, start: u64) {
        while self.records.front().is_some_and(|r| r.core < start) {
            self.records.pop_front();
        }
        if self.blind.is_some_and(|b| b < start) {
            self.blind = None;
        }
        if self.records.is_empty() && self.records.capacity() > 16 {
            // a burst's records are gone: do not keep their room for an idle flow
            self.records = VecDeque::new();
        }
    }

    /// Whether `seq` of `channel` may go as its low 8 bits; `ahead`: the lowest seq of the
    /// channel in the Batch that will carry it, ahead of it.
    pub(crate) fn allows(&self, channel: u8, seq: u64, ahead: Option<u64>) -> bool {
        if self.blind.is_some() {
            return false;
        }
        let recorded = self.records.iter().find(|r| r.channel == channel);
        let low = recorded.map(|r| r.seq).or(ahead).unwrap_or(seq);
        seq.saturating_sub(low) < SEQ8_WINDOW as u64
    }

    /// `seq` of `channel` went in core message `core`.
    pub(crate) fn record(&mut self, channel: u8, seq: u64, core: u64) {
        if self.blind.is_some() || self.records.len() >= SEQ8_WINDOW {
            self.blind = Some(core);
        } else {
            self.records.push_back(Record { core, seq, channel });
        }
    }

    /// Records kept now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }
}
