//! The Counter-Strike 1.6-like client->server workload, as real IPv4/UDP packets.
//!
//! Model ([`TrafficModel`]): each player sends one packet every IAT, IAT uniform in
//! [0.8, 1.2] x the mean, with a random phase; payloads uniform within 6 B of the mean. The two
//! means are not in the paper: they are fitted ([`super::fit`]) to what it states about its
//! traffic (319 kbit/s native for 20 players, 608 B and 1,192 B mean multiplexed packets).

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Ethernet framing counted per IP packet: the 14 B MAC header. "A nivel eth" is what Linux
/// tc shapes and what a capture shows: both count `skb->len`, the MAC header without FCS,
/// preamble or inter-frame gap.
pub(crate) const ETH_OVERHEAD: usize = 14;
/// Native IPv4 + UDP header.
pub(crate) const NH: usize = 28;
/// Half-width of the uniform payload spread around the mean, bytes.
const PAYLOAD_SPREAD: f64 = 6.0;

/// The two free parameters of the workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TrafficModel {
    /// Mean UDP payload per packet, bytes.
    pub mean_payload: f64,
    /// Mean inter-arrival time per player.
    pub mean_iat: Duration,
}

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
    model: &TrafficModel,
    duration: Duration,
    rng: &mut ChaCha8Rng,
) -> Vec<GamePacket> {
    let mut events = Vec::new();
    let spread = PAYLOAD_SPREAD;
    for p in 0..players {
        let mut id: u16 = rng.random();
        let mut t = model.mean_iat.mul_f64(rng.random::<f64>());
        while t < duration {
            let len = (model.mean_payload + rng.random_range(-spread..spread)).round();
            events.push((t, p, id, len.max(8.0) as usize));
            id = id.wrapping_add(1);
            t += model.mean_iat.mul_f64(rng.random_range(0.8..1.2));
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
