//! Behaviour tests of the core over the two-endpoint harness.

mod ack_pairs;
mod admission;
mod attacks;
mod basics;
mod budget;
mod deadline;
mod event_order;
mod fuzz_replay;
mod lifecycle;
mod memory;
mod net;
mod prefetch;
mod properties;
mod repair;
mod reset;
mod send_state;
mod thin;
mod tick_acks;
mod timers;
mod wrong_key;

use crate::wire::{self, ConnectionId, LongPacket};
use crate::{ChannelKind, PublicKey};

/// A client's Noise message 1 to `key` for the handshake (`cid`, `instance`, `nonce`): one
/// reliable channel, the first cipher suite, no token.
fn message_1(key: &PublicKey, cid: &ConnectionId, instance: u64, nonce: u64) -> Vec<u8> {
    let prologue = crate::crypto::prologue(wire::VERSION, cid, instance, nonce);
    let mut params = Vec::new();
    wire::ConnectParams {
        max_ack_delay_us: 5000,
        channels: vec![ChannelKind::ReliableOrdered],
        suites: vec![1],
        token: Vec::new(),
    }
    .encode(&mut params);
    let (_, msg) =
        crate::crypto::Initiator::start(key, &prologue, [4; 32], &params).expect("message 1");
    msg
}

/// A Connect datagram of the handshake (`cid`, `instance`, `nonce`).
fn connect_datagram(
    (cid, instance, nonce): (ConnectionId, u64, u64),
    cookie: &[u8],
    handshake: Vec<u8>,
) -> Vec<u8> {
    let mut out = Vec::new();
    LongPacket::Connect {
        version: wire::VERSION,
        src_cid: cid,
        instance,
        nonce,
        cookie: cookie.to_vec(),
        handshake,
    }
    .encode(&mut out);
    out
}
