//! The connection's timers: every deadline follows from its state (`timer_table`); it keeps the
//! earliest, worked out when the endpoint asks for it (`poll_deadline`).

use std::time::{Duration, Instant};

#[cfg(test)]
use super::loss::Recovery;
use super::{Connection, Side, State};
use crate::error::DisconnectReason;
#[cfg(test)]
use crate::recovery::ReceivedPackets;

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
    /// Nothing was sent or received for [`TRIM_AFTER`], or a trimmed connection's keepalive
    /// exchange has settled ([`Rest::Stirred`]): give back the memory an idle connection does
    /// not need (expanded keys, emptied queues' capacity).
    Trim = 10,
    /// A copy scheduled by the repair policy falls due: it is released to the next datagram.
    Repair = 11,
}

const COUNT: usize = 12;

/// How long a connection is quiet before it gives back its idle memory.
pub(crate) const TRIM_AFTER: Duration = Duration::from_secs(1);

/// Where a connection is between traffic and rest, for giving back its idle memory.
///
/// An idle connection still exchanges a keepalive and its ACK every few seconds, and each such
/// packet makes again what the trim gave back (the expanded keys, the boxed queues and
/// scratch lists, the unpacked counters). Were it to wait [`TRIM_AFTER`] again after each,
/// every idle connection would hold its working memory for about half of every keepalive
/// interval: measured over 500 idle connections with keepalives spread in time, 2,497 B each
/// on average, against 1,507 B with this rule (`tests/alloc.rs`, when the rule came; 1,065 B
/// since idle connections also pack their loss recovery and ACK state). So a trimmed connection that
/// only exchanges keepalives and ACKs trims again as soon as that exchange has settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rest {
    /// Data moved within [`TRIM_AFTER`], or the connection never trimmed: it trims after
    /// [`TRIM_AFTER`] of quiet.
    Awake,
    /// Idle memory was given back and nothing has moved since (the Trim timer is off).
    Trimmed,
    /// Trimmed, and since then only packets without data (keepalives, ACKs) moved: it trims
    /// again once nothing is in flight and no ACK is owed.
    Stirred,
}

impl Rest {
    /// A packet was sent or received; `data`: it carried messages (or anything other than
    /// keepalives and ACKs).
    pub(super) fn on_packet(&mut self, data: bool) {
        *self = match (*self, data) {
            (_, true) | (Rest::Awake, false) => Rest::Awake,
            (Rest::Trimmed | Rest::Stirred, false) => Rest::Stirred,
        };
    }
}

#[cfg(test)]
use crate::stamp::instant_at;
use crate::stamp::{signed_nanos, Stamp};

/// The deadlines of all timers, as [`Stamp`]s from `base` (its endpoint's start, the base of
/// the endpoint's own timer table too, so that the endpoint takes a connection's next deadline
/// as it is, [`Connection::poll_deadline`]): 8 bytes a timer instead of an
/// `Option<Instant>`'s 16, and exact. The connection keeps its own moments (last receipt, last
/// send, the close's) as stamps from the same base, so the timers that run from them are set
/// by adding durations ([`Stamp::after`]), without the `Instant` arithmetic that is most of a
/// table's cost.
///
/// Every deadline follows from the connection's state ([`Connection::timer_table`]), so a
/// connection does not keep the table: it keeps its earliest deadline ([`Timers`]) and makes
/// the table again when a timer fires, 24 bytes instead of 112 for every connection.
#[derive(Debug, Clone)]
pub(crate) struct TimerTable {
    base: Instant,
    at: [Stamp; COUNT],
}

/// What a connection keeps of its timers: the base of its stamps and its earliest deadline,
/// as worked out the last time it was asked for after a change of its state
/// ([`Connection::poll_deadline`]).
#[derive(Debug, Clone)]
pub(crate) struct Timers {
    base: Instant,
    next: Stamp,
}

impl Timers {
    /// No timer armed; stamps count from `base`.
    pub(crate) fn new(base: Instant) -> Self {
        Self {
            base,
            next: Stamp::NONE,
        }
    }

