//! The endpoint's memory budget (`MemoryBudget`): the bytes every connection holds, summed
//! for the endpoint and per source, each connection's fair share, the room a connection has
//! to grow, and the sweep that closes connections that stay above their share while memory
//! is over budget.
//!
//! The sums are kept up to date from each connection's `held_bytes` whenever the endpoint
//! touches it (`Endpoint::refresh`). Each connection's slot in the table remembers the index
//! of its source's entry, so checking room on the hot path (every datagram, every send) is
//! two array reads and, while a connection is within the smallest share any connection can
//! have, a single comparison: no hashing. Only the sweep walks the connections, and it runs
//! only while the endpoint or a source is over budget, once every quarter of the grace
//! period.
//!
//! | quantity | rule |
//! |---|---|
//! | fair share | `min(total / connections, per_source / connections of the source)` |
//! | room to grow | `max(free, share - held)`, free = the smaller of the endpoint's and the source's unused budget |
//! | over | held > fair share, while the endpoint or the connection's source is over its budget |
//! | closed | over at two sweeps at least `grace` apart |

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::limits::Source;
use super::{ConnectionHandle, Endpoint};
use crate::config::MemoryBudget;
use crate::connection::{Connection, SEND_MESSAGE_OVERHEAD};
use crate::error::SendError;

/// What the connections of one source hold.
#[derive(Debug, Default, Clone, Copy)]
struct SourceUse {
    held: usize,
    conns: usize,
    /// Whose entry it is (`None` while free).
    source: Option<Source>,
}

/// The index of a source's entry in the ledger (stored in each connection's table slot).
pub(super) type SourceIndex = u32;

/// A connection the sweep found above its fair share: closed when still above it at a sweep
/// `grace` after `since`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Verdict {
    pub(super) handle: ConnectionHandle,
    pub(super) held: usize,
    pub(super) share: usize,
}

/// The running sums of the memory budget.
#[derive(Debug)]
pub(super) struct MemoryLedger {
    budget: MemoryBudget,
    total: usize,
    /// Connections held, and the smallest fair share any of them has (the budget's smaller
    /// half over them: a source's share `per_source / n_source` is never below it).
    connections: usize,
    floor_share: usize,
    /// The sources' entries, by index; `index` finds a source's, `free` the unused ones.
    sources: Vec<SourceUse>,
    index: HashMap<Source, SourceIndex>,
    free: Vec<SourceIndex>,
    /// Sources whose connections hold more than `per_source`.
    sources_over: usize,
    /// Connections found above their share by a sweep, and since when.
    over_since: HashMap<ConnectionHandle, Instant>,
    /// When the next sweep is due (`None`: memory is within budget and no sweep is pending).
    sweep_at: Option<Instant>,
}

impl MemoryLedger {
    pub(super) fn new(budget: MemoryBudget) -> Self {
        Self {
            budget,
            total: 0,
            connections: 0,
            floor_share: budget.total.min(budget.per_source),
            sources: Vec::new(),
            index: HashMap::new(),
            free: Vec::new(),
            sources_over: 0,
            over_since: HashMap::new(),
            sweep_at: None,
        }
    }

