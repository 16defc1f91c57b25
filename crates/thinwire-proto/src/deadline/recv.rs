//! The receiver's side of deadline messages: collect shards, decode once any `k` arrived.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::DeadlineStatus;
use crate::wire::ShardFrame;

#[derive(Debug)]
struct Partial {
    channel: u8,
    k: u8,
    r: u8,
    msg_len: u64,
    shard_len: usize,
    shards: BTreeMap<u8, Bytes>,
}

/// What happened to a received shard.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ShardOutcome {
    /// Stored; the message is not complete yet.
    Stored,
    /// The message is complete.
    Decoded {
        channel: u8,
        data: Bytes,
        status: DeadlineStatus,
    },
    /// Already decoded or already held.
    Duplicate,
    /// Inconsistent with earlier shards of the same message, or undecodable.
    Refused,
}

/// Most messages being reassembled at once; the oldest is dropped beyond it.
const MAX_PARTIAL: usize = 256;
/// Completed message ids remembered for duplicate detection.
const MAX_DONE: usize = 4096;

/// All deadline messages a connection is receiving.
#[derive(Debug, Default)]
pub(crate) struct DeadlineReceiver {
    partial: BTreeMap<u64, Partial>,
    done: BTreeSet<u64>,
    /// Ids at or below this are complete or given up.
    floor: Option<u64>,
    pub(crate) buffered_bytes: usize,
}

impl DeadlineReceiver {
    /// Bytes of the endpoint's memory budget held: shard payloads, plus a fixed overhead per
    /// message under decoding and per message id remembered as done.
    pub(crate) fn held_bytes(&self) -> usize {
        self.buffered_bytes
            + self.partial.len() * crate::channel::PARTIAL_OVERHEAD
            + self.done.len() * crate::channel::SEEN_SEQ_BYTES
    }

    pub(crate) fn on_shard(&mut self, f: &ShardFrame<'_>, half_rtt: Duration) -> ShardOutcome {
        if self.floor.is_some_and(|fl| f.msg_id <= fl) || self.done.contains(&f.msg_id) {
            return ShardOutcome::Duplicate;
        }
        let p = self.partial.entry(f.msg_id).or_insert_with(|| Partial {
            channel: f.channel,
            k: f.k,
            r: f.r,
            msg_len: f.msg_len,
            shard_len: f.shard.len(),
            shards: BTreeMap::new(),
        });
        if p.k != f.k
            || p.r != f.r
            || p.msg_len != f.msg_len
            || p.shard_len != f.shard.len()
            || p.channel != f.channel
        {
            return ShardOutcome::Refused;
        }
        if p.shards.contains_key(&f.index) {
            return ShardOutcome::Duplicate;
        }
        p.shards.insert(f.index, Bytes::copy_from_slice(f.shard));
        self.buffered_bytes += f.shard.len();
        let complete = p.shards.len() >= usize::from(p.k);
        if !complete {
            self.evict();
            return ShardOutcome::Stored;
        }
        let p = self.partial.remove(&f.msg_id).expect("present");
        self.buffered_bytes -= p.shards.len() * p.shard_len;
        self.mark_done(f.msg_id);
        let Some(data) = decode(&p) else {
            return ShardOutcome::Refused;
        };
        let deadline = Duration::from_millis(f.deadline_ms);
        let age = Duration::from_millis(f.age_ms) + half_rtt;
        ShardOutcome::Decoded {
            channel: p.channel,
            data,
            status: DeadlineStatus {
                deadline,
                age,
                late: age > deadline,
            },
        }
    }

    fn mark_done(&mut self, id: u64) {
        self.done.insert(id);
        while self.done.len() > MAX_DONE {
            if let Some(old) = self.done.pop_first() {
                self.floor = Some(self.floor.map_or(old, |f| f.max(old)));
            }
        }
    }

    fn evict(&mut self) {
        while self.partial.len() > MAX_PARTIAL {
            if let Some((id, p)) = self.partial.pop_first() {
                self.buffered_bytes -= p.shards.len() * p.shard_len;
                self.mark_done(id);
            }
        }
    }
}

/// Rebuilds the message from any `k` shards.
fn decode(p: &Partial) -> Option<Bytes> {
    let k = usize::from(p.k);
    let mut data: Vec<Option<Bytes>> = vec![None; k];
    for (&i, s) in &p.shards {
        if usize::from(i) < k {
            data[usize::from(i)] = Some(s.clone());
        }
    }
    if data.iter().any(Option::is_none) {
        let originals = p
            .shards
            .iter()
            .filter(|(i, _)| usize::from(**i) < k)
            .map(|(i, s)| (usize::from(*i), s));
        let recovery = p
            .shards
            .iter()
            .filter(|(i, _)| usize::from(**i) >= k)
            .map(|(i, s)| (usize::from(*i) - k, s));
        let restored = reed_solomon_simd::decode(k, usize::from(p.r), originals, recovery).ok()?;
        for (i, s) in restored {
            if let Some(slot) = data.get_mut(i) {
                *slot = Some(Bytes::from(s));
            }
        }
    }
    let mut out = BytesMut::with_capacity(k * p.shard_len);
    for s in data {
        out.extend_from_slice(&s?);
    }
    out.truncate(usize::try_from(p.msg_len).ok()?);
    Some(out.freeze())
}
