//! The receive side of a channel: duplicate removal, reassembly and each class's ordering rule.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::{Bytes, BytesMut};

use super::RECV_WINDOW;
use crate::wire::ChannelKind;

/// A message ready for the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delivered {
    pub(crate) seq: Option<u64>,
    pub(crate) key: Option<u64>,
    pub(crate) data: Bytes,
}

/// What became of one received message frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecvOutcome {
    /// Accepted: delivered now, buffered for order, or a fragment stored.
    Accepted,
    /// Already received, or superseded by a newer value: discarded (bundled copies land here).
    Duplicate,
    /// Outside the receive window or otherwise impossible from an honest peer: discarded.
    Refused,
}

/// Receive-budget bytes a stored fragment costs beyond its payload (its map slot and handle).
/// Counted so that empty fragments cannot grow memory the budget does not see.
pub(crate) const FRAGMENT_OVERHEAD: usize = 64;
/// Receive-budget bytes a message under reassembly costs beyond its fragments.
pub(crate) const PARTIAL_OVERHEAD: usize = 96;
/// Receive-budget bytes a whole message held for order costs beyond its payload (its map
/// entry and handle), so that empty messages cannot grow memory the budget does not see.
pub(crate) const WAITING_OVERHEAD: usize = 64;
/// Memory-budget bytes of one key a latest-value channel remembers (its entries in the map by
/// key and in the index by sequence number).
pub(crate) const LATEST_KEY_BYTES: usize = 48;
/// Memory-budget bytes of one sequence number an unordered channel remembers above its base.
pub(crate) const SEEN_SEQ_BYTES: usize = 16;

/// A message under reassembly: only the fragments that arrived are stored, so memory grows
/// with what the peer sent, never with the fragment count it claims.
#[derive(Debug)]
struct Partial {
    count: u32,
    parts: BTreeMap<u32, Bytes>,
    bytes: usize,
}

impl Partial {
    /// Budget bytes held: payload plus the fixed overheads.
    fn budget(&self) -> usize {
        PARTIAL_OVERHEAD + self.bytes + self.parts.len() * FRAGMENT_OVERHEAD
    }
}

#[derive(Debug)]
enum Rule {
    Ordered {
        next: u64,
        waiting: BTreeMap<u64, (Option<u64>, Bytes)>,
    },
    Unordered {
        below: u64,
        seen: BTreeSet<u64>,
    },
    Unreliable,
    Sequenced {
        newest: Option<u64>,
    },
    Latest {
        /// The newest sequence number delivered per key.
        last: HashMap<u64, u64>,
        floor: Option<u64>,
        max_keys: usize,
    },
}

/// The receive state of one channel.
#[derive(Debug)]
pub(crate) struct RecvChannel {
    kind: ChannelKind,
    rule: Rule,
    largest_seen: Option<u64>,
    partial: BTreeMap<u64, Partial>,
    /// Bytes held for ordering or reassembly: payloads, plus [`FRAGMENT_OVERHEAD`] per stored
    /// fragment, [`PARTIAL_OVERHEAD`] per message under reassembly and [`WAITING_OVERHEAD`]
    /// per whole message waiting for an earlier one.
    pub(crate) buffered_bytes: usize,
}

impl RecvChannel {
    pub(crate) fn new(kind: ChannelKind, max_keys: usize) -> Self {
        let rule = match kind {
            ChannelKind::ReliableOrdered => Rule::Ordered {
                next: 0,
                waiting: BTreeMap::new(),
            },
            ChannelKind::ReliableUnordered => Rule::Unordered {
                below: 0,
                seen: BTreeSet::new(),
            },
            ChannelKind::Unreliable => Rule::Unreliable,
            ChannelKind::UnreliableSequenced => Rule::Sequenced { newest: None },
            ChannelKind::LatestReliable => Rule::Latest {
                last: HashMap::new(),
                floor: None,
                max_keys: max_keys.max(1),
            },
        };
        Self {
            kind,
            rule,
            largest_seen: None,
            partial: BTreeMap::new(),
            buffered_bytes: 0,
        }
    }