    /// Bytes all connections hold.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    fn set_connections(&mut self, n: usize) {
        self.connections = n;
        self.floor_share = self.budget.total.min(self.budget.per_source) / n.max(1);
    }

    /// Connections held from `source`: what `max_connections_per_source` is checked against
    /// (every connection of the source, the ones this endpoint opened to it too).
    pub(super) fn connections_of(&self, source: &Source) -> usize {
        self.index
            .get(source)
            .map_or(0, |&i| self.sources[i as usize].conns)
    }

    /// Sources with a connection (tests of the bounds).
    #[cfg(test)]
    pub(super) fn sources_held(&self) -> usize {
        self.index.len()
    }

    /// A connection from `source` was created; returns the index of the source's entry.
    pub(super) fn add_connection(&mut self, source: Source) -> SourceIndex {
        let i = match self.index.get(&source) {
            Some(&i) => i,
            None => {
                let i = self.free.pop().unwrap_or_else(|| {
                    self.sources.push(SourceUse::default());
                    (self.sources.len() - 1) as SourceIndex
                });
                self.index.insert(source, i);
                self.sources[i as usize].source = Some(source);
                i
            }
        };
        self.sources[i as usize].conns += 1;
        self.set_connections(self.connections + 1);
        i
    }

    /// A connection of source entry `i` that held `held` bytes is gone.
    pub(super) fn remove_connection(&mut self, h: ConnectionHandle, i: SourceIndex, held: usize) {
        self.change(i, held, 0);
        self.over_since.remove(&h);
        self.set_connections(self.connections.saturating_sub(1));
        let u = &mut self.sources[i as usize];
        u.conns = u.conns.saturating_sub(1);
        if u.conns == 0 {
            if let Some(source) = u.source {
                self.index.remove(&source);
            }
            *u = SourceUse::default();
            self.free.push(i);
        }
    }

    /// A connection of source entry `i` went from holding `old` bytes to `new`. Returns
    /// whether memory is over budget afterwards (the caller then makes sure a sweep is due).
    pub(super) fn change(&mut self, i: SourceIndex, old: usize, new: usize) -> bool {
        if old != new {
            self.total = self.total - old + new;
            let per_source = self.budget.per_source;
            let u = &mut self.sources[i as usize];
            let was_over = u.held > per_source;
            u.held = u.held - old + new;
            let is_over = u.held > per_source;
            match (was_over, is_over) {
                (false, true) => self.sources_over += 1,
                (true, false) => self.sources_over -= 1,
                _ => {}
            }
        }
        self.over_budget()
    }

    /// Whether the endpoint, or any source, holds more than its budget.
    pub(super) fn over_budget(&self) -> bool {
        self.total > self.budget.total || self.sources_over > 0
    }

    fn source(&self, i: SourceIndex) -> SourceUse {
        self.sources.get(i as usize).copied().unwrap_or_default()
    }

    /// The fair share of a connection of source entry `i`.
    pub(super) fn fair_share(&self, i: SourceIndex) -> usize {
        let endpoint = self.budget.total / self.connections.max(1);
        let per_source = self.budget.per_source / self.source(i).conns.max(1);
        endpoint.min(per_source)
    }

    /// Whether a connection holding `held` may add `cost` bytes: always within the smallest
    /// share any connection has (no lookup), otherwise within its [`room`](Self::room).
    pub(super) fn allows(&self, i: SourceIndex, held: usize, cost: usize) -> bool {
        held + cost <= self.floor_share || cost <= self.room(i, held)
    }

    /// Bytes a connection of source entry `i` holding `held` may add: all the unused budget
    /// of the endpoint and its source while there is some, and never less than what takes it
    /// up to its fair share.
    pub(super) fn room(&self, i: SourceIndex, held: usize) -> usize {
        let free = self
            .budget
            .total
            .saturating_sub(self.total)
            .min(self.budget.per_source.saturating_sub(self.source(i).held));
        free.max(self.fair_share(i).saturating_sub(held))
    }

    /// Whether a connection of source entry `i` holding `held` is above its share while
    /// memory is over budget where it counts (the endpoint's, or its source's).
    fn is_over(&self, i: SourceIndex, held: usize) -> bool {
        let endpoint_over = self.total > self.budget.total;
        let source_over = self.source(i).held > self.budget.per_source;
        (endpoint_over || source_over) && held > self.fair_share(i)
    }

    /// Makes a sweep due at `now` if memory is over budget and none is pending.
    pub(super) fn want_sweep(&mut self, now: Instant) {
        if self.sweep_at.is_none() && self.over_budget() {
            tracing::debug!(
                held = self.total,
                budget = self.budget.total,
                "memory over budget: connections above their fair share will be swept"
            );
            self.sweep_at = Some(now);
        }
    }

    /// When the next sweep is due.
    pub(super) fn sweep_at(&self) -> Option<Instant> {
        self.sweep_at
    }

    /// One sweep at `now` over every connection (`handle`, source entry, bytes held): those
    /// above their fair share are marked, those that were marked a grace period ago or more
    /// and still are go to `close`; those no longer above it are unmarked. The next sweep is
    /// due a quarter of the grace period later while anything is still over budget.
    pub(super) fn sweep(
        &mut self,
        now: Instant,
        conns: impl Iterator<Item = (ConnectionHandle, SourceIndex, usize)>,
        close: &mut Vec<Verdict>,
    ) {
        let grace = self.budget.grace;
        let mut marked = HashMap::new();
        for (handle, i, held) in conns {
            if !self.is_over(i, held) {
                continue;
            }
            let since = self.over_since.get(&handle).copied().unwrap_or(now);
            if now.saturating_duration_since(since) >= grace {
                let share = self.fair_share(i);
                close.push(Verdict {
                    handle,
                    held,
                    share,
                });
            } else {
                marked.insert(handle, since);
            }
        }
        self.over_since = marked;
        let again = !self.over_since.is_empty() || self.over_budget();
        self.sweep_at = again.then(|| now + (grace / 4).max(Duration::from_millis(1)));
    }
}

