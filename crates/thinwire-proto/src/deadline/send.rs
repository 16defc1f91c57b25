//! The sender's side of deadline messages: shards, stages, and the policy lookup.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::{DeadlineOptions, ParityMode};
use crate::policy::PolicyCache;
use crate::wire::ShardFrame;

/// A shard carried by a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardRef {
    pub(crate) msg_id: u64,
    pub(crate) index: u8,
}

#[derive(Debug)]
struct OutDeadline {
    channel: u8,
    created: Instant,
    opts: DeadlineOptions,
    k: u8,
    r: u8,
    msg_len: u64,
    /// `k` data shards then `r` recovery shards, all the same length.
    shards: Vec<Bytes>,
    acked: u128,
    acked_count: u8,
    sent: u128,
    stages: u16,
    stage: u16,
    stage_end: Instant,
    /// Shards still to transmit in the current stage.
    to_send: u16,
    /// Last stage-end after which the message is abandoned.
    give_up: Instant,
}

/// Counters of the deadline sender.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeadlineSendStats {
    pub(crate) messages: u64,
    pub(crate) completed: u64,
    pub(crate) abandoned: u64,
    pub(crate) data_shards_first: u64,
    pub(crate) data_bytes_first: u64,
    pub(crate) shards_repeated: u64,
    pub(crate) bytes_repeated: u64,
    pub(crate) parity_shards: u64,
    pub(crate) parity_bytes: u64,
}

/// Inputs of one stage decision.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StageContext {
    pub(crate) stage_len: Duration,
    /// Estimated one-way delay (half the smoothed RTT).
    pub(crate) one_way: Duration,
    pub(crate) loss: f64,
}

/// All deadline messages a connection is sending.
#[derive(Debug)]
pub(crate) struct DeadlineSender {
    next_id: u64,
    msgs: BTreeMap<u64, OutDeadline>,
    policies: PolicyCache,
    pub(crate) stats: DeadlineSendStats,
}

impl OutDeadline {
    /// Shards the current stage sends for `missing` shards, by parity mode.
    fn stage_send(&self, policies: &PolicyCache, missing: u8, loss: f64) -> u16 {
        let q = u16::from(missing);
        if self.stage > self.stages {
            // past the deadline: keep repairing, without parity, until given up
            return q;
        }
        match self.opts.parity {
            ParityMode::None => q,
            ParityMode::Fixed(n) => q + u16::from(n),
            ParityMode::Adaptive => {
                let (target, shape) = (self.opts.target, (self.k, self.stages));
                policies
                    .deadline_send(shape, loss, target, self.stage, missing)
                    .max(q)
            }
        }
    }
}

impl DeadlineSender {
    /// A sender that looks its adaptive policies up in `policies`.
    pub(crate) fn new(policies: PolicyCache) -> Self {
        Self {
            next_id: 0,
            msgs: BTreeMap::new(),
            policies,
            stats: DeadlineSendStats::default(),
        }
    }

