//! Pushing held messages into the trunk connection: each one's Data frame (short form, 8-bit
//! seq while it is safe: `seq8.rs`, deadline), the trunk channel it takes
//! (`frame::TRUNK_CHANNELS`), and runs of small reliable ones together as Batch frames.
//!
//! **Batches.** The ReliableOrdered and ReliableUnordered messages of one push whose Data
//! frames are at most [`MAX_ENTRY`] bytes go into trunk channel 1 as Batch messages, cut so
//! that one fits a trunk datagram whole (`TransportConfig::max_unfragmented`) and holds at most
//! [`MAX_BATCH`] entries; a run of one goes as its Data frame alone. The others (deadline,
//! larger, LatestReliable, unreliable) go one message each, as they come; one of a flow that
//! has entries in the batch being built sends that batch first, so that seqs follow the
//! hold's order. Seqs are taken when a message joins a batch and given back if the trunk
//! refuses it; once the trunk refuses a send (its buffer is full), nothing more is tried and
//! every message not sent stays in the hold, in its order.

use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{
    ChannelKind, ConnectionHandle, DeadlineOptions, Endpoint, SendError, SendMode,
};

use super::flow::{FlowKey, Flows};
use super::frame::{self, BatchWriter, Data, MAX_BATCH, MAX_ENTRY};
use super::hold::{Item, Pushed};

/// One push (a `Hold::drain`) into one trunk connection.
pub(crate) struct Pusher<'a> {
    now: Instant,
    trunk: &'a mut Endpoint,
    conn: ConnectionHandle,
    flows: &'a mut Flows,
    /// Trunk channel 1's oldest message not acknowledged (`Endpoint::send_window`).
    acked_below: u64,
    /// Most bytes of one Batch message: what a trunk datagram carries whole.
    max_batch: usize,
    /// Player messages sent so far.
    pub(crate) sent: u64,
}

/// A message in the Batch being built: its seq is taken.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Its index in the items pushed.
    item: usize,
    flow: u32,
    channel: u8,
    kind: ChannelKind,
    seq: Option<u64>,
}

/// The Batch being built.
#[derive(Debug, Default)]
struct Open {
    writer: BatchWriter,
    entries: Vec<Entry>,
}

impl Open {
    /// The lowest seq of (`flow`, `channel`) in it.
    fn first_seq(&self, flow: u32, channel: u8) -> Option<u64> {
        let mut of = self.entries.iter().filter(|e| e.flow == flow);
        of.find(|e| e.channel == channel).and_then(|e| e.seq)
    }
}

/// What one item's Data frame is, before it is sent.
#[derive(Debug, Clone, Copy)]
struct Fields {
    seq: Option<u64>,
    seq8: bool,
    /// The trunk channel, and the trunk key on [`frame::LATEST`].
    channel: u8,
    latest: Option<u64>,
}

