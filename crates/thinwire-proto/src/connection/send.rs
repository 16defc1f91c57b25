//! The application's calls on a connection: the send of every [`SendMode`], and the channel
//! deadline default.

use std::time::Instant;

use bytes::Bytes;

use super::active::Pending;
use super::Connection;
use crate::channel::SEND_WINDOW;
use crate::deadline::{DeadlineOptions, StageContext};
use crate::error::SendError;
use crate::recovery::ChunkRef;
use crate::wire;

/// How a message is delivered, beyond what its channel's class says: the argument of every
/// send call ([`Endpoint::send`](crate::Endpoint::send), and the runtime's `Connection::send`
/// and `Host::send`).
///
/// One call with a mode rather than one call per mode (as ENet's `enet_peer_send` takes its
/// flags with the packet): a new delivery mode is a new variant here and one arm in
/// `Connection::send` below, not another function on every surface.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum SendMode {
    /// As the channel's class says, on any class but LatestReliable (or as a deadline message,
    /// if the channel has a deadline default: see
    /// [`Endpoint::set_channel_deadline`](crate::Endpoint::set_channel_deadline)).
    #[default]
    Plain,
    /// The newest value for `key`, on a LatestReliable channel only: it replaces an older value
    /// for the same key that the peer has not acknowledged yet. Keys are below 2^62.
    Latest {
        /// The key whose value this is (an entity id, a slot).
        key: u64,
    },
    /// A deadline message, on a channel of any class: erasure-coded into shards and sent in
    /// stages so that it arrives within the options' deadline with their target probability
    /// (see [`DeadlineOptions`]). It is delivered as soon as it can be decoded, with
    /// [`Message::deadline`](crate::Message::deadline) set.
    Deadline(DeadlineOptions),
}

impl Connection {
    /// Makes every later plain send on `channel` a deadline message with `opts` (`None`: back to
    /// the channel's own class). Latest-value channels keep their semantics and refuse a default.
    pub(crate) fn set_channel_deadline(
        &mut self,
        channel: u8,
        opts: Option<DeadlineOptions>,
    ) -> Result<(), SendError> {
        let kind = *self
            .channels
            .get(channel as usize)
            .ok_or(SendError::UnknownChannel(channel))?;
        if kind.has_key() {
            return Err(SendError::WrongChannelKind {
                channel,
                kind,
                expected: "SendMode::Latest",
            });
        }
        if opts.is_some_and(|o| !o.is_valid()) {
            return Err(SendError::InvalidDeadline);
        }
        let count = self.channels.len();
        let defaults = &mut self.deadline_mut().channel_default;
        if defaults.len() < count {
            defaults.resize(count, None);
        }
        defaults[channel as usize] = opts;
        Ok(())
    }

    /// Queues a message delivered as `mode` says.
    pub(crate) fn send(
        &mut self,
        now: Instant,
        channel: u8,
        data: Bytes,
        mode: SendMode,
    ) -> Result<(), SendError> {
        match mode {
            SendMode::Plain => match self.channel_deadline(channel) {
                Some(opts) => self.send_deadline(now, channel, data, opts),
                None => self.queue(channel, None, data),
            },
            SendMode::Latest { key } => self.queue(channel, Some(key), data),
            SendMode::Deadline(opts) => self.send_deadline(now, channel, data, opts),
        }
    }

    /// Whether a send in `mode` on `channel` starts a deadline message (see
    /// [`Endpoint::send_is_timed`](crate::Endpoint::send_is_timed)); any other only queues.
    pub(crate) fn send_is_timed(&self, channel: u8, mode: &SendMode) -> bool {
        match mode {
            SendMode::Deadline(_) => true,
            SendMode::Plain => self.channel_deadline(channel).is_some(),
            SendMode::Latest { .. } => false,
        }
    }

    /// The deadline options every plain send on `channel` uses, if it has a default.
    fn channel_deadline(&self, channel: u8) -> Option<DeadlineOptions> {
        self.deadline
            .as_ref()
            .and_then(|d| d.channel_default.get(channel as usize).copied().flatten())
    }