    /// `at` as a moment of the connection's life.
    pub(crate) fn stamp(&self, at: Instant) -> Stamp {
        Stamp(signed_nanos(at, self.base))
    }

    /// Whether `d` has passed between moment `from` and `now` (never, from [`Stamp::NONE`]).
    pub(crate) fn elapsed(&self, from: Stamp, d: Duration, now: Instant) -> bool {
        from != Stamp::NONE && self.stamp(now) >= from.after(d)
    }

    /// The instant the stamps count from.
    pub(crate) fn base(&self) -> Instant {
        self.base
    }
}

impl TimerTable {
    /// A table with no timer armed, whose stamps count from `base`.
    pub(crate) fn new(base: Instant) -> Self {
        Self {
            base,
            at: [Stamp::NONE; COUNT],
        }
    }

    /// `at` as a moment of the connection's life.
    pub(crate) fn stamp(&self, at: Instant) -> Stamp {
        Stamp(signed_nanos(at, self.base))
    }

    pub(crate) fn set(&mut self, timer: Timer, at: Option<Instant>) {
        self.set_at(timer, at.map_or(Stamp::NONE, |at| self.stamp(at)));
    }

    /// Arms `timer` for moment `at` ([`Stamp::NONE`] disarms it).
    fn set_at(&mut self, timer: Timer, at: Stamp) {
        self.at[timer as usize] = at;
    }

    /// The earliest deadline.
    #[cfg(test)]
    fn next(&self) -> Option<Instant> {
        let earliest = self.next_deadline();
        (earliest != Stamp::NONE).then(|| instant_at(self.base, earliest.0))
    }

    /// The earliest deadline ([`Stamp::NONE`]: none).
    pub(crate) fn next_deadline(&self) -> Stamp {
        self.at.iter().copied().min().unwrap_or(Stamp::NONE)
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
        let now = self.stamp(now);
        let mut due = [false; COUNT];
        for t in ALL {
            let o = &mut self.at[t as usize];
            if *o <= now {
                *o = Stamp::NONE;
                due[t as usize] = true;
            }
        }
        ALL.into_iter().filter(move |t| due[*t as usize])
    }
}

// The connection's side: which timers run in which state, and what each does when it fires.
impl Connection {
    /// Whether the state changed since the earliest timer was last worked out.
    pub(crate) fn timers_changed(&self) -> bool {
        self.due.timers
    }

    /// The earliest timer, counted from the endpoint's start ([`Stamp::NONE`]: no timer
    /// armed): what the endpoint's timer table keeps, with no conversion.
    pub(crate) fn poll_deadline(&mut self) -> Stamp {
        if std::mem::take(&mut self.due.timers) {
            self.timers.next = self.timer_table().next_deadline();
        }
        self.timers.next
    }

