//! The send side of a channel: messages awaiting transmission or acknowledgement.

use std::collections::{HashMap, VecDeque};
use std::ops::{Deref, DerefMut};
use std::time::Instant;

use bytes::Bytes;

use crate::policy::repair::RepairTarget;
use crate::wire::ChannelKind;

/// Per-fragment transmission state.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FragState {
    pub(crate) acked: bool,
    /// Sitting in the connection's pending or retransmit queue.
    pub(crate) queued: bool,
    /// The packet that carried this fragment most recently.
    pub(crate) last_pn: Option<u64>,
    /// Redundant copies sent by bundling so far.
    pub(crate) bundled: u8,
    /// Transmission rounds so far: 1 after the first transmission, +1 per retransmission
    /// (the repair policy's stage).
    pub(crate) stage: u8,
    /// Copies the repair policy still wants sent in the current stage.
    pub(crate) copies_due: u8,
}

/// The fragments' states: inline for the usual single-fragment message (no allocation per
/// message), boxed for a fragmented one.
#[derive(Debug, Clone)]
pub(crate) enum Frags {
    One(FragState),
    Many(Box<[FragState]>),
}

impl Frags {
    fn new(count: usize) -> Self {
        if count == 1 {
            Frags::One(FragState::default())
        } else {
            Frags::Many(vec![FragState::default(); count].into_boxed_slice())
        }
    }
}

impl Deref for Frags {
    type Target = [FragState];
    fn deref(&self) -> &[FragState] {
        match self {
            Frags::One(f) => std::slice::from_ref(f),
            Frags::Many(b) => b,
        }
    }
}

impl DerefMut for Frags {
    fn deref_mut(&mut self) -> &mut [FragState] {
        match self {
            Frags::One(f) => std::slice::from_mut(f),
            Frags::Many(b) => b,
        }
    }
}

/// A message being sent.
#[derive(Debug, Clone)]
pub(crate) struct OutMessage {
    pub(crate) data: Bytes,
    pub(crate) key: Option<u64>,
    pub(crate) frag_size: usize,
    pub(crate) frags: Frags,
    pub(crate) acked_frags: u32,
    /// Whether any fragment was ever transmitted (for statistics of first transmissions).
    pub(crate) sent_frags: u32,
    /// When the first fragment was first sent (repairs are judged against it).
    pub(crate) first_sent: Option<Instant>,
}

impl OutMessage {
    pub(crate) fn frag_count(&self) -> u32 {
        self.frags.len() as u32
    }

    /// The payload bytes of fragment `frag` (borrowed: encoding copies them, so a shared
    /// handle's reference count is not touched twice per frame).
    pub(crate) fn frag_payload(&self, frag: u32) -> &[u8] {
        if self.frags.len() == 1 {
            return &self.data;
        }
        let start = frag as usize * self.frag_size;
        let end = (start + self.frag_size).min(self.data.len());
        &self.data[start..end]
    }
}

/// The messages of a channel still held, by sequence number: a window from the oldest held to
/// the newest, with a hole for each one gone (acknowledged or replaced). Reliable channels' only:
/// an unreliable message is counted by [`SendChannel::unsent`] instead.
/// Sequence numbers are consecutive, so finding a message is an index, adding one a push at
/// the back, and the usual removal (the oldest) a pop at the front: nothing is allocated per
/// message once the window has grown to the channel's usual backlog.
#[derive(Debug, Default)]
pub(crate) struct Window {
    /// Entry `i` is message `base + i`.
    slots: VecDeque<Option<OutMessage>>,
    base: u64,
    held: usize,
}

impl Window {
    /// Hints the ends of the window (the oldest message, and the newest, which the next
    /// message goes after).
    pub(crate) fn prefetch(&self, hint: crate::prefetch::Hint) {
        hint.deque_ends(&self.slots);
    }