    /// The sequence number the next message is expected near (for expanding compact seqs).
    pub(crate) fn expected(&self) -> u64 {
        self.largest_seen.map_or(0, |s| s + 1)
    }

    /// Whether a message with `seq` (and `key`) would be discarded as already received or stale.
    fn is_stale(&self, seq: u64, key: Option<u64>) -> bool {
        match &self.rule {
            Rule::Ordered { next, waiting } => seq < *next || waiting.contains_key(&seq),
            Rule::Unordered { below, seen } => seq < *below || seen.contains(&seq),
            Rule::Unreliable => false,
            Rule::Sequenced { newest } => newest.is_some_and(|n| seq <= n),
            Rule::Latest { last, floor, .. } => match key.and_then(|k| last.get(&k)) {
                Some(&l) => seq <= l,
                None => floor.is_some_and(|f| seq <= f),
            },
        }
    }

    fn window_base(&self) -> Option<u64> {
        match &self.rule {
            Rule::Ordered { next, .. } => Some(*next),
            Rule::Unordered { below, .. } => Some(*below),
            _ => None,
        }
    }

    /// Handles one message frame (`seq` already expanded; `None` on unreliable channels).
    /// `payload` may share the whole packet's buffer: what is delivered at once is handed out
    /// as is, what is held (for order or reassembly) is copied to its own buffer, so memory
    /// held is what the receive budget counts.
    pub(crate) fn on_frame(
        &mut self,
        seq: Option<u64>,
        key: Option<u64>,
        fragment: Option<(u32, u32)>,
        payload: Bytes,
        out: &mut Vec<Delivered>,
    ) -> RecvOutcome {
        let Some(seq) = seq else {
            // unreliable: packets are deduplicated by packet number; nothing else to check
            if fragment.is_some() {
                return RecvOutcome::Refused;
            }
            out.push(Delivered {
                seq: None,
                key: None,
                data: payload,
            });
            return RecvOutcome::Accepted;
        };
        if self.kind.has_key() != key.is_some() {
            return RecvOutcome::Refused;
        }
        if self.is_stale(seq, key) {
            return RecvOutcome::Duplicate;
        }
        if !self.in_window(seq) {
            return RecvOutcome::Refused;
        }
        let data = match fragment {
            None => payload,
            Some((index, count)) => {
                if !self.kind.is_reliable() {
                    return RecvOutcome::Refused;
                }
                match self.reassemble(seq, index, count, &payload) {
                    Ok(Some(data)) => data,
                    Ok(None) => {
                        self.note_seen(seq);
                        return RecvOutcome::Accepted;
                    }
                    Err(outcome) => return outcome,
                }
            }
        };
        self.note_seen(seq);
        self.accept(seq, key, data, out);
        RecvOutcome::Accepted
    }

    fn note_seen(&mut self, seq: u64) {
        if self.largest_seen.is_none_or(|l| seq > l) {
            self.largest_seen = Some(seq);
        }
    }