    /// The instant [`poll_deadline`](Self::poll_deadline) counts from.
    pub(crate) fn deadline_base(&self) -> Instant {
        self.timers.base()
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        for t in self.timer_table().take_expired(now) {
            match t {
                Timer::LossDetection => self.on_loss_timer(now),
                Timer::Ack => self.flow.rx.immediate = true,
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
    /// empty, the whole boxed `Active` part); packs the counters, and, when nothing is in
    /// flight and no ACK is owed, the packet numbers, loss recovery and ACK state (`flow`).
    /// The next packet makes again what it needs.
    fn trim(&mut self, now: Instant) {
        self.rest = Rest::Trimmed;
        if let Some(k) = &mut self.keys {
            k.release_idle();
        }
        if self
            .timers
            .elapsed(self.handshake.started, self.config.handshake_timeout, now)
        {
            self.accept_packet = None;
        }
        if self.events.is_empty() {
            self.events = Default::default();
        }
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
        self.flow.recovery.sent.release_idle();
        self.flow.rx.release_idle();
        self.stats.park();
        if self.settled() {
            // settled, the parked parts arm no timer: the table is the same without them
            #[cfg(debug_assertions)]
            let before = self.timer_table().at;
            self.flow.park();
            #[cfg(debug_assertions)]
            debug_assert_eq!(before, self.timer_table().at, "parking moved a timer");
        }
    }

    /// Nothing is in flight: true of a connection whose recovery is parked (it parks only
    /// when settled, and changes nothing while parked), which is not unpacked to say so.
    fn nothing_in_flight(&self) -> bool {
        self.flow.is_parked() || self.flow.recovery.sent.in_flight() == 0
    }

    /// No ACK is owed, pending or armed to repeat: true of a connection whose received
    /// packets are parked, as [`nothing_in_flight`](Self::nothing_in_flight) is.
    fn no_ack_owed(&self) -> bool {
        self.flow.is_parked()
            || (self.flow.rx.unacked_eliciting == 0
                && !self.flow.rx.immediate
                && self.flow.rx.deadline == Stamp::NONE)
    }

    /// Nothing is in flight or due, no ACK is owed or armed to repeat, nothing is queued: a
    /// keepalive exchange is over.
    fn settled(&self) -> bool {
        self.nothing_in_flight()
            && self.no_ack_owed()
            && !self.due.ping
            && !self.due.probe
            && self.active.get().queues.nothing_to_send()
    }

    /// Its state changed: the earliest deadline is worked out again when next asked for
    /// ([`poll_deadline`](Self::poll_deadline)), once for any number of changes. The copies
    /// no longer wanted leave the repair queue now, as working the table out did, so what
    /// the next datagram carries does not depend on when the deadline is asked for.
    pub(super) fn update_timers(&mut self) {
        self.prune_copies();
        self.due.timers = true;
    }

    /// Every timer's deadline, as the connection's state sets them.
    fn timer_table(&mut self) -> TimerTable {
        let repair = self.copy_timer();
        let cfg = &self.config;
        // offsets from the connection's start, as the last receipt and send are kept: the
        // idle, keepalive and trim timers run from them by one addition
        let mut t = TimerTable::new(self.timers.base);
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
                let timeout = self.handshake.started.after(cfg.handshake_timeout);
                t.set_at(Timer::HandshakeTimeout, timeout);
            }
            State::Established | State::Closing { .. } => {
                // a parked connection has neither timer (`trim` checks): it is not unpacked
                if !self.flow.is_parked() {
                    let rto = self.rto_deadline();
                    t.set_at(Timer::LossDetection, self.flow.recovery.loss_time.min(rto));
                }
                if !self.flow.is_parked() && !self.flow.rx.immediate {
                    t.set_at(Timer::Ack, self.flow.rx.deadline);
                }
                // Any packet (an ACK too) keeps NAT mappings and the peer's idle timer alive, and
                // with data in flight the retransmission timer probes the path already. The
                // server waits a quarter longer, so in a spell of silence only the client pings
                // (the server's ACK of it resets the server's own keepalive).
                if !self.due.ping && self.nothing_in_flight() {
                    let interval = match self.side {
                        Side::Client => cfg.keepalive_interval,
                        Side::Server => cfg.keepalive_interval * 5 / 4,
                    };
                    t.set_at(Timer::Keepalive, self.last_tx.after(interval));
                }
                t.set_at(Timer::Idle, self.last_rx.after(cfg.idle_timeout));
                let quiet_from = self.last_tx.max(self.last_rx);
                match self.rest {
                    Rest::Trimmed => {}
                    Rest::Stirred if self.settled() => t.set_at(Timer::Trim, quiet_from),
                    Rest::Awake | Rest::Stirred => {
                        t.set_at(Timer::Trim, quiet_from.after(TRIM_AFTER))
                    }
                }
                t.set(
                    Timer::Deadline,
                    self.deadline.as_ref().and_then(|d| d.tx.next_timeout()),
                );
                t.set(Timer::PathProbe, self.path_timeout());
                t.set(Timer::Repair, repair);
                if let State::Closing { .. } = self.state {
                    // a close not begun (no moment) arms nothing
                    t.set_at(Timer::Close, self.close.started.after(cfg.close_timeout));
                }
            }
            State::Draining(d) => t.set(Timer::Drain, Some(d.until)),
            State::Closed => {}
        }
        t
    }
}

#[cfg(test)]
mod tests;
