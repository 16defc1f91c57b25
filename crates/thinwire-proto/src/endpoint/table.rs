//! The endpoint's connections: a slab indexed by handle, each slot with its armed timer and
//! its dirty mark, a heap of timers, and the queue of connections that may have datagrams to
//! send.
//!
//! A handle is `generation << 32 | index`: finding a connection is an index and a compare, no
//! hashing. A slot's generation grows each time it is freed, so a handle is never reused by
//! the same endpoint (until one slot has been reused 2^32 times).
//!
//! Timers: the heap holds `(deadline, index, generation)` entries and is never searched. A
//! slot has at most one live entry, `queued`, never later than its timer. Re-arming a
//! connection *later* (what most packets do: the idle, keepalive and retransmission deadlines
//! move on) touches no heap: the entry stays where it is, and only when it surfaces is it
//! replaced by one at the slot's deadline then. Re-arming *earlier* pushes a new entry; the
//! old one stays behind, stale, and is dropped when it surfaces (an entry is live only if its
//! slot still holds that generation and that entry). The top of the heap is kept exact (live,
//! at its slot's deadline), so [`ConnTable::next_timer`] is exact, and the heap is rebuilt from
//! the slots when stale entries outnumber the connections.
//!
//! A connection's timer is armed again lazily: a call that changes the connection only marks
//! it ([`ConnTable::timer_changed`]), and [`ConnTable::settle_timers`] works out the deadlines of
//! every marked connection when the timers are read.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

use super::budget::SourceIndex;
use super::ConnectionHandle;
use crate::connection::Connection;
use crate::stamp::{instant_at, signed_nanos, Stamp};

/// A deadline: a [`Stamp`] from the table's base, the endpoint's start, which its connections
/// count their own deadlines from too (8 bytes where an `Option<Instant>` takes 16, in every
/// slot and heap entry); [`NONE`] for none.
type Deadline = Stamp;

/// No deadline.
const NONE: Deadline = Stamp::NONE;

#[derive(Debug)]
struct Slot {
    generation: u32,
    conn: Option<Box<Connection>>,
    /// The deadline this connection's timer is armed for ([`NONE`]: disarmed).
    timer: Deadline,
    /// The deadline of this slot's live heap entry: never later than `timer` while that is
    /// armed ([`NONE`]: no live entry).
    queued: Deadline,
    /// Queued in `dirty`.
    dirty: bool,
    /// Queued in `stale`: the connection's state changed since its timer was last armed.
    stale: bool,
    /// Bytes of the memory budget the connection held when last looked at: in all, and of
    /// those what its peer sent.
    held: usize,
    received: usize,
    /// The connection's source entry in the memory ledger.
    source: SourceIndex,
}

/// Connections by handle, their timers and the dirty queue.
#[derive(Debug)]
pub(crate) struct ConnTable {
    /// The moment every deadline is counted from.
    base: Instant,
    slots: Vec<Slot>,
    free: Vec<u32>,
    len: usize,
    timers: BinaryHeap<Reverse<(Deadline, u32, u32)>>,
    dirty: VecDeque<ConnectionHandle>,
    /// Connections whose timer is to be armed again ([`settle_timers`](Self::settle_timers)).
    /// A handle whose connection is gone stays until then and is skipped.
    stale: Vec<ConnectionHandle>,
}

fn split(h: ConnectionHandle) -> (usize, u32) {
    ((h.0 & u64::from(u32::MAX)) as usize, (h.0 >> 32) as u32)
}

impl ConnTable {
    /// An empty table whose deadlines count from `base` (any moment; the endpoint's start).
    pub(crate) fn new(base: Instant) -> Self {
        Self {
            base,
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            timers: BinaryHeap::new(),
            dirty: VecDeque::new(),
            stale: Vec::new(),
        }
    }

    /// `now` as a deadline of this table.
    fn deadline_at(&self, now: Instant) -> Deadline {
        Stamp(signed_nanos(now, self.base))
    }

    #[cfg(test)]
    fn deadline(&self, at: Option<Instant>) -> Deadline {
        at.map_or(NONE, |at| self.deadline_at(at))
    }

