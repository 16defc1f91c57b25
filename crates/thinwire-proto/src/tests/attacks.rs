//! Attacks on a connection, each replayed against the core: before packets were authenticated
//! every one of them succeeded (an attacker could find live connection ids, close, reset,
//! inject into or hijack a connection, and one source could fill the server). Each test
//! asserts the attack now fails *and* that the genuine traffic goes on.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use thinwire_netmodel::LinkConfig;

use super::net::{drain, Net};
use crate::testing::{Pair, Verdict};
use crate::wire::{self, ConnectionId, LongPacket, MessageHeader, ShortHeader};
use crate::{
    ChannelKind, CipherSuite, ConnectToken, ConnectionHandle, DisconnectReason, Endpoint,
    EndpointConfig, Event, RefuseReason, SendMode, ServerConfig, TokenClaims, TokenKey,
    TokenPolicy,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn attacker() -> SocketAddr {
    "203.0.113.66:6666".parse().expect("address")
}

/// A connected pair (10 ms each way) that logs both sides' datagrams.
fn connected(seed: u64, channels: &[ChannelKind]) -> (Pair, ConnectionHandle, ConnectionHandle) {
    let mut pair = Pair::builder(seed)
        .link(LinkConfig::default().with_delay(ms(10)))
        .build();
    let (c, s) = pair.connect(channels).expect("connects");
    pair.client_mut().set_log_sent(true);
    pair.server_mut().set_log_sent(true);
    (pair, c, s)
}

/// The server's id of the connection: what an on-path attacker reads in the client's headers.
fn server_cid(pair: &Pair, c: ConnectionHandle) -> ConnectionId {
    pair.client()
        .endpoint()
        .connection(c)
        .and_then(|conn| conn.remote_cid())
        .expect("established")
}

/// A cleartext short-header packet with `cid`, packet number `pn` and `frames`.
fn forged(cid: &ConnectionId, pn: u64, frames: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut d = Vec::new();
    ShortHeader::encode(cid, pn, 4, &mut d);
    frames(&mut d);
    d.resize(d.len().max(40), 0); // padding, and long enough to be answered
    d
}

/// Sends `count` numbered messages from the client on `channel` and checks they all arrive.
fn genuine_traffic_flows(pair: &mut Pair, c: ConnectionHandle, channel: u8, count: usize) {
    for i in 0..count {
        let data = Bytes::from(format!("genuine {i}"));
        let now = pair.now();
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, channel, data, SendMode::Plain)
            .expect("send");
        pair.run_for(ms(30));
    }
    pair.run_for(ms(200));
    let got = pair.server_mut().take_messages(channel);
    assert_eq!(got.len(), count, "genuine messages lost");
    assert!(got.iter().all(|m| m.data.starts_with(b"genuine ")));
}

#[test]
fn unknown_and_live_ids_get_the_same_answer() {
    let (mut pair, c, _s) = connected(1, &[ChannelKind::ReliableOrdered]);
    let live = server_cid(&pair, c);
    let unknown = ConnectionId::new(&[9; 8]).expect("cid");
    let now = pair.now();
    let mut answers = Vec::new();
    for cid in [unknown, live] {
        let d = forged(&cid, 5, wire::encode_ping);
        pair.server_mut()
            .endpoint_mut()
            .handle_datagram(now, attacker(), &d);
        answers.push(drain(pair.server_mut().endpoint_mut(), now));
    }
    let shape = |a: &Vec<(SocketAddr, Vec<u8>)>| -> Vec<(SocketAddr, usize, u8)> {
        a.iter().map(|(to, d)| (*to, d.len(), d[0])).collect()
    };
    assert_eq!(shape(&answers[0]), shape(&answers[1]), "{answers:?}");
    assert_eq!(answers[0].len(), 1);
    // the live id's answer does not carry its real reset token (which would let anyone who
    // asks reset the connection)
    let real = pair
        .client()
        .endpoint()
        .connection(c)
        .and_then(|conn| conn.peer_reset_token())
        .expect("token");
    let Ok(LongPacket::Reset { token, .. }) = LongPacket::decode(&answers[1][0].1) else {
        panic!("not a reset: {answers:?}");
    };
    assert_ne!(token, real);
    // even delivered to the client, it resets nothing
    let server_addr = pair.server().addr();
    pair.client_mut()
        .endpoint_mut()
        .handle_datagram(now, server_addr, &answers[1][0].1);
    assert!(pair.client().endpoint().connection(c).is_some());
    // a probe too short to hold an 8-byte id draws no answer at all
    pair.server_mut()
        .endpoint_mut()
        .handle_datagram(now, attacker(), &[0x40, 1, 2, 3, 4]);
    assert!(drain(pair.server_mut().endpoint_mut(), now).is_empty());
    genuine_traffic_flows(&mut pair, c, 0, 5);
}

