use std::time::Duration;

use bytes::Bytes;

use crate::testing::Pair;
use crate::wire;
use crate::{ChannelKind, Event, SendMode};

const ALL: [ChannelKind; 5] = [
    ChannelKind::ReliableOrdered,
    ChannelKind::ReliableUnordered,
    ChannelKind::Unreliable,
    ChannelKind::UnreliableSequenced,
    ChannelKind::LatestReliable,
];

#[test]
fn connect_and_exchange_on_every_class() {
    let mut pair = Pair::builder(1)
        .link(thinwire_netmodel::LinkConfig::default().with_delay(Duration::from_millis(20)))
        .build();
    let (c, s) = pair.connect(&ALL).expect("connects");
    let now = pair.now();
    for ch in 0..4u8 {
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, ch, Bytes::from(vec![ch; 30]), SendMode::Plain)
            .unwrap();
    }
    pair.client_mut()
        .endpoint_mut()
        .send(
            now,
            c,
            4,
            Bytes::from_static(b"pos"),
            SendMode::Latest { key: 9 },
        )
        .unwrap();
    pair.server_mut()
        .endpoint_mut()
        .send(
            now,
            s,
            0,
            Bytes::from_static(b"hello client"),
            SendMode::Plain,
        )
        .unwrap();
    pair.run_for(Duration::from_millis(200));
    for ch in 0..5u8 {
        let got = pair.server_mut().take_messages(ch);
        assert_eq!(got.len(), 1, "channel {ch}");
    }
    assert_eq!(
        pair.client_mut().take_messages(0)[0].data,
        Bytes::from_static(b"hello client")
    );
    let stats = pair.client().endpoint().connection_stats(c).unwrap();
    assert!(
        stats.path.srtt >= Duration::from_millis(39)
            && stats.path.srtt <= Duration::from_millis(50),
        "{:?}",
        stats.path.srtt
    );
    // graceful close both ways
    let now = pair.now();
    pair.client_mut().endpoint_mut().close(now, c, 7, b"bye");
    pair.run_for(Duration::from_secs(2));
    assert!(matches!(
        pair.client().disconnected(),
        Some(crate::DisconnectReason::LocallyClosed)
    ));
    assert!(matches!(
        pair.server().disconnected(),
        Some(crate::DisconnectReason::ClosedByPeer { code: 7, .. })
    ));
    assert_eq!(pair.client().endpoint().connection_count(), 0);
    assert_eq!(pair.server().endpoint().connection_count(), 0);
    let _ = Event::Connected {
        remote: pair.server().addr(),
        incoming: false,
    };
}