    fn instant(&self, d: Deadline) -> Option<Instant> {
        (d != NONE).then(|| instant_at(self.base, d.0))
    }

    /// Connections held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Stores a connection of memory-ledger source entry `source`; returns its handle.
    pub(crate) fn insert(&mut self, conn: Connection, source: SourceIndex) -> ConnectionHandle {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    conn: None,
                    timer: NONE,
                    queued: NONE,
                    dirty: false,
                    stale: false,
                    held: 0,
                    received: 0,
                    source: 0,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.conn = Some(Box::new(conn));
        slot.held = 0;
        slot.received = 0;
        slot.source = source;
        self.len += 1;
        ConnectionHandle(u64::from(slot.generation) << 32 | u64::from(index))
    }

    fn slot(&self, h: ConnectionHandle) -> Option<&Slot> {
        let (i, g) = split(h);
        self.slots
            .get(i)
            .filter(|s| s.generation == g && s.conn.is_some())
    }

    fn slot_mut(&mut self, h: ConnectionHandle) -> Option<&mut Slot> {
        let (i, g) = split(h);
        self.slots
            .get_mut(i)
            .filter(|s| s.generation == g && s.conn.is_some())
    }

    /// The handles of every connection held, in slot order.
    pub(crate) fn handles(&self) -> impl Iterator<Item = ConnectionHandle> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.conn.as_ref()?;
            Some(ConnectionHandle(u64::from(s.generation) << 32 | i as u64))
        })
    }

    /// Hints `h`'s main structure (stage 0 of [`crate::prefetch`]; its slot is read, not
    /// hinted).
    pub(crate) fn prefetch(&self, h: ConnectionHandle, hint: crate::prefetch::Hint) {
        if let Some(c) = self.slots.get(split(h).0).and_then(|s| s.conn.as_deref()) {
            hint.value(c);
        }
    }

    /// The connection `k` places after the first in the dirty queue.
    pub(crate) fn dirty_after_first(&self, k: usize) -> Option<ConnectionHandle> {
        self.dirty.get(k).copied()
    }

    pub(crate) fn get(&self, h: ConnectionHandle) -> Option<&Connection> {
        self.slot(h).and_then(|s| s.conn.as_deref())
    }

    pub(crate) fn get_mut(&mut self, h: ConnectionHandle) -> Option<&mut Connection> {
        self.slot_mut(h).and_then(|s| s.conn.as_deref_mut())
    }

    /// Bytes of the memory budget `h` held when last recorded, and its source entry.
    pub(crate) fn held(&self, h: ConnectionHandle) -> Option<(usize, SourceIndex)> {
        self.slot(h).map(|s| (s.held, s.source))
    }

    /// Records that `h` holds `held` bytes, `received` of them sent by its peer; returns
    /// what it held before in all, and its source entry.
    pub(crate) fn set_held(
        &mut self,
        h: ConnectionHandle,
        held: usize,
        received: usize,
    ) -> (usize, SourceIndex) {
        self.slot_mut(h).map_or((0, 0), |s| {
            s.received = received;
            (std::mem::replace(&mut s.held, held), s.source)
        })
    }

    /// Every connection with its source entry and the bytes it was last recorded to hold of
    /// what its peer sent.
    pub(crate) fn iter_received(
        &self,
    ) -> impl Iterator<Item = (ConnectionHandle, SourceIndex, usize)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.conn.as_ref()?;
            Some((
                ConnectionHandle(u64::from(s.generation) << 32 | i as u64),
                s.source,
                s.received,
            ))
        })
    }

    /// Removes a connection (its timer and dirty mark go with it).
    pub(crate) fn remove(&mut self, h: ConnectionHandle) -> Option<Box<Connection>> {
        let (i, _) = split(h);
        let slot = self.slot_mut(h)?;
        let conn = slot.conn.take();
        slot.timer = NONE;
        slot.queued = NONE;
        slot.generation = slot.generation.wrapping_add(1);
        // its entry in `stale` (if any) no longer finds a connection
        slot.stale = false;
        if std::mem::take(&mut slot.dirty) {
            self.dirty.retain(|x| *x != h);
        }
        self.free.push(i as u32);
        self.len -= 1;
        self.settle();
        conn
    }

    /// The state of `h`'s connection changed: its timer is armed again, from the connection's
    /// [`poll_deadline`](Connection::poll_deadline), at the next
    /// [`settle_timers`](Self::settle_timers) rather than now. A connection that a datagram
    /// and the answer to it change three times works its timers out once, and a host that
    /// settles after its send system call keeps that work off the round trip.
    pub(crate) fn timer_changed(&mut self, h: ConnectionHandle) {
        if let Some(slot) = self.slot_mut(h) {
            if !slot.stale {
                slot.stale = true;
                self.stale.push(h);
            }
        }
    }

    /// Arms the timer of every connection changed since the last call. The order does not
    /// matter: connections' timers expire in the order of their deadlines, then of their
    /// slots, whatever order they were armed in.
    pub(crate) fn settle_timers(&mut self) {
        while let Some(h) = self.stale.pop() {
            let (i, _) = split(h);
            let Some(slot) = self.slot_mut(h) else {
                continue;
            };
            slot.stale = false;
            let Some(at) = slot.conn.as_deref_mut().map(Connection::poll_deadline) else {
                continue;
            };
            self.arm(i, at);
        }
    }

    /// Arms slot `i`'s timer: a new heap entry only when `at` is earlier than its live one.
    fn arm(&mut self, i: usize, at: Deadline) {
        let slot = &mut self.slots[i];
        if slot.timer == at {
            return;
        }
        slot.timer = at;
        // disarmed (the live entry is dropped when it surfaces), or the live entry surfaces
        // first (`settle` moves it on then): nothing to push
        if at != NONE && at < slot.queued {
            slot.queued = at;
            let g = slot.generation;
            self.timers.push(Reverse((at, i as u32, g)));
        }
        self.settle();
        if self.timers.len() > 2 * self.len + 64 {
            self.rebuild();
        }
    }

    /// Makes the top of the heap exact: stale entries are dropped, and a live entry whose
    /// slot's deadline moved on is replaced by one at that deadline (or dropped, disarmed).
    fn settle(&mut self) {
        while let Some(&Reverse((at, i, g))) = self.timers.peek() {
            let Some(slot) = self
                .slots
                .get_mut(i as usize)
                .filter(|s| s.generation == g && s.queued == at)
            else {
                self.timers.pop();
                continue;
            };
            if slot.timer == at {
                break;
            }
            slot.queued = slot.timer;
            if slot.timer == NONE {
                self.timers.pop();
            } else if let Some(mut top) = self.timers.peek_mut() {
                // one sift instead of a pop and a push
                *top = Reverse((slot.timer, i, g));
            }
        }
    }

    fn rebuild(&mut self) {
        for s in &mut self.slots {
            s.queued = s.timer;
        }
        self.timers = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.timer != NONE)
            .map(|(i, s)| Reverse((s.timer, i as u32, s.generation)))
            .collect();
    }

    /// Whether a timer armed at the last [`settle_timers`](Self::settle_timers) has expired by
    /// `now` (the connections changed since are not looked at).
    pub(crate) fn armed_expired(&self, now: Instant) -> bool {
        self.timers
            .peek()
            .is_some_and(|Reverse((at, ..))| *at <= self.deadline_at(now))
    }

    /// The earliest armed timer ([`settle_timers`](Self::settle_timers) first).
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        debug_assert!(self.stale.is_empty(), "timers read before they settled");
        self.timers
            .peek()
            .and_then(|Reverse((at, ..))| self.instant(*at))
    }

    /// The connection whose timer expired at or before `now`, earliest first (after arming
    /// every changed connection's timer again); its timer is disarmed.
    pub(crate) fn pop_expired(&mut self, now: Instant) -> Option<ConnectionHandle> {
        self.settle_timers();
        let &Reverse((at, i, g)) = self.timers.peek()?;
        if at > self.deadline_at(now) {
            return None;
        }
        self.timers.pop();
        let slot = &mut self.slots[i as usize];
        slot.timer = NONE;
        slot.queued = NONE;
        self.settle();
        Some(ConnectionHandle(u64::from(g) << 32 | u64::from(i)))
    }

    /// Queues `h` as possibly having datagrams to send (once).
    pub(crate) fn mark_dirty(&mut self, h: ConnectionHandle) {
        if let Some(slot) = self.slot_mut(h) {
            if !slot.dirty {
                slot.dirty = true;
                self.dirty.push_back(h);
            }
        }
    }

    /// The first connection queued as dirty.
    pub(crate) fn first_dirty(&self) -> Option<ConnectionHandle> {
        self.dirty.front().copied()
    }

    /// Takes the first connection off the dirty queue.
    pub(crate) fn pop_dirty(&mut self) {
        if let Some(h) = self.dirty.pop_front() {
            if let Some(slot) = self.slot_mut(h) {
                slot.dirty = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timers_fire_in_order_and_rearming_leaves_no_ghost() {
        // the timer logic only looks at slots (settle_timers finds them through live
        // connections): fake the slots and arm them by index
        let base = Instant::now();
        let mut t = fake_slots(3, base);
        let at = |ms| base + Duration::from_millis(ms);
        for (i, ms) in [(0, 30u64), (1, 10), (2, 20)] {
            t.arm(i, t.deadline(Some(at(ms))));
        }
        assert_eq!(t.next_timer(), Some(at(10)));
        // re-arm slot 1 later: no new entry, and the top moves on to slot 2
        t.arm(1, t.deadline(Some(at(40))));
        assert_eq!(t.next_timer(), Some(at(20)));
        assert_eq!(t.timers.len(), 3);
        let mut fired = Vec::new();
        while let Some(h) = t.pop_expired(at(100)) {
            fired.push(h.0);
        }
        assert_eq!(fired, vec![2, 0, 1]);
        assert_eq!(t.next_timer(), None);
    }

    fn fake_slots(n: usize, base: Instant) -> ConnTable {
        let mut t = ConnTable::new(base);
        for _ in 0..n {
            t.slots.push(Slot {
                generation: 0,
                conn: None,
                timer: NONE,
                queued: NONE,
                dirty: false,
                stale: false,
                held: 0,
                received: 0,
                source: 0,
            });
        }
        t.len = n;
        t
    }

    proptest::proptest! {
        /// Against a model (each slot's deadline, the earliest of them): whatever the order of
        /// re-arming later, earlier and disarming, `next_timer` is the earliest armed deadline,
        /// expiry hands out exactly the slots due, earliest first, and the heap stays bounded.
        #[test]
        fn lazy_entries_keep_the_next_timer_exact(
            ops in proptest::collection::vec(
                (0usize..6, proptest::option::of(0u64..200), proptest::bool::ANY),
                1..200,
            )
        ) {
            let base = Instant::now();
            let at = |ms| base + Duration::from_millis(ms);
            let mut t = fake_slots(6, base);
            let mut model: [Option<u64>; 6] = [None; 6];
            let mut now = 0u64;
            for (i, deadline, expire) in ops {
                // deadlines are never in the past (a connection arms its timers ahead)
                let deadline = deadline.map(|d| now + d);
                t.arm(i, t.deadline(deadline.map(at)));
                model[i] = deadline;
                proptest::prop_assert_eq!(t.next_timer(), model.iter().flatten().min().map(|&m| at(m)));
                proptest::prop_assert!(t.timers.len() <= 2 * 6 + 64);
                if expire {
                    now += 50;
                    let mut fired = Vec::new();
                    while let Some(h) = t.pop_expired(at(now)) {
                        fired.push(h.0 as usize);
                    }
                    // exactly the slots due
                    let mut got = fired.clone();
                    got.sort();
                    let due: Vec<usize> =
                        (0..6).filter(|&i| model[i].is_some_and(|m| m <= now)).collect();
                    proptest::prop_assert_eq!(got, due);
                    // earliest first (slots due at the same instant in either order)
                    let times: Vec<u64> = fired.iter().map(|&i| model[i].unwrap_or(0)).collect();
                    proptest::prop_assert!(times.windows(2).all(|w| w[0] <= w[1]));
                    for &i in &fired {
                        model[i] = None;
                    }
                }
            }
        }
    }
}