#[test]
fn a_forged_close_closes_nothing_from_any_address() {
    let (mut pair, c, s) = connected(2, &[ChannelKind::ReliableOrdered]);
    let cid = server_cid(&pair, c);
    let client_addr = pair.client().addr();
    for (i, from) in [attacker(), client_addr].into_iter().enumerate() {
        for pn in [0u64, 1, 100, 1 << 20] {
            let d = forged(&cid, pn + i as u64, |d| wire::encode_close(0, b"bye", d));
            let now = pair.now();
            pair.server_mut()
                .endpoint_mut()
                .handle_datagram(now, from, &d);
        }
    }
    let now = pair.now();
    let replies = drain(pair.server_mut().endpoint_mut(), now);
    // nothing the server answers carries the client's connection id (the old server sent its
    // CLOSE to the attacker, revealing it)
    let client_cid = pair
        .server()
        .endpoint()
        .connection(s)
        .and_then(|conn| conn.remote_cid())
        .expect("client cid");
    for (_, d) in &replies {
        assert!(
            !d.windows(8).any(|w| w == client_cid.as_bytes()),
            "reply reveals the client's id"
        );
        assert!(matches!(
            LongPacket::decode(d),
            Ok(LongPacket::Reset { .. })
        ));
    }
    let st = pair.server().endpoint().connection_stats(s).expect("alive");
    assert_eq!(st.security.unauthenticated_packets, 8);
    assert!(pair.server().disconnected().is_none());
    genuine_traffic_flows(&mut pair, c, 0, 5);
}

#[test]
fn a_spoofed_reset_kills_nothing() {
    let (mut pair, c, _s) = connected(3, &[ChannelKind::ReliableOrdered]);
    let cid = server_cid(&pair, c);
    for i in 0..1000u32 {
        let mut token = [0u8; wire::RESET_TOKEN_LEN];
        token[..4].copy_from_slice(&i.to_be_bytes());
        let mut d = Vec::new();
        LongPacket::Reset {
            version: wire::VERSION,
            cid,
            token,
        }
        .encode(&mut d);
        // spoofed as the server
        let from = pair.server().addr();
        let now = pair.now();
        pair.client_mut()
            .endpoint_mut()
            .handle_datagram(now, from, &d);
    }
    assert_eq!(pair.client().endpoint().stats().dropped_bad_reset, 1000);
    assert!(pair.client().disconnected().is_none());
    genuine_traffic_flows(&mut pair, c, 0, 3);
}

#[test]
fn forged_messages_are_never_delivered_nor_displace_genuine_ones() {
    let (mut pair, c, s) = connected(4, &ChannelKind::ALL);
    let cid = server_cid(&pair, c);
    let from = pair.client().addr(); // spoofed as the client
    for pn in 0..200u64 {
        let d = forged(&cid, pn, |d| {
            for (ch, kind) in ChannelKind::ALL.iter().enumerate() {
                let header = MessageHeader {
                    channel: ch as u8,
                    kind: *kind,
                    seq: pn % 8,
                    compact_seq: true,
                    key: kind.has_key().then_some(1),
                    fragment: None,
                };
                wire::encode_message(&header, b"FORGED", d);
            }
        });
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .handle_datagram(now, from, &d);
    }
    // and genuine datagrams with one bit flipped
    let genuine: Vec<Vec<u8>> = pair
        .client()
        .sent_log()
        .iter()
        .map(|(_, d)| d.clone())
        .collect();
    for mut d in genuine {
        let at = d.len() / 2;
        d[at] ^= 0x20;
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .handle_datagram(now, from, &d);
    }
    for ch in 0..5 {
        assert!(
            pair.server_mut().take_messages(ch).is_empty(),
            "channel {ch}"
        );
    }
    // the genuine sequence numbers 0.. still deliver, in order, on the ordered channel
    genuine_traffic_flows(&mut pair, c, 0, 8);
    let st = pair.server().endpoint().connection_stats(s).expect("alive");
    assert!(st.security.unauthenticated_packets >= 200);
    assert_eq!(st.udp.malformed_packets, 0);
}

