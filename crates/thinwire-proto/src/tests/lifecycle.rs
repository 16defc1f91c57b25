//! Handshake, cookies, restart, NAT rebinding, idle timeout, hostile input and API misuse.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::testing::{Pair, Verdict};
use crate::wire::{self, ConnectionId, LongPacket};
use crate::{
    ChannelKind, DisconnectReason, Endpoint, EndpointConfig, SendError, SendMode, ServerConfig,
};
use thinwire_netmodel::LinkConfig;

fn link() -> LinkConfig {
    LinkConfig::default().with_delay(Duration::from_millis(10))
}

fn server() -> (Endpoint, std::time::Instant) {
    let now = std::time::Instant::now();
    (
        Endpoint::new(
            EndpointConfig::new([3; 32]),
            Some(ServerConfig::default()),
            now,
        )
        .unwrap(),
        now,
    )
}

/// A Hello from 127.0.(port / 256).(port % 256):port (a source of its own per port, so the
/// per-source handshake budget does not come into play).
fn hello(port: u16, nonce: u64) -> (SocketAddr, Vec<u8>) {
    let mut out = Vec::new();
    LongPacket::Hello {
        version: wire::VERSION,
        src_cid: ConnectionId::new(&[1, 2]).unwrap(),
        instance: 9,
        nonce,
    }
    .encode(&mut out);
    let ip = [127, 0, (port >> 8) as u8, port as u8];
    (SocketAddr::from((ip, port)), out)
}

#[test]
fn server_keeps_no_state_before_cookie_and_never_amplifies() {
    let (mut ep, now) = server();
    let mut buf = Vec::new();
    for port in 1000..1200u16 {
        let (from, h) = hello(port, port as u64);
        ep.handle_datagram(now, from, &h);
        let t = ep.poll_transmit(now, &mut buf).expect("a challenge");
        assert!(t.size <= h.len(), "challenge larger than hello");
        assert_eq!(t.destination, from);
    }
    assert_eq!(ep.connection_count(), 0);
    assert_eq!(ep.stats().challenges_sent, 200);
    assert!(ep.poll_timeout().is_none(), "no timers, no state");
}

#[test]
fn cookie_is_bound_to_address_and_expires() {
    let (mut ep, now) = server();
    let mut buf = Vec::new();
    let (from, h) = hello(5000, 77);
    ep.handle_datagram(now, from, &h);
    ep.poll_transmit(now, &mut buf).unwrap();
    let LongPacket::Challenge { cookie, .. } = LongPacket::decode(&buf).unwrap() else {
        panic!()
    };
    // the Noise message a client writes to this server's key
    let client_cid = ConnectionId::new(&[1, 2]).unwrap();
    let msg = super::message_1(&ep.public_key().unwrap(), &client_cid, 9, 77);
    let connect =
        |cookie: Vec<u8>| super::connect_datagram((client_cid, 9, 77), &cookie, msg.clone());
    // from another address: refused
    ep.handle_datagram(
        now,
        SocketAddr::from(([127, 0, 0, 1], 5001)),
        &connect(cookie.clone()),
    );
    assert_eq!(ep.stats().dropped_bad_cookie, 1);
    // forged: refused
    let mut forged = cookie.clone();
    forged[20] ^= 0xff;
    ep.handle_datagram(now, from, &connect(forged));
    assert_eq!(ep.stats().dropped_bad_cookie, 2);
    // expired: refused
    let late = now + Duration::from_secs(6);
    ep.handle_datagram(late, from, &connect(cookie.clone()));
    assert_eq!(ep.stats().dropped_bad_cookie, 3);
    assert_eq!(ep.connection_count(), 0);
    // valid: queued, read at the next timeout, accepted once; a duplicate Connect re-sends
    // Accept without a second connection
    ep.handle_datagram(now, from, &connect(cookie.clone()));
    assert_eq!(
        ep.poll_timeout(),
        Some(now),
        "a queued Connect is due at once"
    );
    ep.handle_timeout(now);
    ep.handle_datagram(now, from, &connect(cookie));
    assert_eq!(ep.connection_count(), 1);
    let mut accepts = 0;
    while let Some(_t) = ep.poll_transmit(now, &mut buf) {
        if matches!(LongPacket::decode(&buf), Ok(LongPacket::Accept { .. })) {
            accepts += 1;
        }
    }
    assert!(accepts >= 1);
}

