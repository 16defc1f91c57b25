//! The period-T hold: messages bound for the trunk wait here and are pushed into the trunk
//! connection together at each tick, so that thinwire packs many players' messages into few
//! datagrams (the multiplexing gain of Griwodz & Halvorsen's proxy; TCM's period T).
//!
//! The ticks are a free-running clock, `epoch + k T` (the epoch is the first message ever
//! held), not "T after the batch's first message": a message waits until the next tick, so at
//! most T, and a message arriving at a moment unrelated to the clock (sparse traffic) waits
//! T/2 on average. With ticks started by each batch's first message, a message alone in its
//! period waited the whole T.
//!
//! Two queues, pushed in this order at a tick:
//! - **urgent**: Unreliable, UnreliableSequenced and LatestReliable messages, all of them;
//! - **bulk**: ReliableOrdered and ReliableUnordered messages, only while the trunk's
//!   reliable channel holds less than a bound ([`BULK_QUEUE_BOUND`]), so that latest values
//!   and unreliable data never wait behind a bulk transfer inside the trunk connection.
//!
//! Each flow's held bytes are bounded (`max_flow_backlog`), and so is their sum (`max_held`):
//! past it, a flow above its fair share of the sum is closed, as one past its own bound is.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::ChannelKind;

use super::inbound::ENTRY_COST;
use super::stats::GatewayStats;

/// Bytes the trunk's reliable channel may hold (sent, unacknowledged) before bulk messages
/// stay in the hold: 64 KiB, about 50 full datagrams, a few round trips of a thin trunk.
pub(crate) const BULK_QUEUE_BOUND: usize = 64 << 10;

/// One held player message.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub(crate) flow: u32,
    pub(crate) channel: u8,
    pub(crate) kind: ChannelKind,
    pub(crate) key: Option<u64>,
    pub(crate) data: Bytes,
    pub(crate) since: Instant,
}

impl Item {
    fn cost(&self) -> usize {
        self.data.len() + ENTRY_COST
    }

    fn urgent(&self) -> bool {
        matches!(
            self.kind,
            ChannelKind::Unreliable
                | ChannelKind::UnreliableSequenced
                | ChannelKind::LatestReliable
        )
    }
}

/// What the trunk did with a pushed item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// It is in the trunk connection.
    Sent,
    /// The trunk's send buffer is full: keep it for the next tick.
    Blocked,
    /// It can never be sent (too large, flow gone): drop it.
    Dropped,
}

/// The hold.
#[derive(Debug)]
pub(crate) struct Hold {
    period: Duration,
    limit: usize,
    /// Most bytes held for all flows together, and what they hold now.
    max_total: usize,
    total: usize,
    urgent: VecDeque<Item>,
    bulk: VecDeque<Item>,
    per_flow: HashMap<u32, usize>,
    tick: Option<Instant>,
    /// The period clock's origin: ticks fall on `epoch + k T`, whether or not anything is
    /// held, so a message arriving at a random moment waits T/2 on average and never more
    /// than T. Set by the first message ever held.
    epoch: Option<Instant>,
}

impl Hold {
    /// At most `limit` bytes per flow and `max_total` for all of them.
    pub(crate) fn new(period: Duration, limit: usize, max_total: usize) -> Self {
        Self {
            period,
            limit,
            max_total,
            total: 0,
            urgent: VecDeque::new(),
            bulk: VecDeque::new(),
            per_flow: HashMap::new(),
            tick: None,
            epoch: None,
        }
    }

    /// The first tick of the free-running period clock at or after `now` (the clock's first
    /// tick is one period after its epoch).
    fn next_tick(&mut self, now: Instant) -> Instant {
        let epoch = *self.epoch.get_or_insert(now);
        let period = self.period.as_nanos();
        if period == 0 {
            return now;
        }
        let since = now.saturating_duration_since(epoch).as_nanos();
        let periods = since.div_ceil(period).max(1);
        let at = u64::try_from(periods.saturating_mul(period)).unwrap_or(u64::MAX);
        epoch + Duration::from_nanos(at)
    }