#[test]
fn a_far_ahead_packet_number_or_a_replay_cannot_hijack() {
    let (mut pair, c, s) = connected(5, &[ChannelKind::ReliableOrdered]);
    let cid = server_cid(&pair, c);
    let client_addr = pair.client().addr();
    for pn in [1u64 << 20, 1 << 30, u32::MAX as u64] {
        let d = forged(&cid, pn, wire::encode_ping);
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .handle_datagram(now, attacker(), &d);
    }
    // a replayed genuine datagram, from the attacker's address: a duplicate
    let now = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"once"), SendMode::Plain)
        .expect("send");
    pair.run_for(ms(50));
    let replay = pair
        .client()
        .sent_log()
        .iter()
        .rev()
        .find(|(_, d)| !wire::is_long_header(d))
        .expect("logged")
        .1
        .clone();
    let now = pair.now();
    pair.server_mut()
        .endpoint_mut()
        .handle_datagram(now, attacker(), &replay);
    pair.run_for(ms(100));
    assert_eq!(
        pair.server().endpoint().remote_address(s),
        Some(client_addr)
    );
    let st = pair.server().endpoint().connection_stats(s).expect("alive");
    assert_eq!(st.security.migrations, 0);
    assert_eq!(st.security.path_challenges_sent, 0);
    assert_eq!(
        pair.server_mut().take_messages(0).len(),
        1,
        "the replay is not delivered twice"
    );
    genuine_traffic_flows(&mut pair, c, 0, 3);
    // the server's data still reaches the real client
    let now = pair.now();
    pair.server_mut()
        .endpoint_mut()
        .send(
            now,
            s,
            0,
            Bytes::from_static(b"to the client"),
            SendMode::Plain,
        )
        .expect("send");
    pair.run_for(ms(100));
    assert_eq!(pair.client_mut().take_messages(0).len(), 1);
}

/// An attacker on the path takes a genuine datagram and delivers it from its own address
/// before the original: it authenticates, so the server probes the new address, but the
/// attacker cannot answer the challenge, so the connection stays where it was; the server
/// sends the attacker at most three times the bytes the attacker sent it.
#[test]
fn a_genuine_packet_from_a_new_address_moves_nothing_until_the_address_answers() {
    let (mut pair, c, s) = connected(6, &[ChannelKind::ReliableOrdered]);
    let client_addr = pair.client().addr();
    let stolen = std::rc::Rc::new(std::cell::RefCell::new(None));
    let slot = stolen.clone();
    pair.client_mut().set_filter(Some(Box::new(move |_, _, d| {
        let mut s = slot.borrow_mut();
        if s.is_none() && !wire::is_long_header(d) {
            *s = Some(d.clone());
            return Verdict::Drop;
        }
        Verdict::Pass
    })));
    let now = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"stolen"), SendMode::Plain)
        .expect("send");
    pair.flush();
    let d = stolen.borrow().clone().expect("a datagram was taken");
    let now = pair.now();
    pair.server_mut()
        .endpoint_mut()
        .handle_datagram(now, attacker(), &d);
    let to_attacker: usize = drain(pair.server_mut().endpoint_mut(), now)
        .iter()
        .filter(|(to, _)| *to == attacker())
        .map(|(_, d)| d.len())
        .sum();
    assert!(to_attacker > 0, "a challenge goes to the new address");
    assert!(
        to_attacker <= 3 * d.len(),
        "{to_attacker} bytes for {}",
        d.len()
    );
    pair.run_for(Duration::from_secs(2));
    assert_eq!(
        pair.server().endpoint().remote_address(s),
        Some(client_addr)
    );
    let st = pair.server().endpoint().connection_stats(s).expect("alive");
    assert_eq!(st.security.migrations, 0);
    assert!(st.security.path_challenges_sent >= 1);
    // the retries went to the attacker too, never past the limit
    let later: usize = pair
        .server()
        .elsewhere()
        .iter()
        .map(|(to, d)| {
            assert_eq!(*to, attacker());
            d.len()
        })
        .sum();
    assert!(
        to_attacker + later <= 3 * d.len(),
        "{} bytes",
        to_attacker + later
    );
    // the message itself was genuine: it is delivered once
    assert_eq!(pair.server_mut().take_messages(0).len(), 1);
    genuine_traffic_flows(&mut pair, c, 0, 3);
}

