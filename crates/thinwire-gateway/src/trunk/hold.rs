//! The period-T hold: messages bound for the trunk wait here and are pushed into the trunk
//! connection together at each tick, so that thinwire packs many players' messages into few
//! datagrams (the multiplexing gain of Griwodz & Halvorsen's proxy; TCM's period T).
//!
//! **How long a batch is held.** A batch starts with the first message held while nothing
//! is, and is pushed `H` later, `H = T * min(1, λT / 2)`, where λ is the recent arrival rate of
//! messages toward the trunk (an average of the gaps between them, [`GAP_WEIGHT`]). Holding
//! for `H` gains about `λH` more messages per push: with two or more messages per period
//! (λT ≥ 2) the whole T is worth it and kept; below that the hold shrinks with what it can
//! gain, so sparse traffic (at most one message per period, λT ≤ 1) waits at most T/2, and
//! a lone message on an idle trunk goes almost at once. No message waits more than T (bulk
//! the trunk will not take yet excepted, below). A free-running period clock (ticks at
//! `epoch + kT`: T/2 on average at every rate) was measured first and rejected: in the
//! Anarchy Online reproduction (175 flows, λT ≈ 2.8) it sent 26% more trunk packets than
//! batches of a whole T, because a push then covers a whole T only when a message arrives
//! right after a tick (`docs/GATEWAY.md` §5.1).
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
    /// A deadline message: the time it had left when it arrived.
    pub(crate) deadline: Option<Duration>,
}

impl Item {
    fn cost(&self) -> usize {
        self.data.len() + ENTRY_COST
    }

    fn urgent(&self) -> bool {
        self.deadline.is_some()
            || matches!(
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
    /// Average gap between messages arriving (1/λ), and the last arrival.
    gap: Duration,
    last: Option<Instant>,
    /// What became of each item of the last push (kept to spare an allocation per push).
    outcomes: Vec<Pushed>,
}

/// Weight of the newest gap in the average gap between arrivals: 1/8, so the rate follows a
/// change within a few dozen messages.
pub(crate) const GAP_WEIGHT: u32 = 8;
/// Longest gap the average counts: a long idle time says "sparse", not how sparse.
const MAX_GAP: Duration = Duration::from_secs(1);

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
            gap: period,
            last: None,
            outcomes: Vec::new(),
        }
    }

    /// How long a batch starting now is held: `T * min(1, λT / 2)` (module docs).
    pub(crate) fn hold_for(&self) -> Duration {
        let t = self.period.as_secs_f64();
        let gap = self.gap.as_secs_f64();
        if gap <= 0.0 {
            return self.period;
        }
        self.period.mul_f64((t / (2.0 * gap)).min(1.0))
    }

    fn note_arrival(&mut self, now: Instant) {
        if let Some(last) = self.last {
            let g = now.saturating_duration_since(last).min(MAX_GAP);
            self.gap = (self.gap * (GAP_WEIGHT - 1) + g) / GAP_WEIGHT;
        }
        self.last = Some(now);
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
        self.note_arrival(now);
        if self.tick.is_none() {
            self.tick = Some(now + self.hold_for());
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

    /// Forgets a closed flow's messages; returns how many there were. A flow holds messages
    /// exactly when it has an entry in `per_flow`, so closing one that holds nothing (the
    /// common case) costs no scan of the queues.
    pub(crate) fn forget(&mut self, flow: u32) -> usize {
        let Some(bytes) = self.per_flow.remove(&flow) else {
            return 0;
        };
        let before = self.len();
        self.urgent.retain(|i| i.flow != flow);
        self.bulk.retain(|i| i.flow != flow);
        self.total -= bytes;
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

    /// Pushes what may go now: every urgent item, one at a time, then in one call the bulk
    /// items the `bulk_budget` bytes cover (the last may pass it). `send` tells what became of
    /// each item it is handed, by index (one missing counts as Blocked); a Blocked bulk item
    /// stays at the front, in its order, and the tick is re-armed for it. The pusher sends no
    /// item after a Blocked one of its flow, so no flow's messages are reordered.
    pub(crate) fn drain(
        &mut self,
        now: Instant,
        bulk_budget: usize,
        stats: &mut GatewayStats,
        mut send: impl FnMut(&[Item], &mut Vec<Pushed>),
    ) {
        let mut outcomes = std::mem::take(&mut self.outcomes);
        while let Some(item) = self.urgent.pop_front() {
            self.release(&item);
            send(std::slice::from_ref(&item), &mut outcomes);
            match outcomes.first() {
                Some(Pushed::Sent) => stats.held(now.saturating_duration_since(item.since)),
                _ => stats.dropped_messages += 1,
            }
        }
        let mut budget = bulk_budget;
        let n = self
            .bulk
            .iter()
            .take_while(|i| {
                let more = budget > 0;
                budget = budget.saturating_sub(i.data.len());
                more
            })
            .count();
        if n > 0 {
            send(&self.bulk.make_contiguous()[..n], &mut outcomes);
            // (no allocation unless something was refused: the common push takes everything)
            let mut kept = Vec::new();
            for i in 0..n {
                let Some(item) = self.bulk.pop_front() else {
                    break;
                };
                match outcomes.get(i).copied().unwrap_or(Pushed::Blocked) {
                    Pushed::Blocked => {
                        kept.push(item);
                        continue;
                    }
                    Pushed::Sent => stats.held(now.saturating_duration_since(item.since)),
                    Pushed::Dropped => stats.dropped_messages += 1,
                }
                self.release(&item);
            }
            for item in kept.into_iter().rev() {
                self.bulk.push_front(item);
            }
        }
        self.outcomes = outcomes;
        // what stays (bulk the trunk would not take) tries again a period later, at least
        // 1 ms on when T is 0 so that a blocked trunk is not polled in a busy loop
        self.tick = (self.len() > 0).then(|| now + self.period.max(Duration::from_millis(1)));
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

/// A `drain` pusher that decides item by item (tests).
#[cfg(test)]
pub(crate) fn per_item(
    mut f: impl FnMut(&Item) -> Pushed,
) -> impl FnMut(&[Item], &mut Vec<Pushed>) {
    move |items, out| {
        out.clear();
        out.extend(items.iter().map(&mut f));
    }
}
