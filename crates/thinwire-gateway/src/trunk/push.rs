//! Pushing one held message into the trunk connection: its Data frame (short form, 8-bit seq
//! while it is safe, deadline), and the trunk channel it takes (`frame::TRUNK_CHANNELS`).

use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_proto::{ChannelKind, ConnectionHandle, DeadlineOptions, Endpoint, SendError};

use super::flow::{FlowKey, Flows};
use super::frame::{self, Data, Frame};
use super::hold::{Item, Pushed};

/// One held message into the trunk: its frame gets the flow's next seq on its channel, as
/// its low 8 bits on a ReliableOrdered channel while `seq8_room` lasts.
pub(crate) fn push_item(
    now: Instant,
    (trunk, conn): (&mut Endpoint, ConnectionHandle),
    flows: &mut Flows,
    item: &Item,
    seq8_room: &mut usize,
) -> Pushed {
    let key = FlowKey {
        trunk: conn,
        id: item.flow,
    };
    let Some(flow) = flows.get_mut(key) else {
        return Pushed::Dropped;
    };
    if let Some(left) = item.deadline {
        return push_deadline(now, (trunk, conn), item, left);
    }
    let ch = usize::from(item.channel);
    let seq = item
        .kind
        .has_seq()
        .then(|| flow.send_seq.get(ch).copied().unwrap_or(0));
    let seq8 = item.kind == ChannelKind::ReliableOrdered && *seq8_room > 0;
    let bytes = data_bytes(Data {
        flow: item.flow,
        channel: item.channel,
        seq,
        seq8,
        deadline_us: None,
        key: item.key.filter(|_| item.kind.has_key()),
        payload: &item.data,
    });
    let latest = match (item.kind, item.key) {
        (ChannelKind::LatestReliable, Some(k)) => frame::latest_key(item.flow, item.channel, k),
        _ => None,
    };
    let (channel, sent) = match latest {
        Some(k) => (
            frame::LATEST,
            trunk.send_latest(now, conn, frame::LATEST, k, bytes),
        ),
        None if item.kind.is_reliable() => (
            frame::RELIABLE,
            trunk.send(now, conn, frame::RELIABLE, bytes),
        ),
        None => (
            frame::UNRELIABLE,
            trunk.send(now, conn, frame::UNRELIABLE, bytes),
        ),
    };
    match sent {
        Ok(()) => {
            if let Some(s) = flow.send_seq.get_mut(ch) {
                *s += 1;
            }
            if channel == frame::RELIABLE {
                *seq8_room = seq8_room.saturating_sub(1);
            }
            flow.reliable_sent += u64::from(counts_for_fin(item.kind));
            Pushed::Sent
        }
        Err(SendError::BufferFull) => Pushed::Blocked,
        Err(_) => Pushed::Dropped,
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
    match trunk.send_deadline(now, conn, frame::RELIABLE, bytes, opts) {
        Ok(_) => Pushed::Sent,
        Err(SendError::BufferFull) => Pushed::Blocked,
        Err(_) => Pushed::Dropped,
    }
}

/// A Data frame's bytes, in a buffer of exactly its size.
fn data_bytes(d: Data<'_>) -> Bytes {
    let mut buf = Vec::with_capacity(d.header_len() + d.payload.len());
    Frame::Data(d).emit(&mut buf);
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