#[test]
fn nat_rebinding_moves_after_the_new_address_answers_a_challenge() {
    let (mut pair, c, s) = connected(7, &[ChannelKind::ReliableOrdered]);
    let new_addr: SocketAddr = "127.0.0.1:50123".parse().expect("address");
    pair.client_mut().set_addr(new_addr);
    genuine_traffic_flows(&mut pair, c, 0, 3);
    assert_eq!(pair.server().endpoint().remote_address(s), Some(new_addr));
    let st = pair.server().endpoint().connection_stats(s).expect("alive");
    assert_eq!(
        (st.security.migrations, st.security.path_challenges_sent),
        (1, 1)
    );
}

#[test]
fn one_source_cannot_fill_the_table_and_a_full_server_says_so() {
    let a: SocketAddr = "198.51.100.1:1000".parse().expect("address");
    let b: SocketAddr = "198.51.100.2:1000".parse().expect("address");
    let c: SocketAddr = "198.51.100.3:1000".parse().expect("address");
    let server = ServerConfig {
        max_connections: 5,
        max_connections_per_source: 3,
        ..ServerConfig::default()
    };
    let mut net = Net::new(server, &[a, b, c]);
    let from_a: Vec<_> = (0..4).map(|_| net.connect(0)).collect();
    net.run(ms(100));
    let outcomes: Vec<_> = from_a.iter().map(|h| net.outcome(0, *h)).collect();
    assert_eq!(
        outcomes,
        vec![
            Some(Ok(())),
            Some(Ok(())),
            Some(Ok(())),
            Some(Err(DisconnectReason::Refused(
                RefuseReason::TooManyFromSource
            )))
        ]
    );
    let from_b: Vec<_> = (0..2).map(|_| net.connect(1)).collect();
    net.run(ms(100));
    for h in from_b {
        assert_eq!(net.outcome(1, h), Some(Ok(())));
    }
    // the table is full: the next client hears so at once, instead of timing out
    let h = net.connect(2);
    net.run(ms(50));
    assert_eq!(
        net.outcome(2, h),
        Some(Err(DisconnectReason::Refused(RefuseReason::ServerFull)))
    );
    assert_eq!(net.server.connection_count(), 5);
    assert_eq!(net.server.stats().refusals_sent, 2);
}

/// A gateway's address, listed in `trusted_sources`, is exempt from the per-source limits
/// (all its players arrive from it); every other source still meets them.
#[test]
fn a_trusted_gateway_is_exempt_from_the_per_source_limits() {
    let gateway: SocketAddr = "198.51.100.9:1000".parse().expect("address");
    let other: SocketAddr = "198.51.100.10:1000".parse().expect("address");
    let server = ServerConfig {
        max_connections_per_source: 3,
        handshakes_per_second_per_source: 5,
        trusted_sources: vec![gateway.ip()],
        ..ServerConfig::default()
    };
    let mut net = Net::new(server, &[gateway, other]);
    let through_gateway: Vec<_> = (0..20).map(|_| net.connect(0)).collect();
    let direct: Vec<_> = (0..4).map(|_| net.connect(1)).collect();
    net.run(ms(100));
    for h in &through_gateway {
        assert_eq!(net.outcome(0, *h), Some(Ok(())));
    }
    let refused = direct
        .iter()
        .filter(|h| {
            net.outcome(1, **h)
                == Some(Err(DisconnectReason::Refused(
                    RefuseReason::TooManyFromSource,
                )))
        })
        .count();
    assert_eq!(refused, 1, "the untrusted source keeps its limit of 3");
    assert_eq!(net.server.connection_count(), 23);
}

/// Hellos from spoofed sources cost the server at most its stateless budget of replies (a
/// burst of one second's worth, then the rate), and no state.
#[test]
fn a_hello_flood_is_answered_within_the_stateless_budget() {
    let server = ServerConfig {
        stateless_replies_per_second: 1000,
        ..ServerConfig::default()
    };
    let mut net = Net::new(server, &[]);
    let mut hello = Vec::new();
    LongPacket::Hello {
        version: wire::VERSION,
        src_cid: ConnectionId::new(&[1; 8]).expect("cid"),
        instance: 1,
        nonce: 2,
    }
    .encode(&mut hello);
    let start = net.now;
    let mut answered = 0;
    for i in 0..10_000u32 {
        let now = start + Duration::from_micros(u64::from(i) * 100); // 1 s of flood
        let from = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 999));
        net.server.handle_datagram(now, from, &hello);
        answered += drain(&mut net.server, now).len();
    }
    assert!((1900..=2001).contains(&answered), "{answered} challenges");
    assert!(net.server.stats().dropped_rate_limited >= 7_999);
    assert_eq!(net.server.connection_count(), 0);
    assert!(net.server.poll_timeout().is_none(), "no state");
}