#[test]
fn garbage_is_dropped_counted_and_harmless() {
    let mut pair = Pair::builder(5).link(link()).build();
    let (c, _s) = pair.connect(&[ChannelKind::ReliableOrdered]).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let junk_from = SocketAddr::from(([127, 0, 0, 1], 7777));
    let mut sent = 0;
    for i in 0..2000u32 {
        let len = rng.random_range(0..1500);
        let mut d: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        if i % 3 == 0 && !d.is_empty() {
            d[0] = 0x40; // looks like a short header
        }
        if i % 5 == 0 && !d.is_empty() {
            d[0] = 0xc0 | (i as u8 % 8); // looks like a long header
        }
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .handle_datagram(now, junk_from, &d);
        if i % 100 == 0 {
            pair.client_send(c, 0, Bytes::from(i.to_be_bytes().to_vec()), SendMode::Plain)
                .unwrap();
            sent += 1;
            pair.run_for(Duration::from_millis(30));
        }
    }
    pair.run_for(Duration::from_secs(1));
    assert_eq!(pair.server_mut().take_messages(0).len(), sent);
    let st = pair.server().endpoint().stats();
    assert!(
        st.dropped_malformed + st.dropped_unknown_connection + st.dropped_unexpected > 1500,
        "{st:?}"
    );
    assert_eq!(pair.server().endpoint().connection_count(), 1);
    assert!(pair.server().disconnected().is_none());
}

#[test]
fn corruption_never_panics_and_connection_survives() {
    let l = link().with_corrupt(0.05).with_bernoulli_loss(0.05);
    let mut pair = Pair::builder(6).link(l).build();
    let (c, _) = pair
        .connect(&[ChannelKind::ReliableUnordered, ChannelKind::Unreliable])
        .unwrap();
    for i in 0..300u32 {
        let now = pair.now();
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::from(vec![i as u8; 40]), SendMode::Plain)
            .unwrap();
        let now = pair.now();
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, 1, Bytes::from(vec![i as u8; 40]), SendMode::Plain)
            .unwrap();
        pair.run_for(Duration::from_millis(20));
    }
    pair.run_for(Duration::from_secs(2));
    // Every corrupted datagram fails the AEAD tag and is dropped whole (none is taken at face
    // value, as UDP's checksum alone would allow): no panic, no disconnect, each one counted.
    assert!(pair.client().disconnected().is_none() && pair.server().disconnected().is_none());
    let cs = pair.client().endpoint().connection_stats(c).unwrap();
    let ss = pair
        .server()
        .endpoint()
        .connection_stats(crate::ConnectionHandle(0))
        .unwrap();
    assert!(cs.security.unauthenticated_packets + ss.security.unauthenticated_packets > 0);
    assert_eq!(cs.udp.malformed_packets + ss.udp.malformed_packets, 0);
    assert!(!pair.server_mut().take_messages(0).is_empty());
}

#[test]
fn idle_timeout_ends_a_silent_connection() {
    let mut pair = Pair::builder(7).link(link()).build();
    let (_c, _s) = pair.connect(&[ChannelKind::ReliableOrdered]).unwrap();
    pair.client_mut()
        .set_filter(Some(Box::new(|_, _, _| Verdict::Drop)));
    pair.server_mut()
        .set_filter(Some(Box::new(|_, _, _| Verdict::Drop)));
    let start = pair.now();
    pair.run_while(Duration::from_secs(30), |p| {
        p.client().disconnected().is_some() && p.server().disconnected().is_some()
    });
    assert_eq!(
        pair.client().disconnected(),
        Some(&DisconnectReason::TimedOut)
    );
    assert_eq!(
        pair.server().disconnected(),
        Some(&DisconnectReason::TimedOut)
    );
    let took = pair.now() - start;
    assert!(
        took >= Duration::from_secs(10) && took < Duration::from_secs(11),
        "{took:?}"
    );
}

