//! The decompressor: restores packets from FULL and COMPRESSED records, bit-exactly or not at
//! all.
//!
//! A COMPRESSED record is dropped (never restored wrong) when its context slot is empty, its
//! generation differs from the slot's (a reset FULL was missed: `context_losses`), or the
//! restored packet fails its check: the transport checksum must verify, or, when the sender's
//! checksum did not (zero UDP checksum, bad checksum), the CRC-8 of the restored header must
//! match (`check_failures`).

use thinwire_proto::codec::Reader;

use super::bundle::{
    FLAG_CRC, FLAG_EXT, FLAG_ID_ABS, FULL_HAS_BASE, FULL_HAS_TCP_BASE, TYPE_FULL, TYPE_UNCOMPRESSED,
};
use super::context::{
    classify, crc8, fill_v4_checksum, transport_checksum_ok, Shape, MAX_HDR, UDP_LEN,
};

/// What became of one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Restored {
    /// A packet is in the scratch buffer.
    Packet,
    /// The record referred to a context generation this side does not hold.
    ContextLoss,
    /// The reconstruction failed its checksum or CRC.
    CheckFailed,
    /// The record is malformed (unknown type, context out of range, short fields).
    Malformed,
}

#[derive(Debug, Clone)]
struct DSlot {
    shape: Shape,
    gen: u8,
    template: [u8; MAX_HDR],
}

/// Per-context restoration state; at most `max_contexts` slots, allocated once.
#[derive(Debug)]
pub(crate) struct Decompressor {
    slots: Vec<Option<DSlot>>,
}

impl Decompressor {
    /// A decompressor with `max_contexts` slots.
    pub(crate) fn new(max_contexts: usize) -> Decompressor {
        Decompressor {
            slots: vec![None; max_contexts],
        }
    }

    /// Restores the packet of record `body` into `out` (cleared first).
    pub(crate) fn restore(&mut self, body: &[u8], out: &mut Vec<u8>) -> Restored {
        out.clear();
        match body {
            [TYPE_UNCOMPRESSED, packet @ ..] if !packet.is_empty() => {
                out.extend_from_slice(packet);
                Restored::Packet
            }
            [TYPE_FULL, ctx, gen, rest @ ..] => match self.full(*ctx, *gen, rest) {
                Some(packet) => {
                    out.extend_from_slice(packet);
                    Restored::Packet
                }
                None => Restored::Malformed,
            },
            [flags, ctx, fields @ ..] if flags & 0x80 == 0 => {
                self.compressed(*flags, *ctx, fields, out)
            }
            _ => Restored::Malformed,
        }
    }