/// The endpoint's side of the budget: its connections' held bytes into the ledger, the room
/// of a datagram or a send, the sweep's closes.
impl Endpoint {
    /// Stores a new connection and counts it against its source's memory budget.
    pub(super) fn insert(&mut self, conn: Connection) -> ConnectionHandle {
        let source = self.memory.add_connection(Source::of(&conn.origin()));
        self.conns.insert(conn, source)
    }

    /// Records that connection `h` now holds `(received, queued)` bytes.
    pub(super) fn account(&mut self, h: ConnectionHandle, (received, queued): (usize, usize)) {
        let held = received + queued;
        let (old, source) = self.conns.set_held(h, held, received);
        if self.memory.change(source, old, held) {
            self.memory.want_sweep(self.clock);
        }
        self.stats.memory_held = self.memory.total() as u64;
    }

    /// A message of `len` bytes may be queued on `h` only within the room the memory budget
    /// leaves it: once nothing is free, a connection above its fair share (its peer slow to
    /// acknowledge, or the application sending faster than the path) gets `BufferFull`.
    pub(super) fn check_send_room(&self, h: ConnectionHandle, len: usize) -> Result<(), SendError> {
        let Some((held, source)) = self.conns.held(h) else {
            return Ok(()); // no such connection: the send says so
        };
        if self
            .memory
            .allows(source, held, len + SEND_MESSAGE_OVERHEAD)
        {
            Ok(())
        } else {
            Err(SendError::BufferFull)
        }
    }

    /// Bytes connection `h` may add to what it holds now.
    pub(super) fn budget_room(&self, h: ConnectionHandle) -> usize {
        self.conns
            .held(h)
            .map_or(0, |(held, source)| self.memory.room(source, held))
    }

