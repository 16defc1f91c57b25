//! The compressor: per-flow contexts and the choice between FULL and COMPRESSED records.
//!
//! Rules (see `docs/GATEWAY.md` §3):
//! - A context slot (id 0..`max_contexts`) is taken by a new flow (LRU eviction). The slot's
//!   4-bit *generation* increments with every *reset* FULL, which (re)defines the slot's
//!   template: a new flow in the slot, or a refresh that finds the rarely changing fields
//!   (TTL, TOS, IPv4 flags, flow label, TCP data offset/urgent pointer) different from the
//!   template. A decompressor holding an old generation drops the records of a new one.
//! - Between FULLs, a rarely changing field that differs from the template travels in the
//!   COMPRESSED record itself (EXT byte), so a change costs bytes, not a generation.
//! - Every `refresh_every` packets, and right after a FULL of the slot was dropped locally or
//!   went out native (the remote may not hold it), a *refresh* FULL keeps the generation.
//! - The IPv4 id of a COMPRESSED record is its low byte, an offset from the generation's *base
//!   id* (the reset FULL's id, repeated in every FULL), or 2 absolute bytes when the offset is
//!   over 255. A due FULL whose id has drifted more than 128 from the base starts a new
//!   generation. Every field is thus relative to what the generation fixes, so a lost
//!   COMPRESSED record or refresh FULL never makes a later record restore wrong.
//! - TCP seq/ack travel as 16-bit offsets from the generation's base seq/ack (the reset FULL's,
//!   repeated in every FULL); an offset past 65535 forces a reset FULL at once, one past 32768
//!   at the next due FULL.

use std::collections::HashMap;

use super::bundle::{
    put_len, FLAG_CRC, FLAG_EXT, FLAG_ID_ABS, FULL_HAS_BASE, FULL_HAS_TCP_BASE, TYPE_FULL,
    TYPE_UNCOMPRESSED,
};
use super::context::{classify, crc8, transport_checksum_ok, FlowKey, Shape, MAX_HDR};

/// Kind of record the compressor produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// Only the changing fields.
    Compressed,
    /// The whole packet, (re)establishing context `ctx`.
    Full {
        /// The context slot.
        ctx: u8,
    },
    /// The whole packet, no context.
    Uncompressed,
}

/// A due FULL starts a new generation once a TCP seq/ack offset is this far from the base.
const TCP_DRIFT: u32 = 0x8000;
/// A due FULL starts a new generation (and base id) once the id is this far from the base.
const ID_DRIFT: u16 = 128;

fn base_id(slot: &Slot) -> u16 {
    u16::from_be_bytes([slot.template[4], slot.template[5]])
}

#[derive(Debug, Clone)]
struct Slot {
    key: Option<FlowKey>,
    gen: u8,
    template: [u8; MAX_HDR],
    since_full: u32,
    stale: bool,
    force_full: bool,
    last_used: u64,
}

/// Per-flow compression state, bounded to `max_contexts` slots.
#[derive(Debug)]
pub(crate) struct Compressor {
    slots: Vec<Slot>,
    map: HashMap<FlowKey, u8>,
    refresh_every: u32,
    clock: u64,
}

/// The fields of a packet that records carry.
struct Dynamic {
    shape: Shape,
    id: Option<u16>,
    tcp: Option<(u32, u32)>,
    ext: u8,
}

impl Compressor {
    /// A compressor with `max_contexts` slots (1..=256) and the given refresh interval.
    pub(crate) fn new(max_contexts: usize, refresh_every: u32) -> Compressor {
        let empty = Slot {
            key: None,
            gen: 0,
            template: [0; MAX_HDR],
            since_full: 0,
            stale: true,
            force_full: false,
            last_used: 0,
        };
        Compressor {
            slots: vec![empty; max_contexts],
            map: HashMap::with_capacity(max_contexts),
            refresh_every,
            clock: 0,
        }
    }

    /// Marks context `ctx` as possibly unknown to the remote (its FULL never left): its next
    /// packet goes FULL.
    pub(crate) fn force_full(&mut self, ctx: u8) {
        if let Some(s) = self.slots.get_mut(ctx as usize) {
            s.force_full = true;
        }
    }

    /// Appends the record (length prefix included) for `packet` to `out`.
    pub(crate) fn compress(&mut self, packet: &[u8], out: &mut Vec<u8>) -> RecordKind {
        let Some(shape) = classify(packet) else {
            put_len(out, packet.len() + 1);
            out.push(TYPE_UNCOMPRESSED);
            out.extend_from_slice(packet);
            return RecordKind::Uncompressed;
        };
        self.clock += 1;
        let key = FlowKey::of(shape, packet);
        let ctx = self.slot_for(key);
        let refresh_every = self.refresh_every;
        let slot = &mut self.slots[ctx as usize];
        slot.last_used = self.clock;
        let ext = shape
            .ext_fields()
            .iter()
            .filter(|&&(_, a, b)| slot.template[a..b] != packet[a..b])
            .fold(0, |acc, &(bit, _, _)| acc | bit);
        let d = Dynamic {
            shape,
            id: shape
                .is_v4()
                .then(|| u16::from_be_bytes([packet[4], packet[5]])),
            tcp: shape.is_tcp().then(|| tcp_seq_ack(shape, packet)),
            ext,
        };
        let tcp_off = d.tcp.map(|(s, a)| tcp_offsets(slot, shape, s, a));
        let tcp_far = tcp_off.is_some_and(|(s, a)| s > 0xffff || a > 0xffff);
        let due = slot.force_full || slot.since_full + 1 >= refresh_every;
        let drift =
            d.id.is_some_and(|id| id.wrapping_sub(base_id(slot)) > ID_DRIFT)
                || tcp_off.is_some_and(|(s, a)| s > TCP_DRIFT || a > TCP_DRIFT);
        if slot.stale || tcp_far || (due && (ext != 0 || drift)) {
            slot.stale = false;
            slot.gen = (slot.gen + 1) & 15;
            slot.template[..shape.hdr_len()].copy_from_slice(&packet[..shape.hdr_len()]);
            return full(slot, ctx, &d, packet, out);
        }
        if due {
            return full(slot, ctx, &d, packet, out);
        }
        slot.since_full += 1;
        compressed(slot, ctx, &d, packet, out);
        RecordKind::Compressed
    }