    /// Queues a message on a channel's own class. `key` is required on latest-value channels
    /// and refused elsewhere.
    fn queue(&mut self, channel: u8, key: Option<u64>, data: Bytes) -> Result<(), SendError> {
        if !self.state.is_open() {
            return Err(SendError::ConnectionClosed);
        }
        let kind = *self
            .channels
            .get(channel as usize)
            .ok_or(SendError::UnknownChannel(channel))?;
        match (kind.has_key(), key.is_some()) {
            (true, false) => {
                return Err(SendError::WrongChannelKind {
                    channel,
                    kind,
                    expected: "SendMode::Latest",
                })
            }
            (false, true) => {
                return Err(SendError::WrongChannelKind {
                    channel,
                    kind,
                    expected: "SendMode::Plain",
                })
            }
            _ => {}
        }
        if let Some(k) = key.filter(|k| *k > wire::varint::MAX) {
            return Err(SendError::KeyOutOfRange(k));
        }
        let frag_size = self.config.max_unfragmented();
        let max = if kind.is_reliable() {
            self.config.max_message_size
        } else {
            frag_size
        };
        if data.len() > max {
            return Err(SendError::MessageTooLarge {
                size: data.len(),
                max,
            });
        }
        self.ensure_send();
        let queued: usize = self.send.iter().map(|c| c.queued_bytes).sum();
        let ch = &mut self.send[channel as usize];
        if queued + data.len() > self.config.send_buffer
            || ch.msgs.span() + ch.unsent >= SEND_WINDOW
        {
            return Err(SendError::BufferFull);
        }
        if !kind.is_reliable() {
            // sent once and whole: the payload waits in the queue, not in the window
            let seq = ch.push_unsent(data.len());
            self.active.get_mut().queues.pending.push_back(Pending {
                chunk: ChunkRef {
                    channel,
                    seq,
                    frag: 0,
                },
                payload: Some(data),
            });
            return Ok(());
        }
        let (seq, _replaced) = ch.push(data, key, frag_size);
        let msg = &mut ch.msgs.get_mut(seq).expect("just pushed");
        for (frag, state) in msg.frags.iter_mut().enumerate() {
            state.queued = true;
            self.active.get_mut().queues.pending.push_back(Pending {
                chunk: ChunkRef {
                    channel,
                    seq,
                    frag: frag as u32,
                },
                payload: None,
            });
        }
        // queued data changes no timer: the next `poll_transmit` re-arms them
        Ok(())
    }

    /// Queues a deadline message (see [`crate::deadline`]).
    fn send_deadline(
        &mut self,
        now: Instant,
        channel: u8,
        data: Bytes,
        opts: DeadlineOptions,
    ) -> Result<(), SendError> {
        if !self.state.is_open() {
            return Err(SendError::ConnectionClosed);
        }
        if usize::from(channel) >= self.channels.len() {
            return Err(SendError::UnknownChannel(channel));
        }
        if !opts.is_valid() {
            return Err(SendError::InvalidDeadline);
        }
        // a shard frame costs at most ~40 bytes of framing
        let max_shard = self.config.max_unfragmented().saturating_sub(40).max(2);
        let shard = opts
            .shard_size
            .unwrap_or(self.config.deadline_shard_size)
            .clamp(2, max_shard);
        let max = shard * usize::from(wire::MAX_SHARDS_K);
        if data.len() > max || data.is_empty() {
            return Err(SendError::MessageTooLarge {
                size: data.len(),
                max,
            });
        }
        let ctx = self.stage_context();
        self.deadline_mut()
            .tx
            .push(now, channel, &data, opts, shard, ctx);
        self.update_timers();
        Ok(())
    }

    /// One stage of a deadline message lasts one round trip plus an RTO-like margin,
    /// `SRTT + max(G, min(4 * RTTVAR, SRTT / 4))` (no minimum, no backoff): the shards of a
    /// stage leave back to back and on a jittery FIFO path the last one's acknowledgement
    /// comes late, so a tighter stage would count shards that arrived as missing and repair
    /// them needlessly. The cap matters right after the handshake, when RTTVAR is still about
    /// half the RTT: without it the first messages of a connection would get stages of 3 RTTs,
    /// too long to repair anything in time. It is `SRTT / 4` rather than the thin RTO's
    /// `SRTT / 2` because a deadline of two round trips (Pangolin's 500 ms at 250 ms) leaves
    /// `2 RTT - RTT/2` for the stages: two stages fit only if a stage is under 1.5 RTT, and a
    /// stage too long costs a missed deadline while one too short costs a spare shard.
    pub(super) fn stage_context(&self) -> StageContext {
        let srtt = self.flow.recovery.rtt.srtt();
        StageContext {
            stage_len: srtt
                + self
                    .flow
                    .recovery
                    .rtt
                    .variance_margin(srtt / 4, self.config.timer_granularity),
            one_way: srtt / 2,
            loss: self.flow.recovery.estimates.loss(),
        }
    }
}