#[test]
fn keepalive_holds_an_idle_connection_open() {
    let mut pair = Pair::builder(8).link(link()).build();
    pair.connect(&[ChannelKind::ReliableOrdered]).unwrap();
    pair.run_for(Duration::from_secs(60));
    assert!(pair.client().disconnected().is_none() && pair.server().disconnected().is_none());
}

#[test]
fn server_restart_is_detected_by_the_client() {
    let mut pair = Pair::builder(9).link(link()).build();
    let (c, _) = pair.connect(&[ChannelKind::ReliableOrdered]).unwrap();
    pair.run_for(Duration::from_millis(100));
    pair.restart_server(12345);
    pair.client_send(c, 0, Bytes::from_static(b"are you there?"), SendMode::Plain)
        .unwrap();
    let start = pair.now();
    pair.run_while(Duration::from_secs(5), |p| {
        p.client().disconnected().is_some()
    });
    assert_eq!(
        pair.client().disconnected(),
        Some(&DisconnectReason::PeerReset)
    );
    assert!(pair.now() - start < Duration::from_millis(100));
    assert!(pair.server().endpoint().stats().resets_sent >= 1);
    // the restarted server accepts a new connection at once
    assert!(pair.connect(&[ChannelKind::ReliableOrdered]).is_some());
}

#[test]
fn idle_client_learns_of_restart_through_keepalive() {
    let mut pair = Pair::builder(10).link(link()).build();
    pair.connect(&[ChannelKind::ReliableOrdered]).unwrap();
    pair.restart_server(777);
    pair.run_while(Duration::from_secs(5), |p| {
        p.client().disconnected().is_some()
    });
    assert_eq!(
        pair.client().disconnected(),
        Some(&DisconnectReason::PeerReset)
    );
}

#[test]
fn nat_rebinding_keeps_the_connection() {
    let mut pair = Pair::builder(11).link(link()).build();
    let (c, s) = pair.connect(&[ChannelKind::ReliableOrdered]).unwrap();
    let now = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"before"), SendMode::Plain)
        .unwrap();
    pair.run_for(Duration::from_millis(100));
    let new_addr: SocketAddr = "127.0.0.1:50123".parse().unwrap();
    pair.client_mut().set_addr(new_addr);
    let now = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"after"), SendMode::Plain)
        .unwrap();
    pair.run_for(Duration::from_millis(100));
    assert_eq!(pair.server().endpoint().remote_address(s), Some(new_addr));
    let now = pair.now();
    pair.server_mut()
        .endpoint_mut()
        .send(now, s, 0, Bytes::from_static(b"reply"), SendMode::Plain)
        .unwrap();
    pair.run_for(Duration::from_millis(100));
    assert_eq!(pair.server_mut().take_messages(0).len(), 2);
    assert_eq!(
        pair.client_mut().take_messages(0)[0].data,
        Bytes::from_static(b"reply")
    );
    assert_eq!(
        pair.server()
            .endpoint()
            .connection_stats(s)
            .unwrap()
            .security
            .migrations,
        1
    );
}

#[test]
fn handshake_survives_loss_and_times_out_without_server() {
    let mut pair = Pair::builder(12)
        .link(link().with_bernoulli_loss(0.3))
        .build();
    assert!(pair.connect(&[ChannelKind::ReliableOrdered]).is_some());
    let mut pair = Pair::builder(13).link(link()).build();
    let key = pair.server_key();
    pair.client_mut()
        .set_filter(Some(Box::new(|_, _, _| Verdict::Drop)));
    let now = pair.now();
    let server_addr = pair.server().addr();
    let c = pair
        .client_mut()
        .endpoint_mut()
        .connect(now, server_addr, &key, &[ChannelKind::Unreliable])
        .unwrap();
    pair.run_for(Duration::from_secs(6));
    assert_eq!(
        pair.client().disconnected(),
        Some(&DisconnectReason::HandshakeTimedOut)
    );
    assert_eq!(
        pair.client()
            .events()
            .iter()
            .filter(|(h, _)| *h == c)
            .count(),
        1
    );
}