    /// Queues a deadline message; returns its id. `data` must fit in 64 shards of
    /// `shard_size` (checked by the caller).
    pub(crate) fn push(
        &mut self,
        now: Instant,
        channel: u8,
        data: &Bytes,
        opts: DeadlineOptions,
        shard_size: usize,
        ctx: StageContext,
    ) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let k = data.len().div_ceil(shard_size).clamp(1, 64);
        // equal shards, even length (the Reed-Solomon code works on 16-bit symbols)
        let len = data.len().div_ceil(k).max(2).next_multiple_of(2);
        let mut padded = vec![0u8; k * len];
        padded[..data.len()].copy_from_slice(data);
        let r = (2 * k + 8).min(64);
        let mut shards: Vec<Bytes> = padded.chunks(len).map(Bytes::copy_from_slice).collect();
        let recovery = reed_solomon_simd::encode(k, r, padded.chunks(len)).unwrap_or_default();
        let r = recovery.len().min(r);
        shards.extend(recovery.into_iter().map(Bytes::from));
        // Stage i starts at (i - 1) * L and its shards land half a round trip later, so the
        // stages that can still deliver by the deadline T are 1 + floor((T - one_way) / L)
        // (T = 500 ms, RTT 250 ms: two stages, as in the published example).
        let spare = opts.deadline.saturating_sub(ctx.one_way).as_secs_f64();
        let stages = 1.0 + (spare / ctx.stage_len.as_secs_f64().max(1e-6)).floor();
        let stages = (stages as u16).clamp(1, 100);
        let mut m = OutDeadline {
            channel,
            created: now,
            opts,
            k: k as u8,
            r: r as u8,
            msg_len: data.len() as u64,
            shards,
            acked: 0,
            acked_count: 0,
            sent: 0,
            stages,
            stage: 1,
            stage_end: now + ctx.stage_len,
            to_send: 0,
            give_up: now + opts.deadline * 4,
        };
        m.to_send = m.stage_send(&self.policies, m.k, ctx.loss);
        self.stats.messages += 1;
        self.msgs.insert(id, m);
        id
    }

    /// Whether a shard is waiting to be sent.
    pub(crate) fn has_pending(&self) -> bool {
        self.msgs.values().any(|m| m.to_send > 0)
    }

    /// The earliest stage end.
    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        self.msgs.values().map(|m| m.stage_end).min()
    }

    /// Writes the next due shard (oldest message first) if it fits in `room` bytes.
    pub(crate) fn write_next(
        &mut self,
        now: Instant,
        out: &mut Vec<u8>,
        room: usize,
    ) -> Option<ShardRef> {
        let (&id, m) = self.msgs.iter_mut().find(|(_, m)| m.to_send > 0)?;
        let total = m.k as usize + m.r as usize;
        let all = if total >= 128 {
            u128::MAX
        } else {
            (1u128 << total) - 1
        };
        // a never-sent shard if any is left (a new recovery shard is as good as the data),
        // else the oldest unacknowledged one again
        let fresh = (0..total).find(|i| m.sent & (1 << i) == 0);
        let index = match fresh {
            Some(i) => i,
            None => (0..total).find(|i| m.acked & (1 << i) == 0 && all & (1 << i) != 0)?,
        };
        let frame = ShardFrame {
            channel: m.channel,
            msg_id: id,
            k: m.k,
            r: m.r,
            index: index as u8,
            msg_len: m.msg_len,
            deadline_ms: m.opts.deadline.as_millis() as u64,
            age_ms: now.saturating_duration_since(m.created).as_millis() as u64,
            shard: &m.shards[index],
        };
        if frame.encoded_len() > room {
            return None;
        }
        frame.encode(out);
        let bytes = m.shards[index].len() as u64;
        if fresh.is_none() {
            self.stats.shards_repeated += 1;
            self.stats.bytes_repeated += bytes;
        } else if index < m.k as usize {
            self.stats.data_shards_first += 1;
            self.stats.data_bytes_first += bytes;
        } else {
            self.stats.parity_shards += 1;
            self.stats.parity_bytes += bytes;
        }
        m.sent |= 1 << index;
        m.to_send -= 1;
        Some(ShardRef {
            msg_id: id,
            index: index as u8,
        })
    }

    /// A packet carrying `shard` was acknowledged.
    pub(crate) fn on_acked(&mut self, shard: ShardRef) {
        let Some(m) = self.msgs.get_mut(&shard.msg_id) else {
            return;
        };
        let bit = 1u128 << shard.index;
        if m.acked & bit == 0 {
            m.acked |= bit;
            m.acked_count += 1;
        }
        if m.acked_count >= m.k {
            self.msgs.remove(&shard.msg_id);
            self.stats.completed += 1;
        }
    }

    /// Starts the next stage of every message whose stage ended.
    pub(crate) fn on_timeout(&mut self, now: Instant, ctx: StageContext) {
        let mut abandoned = Vec::new();
        for (&id, m) in self.msgs.iter_mut() {
            if m.stage_end > now {
                continue;
            }
            if now >= m.give_up {
                abandoned.push(id);
                continue;
            }
            m.stage += 1;
            let missing = m.k - m.acked_count.min(m.k);
            m.to_send = m.stage_send(&self.policies, missing, ctx.loss);
            m.stage_end = now + ctx.stage_len;
        }
        for id in abandoned {
            self.msgs.remove(&id);
            self.stats.abandoned += 1;
        }
    }

    /// Messages being sent.
    pub(crate) fn len(&self) -> usize {
        self.msgs.len()
    }
}