impl<'a> Pusher<'a> {
    /// A push into `conn` of `trunk` at `now`.
    pub(crate) fn new(
        now: Instant,
        (trunk, conn): (&'a mut Endpoint, ConnectionHandle),
        flows: &'a mut Flows,
    ) -> Self {
        let window = trunk.send_window(conn, frame::RELIABLE);
        let max_batch = trunk.transport_config().max_unfragmented();
        Self {
            now,
            trunk,
            conn,
            flows,
            acked_below: window.map_or(0, |w| w.start),
            max_batch,
            sent: 0,
        }
    }

    /// Pushes `items` in order (module docs); `out` gets what became of each, by index.
    pub(crate) fn push(&mut self, items: &[Item], out: &mut Vec<Pushed>) {
        out.clear();
        out.resize(items.len(), Pushed::Blocked);
        let mut open = Open::default();
        for (i, item) in items.iter().enumerate() {
            if !self.push_one(i, item, &mut open, out) {
                self.give_back(&open.entries);
                return;
            }
        }
        if !self.flush(&mut open, out) {
            self.give_back(&open.entries);
        }
    }

    /// One item: into the open batch, or sent alone; `false` once the trunk refused a send.
    fn push_one(&mut self, i: usize, item: &Item, open: &mut Open, out: &mut [Pushed]) -> bool {
        let key = FlowKey {
            trunk: self.conn,
            id: item.flow,
        };
        if self.flows.get(key).is_none() {
            out[i] = Pushed::Dropped;
            return true;
        }
        if let Some(left) = item.deadline {
            out[i] = push_deadline(self.now, (self.trunk, self.conn), item, left);
            return out[i] != Pushed::Blocked;
        }
        let mut fields = self.fields(key, item, open);
        let batchable = fields.channel == frame::RELIABLE && counts_for_fin(item.kind);
        let len = data(item, fields).encoded_len();
        if batchable && len <= MAX_ENTRY {
            if open.writer.count() >= MAX_BATCH || open.writer.len_with(len) > self.max_batch {
                if !self.flush(open, out) {
                    return false;
                }
                fields = self.fields(key, item, open);
            }
            // (refused only if the flush made the frame longer: it goes alone then)
            if open.writer.push(&data(item, fields)) {
                open.entries.push(Entry {
                    item: i,
                    flow: item.flow,
                    channel: item.channel,
                    kind: item.kind,
                    seq: fields.seq,
                });
                self.take_seq(key, item.channel, fields.seq);
                return true;
            }
        }
        if open.entries.iter().any(|e| e.flow == item.flow) {
            if !self.flush(open, out) {
                return false;
            }
            fields = self.fields(key, item, open);
        }
        out[i] = self.send_alone((i, key), item, fields);
        out[i] != Pushed::Blocked
    }

    /// The fields of `item`'s frame, its seq the flow's next on its channel.
    fn fields(&mut self, key: FlowKey, item: &Item, open: &Open) -> Fields {
        let Some(flow) = self.flows.get_mut(key) else {
            return Fields {
                seq: None,
                seq8: false,
                channel: frame::UNRELIABLE,
                latest: None,
            };
        };
        flow.seq8.acked_below(self.acked_below);
        let ch = item.channel;
        let seq = item
            .kind
            .has_seq()
            .then(|| flow.send_seq.get(usize::from(ch)).copied().unwrap_or(0));
        let seq8 = match (item.kind, seq) {
            (ChannelKind::ReliableOrdered, Some(s)) => {
                flow.seq8.allows(ch, s, open.first_seq(item.flow, ch))
            }
            _ => false,
        };
        let latest = match (item.kind, item.key) {
            (ChannelKind::LatestReliable, Some(k)) => frame::latest_key(item.flow, ch, k),
            _ => None,
        };
        let channel = match latest {
            Some(_) => frame::LATEST,
            None if item.kind.is_reliable() => frame::RELIABLE,
            None => frame::UNRELIABLE,
        };
        Fields {
            seq,
            seq8,
            channel,
            latest,
        }
    }

    /// Takes `seq` of the flow's `channel` (the next one); `give_back` returns it.
    fn take_seq(&mut self, key: FlowKey, channel: u8, seq: Option<u64>) {
        let flow = self.flows.get_mut(key);
        let next = flow.and_then(|f| f.send_seq.get_mut(usize::from(channel)));
        if let (Some(s), Some(_)) = (next, seq) {
            *s += 1;
        }
    }

    /// The seqs of `entries` were not used after all (the trunk refused them).
    fn give_back(&mut self, entries: &[Entry]) {
        for e in entries.iter().rev() {
            let key = FlowKey {
                trunk: self.conn,
                id: e.flow,
            };
            let flow = self.flows.get_mut(key);
            let next = flow.and_then(|f| f.send_seq.get_mut(usize::from(e.channel)));
            if let (Some(s), Some(_)) = (next, e.seq) {
                *s = s.saturating_sub(1);
            }
        }
    }

    /// The message `entry` (its seq taken) went, in core message `core` of channel 1 if
    /// there.
    fn commit(&mut self, entry: &Entry, core: Option<u64>) {
        self.sent += 1;
        let key = FlowKey {
            trunk: self.conn,
            id: entry.flow,
        };
        let Some(flow) = self.flows.get_mut(key) else {
            return;
        };
        flow.reliable_sent += u64::from(counts_for_fin(entry.kind));
        if let (ChannelKind::ReliableOrdered, Some(seq), Some(core)) = (entry.kind, entry.seq, core)
        {
            flow.seq8.record(entry.channel, seq, core);
        }
    }

    /// The core seq the next message on trunk channel 1 takes.
    fn next_core(&self) -> Option<u64> {
        let w = self.trunk.send_window(self.conn, frame::RELIABLE)?;
        Some(w.end)
    }

    /// Sends the open batch (a lone entry as its Data frame); `false` if the trunk refused it.
    fn flush(&mut self, open: &mut Open, out: &mut [Pushed]) -> bool {
        if open.entries.is_empty() {
            return true;
        }
        let core = self.next_core();
        let bytes = Bytes::from(std::mem::take(&mut open.writer).finish());
        match self
            .trunk
            .send(self.now, self.conn, frame::RELIABLE, bytes, SendMode::Plain)
        {
            Ok(()) => {
                for e in std::mem::take(&mut open.entries) {
                    out[e.item] = Pushed::Sent;
                    self.commit(&e, core);
                }
                true
            }
            // the caller gives the seqs back
            Err(SendError::BufferFull) => false,
            Err(_) => {
                let entries = std::mem::take(&mut open.entries);
                self.give_back(&entries);
                entries.iter().for_each(|e| out[e.item] = Pushed::Dropped);
                true
            }
        }
    }

    /// Item `i` as a message of its own.
    fn send_alone(&mut self, (i, key): (usize, FlowKey), item: &Item, fields: Fields) -> Pushed {
        let bytes = data_bytes(data(item, fields));
        let core = self.next_core();
        let (trunk, conn, now) = (&mut *self.trunk, self.conn, self.now);
        let mode = match (fields.channel, fields.latest) {
            (frame::LATEST, Some(key)) => SendMode::Latest { key },
            _ => SendMode::Plain,
        };
        match trunk.send(now, conn, fields.channel, bytes, mode) {
            Ok(()) => {
                self.take_seq(key, item.channel, fields.seq);
                let entry = Entry {
                    item: i,
                    flow: item.flow,
                    channel: item.channel,
                    kind: item.kind,
                    seq: fields.seq,
                };
                let core = core.filter(|_| fields.channel == frame::RELIABLE);
                self.commit(&entry, core);
                Pushed::Sent
            }
            Err(SendError::BufferFull) => Pushed::Blocked,
            Err(_) => Pushed::Dropped,
        }
    }
}

/// `item`'s Data frame with `fields`.
fn data(item: &Item, fields: Fields) -> Data<'_> {
    Data {
        flow: item.flow,
        channel: item.channel,
        seq: fields.seq,
        seq8: fields.seq8,
        deadline_us: None,
        key: item.key.filter(|_| item.kind.has_key()),
        payload: &item.data,
    }
}