/// One host whose address the cookie proved gets its Connects processed at its own rate:
/// each costs the server a Noise message, so it cannot keep the server busy.
#[test]
fn connects_from_one_source_are_processed_at_its_rate() {
    let a: SocketAddr = "198.51.100.1:1000".parse().expect("address");
    let b: SocketAddr = "198.51.100.2:1000".parse().expect("address");
    let server = ServerConfig {
        handshakes_per_second_per_source: 5,
        ..ServerConfig::default()
    };
    let mut net = Net::new(server, &[a, b]);
    let handles: Vec<_> = (0..40).map(|_| net.connect(0)).collect();
    let other = net.connect(1);
    net.run(ms(100));
    let connected = |net: &Net| {
        handles
            .iter()
            .filter(|h| net.outcome(0, **h) == Some(Ok(())))
            .count()
    };
    assert_eq!(connected(&net), 10, "a burst of twice the rate");
    assert_eq!(
        net.outcome(1, other),
        Some(Ok(())),
        "another host is not held back"
    );
    // the rest are retried every 250 ms and admitted at 5 a second
    net.run(Duration::from_secs(2));
    let n = connected(&net);
    assert!((18..=21).contains(&n), "{n} connected after 2.1 s");
    assert!(net.server.stats().dropped_rate_limited > 0);
}

#[test]
fn an_impostor_cannot_complete_the_handshake() {
    let mut pair = Pair::builder(8)
        .link(LinkConfig::default().with_delay(ms(10)))
        .build();
    let wrong = crate::ServerKey::generate([99; 32]).public();
    let server_addr = pair.server().addr();
    let now = pair.now();
    let c = pair
        .client_mut()
        .endpoint_mut()
        .connect(now, server_addr, &wrong, &[ChannelKind::ReliableOrdered])
        .expect("connect");
    pair.run_for(Duration::from_secs(6));
    // the server cannot read a handshake written to another key, and says so (not the key)
    assert_eq!(
        pair.client().disconnected(),
        Some(&DisconnectReason::Refused(RefuseReason::UnknownServerKey))
    );
    assert!(pair.client().endpoint().connection(c).is_none());
    assert_eq!(pair.server().endpoint().connection_count(), 0);
    assert!(pair.server().endpoint().stats().dropped_bad_handshake > 0);
}

#[test]
fn payloads_and_channel_tables_are_not_on_the_wire() {
    let (mut pair, c, s) = connected(9, &ChannelKind::ALL);
    for ch in [0u8, 1, 2, 3] {
        pair.client_send(
            c,
            ch,
            Bytes::from_static(b"SECRET-PAYLOAD"),
            SendMode::Plain,
        )
        .expect("send");
    }
    let now = pair.now();
    pair.server_mut()
        .endpoint_mut()
        .send(
            now,
            s,
            0,
            Bytes::from_static(b"SECRET-PAYLOAD"),
            SendMode::Plain,
        )
        .expect("send");
    pair.run_for(ms(100));
    assert_eq!(pair.server_mut().take_messages(0).len(), 1);
    for (_, d) in pair
        .client()
        .sent_log()
        .iter()
        .chain(pair.server().sent_log())
    {
        assert!(
            !d.windows(6).any(|w| w == b"SECRET"),
            "plaintext on the wire"
        );
    }
    let suite = pair.client().endpoint().cipher_suite(c).expect("suite");
    assert!(suite.is_encrypted());
}

#[test]
fn cleartext_only_when_both_ends_opt_in() {
    let mut pair = Pair::builder(10).build();
    let mut cfg = EndpointConfig::new([5; 32]).insecure_cleartext();
    cfg.transport = std::sync::Arc::new(pair.client().endpoint().transport_config().clone());
    *pair.client_mut().endpoint_mut() = Endpoint::new(cfg, None, pair.now()).expect("client");
    assert!(pair.connect(&[ChannelKind::ReliableOrdered]).is_none());
    assert_eq!(
        pair.client().disconnected(),
        Some(&DisconnectReason::Refused(
            RefuseReason::NoCommonCipherSuite
        ))
    );
    let mut pair = Pair::builder(10)
        .cipher_suites(vec![CipherSuite::InsecureCleartext])
        .build();
    let (c, _) = pair
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    assert_eq!(
        pair.client().endpoint().cipher_suite(c),
        Some(CipherSuite::InsecureCleartext)
    );
}