    /// Messages held.
    pub(crate) fn len(&self) -> usize {
        self.held
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// The oldest message held, if any (the front is never a hole).
    pub(crate) fn oldest(&self) -> Option<u64> {
        (!self.slots.is_empty()).then_some(self.base)
    }

    /// Sequence numbers the window spans, holes included (what bounds its memory).
    pub(crate) fn span(&self) -> usize {
        self.slots.len()
    }

    fn index(&self, seq: u64) -> Option<usize> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        (i < self.slots.len()).then_some(i)
    }

    pub(crate) fn get(&self, seq: u64) -> Option<&OutMessage> {
        self.slots[self.index(seq)?].as_ref()
    }

    pub(crate) fn get_mut(&mut self, seq: u64) -> Option<&mut OutMessage> {
        let i = self.index(seq)?;
        self.slots[i].as_mut()
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, seq: u64) -> bool {
        self.get(seq).is_some()
    }

    /// Adds message `seq`, which must be newer than every message added before.
    fn push(&mut self, seq: u64, msg: OutMessage) {
        if self.slots.is_empty() {
            self.base = seq;
        }
        while self.base + (self.slots.len() as u64) < seq {
            self.slots.push_back(None);
        }
        self.slots.push_back(Some(msg));
        self.held += 1;
    }

    fn remove(&mut self, seq: u64) -> Option<OutMessage> {
        let i = self.index(seq)?;
        let msg = self.slots[i].take()?;
        self.held -= 1;
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        Some(msg)
    }

    /// Gives back the memory of a window that is empty.
    pub(crate) fn release_if_empty(&mut self) {
        if self.held == 0 {
            self.slots = VecDeque::new();
        }
    }
}

/// The send state of one channel.
#[derive(Debug)]
pub(crate) struct SendChannel {
    pub(crate) kind: ChannelKind,
    pub(crate) next_seq: u64,
    /// Reliable channels' messages until acknowledged (unreliable channels keep none here).
    pub(crate) msgs: Window,
    /// Unreliable channels: messages queued and not sent yet, the newest `unsent` sequence
    /// numbers below `next_seq`. An unreliable message goes once and whole (it is never
    /// fragmented), so it needs none of the window's per-message state: its payload waits in
    /// the connection's send queue ([`push_unsent`](Self::push_unsent)) until its packet is
    /// written. (A draining connection, which sends no data, keeps counting the ones it no
    /// longer sends, as the window keeps reliable ones, until its channels are released.)
    pub(crate) unsent: usize,
    /// Latest-value channels: the unacknowledged value for each key.
    by_key: HashMap<u64, u64>,
    /// Largest sequence number the peer is known to have received.
    pub(crate) largest_acked_seq: Option<u64>,
    /// Payload bytes held.
    pub(crate) queued_bytes: usize,
    /// The channel's repair target (reliable channels; `None`: plain retransmission).
    pub(crate) repair: Option<RepairTarget>,
}

impl SendChannel {
    pub(crate) fn new(kind: ChannelKind) -> Self {
        Self {
            kind,
            next_seq: 0,
            msgs: Window::default(),
            unsent: 0,
            by_key: HashMap::new(),
            largest_acked_seq: None,
            queued_bytes: 0,
            repair: None,
        }
    }

    /// Adds a message; returns its sequence number and, on a latest-value channel, the sequence
    /// number of the older unacknowledged value it replaced (already removed).
    pub(crate) fn push(
        &mut self,
        data: Bytes,
        key: Option<u64>,
        frag_size: usize,
    ) -> (u64, Option<u64>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let replaced = match key {
            Some(k) if self.kind == ChannelKind::LatestReliable => {
                let old = self.by_key.insert(k, seq);
                if let Some(old) = old {
                    self.remove(old);
                }
                old
            }
            _ => None,
        };
        let count = data.len().div_ceil(frag_size).max(1);
        self.queued_bytes += data.len();
        self.msgs.push(
            seq,
            OutMessage {
                data,
                key,
                frag_size,
                frags: Frags::new(count),
                acked_frags: 0,
                sent_frags: 0,
                first_sent: None,
            },
        );
        (seq, replaced)
    }

