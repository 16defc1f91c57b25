//! The Counter-Strike 1.6-like client->server workload, as real IPv4/UDP packets.
//!
//! Model: each player sends one packet every IAT, IAT uniform in [0.8, 1.2] x 53.7 ms, with a
//! random phase; payloads uniform in 55..=67 B (mean 61 B, the slide deck's 61-byte payloads,
//! 89-byte IP packets). The mean IAT is calibrated so that 20 players give 319 kbit/s at
//! Ethernet level (Saldaña et al., Sec. IV) with 18 B of Ethernet framing per packet (14 B
//! header + 4 B FCS): 20 x (89 + 18) B x 8 / 53.7 ms = 319 kbit/s. Petlund's Table 1 reports a
//! 65 ms median IAT for Counter-Strike, the same order.

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Mean inter-arrival time per player (calibrated, see the module docs).
pub(crate) const MEAN_IAT: Duration = Duration::from_micros(53_700);
/// Ethernet framing counted per IP packet (header 14 B + FCS 4 B).
pub(crate) const ETH_OVERHEAD: usize = 18;
/// Native IPv4 + UDP header.
pub(crate) const NH: usize = 28;

/// One game packet: when it was sent (from the start) and its bytes.
#[derive(Debug, Clone)]
pub(crate) struct GamePacket {
    pub(crate) at: Duration,
    pub(crate) bytes: Vec<u8>,
}

/// The sequence number the workload writes into the first 8 payload bytes.
pub(crate) fn seq_of(packet: &[u8]) -> Option<u64> {
    let b = packet.get(NH..NH + 8)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// All packets of `players` players over `duration`, in send order; sequence numbers index
/// the returned vector.
pub(crate) fn game_packets(
    players: usize,
    duration: Duration,
    rng: &mut ChaCha8Rng,
) -> Vec<GamePacket> {
    let mut events = Vec::new();
    for p in 0..players {
        let mut id: u16 = rng.random();
        let mut t = MEAN_IAT.mul_f64(rng.random::<f64>());
        while t < duration {
            let len = rng.random_range(55..=67usize);
            events.push((t, p, id, len));
            id = id.wrapping_add(1);
            t += MEAN_IAT.mul_f64(rng.random_range(0.8..1.2));
        }
    }
    events.sort_by_key(|e| (e.0, e.1));
    events
        .into_iter()
        .enumerate()
        .map(|(seq, (at, p, id, len))| {
            let mut payload = vec![0u8; len];
            rng.fill(&mut payload[..]);
            payload[..8].copy_from_slice(&(seq as u64).to_le_bytes());
            GamePacket {
                at,
                bytes: ipv4_udp(p as u8, id, &payload),
            }
        })
        .collect()
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

fn sum(data: &[u8]) -> u32 {
    data.chunks(2)
        .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32)
        .sum()
}

/// Player `player`'s packet 10.0.0.(player+1):27005 -> 192.0.2.1:27015, TTL 128, with right
/// IPv4 and UDP checksums.
fn ipv4_udp(player: u8, id: u16, payload: &[u8]) -> Vec<u8> {
    let len = NH + payload.len();
    let mut p = Vec::with_capacity(len);
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&(len as u16).to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0, 0, 128, 17, 0, 0, 10, 0, 0, player + 1, 192, 0, 2, 1]);
    let h = !fold(sum(&p));
    p[10..12].copy_from_slice(&h.to_be_bytes());
    p.extend_from_slice(&27005u16.to_be_bytes());
    p.extend_from_slice(&27015u16.to_be_bytes());
    p.extend_from_slice(&((len - 20) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    let pseudo = sum(&p[12..20]) + 17 + (len - 20) as u32;
    let c = match !fold(pseudo + sum(&p[20..])) {
        0 => 0xffff,
        c => c,
    };
    p[26..28].copy_from_slice(&c.to_be_bytes());
    p
}
