//! Header shapes, flow keys and the checksums TCM compresses against.
//!
//! A packet is *compressible* when its layout is one of four fixed shapes (IPv4 or IPv6, then
//! UDP or TCP without options), its length fields agree with its size, it is not a fragment and
//! (IPv4) its header checksum is right. Everything else travels as an UNCOMPRESSED record.

/// IPv4 header length TCM compresses (no options).
pub(crate) const V4_LEN: usize = 20;
/// IPv6 header length TCM compresses (no extension headers).
pub(crate) const V6_LEN: usize = 40;
/// UDP header length.
pub(crate) const UDP_LEN: usize = 8;
/// TCP header length TCM compresses (data offset 5, no options).
pub(crate) const TCP_LEN: usize = 20;
/// Largest compressible header (IPv6 + TCP).
pub(crate) const MAX_HDR: usize = V6_LEN + TCP_LEN;

/// IP protocol number of UDP.
const PROTO_UDP: u8 = 17;
/// IP protocol number of TCP.
const PROTO_TCP: u8 = 6;

/// The four header layouts TCM compresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Shape {
    /// IPv4 (20 B) + UDP (8 B).
    V4Udp,
    /// IPv4 (20 B) + TCP (20 B).
    V4Tcp,
    /// IPv6 (40 B) + UDP (8 B).
    V6Udp,
    /// IPv6 (40 B) + TCP (20 B).
    V6Tcp,
}

impl Shape {
    /// Length of the IP header.
    pub(crate) fn ip_len(self) -> usize {
        match self {
            Shape::V4Udp | Shape::V4Tcp => V4_LEN,
            Shape::V6Udp | Shape::V6Tcp => V6_LEN,
        }
    }

    /// Whether the transport is TCP.
    pub(crate) fn is_tcp(self) -> bool {
        matches!(self, Shape::V4Tcp | Shape::V6Tcp)
    }

    /// Whether the network layer is IPv4.
    pub(crate) fn is_v4(self) -> bool {
        matches!(self, Shape::V4Udp | Shape::V4Tcp)
    }

    /// Length of IP plus transport header.
    pub(crate) fn hdr_len(self) -> usize {
        self.ip_len() + if self.is_tcp() { TCP_LEN } else { UDP_LEN }
    }

    /// The fields a COMPRESSED record carries only when they differ from the context's
    /// template, as (bit in the EXT byte, start, end): TTL/hop limit, TOS (IPv4) or version +
    /// traffic class + flow label (IPv6), IPv4 flags/fragment field, TCP data offset byte and
    /// urgent pointer.
    pub(crate) fn ext_fields(self) -> &'static [(u8, usize, usize)] {
        match self {
            Shape::V4Udp => &[(0x01, 8, 9), (0x02, 1, 2), (0x04, 6, 8)],
            Shape::V4Tcp => &[
                (0x01, 8, 9),
                (0x02, 1, 2),
                (0x04, 6, 8),
                (0x08, 32, 33),
                (0x10, 38, 40),
            ],
            Shape::V6Udp => &[(0x01, 7, 8), (0x02, 0, 4)],
            Shape::V6Tcp => &[(0x01, 7, 8), (0x02, 0, 4), (0x08, 52, 53), (0x10, 58, 60)],
        }
    }
}

/// What identifies a flow: the IP version, the protocol, both addresses and both ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FlowKey {
    shape: Shape,
    addrs: [u8; 32],
    ports: [u8; 4],
}

impl FlowKey {
    /// The key of a packet of shape `shape`.
    pub(crate) fn of(shape: Shape, packet: &[u8]) -> FlowKey {
        let mut addrs = [0u8; 32];
        let (a, n) = if shape.is_v4() { (12, 8) } else { (8, 32) };
        addrs[..n].copy_from_slice(&packet[a..a + n]);
        let ip = shape.ip_len();
        let mut ports = [0u8; 4];
        ports.copy_from_slice(&packet[ip..ip + 4]);
        FlowKey {
            shape,
            addrs,
            ports,
        }
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Classifies `packet`; `None` means "carry it uncompressed".
pub(crate) fn classify(packet: &[u8]) -> Option<Shape> {
    let version = packet.first()? >> 4;
    let (shape, ip) = match version {
        4 => {
            if packet.len() < V4_LEN || packet[0] != 0x45 {
                return None;
            }
            let total = be16(packet, 2) as usize;
            let frag = be16(packet, 6) & 0x3fff; // MF and offset; DF may be set
            if total != packet.len() || frag != 0 || sum(0, &packet[..V4_LEN]) != 0xffff {
                return None;
            }
            match packet[9] {
                PROTO_UDP => (Shape::V4Udp, V4_LEN),
                PROTO_TCP => (Shape::V4Tcp, V4_LEN),
                _ => return None,
            }
        }
        6 => {
            if packet.len() < V6_LEN || be16(packet, 4) as usize != packet.len() - V6_LEN {
                return None;
            }
            match packet[6] {
                PROTO_UDP => (Shape::V6Udp, V6_LEN),
                PROTO_TCP => (Shape::V6Tcp, V6_LEN),
                _ => return None,
            }
        }
        _ => return None,
    };
    if packet.len() < shape.hdr_len() {
        return None;
    }
    if shape.is_tcp() {
        // Data offset 5 (no options); the reserved bits travel in the template.
        (packet[ip + 12] >> 4 == 5).then_some(shape)
    } else {
        (be16(packet, ip + 4) as usize == packet.len() - ip).then_some(shape)
    }
}

/// Ones-complement sum of `data` added to `acc`, folded to 16 bits.
pub(crate) fn sum(acc: u32, data: &[u8]) -> u16 {
    let mut acc = acc as u64;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u64) << 8;
    }
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Writes the IPv4 header checksum of `packet` (a 20-byte header in front).
pub(crate) fn fill_v4_checksum(packet: &mut [u8]) {
    packet[10] = 0;
    packet[11] = 0;
    let c = !sum(0, &packet[..V4_LEN]);
    packet[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Whether the transport checksum of a packet of shape `shape` verifies, which lets the
/// decompressor check its reconstruction for free. A zero UDP checksum ("none") does not count.
pub(crate) fn transport_checksum_ok(shape: Shape, packet: &[u8]) -> bool {
    let ip = shape.ip_len();
    let seg = &packet[ip..];
    if !shape.is_tcp() && seg[6] == 0 && seg[7] == 0 {
        return false;
    }
    let (proto, addrs) = if shape.is_v4() {
        (packet[9], &packet[12..20])
    } else {
        (packet[6], &packet[8..40])
    };
    let mut pseudo = sum(0, addrs) as u32;
    pseudo += proto as u32;
    pseudo += (seg.len() as u32 & 0xffff) + (seg.len() as u32 >> 16);
    sum(pseudo, seg) == 0xffff
}

/// CRC-8 (polynomial 0x07, the ATM HEC / ROHC CRC-8 without its final xor), bitwise: it is
/// only computed when the transport checksum cannot check the reconstruction.
pub(crate) fn crc8(data: &[u8]) -> u8 {
    let mut crc = 0u8;
    for &b in data {
        crc ^= b;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0x07
            } else {
                crc << 1
            };
        }
    }
    crc
}
