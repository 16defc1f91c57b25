//! Stateless Resets from a server whose connection ids are shorter than 8 bytes (PROTOCOL.md
//! 2.7): the token is bound to the client's address, so a restarted server still resets its
//! clients, while a Reset drawn from another address resets nothing and a live id still draws
//! a decoy.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;

use super::net::{drain, Net};
use crate::wire::{self, ConnectionId, LongPacket, ShortHeader, RESET_TOKEN_LEN};
use crate::{
    ConnectionHandle, DisconnectReason, Endpoint, EndpointConfig, Event, SendMode, ServerConfig,
    ServerKey,
};

/// The client's address.
fn a() -> SocketAddr {
    "198.51.100.10:5000".parse().expect("address")
}

/// The attacker's address.
fn b() -> SocketAddr {
    "203.0.113.66:6666".parse().expect("address")
}

/// A server issuing 4-byte ids, with a fixed static key (the same across restarts).
fn server(seed: u8) -> (EndpointConfig, ServerConfig) {
    let mut config = EndpointConfig::new([seed; 32]);
    config.cid_len = 4;
    let server = ServerConfig {
        key: Some(ServerKey::generate([42; 32])),
        ..ServerConfig::default()
    };
    (config, server)
}

/// Client 0 (at `a`) connected to a server with 4-byte ids; client 1 sits at `b`.
fn connected() -> (Net, ConnectionHandle) {
    let mut net = Net::with_configs(server(7), EndpointConfig::new([9; 32]), &[a(), b()]);
    let c = net.connect(0);
    net.run(Duration::from_millis(200));
    assert_eq!(net.outcome(0, c), Some(Ok(())));
    assert_eq!(server_cid(&net, c).len(), 4);
    (net, c)
}

/// The server restarts with the same key: it knows no connection any more.
fn restart(net: &mut Net) {
    let (config, server) = server(8);
    net.server = Endpoint::new(config, Some(server), net.now).expect("server");
}

fn server_cid(net: &Net, c: ConnectionHandle) -> ConnectionId {
    net.clients[0]
        .1
        .connection(c)
        .and_then(|conn| conn.remote_cid())
        .expect("established")
}

/// The token the client got in the Accept.
fn client_token(net: &Net, c: ConnectionHandle) -> [u8; RESET_TOKEN_LEN] {
    net.clients[0]
        .1
        .connection(c)
        .and_then(|conn| conn.peer_reset_token())
        .expect("token")
}

/// A short-header packet naming `cid` that does not authenticate (a cleartext PING, padded).
fn probe(cid: &ConnectionId) -> Vec<u8> {
    let mut d = Vec::new();
    ShortHeader::encode(cid, 5, 4, &mut d);
    wire::encode_ping(&mut d);
    d.resize(40, 0);
    d
}

/// The server's answers to `probe(cid)` from `from`.
fn ask(net: &mut Net, from: SocketAddr, cid: &ConnectionId) -> Vec<(SocketAddr, Vec<u8>)> {
    let now = net.now;
    net.server.handle_datagram(now, from, &probe(cid));
    drain(&mut net.server, now)
}

fn token_of(reset: &[u8]) -> [u8; RESET_TOKEN_LEN] {
    match LongPacket::decode(reset) {
        Ok(LongPacket::Reset { token, .. }) => token,
        other => panic!("not a Reset: {other:?}"),
    }
}

#[test]
fn a_restarted_server_with_4_byte_ids_resets_its_clients() {
    let (mut net, c) = connected();
    restart(&mut net);
    let now = net.now;
    net.clients[0]
        .1
        .send(
            now,
            c,
            0,
            Bytes::from_static(b"are you there?"),
            SendMode::Plain,
        )
        .expect("send");
    net.run(Duration::from_millis(50));
    assert_eq!(net.outcome(0, c), Some(Err(DisconnectReason::PeerReset)));
    assert_eq!(net.server.stats().resets_sent, 1);
    assert_eq!(net.clients[0].1.stats().dropped_bad_reset, 0);
}

#[test]
fn a_reset_drawn_from_another_address_resets_nothing() {
    let (mut net, c) = connected();
    let cid = server_cid(&net, c);
    let real = client_token(&net, c);
    restart(&mut net);
    // the attacker at b probes the (now unknown) id: the answer goes to b, with b's token
    let answers = ask(&mut net, b(), &cid);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].0, b());
    let stolen = &answers[0].1;
    assert_eq!(stolen.len(), 6 + 4 + RESET_TOKEN_LEN);
    assert_ne!(token_of(stolen), real);
    // sent to the victim as if from the server, it is not believed
    let (now, server_addr) = (net.now, net.server_addr);
    net.clients[0].1.handle_datagram(now, server_addr, stolen);
    net.deliver();
    assert!(net.clients[0].1.connection(c).is_some());
    assert_eq!(net.outcome(0, c), Some(Ok(())));
    assert_eq!(net.clients[0].1.stats().dropped_bad_reset, 1);
    // the same probe from the victim's address (whoever spoofs it) is answered to the victim,
    // with the victim's token
    let answers = ask(&mut net, a(), &cid);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].0, a());
    assert_eq!(token_of(&answers[0].1), real);
    net.clients[0]
        .1
        .handle_datagram(now, server_addr, &answers[0].1);
    net.deliver();
    assert_eq!(net.outcome(0, c), Some(Err(DisconnectReason::PeerReset)));
}

#[test]
fn a_live_short_id_draws_a_decoy_even_from_its_clients_address() {
    let (mut net, c) = connected();
    let live = server_cid(&net, c);
    let real = client_token(&net, c);
    let unknown = ConnectionId::new(&[9; 4]).expect("cid");
    assert_ne!(unknown, live);
    let mut tokens = Vec::new();
    for from in [a(), b()] {
        for cid in [live, unknown] {
            let answers = ask(&mut net, from, &cid);
            // the same answer for a live id as for an unknown one: one 26-byte Reset
            assert_eq!(answers.len(), 1);
            assert_eq!(answers[0].0, from);
            assert_eq!(answers[0].1.len(), 26);
            tokens.push(token_of(&answers[0].1));
        }
    }
    // the live id's answers carry decoys, the one to the client's own address too; like
    // tokens, decoys differ by address
    let [live_a, unknown_a, live_b, unknown_b] = tokens[..] else {
        panic!("{tokens:?}");
    };
    assert_ne!(live_a, real);
    assert_ne!(live_b, real);
    assert_ne!(live_a, live_b);
    assert_ne!(unknown_a, unknown_b);
    // delivered to the client, the decoy resets nothing and the connection goes on
    let decoy = ask(&mut net, a(), &live).remove(0).1;
    let (now, server_addr) = (net.now, net.server_addr);
    net.clients[0].1.handle_datagram(now, server_addr, &decoy);
    net.clients[0]
        .1
        .send(
            now,
            c,
            0,
            Bytes::from_static(b"still here"),
            SendMode::Plain,
        )
        .expect("send");
    net.run(Duration::from_millis(100));
    assert_eq!(net.outcome(0, c), Some(Ok(())));
    assert_eq!(net.clients[0].1.stats().dropped_bad_reset, 1);
    assert!(net
        .server_events
        .iter()
        .any(|(_, e)| matches!(e, Event::Message(m) if m.data == b"still here"[..])));
}