#[test]
fn connect_tokens_admit_only_their_holders() {
    let key = TokenKey::new([42; 32]);
    let policy = TokenPolicy {
        key: key.clone(),
        public_addresses: Vec::new(),
    };
    let server = ServerConfig {
        connect_tokens: Some(policy),
        ..ServerConfig::default()
    };
    let mut pair = Pair::builder(11)
        .link(LinkConfig::default().with_delay(ms(5)))
        .server_config(server)
        .build();
    let unix = Duration::from_secs(1_800_000_000);
    let now = pair.now();
    pair.server_mut().endpoint_mut().set_unix_time(now, unix);
    let server_key = pair.server_key().0;
    let claims = TokenClaims {
        client_id: 77,
        user_data: b"elo=1500".to_vec(),
    };
    let mint = |key: &TokenKey, expires: u64, nonce: u8| {
        ConnectToken::mint(
            key,
            &claims,
            server_key,
            &[pair.server().addr()],
            expires,
            [nonce; 24],
        )
        .expect("mint")
    };
    let valid = mint(&key, unix.as_secs() + 30, 1);
    let expired = mint(&key, unix.as_secs(), 2);
    let other_backend = mint(&TokenKey::new([43; 32]), unix.as_secs() + 30, 3);
    let open = |pair: &mut Pair, token: Option<&ConnectToken>| {
        pair.client_mut().events_mut().clear();
        let (now, addr, k) = (pair.now(), pair.server().addr(), pair.server_key());
        let chans = [ChannelKind::ReliableOrdered];
        let h = match token {
            Some(t) => pair
                .client_mut()
                .endpoint_mut()
                .connect_with_token(now, t, &chans),
            None => pair
                .client_mut()
                .endpoint_mut()
                .connect(now, addr, &k, &chans),
        }
        .expect("connect");
        pair.run_for(ms(100));
        let connected = pair
            .client()
            .events()
            .iter()
            .any(|(x, e)| *x == h && matches!(e, Event::Connected { .. }));
        (connected, pair.client().disconnected().cloned())
    };
    let refused = |r| (false, Some(DisconnectReason::Refused(r)));
    assert_eq!(open(&mut pair, None), refused(RefuseReason::InvalidToken));
    assert_eq!(
        open(&mut pair, Some(&expired)),
        refused(RefuseReason::InvalidToken)
    );
    assert_eq!(
        open(&mut pair, Some(&other_backend)),
        refused(RefuseReason::InvalidToken)
    );
    assert_eq!(open(&mut pair, Some(&valid)), (true, None));
    let s = pair
        .server()
        .events()
        .iter()
        .find_map(|(h, e)| matches!(e, Event::Connected { .. }).then_some(*h))
        .expect("server side");
    assert_eq!(pair.server().endpoint().token_claims(s), Some(&claims));
    // the same client id again while connected
    assert_eq!(
        open(&mut pair, Some(&valid)),
        refused(RefuseReason::AlreadyConnected)
    );
    assert_eq!(pair.server().endpoint().connection_count(), 1);
}

/// The opt-out is what its name says: in cleartext the forged CLOSE of
/// `a_forged_close_closes_nothing_from_any_address` ends the connection (so that test would
/// fail without authentication).
#[test]
fn in_insecure_cleartext_a_forged_close_does_kill() {
    let mut pair = Pair::builder(2)
        .link(LinkConfig::default().with_delay(ms(10)))
        .cipher_suites(vec![CipherSuite::InsecureCleartext])
        .build();
    let (c, s) = pair
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    let cid = server_cid(&pair, c);
    let d = forged(&cid, 1 << 20, |d| wire::encode_close(0, b"bye", d));
    let now = pair.now();
    pair.server_mut()
        .endpoint_mut()
        .handle_datagram(now, attacker(), &d);
    pair.run_for(ms(100));
    assert!(matches!(
        pair.server().disconnected(),
        Some(DisconnectReason::ClosedByPeer { .. })
    ));
    assert!(
        pair.server().endpoint().connection(s).is_none() || pair.client().disconnected().is_some()
    );
}