/// Shortest deadline a message is sent on with (one already past it still goes, late).
pub(crate) const MIN_DEADLINE: Duration = Duration::from_millis(1);
/// The arrival probability deadline messages are sent on with over the trunk and on from the
/// far gateway (the player's own target is not on the wire).
pub(crate) const DEADLINE_TARGET: f64 = 0.999;

/// A deadline message into the trunk with the time it has left (less its hold): its frame
/// carries that time, has no seq, and is sent as a thinwire deadline message.
fn push_deadline(
    now: Instant,
    (trunk, conn): (&mut Endpoint, ConnectionHandle),
    item: &Item,
    left: Duration,
) -> Pushed {
    let left = left.saturating_sub(now.saturating_duration_since(item.since));
    let bytes = data_bytes(Data {
        flow: item.flow,
        channel: item.channel,
        seq: None,
        seq8: false,
        deadline_us: Some(u64::try_from(left.as_micros()).unwrap_or(u64::MAX)),
        key: None,
        payload: &item.data,
    });
    let opts = DeadlineOptions::new(left.max(MIN_DEADLINE), DEADLINE_TARGET);
    match trunk.send(now, conn, frame::RELIABLE, bytes, SendMode::Deadline(opts)) {
        Ok(_) => Pushed::Sent,
        Err(SendError::BufferFull) => Pushed::Blocked,
        Err(_) => Pushed::Dropped,
    }
}

/// A Data frame's bytes, in a buffer of exactly its size.
fn data_bytes(d: Data<'_>) -> Bytes {
    let mut buf = Vec::with_capacity(d.encoded_len());
    d.emit(&mut buf);
    Bytes::from(buf)
}

/// Whether a Data frame of a channel of `kind` counts in a FlowFin: the reliable kinds but
/// LatestReliable, whose superseded values the trunk never delivers.
pub(crate) fn counts_for_fin(kind: ChannelKind) -> bool {
    matches!(
        kind,
        ChannelKind::ReliableOrdered | ChannelKind::ReliableUnordered
    )
}