    /// The slot of flow `key`, taking the least recently used one for a new flow.
    fn slot_for(&mut self, key: FlowKey) -> u8 {
        if let Some(&ctx) = self.map.get(&key) {
            return ctx;
        }
        let (ctx, _) = self
            .slots
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| (s.key.is_some(), s.last_used))
            .expect("at least one context slot");
        let slot = &mut self.slots[ctx];
        if let Some(old) = slot.key.take() {
            self.map.remove(&old);
        }
        slot.key = Some(key);
        slot.stale = true;
        self.map.insert(key, ctx as u8);
        ctx as u8
    }
}

/// Offsets of `seq`/`ack` from the generation's base (the template's).
fn tcp_offsets(slot: &Slot, shape: Shape, seq: u32, ack: u32) -> (u32, u32) {
    let (bs, ba) = tcp_seq_ack(shape, &slot.template);
    (seq.wrapping_sub(bs), ack.wrapping_sub(ba))
}

fn tcp_seq_ack(shape: Shape, p: &[u8]) -> (u32, u32) {
    let t = shape.ip_len();
    let seq = u32::from_be_bytes([p[t + 4], p[t + 5], p[t + 6], p[t + 7]]);
    let ack = u32::from_be_bytes([p[t + 8], p[t + 9], p[t + 10], p[t + 11]]);
    (seq, ack)
}

fn full(slot: &mut Slot, ctx: u8, d: &Dynamic, packet: &[u8], out: &mut Vec<u8>) -> RecordKind {
    slot.since_full = 0;
    slot.force_full = false;
    let t = d.shape.ip_len();
    let mut g = slot.gen;
    let mut extra = 0;
    if d.id.is_some() {
        g |= FULL_HAS_BASE;
        extra += 2;
    }
    if d.tcp.is_some() {
        g |= FULL_HAS_TCP_BASE;
        extra += 8;
    }
    put_len(out, packet.len() + 3 + extra);
    out.extend_from_slice(&[TYPE_FULL, ctx, g]);
    if d.id.is_some() {
        out.extend_from_slice(&slot.template[4..6]);
    }
    if d.tcp.is_some() {
        out.extend_from_slice(&slot.template[t + 4..t + 12]);
    }
    out.extend_from_slice(packet);
    RecordKind::Full { ctx }
}

fn compressed(slot: &Slot, ctx: u8, d: &Dynamic, packet: &[u8], out: &mut Vec<u8>) {
    let (shape, id, tcp) = (d.shape, d.id, d.tcp);
    let t = shape.ip_len();
    let hl = shape.hdr_len();
    let mut flags = slot.gen << 3;
    let base = base_id(slot);
    let id_abs = id.is_some_and(|id| id.wrapping_sub(base) > 0xff);
    let crc = !transport_checksum_ok(shape, packet);
    let ext_fields = shape.ext_fields().iter().filter(|f| d.ext & f.0 != 0);
    let ext_len: usize = ext_fields.clone().map(|&(_, a, b)| b - a).sum();
    flags |= if d.ext != 0 { FLAG_EXT } else { 0 }
        | if id_abs { FLAG_ID_ABS } else { 0 }
        | if crc { FLAG_CRC } else { 0 };
    let fields = match (id, id_abs) {
        (None, _) => 0,
        (Some(_), false) => 1,
        (Some(_), true) => 2,
    } + if shape.is_tcp() { 9 } else { 2 }
        + usize::from(crc)
        + if d.ext != 0 { 1 + ext_len } else { 0 };
    put_len(out, 2 + fields + packet.len() - hl);
    out.extend_from_slice(&[flags, ctx]);
    if d.ext != 0 {
        out.push(d.ext);
        for &(_, a, b) in ext_fields {
            out.extend_from_slice(&packet[a..b]);
        }
    }
    match (id, id_abs) {
        (Some(id), false) => out.push(id.wrapping_sub(base) as u8),
        (Some(id), true) => out.extend_from_slice(&id.to_be_bytes()),
        (None, _) => {}
    }
    if let Some((s, a)) = tcp {
        let (s, a) = tcp_offsets(slot, shape, s, a);
        out.extend_from_slice(&(s as u16).to_be_bytes());
        out.extend_from_slice(&(a as u16).to_be_bytes());
        out.extend_from_slice(&packet[t + 13..t + 18]); // flags, window, checksum
    } else {
        out.extend_from_slice(&packet[t + 6..t + 8]); // UDP checksum
    }
    if crc {
        out.push(crc8(&packet[..hl]));
    }
    out.extend_from_slice(&packet[hl..]);
}