    fn reassemble(
        &mut self,
        seq: u64,
        index: u32,
        count: u32,
        payload: &[u8],
    ) -> Result<Option<Bytes>, RecvOutcome> {
        if index >= count {
            return Err(RecvOutcome::Refused);
        }
        let entry = match self.partial.entry(seq) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                self.buffered_bytes += PARTIAL_OVERHEAD;
                v.insert(Partial {
                    count,
                    parts: BTreeMap::new(),
                    bytes: 0,
                })
            }
        };
        if entry.count != count {
            return Err(RecvOutcome::Refused);
        }
        if entry.parts.contains_key(&index) {
            return Err(RecvOutcome::Duplicate);
        }
        entry.parts.insert(index, Bytes::copy_from_slice(payload));
        entry.bytes += payload.len();
        self.buffered_bytes += payload.len() + FRAGMENT_OVERHEAD;
        if (entry.parts.len() as u64) < u64::from(count) {
            return Ok(None);
        }
        let done = self.partial.remove(&seq).expect("entry exists");
        self.buffered_bytes -= done.budget();
        let mut whole = BytesMut::with_capacity(done.bytes);
        for part in done.parts.into_values() {
            whole.extend_from_slice(&part);
        }
        Ok(Some(whole.freeze()))
    }

    fn accept(&mut self, seq: u64, key: Option<u64>, data: Bytes, out: &mut Vec<Delivered>) {
        match &mut self.rule {
            Rule::Ordered { next, waiting } => {
                if seq == *next {
                    out.push(Delivered {
                        seq: Some(seq),
                        key,
                        data,
                    });
                    *next += 1;
                    while let Some((k, d)) = waiting.remove(next) {
                        self.buffered_bytes -= d.len() + WAITING_OVERHEAD;
                        out.push(Delivered {
                            seq: Some(*next),
                            key: k,
                            data: d,
                        });
                        *next += 1;
                    }
                } else {
                    self.buffered_bytes += data.len() + WAITING_OVERHEAD;
                    waiting.insert(seq, (key, Bytes::copy_from_slice(&data)));
                }
            }
            Rule::Unordered { below, seen } => {
                out.push(Delivered {
                    seq: Some(seq),
                    key,
                    data,
                });
                if seq == *below {
                    *below += 1;
                    while seen.remove(below) {
                        *below += 1;
                    }
                } else {
                    seen.insert(seq);
                }
            }
            Rule::Unreliable => out.push(Delivered {
                seq: None,
                key,
                data,
            }),
            Rule::Sequenced { newest } => {
                *newest = Some(seq);
                out.push(Delivered {
                    seq: Some(seq),
                    key,
                    data,
                });
            }
            Rule::Latest {
                last,
                floor,
                max_keys,
            } => {
                last.insert(key.unwrap_or_default(), seq);
                if last.len() > *max_keys {
                    forget_oldest(last, floor, *max_keys);
                }
                out.push(Delivered {
                    seq: Some(seq),
                    key,
                    data,
                });
            }
        }
    }

    /// Whether `seq` is inside the receive window (always true for classes without one).
    pub(crate) fn in_window(&self, seq: u64) -> bool {
        self.window_base()
            .is_none_or(|b| seq < b.saturating_add(RECV_WINDOW))
    }

    /// Whether message `seq` is under reassembly.
    pub(crate) fn has_partial(&self, seq: u64) -> bool {
        self.partial.contains_key(&seq)
    }

    /// Messages under reassembly.
    pub(crate) fn partial_count(&self) -> usize {
        self.partial.len()
    }

    /// Whether this frame of message `seq` frees receive buffer when it arrives, so that it is
    /// let in even when the buffer is full: on an ordered channel, any part of the next message
    /// in order (which must get through, or the channel would stall); elsewhere a whole message
    /// (delivered at once), or the fragment that completes a message under reassembly. A
    /// fragment that starts or extends a partial message frees nothing.
    pub(crate) fn frees_buffer(&self, seq: u64, fragment: Option<(u32, u32)>) -> bool {
        match (&self.rule, fragment) {
            (Rule::Ordered { .. }, _) | (_, None) => self.is_next(seq),
            (_, Some((_, count))) => self
                .partial
                .get(&seq)
                .is_some_and(|p| p.count == count && p.parts.len() as u64 + 1 == u64::from(count)),
        }
    }

    /// Whether a message `seq` could still be delivered right away (it is the next in order).
    pub(crate) fn is_next(&self, seq: u64) -> bool {
        match &self.rule {
            Rule::Ordered { next, .. } => seq == *next,
            _ => true,
        }
    }

    /// What the reassembly state really holds, from its lengths: payload bytes plus one key and
    /// one handle per stored fragment, and one entry per message. The budget's overheads are
    /// chosen to cover it (tests check that).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn reassembly_held_bytes(&self) -> usize {
        let per_fragment = std::mem::size_of::<u32>() + std::mem::size_of::<Bytes>();
        self.partial
            .values()
            .map(|p| std::mem::size_of::<Partial>() + p.bytes + p.parts.len() * per_fragment)
            .sum()
    }

    /// Bytes of the endpoint's memory budget this channel holds: what it buffers
    /// ([`buffered_bytes`](Self::buffered_bytes)) plus the keys and sequence numbers it
    /// remembers.
    pub(crate) fn held_bytes(&self) -> usize {
        let index = match &self.rule {
            Rule::Latest { last, .. } => last.len() * LATEST_KEY_BYTES,
            Rule::Unordered { seen, .. } => seen.len() * SEEN_SEQ_BYTES,
            _ => 0,
        };
        self.buffered_bytes + index
    }

    /// Messages held waiting for an earlier one (ordered channels).
    pub(crate) fn waiting_messages(&self) -> usize {
        match &self.rule {
            Rule::Ordered { waiting, .. } => waiting.len(),
            _ => 0,
        }
    }
}

