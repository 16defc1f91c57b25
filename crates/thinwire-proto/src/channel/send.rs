//! The send side of a channel: messages awaiting transmission or acknowledgement.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

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
}

/// A message being sent.
#[derive(Debug, Clone)]
pub(crate) struct OutMessage {
    pub(crate) data: Bytes,
    pub(crate) key: Option<u64>,
    pub(crate) frag_size: usize,
    pub(crate) frags: Vec<FragState>,
    pub(crate) acked_frags: u32,
    /// Whether any fragment was ever transmitted (for statistics of first transmissions).
    pub(crate) sent_frags: u32,
}

impl OutMessage {
    pub(crate) fn frag_count(&self) -> u32 {
        self.frags.len() as u32
    }

    /// The payload bytes of fragment `frag`.
    pub(crate) fn frag_payload(&self, frag: u32) -> Bytes {
        if self.frags.len() == 1 {
            return self.data.clone();
        }
        let start = frag as usize * self.frag_size;
        let end = (start + self.frag_size).min(self.data.len());
        self.data.slice(start..end)
    }
}

/// The send state of one channel.
#[derive(Debug)]
pub(crate) struct SendChannel {
    pub(crate) kind: ChannelKind,
    pub(crate) next_seq: u64,
    pub(crate) msgs: BTreeMap<u64, OutMessage>,
    /// Latest-value channels: the unacknowledged value for each key.
    by_key: HashMap<u64, u64>,
    /// Largest sequence number the peer is known to have received.
    pub(crate) largest_acked_seq: Option<u64>,
    /// Payload bytes held.
    pub(crate) queued_bytes: usize,
}

impl SendChannel {
    pub(crate) fn new(kind: ChannelKind) -> Self {
        Self {
            kind,
            next_seq: 0,
            msgs: BTreeMap::new(),
            by_key: HashMap::new(),
            largest_acked_seq: None,
            queued_bytes: 0,
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
        self.msgs.insert(
            seq,
            OutMessage {
                data,
                key,
                frag_size,
                frags: vec![FragState::default(); count],
                acked_frags: 0,
                sent_frags: 0,
            },
        );
        (seq, replaced)
    }

    /// Removes message `seq` (acknowledged, replaced, or sent once if unreliable).
    pub(crate) fn remove(&mut self, seq: u64) -> Option<OutMessage> {
        let msg = self.msgs.remove(&seq)?;
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
        self.msgs.get(&seq)?.frags.get(frag as usize)
    }

    /// Fragment `frag` of `seq` reached the peer. Returns true if that completed the message
    /// (which is then removed).
    pub(crate) fn on_chunk_acked(&mut self, seq: u64, frag: u32) -> bool {
        if self.kind.has_seq() && self.largest_acked_seq.is_none_or(|l| seq > l) {
            self.largest_acked_seq = Some(seq);
        }
        let Some(msg) = self.msgs.get_mut(&seq) else {
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
        assert!(!ch.msgs.contains_key(&a));
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
        let m = &ch.msgs[&s];
        assert_eq!(m.frag_count(), 3);
        assert_eq!(m.frag_payload(2).len(), 500);
        assert!(!ch.on_chunk_acked(s, 0));
        assert!(!ch.on_chunk_acked(s, 2));
        assert!(!ch.on_chunk_acked(s, 2));
        assert!(ch.on_chunk_acked(s, 1));
        assert_eq!(ch.queued_bytes, 0);
    }
}
