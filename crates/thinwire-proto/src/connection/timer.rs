//! The connection's timers: one table, `poll_timeout` is its earliest entry.

use std::time::{Duration, Instant};

use super::{Connection, Side, State};
use crate::error::DisconnectReason;

/// Every timer a connection has. See `docs/PROTOCOL.md` section "Timers" for what each does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Loss detection: the thin-stream reordering window or the standard time threshold ends,
    /// or the retransmission timeout expires.
    LossDetection = 0,
    /// A delayed ACK falls due.
    Ack = 1,
    /// Nothing ack-eliciting was sent for the keepalive interval: send a PING.
    Keepalive = 2,
    /// Nothing was received for the idle timeout: the connection is dead.
    Idle = 3,
    /// Retransmit the Hello or Connect.
    Handshake = 4,
    /// The handshake is abandoned.
    HandshakeTimeout = 5,
    /// A graceful close waited long enough for outstanding data: send CLOSE anyway.
    Close = 6,
    /// The draining period after CLOSE ends; the connection is forgotten.
    Drain = 7,
    /// A stage of a deadline message ends: count what arrived, send the next stage's shards.
    Deadline = 8,
    /// A PATH_CHALLENGE to a new peer address went unanswered: send it again or give up.
    PathProbe = 9,
    /// Nothing was sent or received for [`TRIM_AFTER`]: give back the memory an idle
    /// connection does not need (expanded keys, emptied queues' capacity).
    Trim = 10,
    /// A copy scheduled by the repair policy falls due: it is released to the next datagram.
    Repair = 11,
}

const COUNT: usize = 12;

/// How long a connection is quiet before it gives back its idle memory.
pub(crate) const TRIM_AFTER: Duration = Duration::from_secs(1);

/// A timer not armed.
const UNSET: u64 = u64::MAX;

/// Deadlines of all timers, each kept as nanoseconds after `base` (the earliest deadline set
/// since the table was made): 8 bytes a timer instead of an `Option<Instant>`'s 16, and
/// exact, since an `Instant` minus an earlier one is a whole number of nanoseconds and adding
/// it back gives the same `Instant`. (Deadlines more than 584 years apart would not fit.)
#[derive(Debug, Clone)]
pub(crate) struct TimerTable {
    base: Option<Instant>,
    at: [u64; COUNT],
}

impl Default for TimerTable {
    fn default() -> Self {
        Self {
            base: None,
            at: [UNSET; COUNT],
        }
    }
}

/// `d` in nanoseconds (below [`UNSET`]).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).map_or(UNSET - 1, |n| n.min(UNSET - 1))
}

impl TimerTable {
    pub(crate) fn set(&mut self, timer: Timer, at: Option<Instant>) {
        let Some(at) = at else {
            self.at[timer as usize] = UNSET;
            return;
        };
        let base = match self.base {
            Some(b) if b <= at => b,
            old => {
                // an earlier deadline becomes the base: the others move up by the difference
                if let Some(b) = old {
                    let shift = nanos(b - at);
                    for o in self.at.iter_mut().filter(|o| **o != UNSET) {
                        *o = o.saturating_add(shift).min(UNSET - 1);
                    }
                }
                self.base = Some(at);
                at
            }
        };
        self.at[timer as usize] = nanos(at - base);
    }

    /// The deadline of timer number `i`, if armed.
    fn get(&self, i: usize) -> Option<Instant> {
        let o = self.at[i];
        let base = self.base?;
        (o != UNSET).then(|| base + Duration::from_nanos(o))
    }

    /// The earliest deadline.
    pub(crate) fn next(&self) -> Option<Instant> {
        let earliest = self.at.iter().copied().min().filter(|o| *o != UNSET)?;
        Some(self.base? + Duration::from_nanos(earliest))
    }

    /// Timers due at `now`, in table order; they are cleared at once (the iterator does not
    /// borrow the table, and allocates nothing).
    pub(crate) fn take_expired(&mut self, now: Instant) -> impl Iterator<Item = Timer> {
        const ALL: [Timer; COUNT] = [
            Timer::LossDetection,
            Timer::Ack,
            Timer::Keepalive,
            Timer::Idle,
            Timer::Handshake,
            Timer::HandshakeTimeout,
            Timer::Close,
            Timer::Drain,
            Timer::Deadline,
            Timer::PathProbe,
            Timer::Trim,
            Timer::Repair,
        ];
        let mut due = [false; COUNT];
        for t in ALL {
            if self.get(t as usize).is_some_and(|at| at <= now) {
                self.at[t as usize] = UNSET;
                due[t as usize] = true;
            }
        }
        ALL.into_iter().filter(move |t| due[*t as usize])
    }
}