#[test]
fn api_misuse_is_reported_and_harmless() {
    let mut pair = Pair::builder(14).link(link()).build();
    let chans = [
        ChannelKind::ReliableOrdered,
        ChannelKind::Unreliable,
        ChannelKind::LatestReliable,
    ];
    let (c, _) = pair.connect(&chans).unwrap();
    let t = pair.now();
    let key = pair.server_key();
    let server_addr = pair.server().addr();
    let ep = pair.client_mut().endpoint_mut();
    assert_eq!(
        ep.send(t, c, 9, Bytes::new(), SendMode::Plain),
        Err(SendError::UnknownChannel(9))
    );
    assert!(matches!(
        ep.send(t, c, 2, Bytes::new(), SendMode::Plain),
        Err(SendError::WrongChannelKind { .. })
    ));
    assert!(matches!(
        ep.send(t, c, 0, Bytes::new(), SendMode::Latest { key: 1 }),
        Err(SendError::WrongChannelKind { .. })
    ));
    assert_eq!(
        ep.send(t, c, 2, Bytes::new(), SendMode::Latest { key: u64::MAX }),
        Err(SendError::KeyOutOfRange(u64::MAX))
    );
    let big = Bytes::from(vec![0u8; 1200]);
    assert!(matches!(
        ep.send(t, c, 1, big.clone(), SendMode::Plain),
        Err(SendError::MessageTooLarge { max: 1084, .. })
    ));
    assert!(ep.send(t, c, 0, big, SendMode::Plain).is_ok());
    let huge = Bytes::from(vec![0u8; (1 << 20) + 1]);
    assert!(matches!(
        ep.send(t, c, 0, huge, SendMode::Plain),
        Err(SendError::MessageTooLarge { .. })
    ));
    assert_eq!(
        ep.send(
            t,
            crate::ConnectionHandle(999),
            0,
            Bytes::new(),
            SendMode::Plain
        ),
        Err(SendError::UnknownConnection)
    );
    assert!(matches!(
        ep.connect(t, server_addr, &key, &[]),
        Err(crate::ConnectError::ChannelCount(0))
    ));
    let now = pair.now();
    pair.client_mut().endpoint_mut().close(now, c, 0, b"");
    let now = pair.now();
    assert_eq!(
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::new(), SendMode::Plain),
        Err(SendError::ConnectionClosed)
    );
}

#[test]
fn one_mebibyte_message_arrives_through_loss() {
    let mut pair = Pair::builder(15)
        .link(link().with_bernoulli_loss(0.05))
        .build();
    let (c, _) = pair
        .connect(&[ChannelKind::ReliableOrdered, ChannelKind::ReliableOrdered])
        .unwrap();
    let big: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 253) as u8).collect();
    let now = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from(big.clone()), SendMode::Plain)
        .unwrap();
    let now = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"after"), SendMode::Plain)
        .unwrap();
    pair.client_send(c, 1, Bytes::from_static(b"independent"), SendMode::Plain)
        .unwrap();
    pair.run_while(Duration::from_secs(60), |p| p.server().events().len() >= 3);
    let m0 = pair.server_mut().take_messages(0);
    assert_eq!(m0.len(), 2);
    assert_eq!(m0[0].data.len(), big.len());
    assert!(m0[0].data == big);
    // the other channel is an independent ordering domain: it did not wait for the big message
    let st = pair.client().endpoint().connection_stats(c).unwrap();
    assert!(st.recovery.packets_lost > 0);
    assert!(st.path.cwnd >= 4);
}