#[test]
fn lossless_reliable_burst_arrives_in_order() {
    let mut pair = Pair::builder(2)
        .link(thinwire_netmodel::LinkConfig::default().with_delay(Duration::from_millis(5)))
        .build();
    let (c, _s) = pair
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    for i in 0..100u32 {
        pair.client_send(c, 0, Bytes::from(i.to_be_bytes().to_vec()), SendMode::Plain)
            .unwrap();
    }
    pair.run_for(Duration::from_secs(1));
    let got: Vec<u32> = pair
        .server_mut()
        .take_messages(0)
        .iter()
        .map(|m| u32::from_be_bytes(m.data[..4].try_into().unwrap()))
        .collect();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn many_connections_share_one_endpoint() {
    let l = thinwire_netmodel::LinkConfig::default()
        .with_delay(Duration::from_millis(15))
        .with_bernoulli_loss(0.02);
    // one client address: lift the per-source limits that would otherwise stop it at 64
    let server = crate::ServerConfig {
        max_connections_per_source: 1000,
        handshakes_per_second_per_source: 10_000,
        ..crate::ServerConfig::default()
    };
    let mut pair = Pair::builder(3).link(l).server_config(server).build();
    let key = pair.server_key();
    let mut handles = Vec::new();
    for _ in 0..300 {
        let server_addr = pair.server().addr();
        let now = pair.now();
        let h = pair
            .client_mut()
            .endpoint_mut()
            .connect(now, server_addr, &key, &[ChannelKind::ReliableOrdered])
            .unwrap();
        handles.push(h);
    }
    pair.run_for(Duration::from_secs(3));
    assert_eq!(pair.server().endpoint().connection_count(), 300);
    for (i, h) in handles.iter().enumerate() {
        let now = pair.now();
        pair.client_mut()
            .endpoint_mut()
            .send(now, *h, 0, Bytes::from(vec![i as u8; 20]), SendMode::Plain)
            .unwrap();
    }
    pair.run_for(Duration::from_secs(2));
    // one message from each of the 300 connections, each routed to its own server connection
    let senders: std::collections::HashSet<_> = pair
        .server()
        .events()
        .iter()
        .filter(|(_, e)| matches!(e, Event::Message(_)))
        .map(|(h, _)| *h)
        .collect();
    assert_eq!(senders.len(), 300);
    assert_eq!(pair.server_mut().take_messages(0).len(), 300);
    assert_eq!(pair.server().endpoint().stats().connections_accepted, 300);
}

/// Runs a lossy exchange and returns a transcript of everything the server saw.
fn transcript(seed: u64) -> Vec<String> {
    let l = thinwire_netmodel::LinkConfig::default()
        .with_delay(Duration::from_millis(30))
        .with_jitter(Duration::from_millis(10))
        .with_reorder(true)
        .with_bernoulli_loss(0.1);
    let mut pair = Pair::builder(seed).link(l).build();
    let start = pair.now();
    let (c, _) = pair.connect(&ALL).unwrap();
    for i in 0..200u32 {
        let ch = (i % 4) as u8;
        pair.client_send(
            c,
            ch,
            Bytes::from(i.to_be_bytes().to_vec()),
            SendMode::Plain,
        )
        .unwrap();
        pair.run_for(Duration::from_millis(7));
    }
    pair.run_for(Duration::from_secs(2));
    pair.server()
        .events()
        .iter()
        .map(|(h, e)| format!("{:?} {h} {e:?}", pair.now() - start))
        .collect()
}

#[test]
fn same_seed_same_run() {
    let a = transcript(42);
    assert_eq!(a, transcript(42));
    assert_ne!(a, transcript(43));
    assert!(a.len() > 150);
}

/// A packet carrying only unreliable messages asks for no immediate ACK, so when the
/// peer answers within the ACK delay the ACK rides on the answer. An unreliable request and
/// echo take two datagrams per round trip (as with ENet, which never acknowledges unreliable
/// data), where acknowledging each packet at once took four; reliable data is still
/// acknowledged at once.
#[test]
fn an_unreliable_echo_costs_two_datagrams_per_round_trip() {
    let run = |channel: u8| {
        let mut pair = Pair::builder(3)
            .link(thinwire_netmodel::LinkConfig::default().with_delay(Duration::from_millis(10)))
            .build();
        let (c, s) = pair.connect(&ALL).expect("connects");
        pair.run_for(Duration::from_millis(300));
        let sent = |p: &Pair| {
            p.client().endpoint().stats().datagrams_sent
                + p.server().endpoint().stats().datagrams_sent
        };
        let before = sent(&pair);
        const ROUNDS: u64 = 50;
        for i in 0..ROUNDS {
            let t = pair.now();
            pair.client_mut()
                .endpoint_mut()
                .send(
                    t,
                    c,
                    channel,
                    Bytes::from(vec![i as u8; 24]),
                    SendMode::Plain,
                )
                .unwrap();
            assert!(pair.run_while(Duration::from_secs(1), |p| p
                .server()
                .events()
                .iter()
                .any(|(_, e)| matches!(e, Event::Message(_)))));
            let echo = pair.server_mut().take_messages(channel).remove(0).data;
            let t = pair.now();
            pair.server_mut()
                .endpoint_mut()
                .send(t, s, channel, echo, SendMode::Plain)
                .unwrap();
            assert!(pair.run_while(Duration::from_secs(1), |p| p
                .client()
                .events()
                .iter()
                .any(|(_, e)| matches!(e, Event::Message(_)))));
            assert_eq!(pair.client_mut().take_messages(channel).len(), 1);
        }
        (sent(&pair) - before) as f64 / ROUNDS as f64
    };
    let unreliable = run(2);
    let reliable = run(1);
    assert!(
        unreliable <= 2.1,
        "{unreliable:.2} datagrams per unreliable round trip"
    );
    // the reliable echo still acknowledges each message at once: two more per round trip
    assert!(
        reliable >= 3.5,
        "{reliable:.2} datagrams per reliable round trip"
    );
}

/// A message over 255 bytes that ends its packet travels in the last-frame form (PROTOCOL.md
/// 3.5): type and seq8, no flags, seq varint or length, 2 bytes of framing where the full
/// form takes 6 once the seq passes 63; and it is delivered whole.
#[test]
fn a_long_message_that_ends_its_packet_takes_the_last_frame_form() {
    let mut pair = Pair::builder(4)
        .link(thinwire_netmodel::LinkConfig::default().with_delay(Duration::from_millis(10)))
        .cipher_suites(vec![crate::CipherSuite::InsecureCleartext])
        .build();
    let channels = [ChannelKind::ReliableOrdered];
    let (c, _) = pair.connect(&channels).expect("connects");
    // 100 small messages first, all acknowledged: the next seq, 100, is a 2-byte varint
    for i in 0..100u8 {
        let now = pair.now();
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::from(vec![i; 8]), SendMode::Plain)
            .unwrap();
        pair.run_for(Duration::from_millis(5));
    }
    pair.run_for(Duration::from_millis(200));
    assert_eq!(pair.server_mut().take_messages(0).len(), 100);
    pair.client_mut().set_log_sent(true);
    let payload: Vec<u8> = (0..600).map(|i| (i % 251) as u8).collect();
    let now = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from(payload.clone()), SendMode::Plain)
        .unwrap();
    pair.run_for(Duration::from_millis(200));
    let got = pair.server_mut().take_messages(0);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data, payload);
    let carriers: Vec<_> = pair
        .client()
        .sent_log()
        .iter()
        .filter(|(_, d)| d.ends_with(&payload))
        .collect();
    assert_eq!(carriers.len(), 1, "one lossless transmission");
    let d = &carriers[0].1;
    let (_, offset) = wire::ShortHeader::decode(d, 8).expect("a short-header packet");
    let frames: Vec<_> = wire::frames(&d[offset..], &channels)
        .collect::<Result<_, _>>()
        .expect("frames decode");
    let Some(wire::Frame::Message(m)) = frames.last() else {
        panic!("no message last in {frames:?}");
    };
    assert_eq!(m.seq, Some(wire::SeqField::compact(100)));
    assert_eq!(m.payload, &payload[..]);
    // type c0 (channel 0, last-frame form) and seq8 100 right before the payload: the full
    // form would have been `80 00 4064 4258`, 4 bytes more
    assert_eq!(d[d.len() - 602..d.len() - 600], [0xc0, 100]);
    assert!(frames[..frames.len() - 1]
        .iter()
        .all(|f| !matches!(f, wire::Frame::Message(_))));
}

