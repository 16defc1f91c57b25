//! The receiving gateway's per-(flow, channel) delivery rules: each player channel keeps its
//! own ordering domain inside the trunk, so a loss for one player never holds back another.
//!
//! | player kind          | trunk channel        | the receiving gateway                       |
//! |----------------------|----------------------|---------------------------------------------|
//! | ReliableOrdered      | 1 (reliable, unord.) | reorders by seq, holds the gaps (bounded)   |
//! | ReliableUnordered    | 1                    | delivers on arrival                         |
//! | Unreliable           | 2 (unreliable)       | delivers on arrival                         |
//! | UnreliableSequenced  | 2                    | drops older than the newest delivered       |
//! | LatestReliable       | 3 (latest-value)     | drops older than the newest for its key     |

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;
use thinwire_proto::ChannelKind;

/// Keys remembered per LatestReliable channel; past it the key with the oldest value is
/// forgotten, and values not newer than that one are dropped from then on (the bound costs a
/// late first value of a key, never an older value over a newer one).
pub(crate) const LATEST_KEYS: usize = 4096;
/// Bytes charged per held message on top of its payload (map entry and bookkeeping), so
/// that empty payloads still count against the backlog.
pub(crate) const ENTRY_COST: usize = 32;

/// What became of one arriving message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Delivered or held for order; the caller takes what `out` holds.
    Taken,
    /// Older than what was delivered already (or a duplicate): dropped.
    Stale,
    /// The frame's fields do not fit the channel kind (a seq or key missing).
    Bad,
    /// Holding it would pass the flow's backlog bound.
    Overflow,
}

/// One player channel's receive state at the gateway.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// ReliableOrdered: the next seq to deliver and the ones that arrived early.
    Ordered {
        next: u64,
        waiting: BTreeMap<u64, Bytes>,
    },
    /// UnreliableSequenced: the newest seq delivered.
    Sequenced { newest: Option<u64> },
    /// LatestReliable: the newest seq delivered per key, and its index by seq.
    Latest {
        newest: HashMap<u64, u64>,
        by_seq: BTreeSet<(u64, u64)>,
        floor: Option<u64>,
    },
    /// ReliableUnordered and Unreliable: delivered on arrival.
    Immediate,
}

/// The budget of held bytes a flow has left, shared by its channels.
#[derive(Debug)]
pub(crate) struct Budget<'a> {
    pub(crate) held: &'a mut usize,
    pub(crate) limit: usize,
}

impl Inbound {
    pub(crate) fn new(kind: ChannelKind) -> Self {
        match kind {
            ChannelKind::ReliableOrdered => Inbound::Ordered {
                next: 0,
                waiting: BTreeMap::new(),
            },
            ChannelKind::UnreliableSequenced => Inbound::Sequenced { newest: None },
            ChannelKind::LatestReliable => Inbound::Latest {
                newest: HashMap::new(),
                by_seq: BTreeSet::new(),
                floor: None,
            },
            ChannelKind::ReliableUnordered | ChannelKind::Unreliable => Inbound::Immediate,
        }
    }

    /// Takes one message; what may be delivered now is appended to `out` in order.
    pub(crate) fn accept(
        &mut self,
        (seq, key): (Option<u64>, Option<u64>),
        data: Bytes,
        budget: Budget<'_>,
        out: &mut Vec<(Option<u64>, Bytes)>,
    ) -> Outcome {
        match self {
            Inbound::Immediate => {
                out.push((None, data));
                Outcome::Taken
            }
            Inbound::Sequenced { newest } => {
                let Some(seq) = seq else {
                    return Outcome::Bad;
                };
                if newest.is_some_and(|n| seq <= n) {
                    return Outcome::Stale;
                }
                *newest = Some(seq);
                out.push((None, data));
                Outcome::Taken
            }
            Inbound::Ordered { next, waiting } => {
                let Some(seq) = seq else {
                    return Outcome::Bad;
                };
                ordered(next, waiting, (seq, data), budget, out)
            }
            Inbound::Latest {
                newest,
                by_seq,
                floor,
            } => {
                let (Some(seq), Some(key)) = (seq, key) else {
                    return Outcome::Bad;
                };
                latest(newest, by_seq, floor, (seq, key)).map_or(Outcome::Stale, |()| {
                    out.push((Some(key), data));
                    Outcome::Taken
                })
            }
        }
    }

    /// The next seq a ReliableOrdered channel waits for (what an 8-bit seq is expanded from).
    pub(crate) fn expected(&self) -> Option<u64> {
        match self {
            Inbound::Ordered { next, .. } => Some(*next),
            _ => None,
        }
    }

    /// Bytes this channel holds (charged to the flow's budget).
    pub(crate) fn held_bytes(&self) -> usize {
        match self {
            Inbound::Ordered { waiting, .. } => {
                waiting.values().map(|d| d.len() + ENTRY_COST).sum()
            }
            _ => 0,
        }
    }
}

/// The seq whose low 8 bits are `low`: the smallest at or above `next` (`None` past 2^64).
/// Exact when the seq is less than 256 above `next`, which the sender ensures (`seq8.rs`).
pub(crate) fn expand_seq8(next: u64, low: u8) -> Option<u64> {
    let c = (next & !0xff) | u64::from(low);
    if c >= next {
        Some(c)
    } else {
        c.checked_add(256)
    }
}

fn ordered(
    next: &mut u64,
    waiting: &mut BTreeMap<u64, Bytes>,
    (seq, data): (u64, Bytes),
    budget: Budget<'_>,
    out: &mut Vec<(Option<u64>, Bytes)>,
) -> Outcome {
    if seq < *next || waiting.contains_key(&seq) {
        return Outcome::Stale;
    }
    if seq > *next {
        let cost = data.len() + ENTRY_COST;
        if *budget.held + cost > budget.limit {
            return Outcome::Overflow;
        }
        *budget.held += cost;
        waiting.insert(seq, data);
        return Outcome::Taken;
    }
    out.push((None, data));
    *next += 1;
    while let Some(d) = waiting.remove(next) {
        *budget.held = budget.held.saturating_sub(d.len() + ENTRY_COST);
        out.push((None, d));
        *next += 1;
    }
    Outcome::Taken
}

/// Records `(seq, key)` if it is the newest value for its key; `None` if it is stale.
fn latest(
    newest: &mut HashMap<u64, u64>,
    by_seq: &mut BTreeSet<(u64, u64)>,
    floor: &mut Option<u64>,
    (seq, key): (u64, u64),
) -> Option<()> {
    match newest.get(&key) {
        Some(&n) if seq <= n => return None,
        Some(&n) => {
            by_seq.remove(&(n, key));
        }
        None if floor.is_some_and(|f| seq <= f) => return None,
        None => {
            if newest.len() >= LATEST_KEYS {
                if let Some((s, k)) = by_seq.pop_first() {
                    newest.remove(&k);
                    *floor = Some(floor.map_or(s, |f| f.max(s)));
                }
            }
        }
    }
    newest.insert(key, seq);
    by_seq.insert((seq, key));
    Some(())
}