    /// Counts an unreliable message of `len` bytes queued (its payload waits in the
    /// connection's send queue) and returns its sequence number.
    pub(crate) fn push_unsent(&mut self, len: usize) -> u64 {
        debug_assert!(
            !self.kind.is_reliable(),
            "reliable messages need the window"
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        self.unsent += 1;
        self.queued_bytes += len;
        seq
    }

    /// The oldest unsent unreliable message, of `len` bytes, went into a packet.
    pub(crate) fn sent_unsent(&mut self, len: usize) {
        self.unsent -= 1;
        self.queued_bytes -= len;
    }

    /// Messages held: in the window, or queued unsent on an unreliable channel.
    pub(crate) fn held_messages(&self) -> usize {
        self.msgs.len() + self.unsent
    }

    /// Removes message `seq` (acknowledged or replaced).
    pub(crate) fn remove(&mut self, seq: u64) -> Option<OutMessage> {
        let msg = self.msgs.remove(seq)?;
        self.queued_bytes -= msg.data.len();
        if let Some(k) = msg.key {
            if self.by_key.get(&k) == Some(&seq) {
                self.by_key.remove(&k);
            }
        }
        Some(msg)
    }

    /// The state of fragment `frag` of message `seq`, if the message is still held.
    pub(crate) fn frag(&self, seq: u64, frag: u32) -> Option<&FragState> {
        self.msgs.get(seq)?.frags.get(frag as usize)
    }

    /// Fragment `frag` of `seq` reached the peer. Returns true if that completed the message
    /// (which is then removed).
    pub(crate) fn on_chunk_acked(&mut self, seq: u64, frag: u32) -> bool {
        if self.kind.has_seq() && self.largest_acked_seq.is_none_or(|l| seq > l) {
            self.largest_acked_seq = Some(seq);
        }
        let Some(msg) = self.msgs.get_mut(seq) else {
            return false;
        };
        let Some(f) = msg.frags.get_mut(frag as usize) else {
            return false;
        };
        if !f.acked {
            f.acked = true;
            msg.acked_frags += 1;
        }
        if msg.acked_frags == msg.frag_count() {
            self.remove(seq);
            return true;
        }
        false
    }

    /// The lowest sequence number the receiver may still expect (for the compact-seq rule).
    pub(crate) fn receiver_low(&self) -> u64 {
        self.largest_acked_seq.map_or(0, |s| s + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_value_replaces_unacked_older_value() {
        let mut ch = SendChannel::new(ChannelKind::LatestReliable);
        let (a, r) = ch.push(Bytes::from_static(b"pos1"), Some(7), 1000);
        assert_eq!(r, None);
        let (_, r) = ch.push(Bytes::from_static(b"other"), Some(8), 1000);
        assert_eq!(r, None);
        let (b, r) = ch.push(Bytes::from_static(b"pos2"), Some(7), 1000);
        assert_eq!(r, Some(a));
        assert!(!ch.msgs.contains(a));
        assert_eq!(ch.msgs.len(), 2);
        assert!(ch.on_chunk_acked(b, 0));
        // a later value for key 7 after the ack replaces nothing
        let (_, r) = ch.push(Bytes::from_static(b"pos3"), Some(7), 1000);
        assert_eq!(r, None);
    }

    #[test]
    fn fragments_complete_message() {
        let mut ch = SendChannel::new(ChannelKind::ReliableOrdered);
        let (s, _) = ch.push(Bytes::from(vec![1u8; 2500]), None, 1000);
        let m = ch.msgs.get(s).unwrap();
        assert_eq!(m.frag_count(), 3);
        assert_eq!(m.frag_payload(2).len(), 500);
        assert!(!ch.on_chunk_acked(s, 0));
        assert!(!ch.on_chunk_acked(s, 2));
        assert!(!ch.on_chunk_acked(s, 2));
        assert!(ch.on_chunk_acked(s, 1));
        assert_eq!(ch.queued_bytes, 0);
    }
}