/// The application takes events in the order they happened across connections, and a
/// connection forgotten before its events were taken still hands them over: each connection
/// keeps its own events and the endpoint only their order (`endpoint/events.rs`), so the
/// events of a connection that is gone must outlive it, in their place in that order.
#[test]
fn events_keep_their_order_across_connections_and_outlive_a_forgotten_one() {
    use super::net::Net;
    use crate::ServerConfig;

    let a: std::net::SocketAddr = "198.51.100.1:1000".parse().expect("address");
    let b: std::net::SocketAddr = "198.51.100.2:1000".parse().expect("address");
    let mut net = Net::new(ServerConfig::default(), &[a, b]);
    let ca = net.connect(0);
    let cb = net.connect(1);
    net.run(Duration::from_millis(100));
    // the server's handles, in the order it accepted: a's connection first
    let connected: Vec<_> = net.server_events.drain(..).map(|(h, _)| h).collect();
    let (sa, sb) = match connected[..] {
        [x, y] if x != y => (x, y),
        _ => panic!("two connections, got {connected:?}"),
    };
    let send = |net: &mut Net, client: usize, conn, text: &'static [u8]| {
        let now = net.now;
        net.clients[client]
            .1
            .send(now, conn, 0, Bytes::from_static(text), SendMode::Plain)
            .expect("sent");
        net.exchange();
    };
    send(&mut net, 0, ca, b"a1");
    send(&mut net, 1, cb, b"b1");
    send(&mut net, 0, ca, b"a2");
    let now = net.now;
    net.clients[0].1.close(now, ca, 7, b"bye");
    net.exchange();
    // a's connection drains and is forgotten while the application takes nothing
    for _ in 0..200 {
        net.step(Duration::from_millis(50));
    }
    assert_eq!(
        net.server.connection_count(),
        1,
        "a's connection is forgotten"
    );
    send(&mut net, 1, cb, b"b2");
    assert_eq!(net.server.pending_events(), 5);
    let mut got = Vec::new();
    while let Some((h, e)) = net.server.poll_event() {
        let what = match e {
            Event::Message(m) => String::from_utf8(m.data.to_vec()).expect("text"),
            Event::Disconnected { .. } => "closed".to_string(),
            Event::Connected { .. } => "connected".to_string(),
        };
        got.push((h, what));
    }
    let want: Vec<_> = [
        (sa, "a1"),
        (sb, "b1"),
        (sa, "a2"),
        (sa, "closed"),
        (sb, "b2"),
    ]
    .into_iter()
    .map(|(h, w)| (h, w.to_string()))
    .collect();
    assert_eq!(got, want);
    assert_eq!(net.server.pending_events(), 0);
    assert_eq!(
        net.server.orphaned_connections(),
        0,
        "nothing kept once taken"
    );
}

