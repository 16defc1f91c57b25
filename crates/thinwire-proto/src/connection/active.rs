//! What only a connection that is moving data holds: the send queues, the scratch lists and
//! the packet under construction's last message frame. Boxed and made on first use; the Trim
//! timer drops the box once everything in it is empty, so an idle connection holds one
//! pointer instead of a few hundred bytes of empty lists (see `tests/alloc.rs`).
//!
//! Nothing in here outlives the data it holds: an empty queue and an absent one behave alike,
//! so making the box again on the next send or packet changes no decision.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

use crate::channel::Delivered;
use crate::recovery::{ChunkRef, SentPacket};
use crate::wire::{Frame, MessageHeader};

/// A chunk waiting for its first transmission. An unreliable message's carries its payload:
/// it is sent once and whole, so its channel's window keeps none of it (and no state).
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) chunk: ChunkRef,
    /// The unreliable message's payload (`None`: the chunk's message is in its window).
    pub(super) payload: Option<Bytes>,
}

/// The send queues: chunks of message data waiting for a datagram, in the order they go.
#[derive(Debug, Default)]
pub(super) struct SendQueues {
    /// New message data in the order the application sent it.
    pub(super) pending: VecDeque<Pending>,
    /// Data declared lost, to go before anything new.
    pub(super) retransmit: VecDeque<ChunkRef>,
    /// Reliable data in order of first transmission, for bundling (acked entries pruned lazily).
    pub(super) unacked_order: VecDeque<ChunkRef>,
    /// Copies the repair policy scheduled, by due time; `None` once the repair timer released
    /// them (entries no longer wanted are pruned lazily).
    pub(super) copies: VecDeque<(Option<Instant>, ChunkRef)>,
}

impl SendQueues {
    /// No chunk waits to be sent, first or again, or to be copied.
    pub(super) fn nothing_to_send(&self) -> bool {
        self.pending.is_empty() && self.retransmit.is_empty() && self.copies.is_empty()
    }
}

/// Lists kept only for their capacity between packets (empty between calls).
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Messages delivered by the packet being received.
    pub(super) delivered: Vec<Delivered>,
    /// Packets acknowledged or declared lost by the current ACK.
    pub(super) acked: Vec<(u64, SentPacket)>,
    /// The frames of the packet being received.
    pub(super) frames: Vec<Frame<'static>>,
}

/// The parts of a connection that only matter while data moves.
#[derive(Debug, Default)]
pub(super) struct Active {
    pub(super) queues: SendQueues,
    pub(super) scratch: Scratch,
    /// Where the last message frame of the packet being built starts, its header and its
    /// payload length (it becomes the last-frame form when nothing follows it; fitting counts
    /// it in its longer compact or full form). `None` between packets.
    pub(super) last_message: Option<(usize, MessageHeader, usize)>,
    /// Repair copies placed in the packet being built (a packet of copies alone is marked).
    pub(super) copies_placed: usize,
}

/// What an absent box reads as: every queue empty.
static IDLE: Active = Active {
    queues: SendQueues {
        pending: VecDeque::new(),
        retransmit: VecDeque::new(),
        unacked_order: VecDeque::new(),
        copies: VecDeque::new(),
    },
    scratch: Scratch {
        delivered: Vec::new(),
        acked: Vec::new(),
        frames: Vec::new(),
    },
    last_message: None,
    copies_placed: 0,
};

/// The boxed [`Active`] parts, or nothing while the connection is idle.
#[derive(Debug, Default)]
pub(super) struct LazyActive(Option<Box<Active>>);

impl LazyActive {
    /// Hints the box (stage 1) or the ends of its send queues (stage 2).
    pub(super) fn prefetch(&self, hint: crate::prefetch::Hint, stage: u8) {
        if let Some(b) = &self.0 {
            if stage >= 2 {
                hint.deque_ends(&b.queues.pending);
                hint.deque_ends(&b.queues.unacked_order);
            } else {
                hint.value(&**b);
            }
        }
    }

    /// The parts to read: the empty ones when none are made.
    pub(super) fn get(&self) -> &Active {
        self.0.as_deref().unwrap_or(&IDLE)
    }

    /// The parts to change, made now if need be.
    pub(super) fn get_mut(&mut self) -> &mut Active {
        self.0.get_or_insert_with(Box::default)
    }

    /// The parts to change if they are made (what only empties a queue needs no box).
    pub(super) fn made(&mut self) -> Option<&mut Active> {
        self.0.as_deref_mut()
    }

    /// Gives back what an idle connection does not need: the scratch lists, the capacity of
    /// every empty queue, and `unacked_order` too when `bundled_all_acked` (every chunk in it
    /// is acknowledged). Drops the box once nothing in it is left.
    pub(super) fn trim(&mut self, bundled_all_acked: bool) {
        let Some(a) = self.0.as_deref_mut() else {
            return;
        };
        a.scratch = Scratch::default();
        let q = &mut a.queues;
        if bundled_all_acked {
            q.unacked_order = VecDeque::new();
        }
        if q.pending.is_empty() {
            q.pending = VecDeque::new();
        }
        if q.retransmit.is_empty() {
            q.retransmit = VecDeque::new();
        }
        if q.copies.is_empty() {
            q.copies = VecDeque::new();
        }
        let empty = q.pending.is_empty()
            && q.retransmit.is_empty()
            && q.unacked_order.is_empty()
            && q.copies.is_empty()
            && a.last_message.is_none();
        if empty {
            self.0 = None;
        }
    }

    /// Drops what a draining connection no longer sends: the bundling order and the copies.
    pub(super) fn release_send(&mut self) {
        if let Some(a) = self.made() {
            a.queues.unacked_order = VecDeque::new();
            a.queues.copies = VecDeque::new();
        }
    }
}