    /// Closes the connections whose peers made them hold more than their fair share of the
    /// memory budget for the grace period while memory was over budget (what the
    /// application queued is never a reason: its sends are refused instead).
    pub(super) fn sweep_memory(&mut self, now: Instant) {
        let mut close = Vec::new();
        self.memory
            .sweep(now, self.conns.iter_received(), &mut close);
        for v in close {
            if let Some(c) = self.conns.get_mut(v.handle) {
                tracing::debug!(
                    conn = %v.handle,
                    held = v.held,
                    share = v.share,
                    "closing a connection over its share of the memory budget"
                );
                c.close_over_budget(now, v.held, v.share);
                self.stats.closed_over_budget += 1;
            }
            self.touched(v.handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(n: u8) -> Source {
        Source::of(&format!("10.0.0.{n}:1000").parse().unwrap())
    }

    fn ledger() -> MemoryLedger {
        MemoryLedger::new(MemoryBudget {
            total: 1000,
            per_source: 400,
            grace: Duration::from_secs(2),
        })
    }

    #[test]
    fn shares_and_room_follow_the_endpoint_and_the_source() {
        let mut l = ledger();
        let ids: Vec<SourceIndex> = [1, 1, 2, 3]
            .iter()
            .map(|&n| l.add_connection(src(n)))
            .collect();
        assert_eq!(ids[0], ids[1], "one entry per source");
        let (one, two) = (ids[0], ids[2]);
        // four connections: 250 each by the endpoint, 200 each for source 1 (two of its own)
        assert_eq!(l.fair_share(one), 200);
        assert_eq!(l.fair_share(two), 250);
        assert_eq!(
            l.floor_share, 100,
            "the smaller budget over all connections"
        );
        // all free: a connection may take its source's whole budget
        assert_eq!(l.room(one, 0), 400);
        assert!(!l.change(one, 0, 350));
        assert_eq!(l.room(one, 0), 200, "its share, the source's free is 50");
        assert_eq!(l.room(one, 350), 50, "the source's free 50");
        assert!(l.change(one, 0, 100), "source 1 holds 450 > 400");
        assert!(l.over_budget());
        assert_eq!(l.room(one, 350), 0, "above its share, nothing free");
        assert!(!l.allows(one, 350, 1));
        assert_eq!(l.room(one, 100), 100, "up to its share of 200");
        assert!(l.allows(one, 100, 100) && !l.allows(one, 100, 101));
        assert!(
            l.allows(one, 0, 100),
            "within the floor share: no lookup needed"
        );
        assert_eq!(
            l.room(two, 0),
            400,
            "source 2's free 400 (the endpoint's 550)"
        );
        assert!(!l.change(one, 100, 0), "back within budget");
        assert_eq!(l.total(), 350);
        // a source whose last connection goes gives its entry back
        l.remove_connection(ConnectionHandle(9), ids[3], 0);
        assert_eq!(l.add_connection(src(4)), ids[3], "entry reused");
    }

    #[test]
    fn a_sweep_closes_only_who_stays_above_its_share_for_the_grace() {
        let mut l = ledger();
        let t0 = Instant::now();
        let (a, b, c) = (
            ConnectionHandle(1),
            ConnectionHandle(2),
            ConnectionHandle(3),
        );
        let ids: Vec<SourceIndex> = [1, 2, 3]
            .iter()
            .map(|&n| l.add_connection(src(n)))
            .collect();
        l.change(ids[0], 0, 390);
        l.change(ids[1], 0, 390);
        l.change(ids[2], 0, 300);
        // 1080 > 1000: the endpoint is over; shares are 333
        assert!(l.over_budget());
        l.want_sweep(t0);
        assert_eq!(l.sweep_at(), Some(t0));
        let held = |b_held: usize| vec![(a, ids[0], 390), (b, ids[1], b_held), (c, ids[2], 300)];
        let mut close = Vec::new();
        l.sweep(t0, held(390).into_iter(), &mut close);
        assert!(close.is_empty(), "marked, not closed: the grace runs");
        assert_eq!(l.sweep_at(), Some(t0 + Duration::from_millis(500)));
        // b frees memory meanwhile: the endpoint is within budget, nobody is over
        l.change(ids[1], 390, 100);
        let now = t0 + Duration::from_secs(3);
        l.sweep(now, held(100).into_iter(), &mut close);
        assert!(close.is_empty());
        assert_eq!(l.sweep_at(), None, "within budget: no more sweeps");
        // over again: a is marked anew and closed only a whole grace later
        l.change(ids[1], 100, 390);
        l.sweep(now, held(390).into_iter(), &mut close);
        l.sweep(
            now + Duration::from_secs(1),
            held(390).into_iter(),
            &mut close,
        );
        assert!(close.is_empty());
        l.sweep(
            now + Duration::from_secs(2),
            held(390).into_iter(),
            &mut close,
        );
        let closed: Vec<_> = close.iter().map(|v| (v.handle, v.held, v.share)).collect();
        assert_eq!(
            closed,
            vec![(a, 390, 333), (b, 390, 333)],
            "c is within its share"
        );
    }
}