// The connection's side: which timers run in which state, and what each does when it fires.
impl Connection {
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        for t in self.timers.take_expired(now) {
            match t {
                Timer::LossDetection => self.on_loss_timer(now),
                Timer::Ack => self.rx.immediate = true,
                Timer::Keepalive => self.due.ping = true,
                Timer::Idle => self.finish(DisconnectReason::TimedOut),
                Timer::Handshake => {
                    self.due.handshake = true;
                    if let Some(c) = self.handshake.client.as_mut() {
                        c.retransmitted = true;
                    }
                }
                Timer::HandshakeTimeout => self.finish(DisconnectReason::HandshakeTimedOut),
                Timer::Close => self.stop_closing(now),
                Timer::Deadline => {
                    let ctx = self.stage_context();
                    if let Some(d) = &mut self.deadline {
                        d.tx.on_timeout(now, ctx);
                    }
                }
                Timer::Drain => self.drained(),
                Timer::PathProbe => self.on_path_timeout(),
                Timer::Trim => self.trim(now),
                Timer::Repair => self.on_repair_timer(now),
            }
            if self.state == State::Closed {
                break;
            }
        }
        self.update_timers();
    }

    /// The connection has been quiet for [`TRIM_AFTER`]: drops the expanded keys, the
    /// capacity of every empty queue and the received ranges' spare room, the Accept once the
    /// client cannot ask for it again, and the scratch lists (with the queues, when all are
    /// empty, the whole boxed `Active` part); packs the counters. The next packet makes again
    /// what it needs.
    fn trim(&mut self, now: Instant) {
        self.trimmed = true;
        if let Some(k) = &mut self.keys {
            k.release_idle();
        }
        if now >= self.handshake.started + self.config.handshake_timeout {
            self.accept_packet = None;
        }
        self.events = Vec::new();
        let bundled_all_acked = self
            .active
            .get()
            .queues
            .unacked_order
            .iter()
            .all(|&c| !self.chunk_unacked(c));
        self.active.trim(bundled_all_acked);
        for ch in &mut self.send {
            ch.msgs.release_if_empty();
        }
        self.recovery.sent.release_idle();
        self.rx.release_idle();
        self.stats.park();
    }

    pub(super) fn update_timers(&mut self) {
        let repair = self.copy_timer();
        let cfg = &self.config;
        let mut t = TimerTable::default();
        match &self.state {
            State::AwaitingChallenge | State::AwaitingAccept => {
                if !self.due.handshake {
                    t.set(
                        Timer::Handshake,
                        self.handshake
                            .client
                            .as_ref()
                            .and_then(|c| c.sent_at)
                            .map(|s| s + cfg.handshake_retry),
                    );
                }
                t.set(
                    Timer::HandshakeTimeout,
                    Some(self.handshake.started + cfg.handshake_timeout),
                );
            }
            State::Established | State::Closing { .. } => {
                let loss = match (self.recovery.loss_time, self.rto_deadline()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                t.set(Timer::LossDetection, loss);
                if !self.rx.immediate {
                    t.set(Timer::Ack, self.rx.deadline);
                }
                // Any packet (an ACK too) keeps NAT mappings and the peer's idle timer alive, and
                // with data in flight the retransmission timer probes the path already. The
                // server waits a quarter longer, so in a spell of silence only the client pings
                // (the server's ACK of it resets the server's own keepalive).
                if !self.due.ping && self.recovery.sent.in_flight() == 0 {
                    let interval = match self.side {
                        Side::Client => cfg.keepalive_interval,
                        Side::Server => cfg.keepalive_interval * 5 / 4,
                    };
                    t.set(Timer::Keepalive, Some(self.last_tx + interval));
                }
                t.set(Timer::Idle, Some(self.last_rx + cfg.idle_timeout));
                if !self.trimmed {
                    t.set(
                        Timer::Trim,
                        Some(self.last_rx.max(self.last_tx) + TRIM_AFTER),
                    );
                }
                t.set(
                    Timer::Deadline,
                    self.deadline.as_ref().and_then(|d| d.tx.next_timeout()),
                );
                t.set(Timer::PathProbe, self.path_timeout());
                t.set(Timer::Repair, repair);
                if let (State::Closing { .. }, Some(s)) = (&self.state, self.close.started) {
                    t.set(Timer::Close, Some(s + cfg.close_timeout));
                }
            }
            State::Draining(d) => t.set(Timer::Drain, Some(d.until)),
            State::Closed => {}
        }
        self.timers = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table gives back exactly the instants it was given, whichever order they come in
    /// (a later earlier deadline moves the base), and fires each at that instant.
    #[test]
    fn deadlines_come_back_to_the_nanosecond() {
        let t0 = Instant::now();
        let at = |ns: u64| t0 + Duration::from_nanos(ns);
        let mut t = TimerTable::default();
        assert_eq!(t.next(), None);
        t.set(Timer::Idle, Some(at(30_000_000_007)));
        t.set(Timer::Ack, Some(at(1_999_999_999)));
        t.set(Timer::Keepalive, Some(at(5)));
        t.set(Timer::Trim, Some(at(1_000_000_001)));
        t.set(Timer::Repair, None);
        assert_eq!(t.next(), Some(at(5)));
        let fired: Vec<_> = t.take_expired(at(4)).collect();
        assert!(fired.is_empty());
        let fired: Vec<_> = t.take_expired(at(1_000_000_001)).collect();
        assert_eq!(fired, [Timer::Keepalive, Timer::Trim]);
        assert_eq!(t.next(), Some(at(1_999_999_999)));
        t.set(Timer::Ack, None);
        assert_eq!(t.next(), Some(at(30_000_000_007)));
        let fired: Vec<_> = t.take_expired(at(30_000_000_006)).collect();
        assert!(fired.is_empty());
        let fired: Vec<_> = t.take_expired(at(30_000_000_007)).collect();
        assert_eq!(fired, [Timer::Idle]);
        assert_eq!(t.next(), None);
    }
}
