//! The application's calls on a connection: sends of every kind, the channel settings, the
//! graceful close.

use std::time::Instant;

use bytes::Bytes;

use super::{ConnectionHandle, Endpoint};
use crate::error::SendError;

impl Endpoint {
    /// Queues a message on a channel that is not latest-value.
    pub fn send(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        channel: u8,
        data: Bytes,
    ) -> Result<(), SendError> {
        self.send_inner(now, conn, channel, None, data)
    }

    /// Queues the newest value for `key` on a latest-value channel; it replaces an older value
    /// for the same key that the peer has not acknowledged yet.
    pub fn send_latest(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        channel: u8,
        key: u64,
        data: Bytes,
    ) -> Result<(), SendError> {
        self.send_inner(now, conn, channel, Some(key), data)
    }

    /// Queues a deadline message on `channel`: it is erasure-coded into shards and sent in
    /// stages so that it arrives within `opts.deadline` with probability `opts.target`
    /// (see [`DeadlineOptions`](crate::DeadlineOptions)). It is delivered as soon as it can be
    /// decoded, with [`Message::deadline`](crate::Message::deadline) set, whatever the
    /// channel's class. Returns the message id.
    pub fn send_deadline(
        &mut self,
        now: Instant,
        conn: ConnectionHandle,
        channel: u8,
        data: Bytes,
        opts: crate::DeadlineOptions,
    ) -> Result<u64, SendError> {
        self.clock = now;
        self.check_send_room(conn, data.len())?;
        let c = self
            .conns
            .get_mut(conn)
            .ok_or(SendError::UnknownConnection)?;
        let id = c.send_deadline(now, channel, data, opts)?;
        self.touched(conn);
        Ok(id)
    }

    /// Sets (or with `None` clears) deadline options that every later [`send`](Self::send) on
    /// `channel` of `conn` uses: the channel-default form of deadline delivery.
    pub fn set_channel_deadline(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        opts: Option<crate::DeadlineOptions>,
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

    fn send_inner(
        &mut self,
        now: Instant,
        h: ConnectionHandle,
        channel: u8,
        key: Option<u64>,
        data: Bytes,
    ) -> Result<(), SendError> {
        self.clock = now;
        self.check_send_room(h, data.len())?;
        let conn = self.conns.get_mut(h).ok_or(SendError::UnknownConnection)?;
        conn.send(now, channel, key, data)?;
        self.touched(h);
        Ok(())
    }

    /// Closes a connection gracefully: queued reliable data is delivered first (up to the close
    /// timeout), then the peer is told. [`Event::Disconnected`](crate::Event::Disconnected) follows.
    pub fn close(&mut self, now: Instant, conn: ConnectionHandle, code: u64, reason: &[u8]) {
        if let Some(c) = self.conns.get_mut(conn) {
            c.close(now, code, reason.to_vec());
            self.touched(conn);
        }
    }
}