    /// Installs context `ctx` from a FULL record (`rest` = [base id] [base seq, ack] packet),
    /// which defines it completely; returns the packet.
    fn full<'a>(&mut self, ctx: u8, gen_byte: u8, rest: &'a [u8]) -> Option<&'a [u8]> {
        let has_id = gen_byte & FULL_HAS_BASE != 0;
        let has_tcp = gen_byte & FULL_HAS_TCP_BASE != 0;
        let mut r: Reader<'_> = Reader::new(rest);
        let base_id = if has_id { r.bytes(2).ok()? } else { &[][..] };
        let base_tcp = if has_tcp { r.bytes(8).ok()? } else { &[][..] };
        let packet = r.rest();
        if packet.is_empty() || gen_byte & !(FULL_HAS_BASE | FULL_HAS_TCP_BASE | 15) != 0 {
            return None;
        }
        let entry = self.slots.get_mut(ctx as usize)?;
        let shape = classify(packet).filter(|s| s.is_v4() == has_id && s.is_tcp() == has_tcp);
        let Some(shape) = shape else {
            *entry = None;
            return Some(packet);
        };
        let (t, hl) = (shape.ip_len(), shape.hdr_len());
        let mut template = [0; MAX_HDR];
        template[..hl].copy_from_slice(&packet[..hl]);
        if has_id {
            template[4..6].copy_from_slice(base_id);
        }
        if has_tcp {
            template[t + 4..t + 12].copy_from_slice(base_tcp);
        }
        *entry = Some(DSlot {
            shape,
            gen: gen_byte & 15,
            template,
        });
        Some(packet)
    }

    fn compressed(&mut self, flags: u8, ctx: u8, fields: &[u8], out: &mut Vec<u8>) -> Restored {
        let Some(entry) = self.slots.get_mut(ctx as usize) else {
            return Restored::Malformed;
        };
        let Some(slot) = entry.as_mut() else {
            return Restored::ContextLoss;
        };
        let gen = (flags >> 3) & 15;
        if gen != slot.gen {
            return Restored::ContextLoss;
        }
        let shape = slot.shape;
        let (t, hl) = (shape.ip_len(), shape.hdr_len());
        let mut r: Reader<'_> = Reader::new(fields);
        out.extend_from_slice(&slot.template[..hl]);
        if flags & FLAG_EXT != 0 {
            let Ok(ext) = r.u8() else {
                return Restored::Malformed;
            };
            let known = shape.ext_fields().iter().fold(0, |acc, f| acc | f.0);
            if ext & !known != 0 {
                return Restored::Malformed;
            }
            for &(_, a, b) in shape.ext_fields().iter().filter(|f| ext & f.0 != 0) {
                let Ok(v) = r.bytes(b - a) else {
                    return Restored::Malformed;
                };
                out[a..b].copy_from_slice(v);
            }
        }
        if shape.is_v4() {
            let base = u16::from_be_bytes([slot.template[4], slot.template[5]]);
            let id = if flags & FLAG_ID_ABS != 0 {
                r.u16().ok()
            } else {
                r.u8().ok().map(|b| base.wrapping_add(u16::from(b)))
            };
            let Some(id) = id else {
                return Restored::Malformed;
            };
            out[4..6].copy_from_slice(&id.to_be_bytes());
        }
        if shape.is_tcp() {
            let Ok(b) = r.bytes(9) else {
                return Restored::Malformed;
            };
            let base_seq = be32(&slot.template[t + 4..]);
            let base_ack = be32(&slot.template[t + 8..]);
            let seq = base_seq.wrapping_add(u16::from_be_bytes([b[0], b[1]]) as u32);
            let ack = base_ack.wrapping_add(u16::from_be_bytes([b[2], b[3]]) as u32);
            out[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
            out[t + 8..t + 12].copy_from_slice(&ack.to_be_bytes());
            out[t + 13..t + 18].copy_from_slice(&b[4..9]);
        } else {
            let Ok(b) = r.bytes(2) else {
                return Restored::Malformed;
            };
            out[t + 6..t + 8].copy_from_slice(b);
        }
        let crc = if flags & FLAG_CRC != 0 {
            match r.u8() {
                Ok(b) => Some(b),
                Err(_) => return Restored::Malformed,
            }
        } else {
            None
        };
        out.extend_from_slice(r.rest());
        if out.len() > 0xffff + if shape.is_v4() { 0 } else { 40 } {
            return Restored::Malformed;
        }
        fill_lengths(shape, out);
        let ok = match crc {
            Some(c) => crc8(&out[..hl]) == c,
            None => transport_checksum_ok(shape, out),
        };
        if !ok {
            return Restored::CheckFailed;
        }
        Restored::Packet
    }
}

/// Writes the inferred length fields (IP total/payload length, UDP length) and the IPv4 header
/// checksum.
fn fill_lengths(shape: Shape, p: &mut [u8]) {
    let len = p.len();
    let t = shape.ip_len();
    if shape.is_v4() {
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        fill_v4_checksum(p);
    } else {
        p[4..6].copy_from_slice(&((len - t) as u16).to_be_bytes());
    }
    if !shape.is_tcp() {
        debug_assert!(len >= t + UDP_LEN);
        p[t + 4..t + 6].copy_from_slice(&((len - t) as u16).to_be_bytes());
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