/// A latest-value channel remembers more than `max_keys` keys: it forgets those with the
/// oldest values, down to seven eighths of `max_keys`, and raises its floor to the newest
/// forgotten value (anything at or below it for an unknown key is refused from now on, so
/// nothing can go backwards). Finding them walks every key once, so forgetting in batches of
/// an eighth keeps the cost per message constant (a peer that sends a new key in every
/// message cannot make each one walk the whole map).
fn forget_oldest(last: &mut HashMap<u64, u64>, floor: &mut Option<u64>, max_keys: usize) {
    let keep = max_keys - max_keys / 8;
    let forget = last.len() - keep;
    let mut seqs: Vec<u64> = last.values().copied().collect();
    let (_, &mut newest_forgotten, _) = seqs.select_nth_unstable(forget - 1);
    // sequence numbers are unique per channel: exactly `forget` keys go
    last.retain(|_, s| *s > newest_forgotten);
    *floor = Some(floor.map_or(newest_forgotten, |f| f.max(newest_forgotten)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(ch: &mut RecvChannel, seq: u64, key: Option<u64>) -> (RecvOutcome, Vec<u64>) {
        let mut out = Vec::new();
        let r = ch.on_frame(
            Some(seq),
            key,
            None,
            Bytes::copy_from_slice(&seq.to_be_bytes()),
            &mut out,
        );
        (r, out.iter().filter_map(|d| d.seq).collect())
    }

    #[test]
    fn ordered_holds_until_gap_fills() {
        let mut ch = RecvChannel::new(ChannelKind::ReliableOrdered, 16);
        assert_eq!(feed(&mut ch, 1, None).1, Vec::<u64>::new());
        assert_eq!(feed(&mut ch, 2, None).1, Vec::<u64>::new());
        assert_eq!(ch.buffered_bytes, 16 + 2 * WAITING_OVERHEAD);
        assert_eq!(feed(&mut ch, 0, None).1, vec![0, 1, 2]);
        assert_eq!(ch.buffered_bytes, 0);
        assert_eq!(feed(&mut ch, 1, None).0, RecvOutcome::Duplicate);
    }

    #[test]
    fn unordered_delivers_at_once_and_once() {
        let mut ch = RecvChannel::new(ChannelKind::ReliableUnordered, 16);
        assert_eq!(feed(&mut ch, 2, None).1, vec![2]);
        assert_eq!(feed(&mut ch, 2, None).0, RecvOutcome::Duplicate);
        assert_eq!(feed(&mut ch, 0, None).1, vec![0]);
        assert_eq!(feed(&mut ch, 1, None).1, vec![1]);
        assert_eq!(feed(&mut ch, 0, None).0, RecvOutcome::Duplicate);
    }

    #[test]
    fn latest_never_goes_backwards_even_after_key_eviction() {
        let mut ch = RecvChannel::new(ChannelKind::LatestReliable, 2);
        assert_eq!(feed(&mut ch, 5, Some(1)).1, vec![5]);
        assert_eq!(feed(&mut ch, 3, Some(1)).0, RecvOutcome::Duplicate);
        feed(&mut ch, 6, Some(2));
        feed(&mut ch, 7, Some(3)); // evicts key 1 (seq 5) -> floor 5
        assert_eq!(feed(&mut ch, 4, Some(1)).0, RecvOutcome::Duplicate);
        assert_eq!(feed(&mut ch, 8, Some(1)).1, vec![8]);
        assert_eq!(ch.held_bytes(), 2 * LATEST_KEY_BYTES);
    }

    /// A full channel forgets keys oldest first, an eighth of its cap at a time (so a peer
    /// that sends a new key in every message costs a constant amount of work per message,
    /// not a walk over every key), and never holds more than its cap.
    #[test]
    fn a_full_latest_channel_forgets_oldest_first_and_stays_at_its_cap() {
        let cap = 1000;
        let mut ch = RecvChannel::new(ChannelKind::LatestReliable, cap);
        // the model: key -> newest seq; past the cap the oldest values go one by one, down
        // to seven eighths of the cap
        let mut model: HashMap<u64, u64> = HashMap::new();
        let mut model_floor = None;
        let mut most = 0;
        for seq in 0..20_000u64 {
            // keys reused now and then
            let key = if seq % 7 == 0 { seq / 7 % 10 } else { seq };
            assert_eq!(feed(&mut ch, seq, Some(key)).1, vec![seq]);
            model.insert(key, seq);
            if model.len() > cap {
                while model.len() > cap - cap / 8 {
                    let (&k, &s) = model.iter().min_by_key(|(_, s)| **s).unwrap();
                    model.remove(&k);
                    model_floor = Some(s);
                }
            }
            let Rule::Latest { last, .. } = &ch.rule else {
                unreachable!()
            };
            most = most.max(last.len());
        }
        let Rule::Latest { last, floor, .. } = &ch.rule else {
            unreachable!()
        };
        assert_eq!(*last, model);
        assert_eq!(*floor, model_floor);
        assert_eq!(most, cap);
        assert_eq!(ch.held_bytes(), last.len() * LATEST_KEY_BYTES);
    }

    #[test]
    fn sequenced_drops_older() {
        let mut ch = RecvChannel::new(ChannelKind::UnreliableSequenced, 16);
        feed(&mut ch, 4, None);
        assert_eq!(feed(&mut ch, 3, None).0, RecvOutcome::Duplicate);
        assert_eq!(feed(&mut ch, 9, None).1, vec![9]);
    }

    #[test]
    fn reassembles_out_of_order_fragments() {
        let mut ch = RecvChannel::new(ChannelKind::ReliableOrdered, 16);
        let mut out = Vec::new();
        assert_eq!(
            ch.on_frame(
                Some(0),
                None,
                Some((1, 2)),
                Bytes::from_static(b"def"),
                &mut out
            ),
            RecvOutcome::Accepted
        );
        assert_eq!(
            ch.on_frame(
                Some(0),
                None,
                Some((1, 2)),
                Bytes::from_static(b"def"),
                &mut out
            ),
            RecvOutcome::Duplicate
        );
        assert!(out.is_empty());
        ch.on_frame(
            Some(0),
            None,
            Some((0, 2)),
            Bytes::from_static(b"abc"),
            &mut out,
        );
        assert_eq!(out[0].data, Bytes::from_static(b"abcdef"));
        assert_eq!(ch.buffered_bytes, 0);
    }

    #[test]
    fn refuses_beyond_window() {
        let mut ch = RecvChannel::new(ChannelKind::ReliableOrdered, 16);
        assert_eq!(feed(&mut ch, RECV_WINDOW, None).0, RecvOutcome::Refused);
    }
}