#[test]
fn independent_channels_do_not_block_each_other() {
    let no_bundling = crate::TransportConfig {
        bundling: false,
        ..crate::TransportConfig::default()
    };
    // cleartext, so that the filter can find the message on the wire
    let mut pair = Pair::builder(16)
        .link(LinkConfig::default().with_delay(Duration::from_millis(50)))
        .transport(no_bundling)
        .cipher_suites(vec![crate::CipherSuite::InsecureCleartext])
        .build();
    let (c, _) = pair
        .connect(&[ChannelKind::ReliableOrdered, ChannelKind::ReliableOrdered])
        .unwrap();
    let mut first = true;
    pair.client_mut().set_filter(Some(Box::new(move |_, _, d| {
        if first && d.windows(4).any(|w| w == b"LOST") {
            first = false;
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    })));
    let t0 = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(
            t0,
            c,
            0,
            Bytes::from_static(b"LOST on channel 0"),
            SendMode::Plain,
        )
        .unwrap();
    pair.run_for(Duration::from_millis(1));
    pair.client_send(
        c,
        1,
        Bytes::from_static(b"channel 1 message"),
        SendMode::Plain,
    )
    .unwrap();
    pair.run_for(Duration::from_millis(60));
    // channel 1's message arrived after one way, while channel 0's is still being recovered
    assert_eq!(pair.server_mut().take_messages(1).len(), 1);
    assert!(pair.server_mut().take_messages(0).is_empty());
    pair.run_for(Duration::from_millis(200));
    assert_eq!(pair.server_mut().take_messages(0).len(), 1);
}

#[test]
fn congestion_window_bounds_a_thick_connection_under_loss() {
    let l = LinkConfig::default()
        .with_delay(Duration::from_millis(20))
        .with_bernoulli_loss(0.05);
    let mut pair = Pair::builder(17).link(l).build();
    let (c, _) = pair.connect(&[ChannelKind::ReliableUnordered]).unwrap();
    let mut max_in_flight = 0;
    let mut max_cwnd = 0;
    for _ in 0..200 {
        for _ in 0..20 {
            let now = pair.now();
            let _ = pair.client_mut().endpoint_mut().send(
                now,
                c,
                0,
                Bytes::from(vec![7u8; 1000]),
                SendMode::Plain,
            );
        }
        pair.run_for(Duration::from_millis(10));
        let st = pair.client().endpoint().connection_stats(c).unwrap();
        max_cwnd = max_cwnd.max(st.path.cwnd);
        // never more in flight than the largest window so far (just after a reduction the
        // window may be below what is already in flight; nothing new goes out until it drains)
        assert!(
            st.path.in_flight <= max_cwnd as usize + 1,
            "{} > {}",
            st.path.in_flight,
            max_cwnd
        );
        max_in_flight = max_in_flight.max(st.path.in_flight);
    }
    let st = pair.client().endpoint().connection_stats(c).unwrap();
    assert!(!st.path.thin);
    assert!(st.recovery.packets_lost > 10);
    assert!(
        st.path.cwnd < max_cwnd,
        "window reduced on loss: {} vs max {}",
        st.path.cwnd,
        max_cwnd
    );
    assert!(max_in_flight > 4);
}

#[test]
fn keys_update_in_a_lossy_jittery_session_without_losing_a_message() {
    let transport = crate::TransportConfig {
        key_update_packets: 64,
        ..crate::TransportConfig::default()
    };
    let l = link()
        .with_bernoulli_loss(0.05)
        .with_jitter(Duration::from_millis(8));
    let mut pair = Pair::builder(21).link(l).transport(transport).build();
    let (c, s) = pair.connect(&[ChannelKind::ReliableOrdered]).unwrap();
    for i in 0..400u32 {
        let data = Bytes::from(i.to_be_bytes().to_vec());
        let now = pair.now();
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, 0, data.clone(), SendMode::Plain)
            .unwrap();
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .send(now, s, 0, data, SendMode::Plain)
            .unwrap();
        pair.run_for(Duration::from_millis(7));
    }
    pair.run_for(Duration::from_secs(3));
    for side in [Pair::client_mut, Pair::server_mut] {
        let side = side(&mut pair);
        let got: Vec<u32> = side
            .take_messages(0)
            .iter()
            .map(|m| u32::from_be_bytes(m.data[..4].try_into().unwrap()))
            .collect();
        assert_eq!(got, (0..400).collect::<Vec<_>>());
    }
    let cs = pair.client().endpoint().connection_stats(c).unwrap();
    let ss = pair.server().endpoint().connection_stats(s).unwrap();
    assert!(
        cs.security.key_updates_sent >= 10,
        "{}",
        cs.security.key_updates_sent
    );
    assert_eq!(
        cs.security.key_updates_sent,
        ss.security.key_updates_received
    );
    assert_eq!(
        ss.security.key_updates_sent,
        cs.security.key_updates_received
    );
    assert_eq!(
        cs.security.unauthenticated_packets + ss.security.unauthenticated_packets,
        0
    );
}