/// The usual way a connection is forgotten: it ends and is dropped in the same call (here an
/// idle timeout), so its `Disconnected` has not been taken. It is handed out under the old
/// handle even after a new connection took the old one's slot in the table.
#[test]
fn a_connection_that_ends_in_one_call_still_says_so_after_its_slot_is_reused() {
    use super::net::Net;
    use crate::{DisconnectReason, ServerConfig};

    let a: std::net::SocketAddr = "198.51.100.1:1000".parse().expect("address");
    let b: std::net::SocketAddr = "198.51.100.2:1000".parse().expect("address");
    let mut net = Net::new(ServerConfig::default(), &[a, b]);
    net.connect(0);
    net.run(Duration::from_millis(100));
    let old = match net.server_events.drain(..).collect::<Vec<_>>()[..] {
        [(h, Event::Connected { .. })] => h,
        ref other => panic!("one connection, got {other:?}"),
    };
    // a goes silent: the server hears nothing until its connection times out
    for _ in 0..1_200 {
        net.now += Duration::from_millis(100);
        net.server.handle_timeout(net.now);
        super::net::drain(&mut net.server, net.now);
        if net.server.connection_count() == 0 {
            break;
        }
    }
    assert_eq!(net.server.connection_count(), 0, "a's connection timed out");
    assert_eq!(net.server.pending_events(), 1);
    assert_eq!(net.server.orphaned_connections(), 1);
    // b connects into the freed slot before the application takes anything
    net.connect(1);
    net.exchange();
    for _ in 0..100 {
        if net.server.connection_count() == 1 {
            break;
        }
        net.step(Duration::from_millis(10));
    }
    assert_eq!(net.server.connection_count(), 1);
    let got: Vec<_> = std::iter::from_fn(|| net.server.poll_event()).collect();
    match &got[..] {
        [(h1, Event::Disconnected { reason }), (h2, Event::Connected { .. })] => {
            assert_eq!(*h1, old);
            assert_ne!(*h2, old, "a new handle for the new connection");
            // in the same slot of the table (a handle's low half is its slot)
            assert_eq!(
                h2.0 & 0xffff_ffff,
                old.0 & 0xffff_ffff,
                "the slot is reused"
            );
            assert!(
                matches!(reason, DisconnectReason::TimedOut),
                "timed out: {reason:?}"
            );
        }
        other => panic!("a's end, then b's start: {other:?}"),
    }
    assert_eq!(net.server.orphaned_connections(), 0);
}

/// A burst of events grows its connection's queue; once the application has taken them, the
/// queue keeps that room for one more round (so bursts that follow one another do not shrink
/// and regrow it each time) and gives it back after a round that stayed small, instead of every
/// connection keeping its largest burst's room.
#[test]
fn an_emptied_event_queue_gives_back_a_burst_room() {
    use super::net::Net;
    use crate::ServerConfig;

    let a: std::net::SocketAddr = "198.51.100.1:1000".parse().expect("address");
    let mut net = Net::new(ServerConfig::default(), &[a]);
    let c = net.connect_with(0, &[ChannelKind::Unreliable]);
    net.run(Duration::from_millis(100));
    let s = net.server_events.drain(..).next().expect("connected").0;
    let now = net.now;
    for i in 0..1_500u32 {
        net.clients[0]
            .1
            .send(
                now,
                c,
                0,
                Bytes::from(i.to_be_bytes().to_vec()),
                SendMode::Plain,
            )
            .expect("sent");
    }
    net.exchange();
    assert_eq!(net.server.pending_events(), 1_500);
    assert!(net.server.event_room(s).expect("alive") >= 1_500);
    let mut taken = 0;
    while let Some((h, e)) = net.server.poll_event() {
        assert_eq!(h, s);
        assert!(matches!(e, Event::Message(_)));
        taken += 1;
    }
    assert_eq!(taken, 1_500);
    let one_more = |net: &mut Net, payload: &'static [u8]| {
        let now = net.now;
        net.clients[0]
            .1
            .send(now, c, 0, Bytes::from_static(payload), SendMode::Plain)
            .expect("sent");
        net.exchange();
        assert_eq!(net.server.pending_events(), 1);
    };
    one_more(&mut net, b"next");
    // the round after a burst keeps its room (bursts that follow one another reuse it) ...
    assert!(net.server.event_room(s).expect("alive") >= 1_500);
    assert!(matches!(net.server.poll_event(), Some((h, Event::Message(_))) if h == s));
    one_more(&mut net, b"again");
    // ... and the next round after one that stayed small gives it back
    assert!(
        net.server.event_room(s).expect("alive") <= 1_024,
        "{:?} events' room kept",
        net.server.event_room(s)
    );
}
