//! The application's calls on a connection: the one send call and its [`SendMode`], the
//! channel settings, the graceful close.

use std::time::Instant;

use bytes::Bytes;

use super::{ConnectionHandle, Endpoint};
use crate::connection::SendMode;
use crate::deadline::DeadlineOptions;
use crate::error::SendError;

impl Endpoint {
    /// Queues a message on `channel` of `conn`, delivered as `mode` says
    /// ([`SendMode::Plain`] for the channel's own class). Refuses a mode the channel's class
    /// does not take (a latest-value key on another class, or no key on a latest-value
    /// channel) with [`SendError::WrongChannelKind`].
    pub fn send(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        channel: u8,
        data: Bytes,
        mode: SendMode,
    ) -> Result<(), SendError> {
        self.send_with(|| now, conn, channel, data, mode)
    }

    /// [`send`](Self::send), asking `now` for the present only if the send starts something
    /// timed ([`send_is_timed`](Self::send_is_timed)): any other send only queues and reads
    /// no time. A runtime passes its clock (`Instant::now`) and saves a clock reading per
    /// small message, with the timed check and the connection lookup made once.
    pub fn send_with(
        &mut self,
        now: impl FnOnce() -> Instant,
        conn: ConnectionHandle,
        channel: u8,
        data: Bytes,
        mode: SendMode,
    ) -> Result<(), SendError> {
        self.check_send_room(conn, data.len())?;
        let c = self
            .conns
            .get_mut(conn)
            .ok_or(SendError::UnknownConnection)?;
        if c.send_is_timed(channel, &mode) {
            let now = now();
            self.clock = self.clock.max(now);
            c.send(now, channel, data, mode)?;
            self.touched(conn);
            return Ok(());
        }
        // queuing arms no timer and raises no event (`Connection::queue`): only the memory
        // held moves, and the connection may now have something to send. (A resting
        // connection's Trim timer moves later, as it is no longer settled: the deadline it
        // told the table before is then a wake-up early, which finds nothing due.)
        c.send(self.clock, channel, data, mode)?;
        let held = c.held_bytes();
        self.conns.mark_dirty(conn);
        self.account(conn, held);
        Ok(())
    }

    /// Whether a [`send`](Self::send) in `mode` on `channel` of `conn` starts something timed,
    /// so that its `now` must be the present: a deadline message ([`SendMode::Deadline`], or a
    /// plain send on a channel with a deadline default). Any other send only queues its
    /// message and reads no time ([`send_with`](Self::send_with) asks for none).
    pub fn send_is_timed(&self, conn: ConnectionHandle, channel: u8, mode: &SendMode) -> bool {
        self.conns
            .get(conn)
            .is_some_and(|c| c.send_is_timed(channel, mode))
    }

    /// The latest instant this endpoint was given (by any call that takes `now`).
    pub fn clock(&self) -> Instant {
        self.clock
    }

    /// Sets (or with `None` clears) deadline options that every later [`SendMode::Plain`]
    /// [`send`](Self::send) on `channel` of `conn` uses: the channel-default form of deadline
    /// delivery. Latest-value channels refuse it.
    pub fn set_channel_deadline(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        opts: Option<DeadlineOptions>,
    ) -> Result<(), SendError> {
        let c = self
            .conns
            .get_mut(conn)
            .ok_or(SendError::UnknownConnection)?;
        c.set_channel_deadline(channel, opts)
    }

    /// Sets the repair target of reliable `channel` of `conn` (`None`: plain retransmission);
    /// by default every reliable channel has [`TransportConfig::repair`](crate::TransportConfig::repair).
    pub fn set_channel_repair(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        target: Option<crate::RepairTarget>,
    ) -> Result<(), SendError> {
        let c = self
            .conns
            .get_mut(conn)
            .ok_or(SendError::UnknownConnection)?;
        c.set_channel_repair(channel, target)
    }

    /// Tells a connection how many flows it carries (a gateway's trunk: its open players), so
    /// that its congestion control behaves as that many connections would (see
    /// `docs/PROTOCOL.md` §9): no more than their share of a bottleneck, and no less. Default 1.
    pub fn set_congestion_weight(
        &mut self,
        conn: ConnectionHandle,
        flows: u32,
    ) -> Result<(), SendError> {
        let c = self
            .conns
            .get_mut(conn)
            .ok_or(SendError::UnknownConnection)?;
        c.set_congestion_weight(flows);
        Ok(())
    }

    /// Closes a connection gracefully: queued reliable data is delivered first (up to the close
    /// timeout), then the peer is told. [`Event::Disconnected`](crate::Event::Disconnected) follows.
    pub fn close(&mut self, now: Instant, conn: ConnectionHandle, code: u64, reason: &[u8]) {
        if let Some(c) = self.conns.get_mut(conn) {
            tracing::debug!(conn = %conn, code, "closing (local)");
            c.close(now, code, reason.to_vec());
            self.touched(conn);
        }
    }
}