    /// Holds `item`; `false` if its flow would pass its backlog bound, or its fair share of
    /// `max_total` once that is reached (nothing is held then).
    pub(crate) fn push(&mut self, now: Instant, item: Item) -> bool {
        let flows = self.per_flow.len() + usize::from(!self.per_flow.contains_key(&item.flow));
        let share = self.max_total / flows.max(1);
        let full = self.total + item.cost() > self.max_total;
        let held = self.per_flow.entry(item.flow).or_default();
        let after = *held + item.cost();
        if after > self.limit || (full && after > share) {
            if *held == 0 {
                self.per_flow.remove(&item.flow);
            }
            return false;
        }
        *held = after;
        self.total += item.cost();
        if item.urgent() {
            self.urgent.push_back(item);
        } else {
            self.bulk.push_back(item);
        }
        if self.tick.is_none() {
            self.tick = Some(self.next_tick(now));
        }
        true
    }

    /// Whether a push is due at `now`.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.tick.is_some_and(|t| t <= now)
    }

    /// The next tick, while anything is held.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.tick
    }

    /// Bytes held now for all flows (tests of the bounds).
    #[cfg(test)]
    pub(crate) fn total(&self) -> usize {
        debug_assert_eq!(self.total, self.per_flow.values().sum::<usize>());
        self.total
    }

    /// Bytes held now for `flow` (tests of the bounds).
    #[cfg(test)]
    pub(crate) fn held(&self, flow: u32) -> usize {
        self.per_flow.get(&flow).copied().unwrap_or(0)
    }

    /// Messages held now.
    pub(crate) fn len(&self) -> usize {
        self.urgent.len() + self.bulk.len()
    }

    /// Forgets a closed flow's messages; returns how many there were.
    pub(crate) fn forget(&mut self, flow: u32) -> usize {
        let before = self.len();
        self.urgent.retain(|i| i.flow != flow);
        self.bulk.retain(|i| i.flow != flow);
        self.total -= self.per_flow.remove(&flow).unwrap_or(0);
        before - self.len()
    }

    /// Forgets everything (the trunk went down); returns how many messages there were.
    pub(crate) fn clear(&mut self) -> usize {
        let n = self.len();
        self.urgent.clear();
        self.bulk.clear();
        self.per_flow.clear();
        self.total = 0;
        self.tick = None;
        n
    }

    /// Pushes what may go now: every urgent item, then bulk items while `bulk_budget` bytes
    /// last (one item may pass it) and the trunk takes them. Re-arms the tick if anything stays.
    pub(crate) fn drain(
        &mut self,
        now: Instant,
        bulk_budget: usize,
        stats: &mut GatewayStats,
        mut send: impl FnMut(&Item) -> Pushed,
    ) {
        while let Some(item) = self.urgent.pop_front() {
            self.release(&item);
            match send(&item) {
                Pushed::Sent => stats.held(now.saturating_duration_since(item.since)),
                Pushed::Blocked | Pushed::Dropped => stats.dropped_messages += 1,
            }
        }
        let mut budget = bulk_budget;
        while let Some(item) = self.bulk.front() {
            if budget == 0 {
                break;
            }
            match send(item) {
                Pushed::Blocked => break,
                Pushed::Sent => stats.held(now.saturating_duration_since(item.since)),
                Pushed::Dropped => stats.dropped_messages += 1,
            }
            budget = budget.saturating_sub(item.data.len());
            if let Some(item) = self.bulk.pop_front() {
                self.release(&item);
            }
        }
        self.tick = None;
        if self.len() > 0 {
            // what stays (bulk the trunk would not take) goes at the next tick, at least
            // 1 ms on when T is 0 so that a blocked trunk is not polled in a busy loop
            self.tick = Some(if self.period.is_zero() {
                now + Duration::from_millis(1)
            } else {
                self.next_tick(now + Duration::from_nanos(1))
            });
        }
    }

    fn release(&mut self, item: &Item) {
        if let Some(h) = self.per_flow.get_mut(&item.flow) {
            self.total -= item.cost().min(*h);
            *h = h.saturating_sub(item.cost());
            if *h == 0 {
                self.per_flow.remove(&item.flow);
            }
        }
    }
}
