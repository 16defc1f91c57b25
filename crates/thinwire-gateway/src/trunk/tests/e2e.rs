//! Both gateways end to end, in simulated time, with the real game server and players.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use thinwire_netmodel::LinkConfig;
use thinwire_proto::{
    ChannelKind, DisconnectReason, Event, SendMode, ServerConfig, TransportConfig,
};

use crate::trunk::close;
use crate::trunk::testing::{Harness, Verdict};
use crate::trunk::{GatewayEvent, TrunkOptions};

const ALL: [ChannelKind; 5] = ChannelKind::ALL;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn payloads(msgs: &[(std::time::Instant, thinwire_proto::Message)], ch: u8) -> Vec<Vec<u8>> {
    msgs.iter()
        .filter(|(_, m)| m.channel == ch)
        .map(|(_, m)| m.data.to_vec())
        .collect()
}

fn harness(seed: u64) -> Harness {
    let h = Harness::builder(seed)
        .trunk_link(LinkConfig::default().with_delay(ms(10)))
        .access_link(LinkConfig::default().with_delay(ms(5)))
        .build();
    assert!(h.edges[0]
        .events
        .contains(&GatewayEvent::TrunkUp { peer: 1 }));
    assert!(h.server_events.contains(&GatewayEvent::TrunkUp { peer: 1 }));
    h
}

#[test]
fn every_channel_kind_both_ways() {
    let mut h = harness(1);
    let p = h.connect_player(&ALL).expect("connects");
    for i in 0..3u8 {
        for ch in 0..4 {
            h.player_send(p, ch, &[ch, i]);
            h.game_send(p, ch, None, &[ch, i, 9]);
        }
        h.player_send_latest(p, 4, u64::from(i % 2), &[4, i]);
        h.game_send(p, 4, Some(7), &[4, i, 9]);
        h.run_for(ms(30));
    }
    h.run_for(ms(500));
    assert!(h.edges[0]
        .events
        .contains(&GatewayEvent::FlowOpened { peer: 1, flow: 0 }));
    assert!(h
        .server_events
        .contains(&GatewayEvent::FlowOpened { peer: 1, flow: 0 }));
    let at_game = h.take_game_messages(p);
    let at_player = h.take_player_messages(p);
    for ch in 0..4u8 {
        let want: Vec<Vec<u8>> = (0..3).map(|i| vec![ch, i]).collect();
        assert_eq!(payloads(&at_game, ch), want, "channel {ch} to the game");
        let want: Vec<Vec<u8>> = (0..3).map(|i| vec![ch, i, 9]).collect();
        assert_eq!(payloads(&at_player, ch), want, "channel {ch} to the player");
    }
    assert_eq!(payloads(&at_game, 4), [vec![4, 0], vec![4, 1], vec![4, 2]]);
    let keys: Vec<_> = at_game.iter().filter_map(|(_, m)| m.key).collect();
    assert_eq!(keys, [0, 1, 0]);
    assert_eq!(
        payloads(&at_player, 4),
        [vec![4, 0, 9], vec![4, 1, 9], vec![4, 2, 9]]
    );
    let (e, s) = (h.edges[0].gw.stats(), h.server_gw.stats());
    assert_eq!(e.messages_to_trunk, 15);
    assert_eq!(s.messages_from_trunk, 15);
    assert_eq!(s.messages_to_trunk, 15);
    assert!(e.held_messages == 15 && e.held_delay_max <= ms(10));
    assert_eq!(
        e.bad_frames + s.bad_frames + e.dropped_messages + s.dropped_messages,
        0
    );
    assert!(e.trunk.packets_sent > 0 && e.local.packets_received > 0);
}

#[test]
fn period_packs_many_players_into_few_datagrams() {
    let mut h = Harness::builder(2)
        .options(TrunkOptions {
            period: ms(20),
            ..TrunkOptions::default()
        })
        .build();
    let players: Vec<usize> = (0..20)
        .map(|_| {
            h.connect_player(&[ChannelKind::Unreliable])
                .expect("connects")
        })
        .collect();
    h.run_for(ms(200));
    let before = h.edges[0].trunk_up.count();
    // every player sends once per 25 ms: 20 messages a period (after a first round, in which
    // the gateway learns the rate and may push the batch early)
    for _ in 0..6 {
        for &p in &players {
            h.player_send(p, 0, b"position update");
        }
        h.run_for(ms(25));
    }
    let sent = h.edges[0].trunk_up.count() - before;
    assert!(sent <= 7, "120 messages, one datagram per round: {sent}");
    for &p in &players {
        assert_eq!(h.take_game_messages(p).len(), 6);
    }
}

/// A trunk packet carrying player A's ordered message is lost. Player B's ordered messages,
/// sent after it, reach the game server at once, while A's loss is still outstanding; A's
/// messages then arrive in order.
#[test]
fn a_loss_for_one_player_does_not_delay_another() {
    let trunk_transport = TransportConfig {
        bundling: false, // no redundant copy of A's message in B's packet
        max_datagram_size: 1300,
        ..TransportConfig::default()
    };
    let mut h = Harness::builder(3)
        .trunk_link(LinkConfig::default().with_delay(ms(20)))
        .trunk_transport(trunk_transport)
        .options(TrunkOptions {
            period: Duration::ZERO,
            ..TrunkOptions::default()
        })
        .build();
    let a = h.connect_player(&[ChannelKind::ReliableOrdered]).unwrap();
    let b = h.connect_player(&[ChannelKind::ReliableOrdered]).unwrap();
    for _ in 0..10 {
        h.player_send(a, 0, b"warm");
        h.player_send(b, 0, b"warm");
        h.run_for(ms(50));
    }
    h.take_game_messages(a);
    h.take_game_messages(b);
    let armed = Rc::new(Cell::new(true));
    let arm = armed.clone();
    h.edges[0].trunk_up.filter = Some(Box::new(move |_, _, bytes| {
        if arm.get() && bytes.len() > 100 {
            arm.set(false);
            return Verdict::Drop;
        }
        Verdict::Pass
    }));
    let t0 = h.time;
    h.player_send(a, 0, &[b'a'; 100]);
    h.run_for(ms(2));
    assert!(!armed.get(), "A's packet was dropped");
    h.player_send(b, 0, b"b1");
    h.player_send(b, 0, b"b2");
    h.player_send(a, 0, b"a2");
    h.run_for(ms(30));
    let got_b = h.take_game_messages(b);
    assert_eq!(payloads(&got_b, 0), [b"b1".to_vec(), b"b2".to_vec()]);
    for (t, _) in &got_b {
        assert!(*t - t0 <= ms(25), "B not held: {:?}", *t - t0);
    }
    assert!(
        h.take_game_messages(a).is_empty(),
        "A waits for its lost message"
    );
    h.run_for(ms(500));
    let got_a = h.take_game_messages(a);
    assert_eq!(payloads(&got_a, 0), [vec![b'a'; 100], b"a2".to_vec()]);
}

#[test]
fn player_leaving_closes_the_game_connection_with_its_code() {
    let mut h = harness(4);
    let p = h.connect_player(&ALL).unwrap();
    h.player_send(p, 0, b"last words");
    let conn = h.players[p].conn;
    h.players[p].endpoint.close(h.time, conn, 7, b"bye");
    h.run_for(ms(500));
    assert_eq!(
        payloads(&h.take_game_messages(p), 0),
        [b"last words".to_vec()]
    );
    let reason = h.game_events.iter().find_map(|(_, _, e)| match e {
        Event::Disconnected { reason } => Some(reason.clone()),
        _ => None,
    });
    let want = DisconnectReason::ClosedByPeer {
        code: 7,
        reason: b"bye".to_vec(),
    };
    assert_eq!(reason, Some(want));
    assert!(h.edges[0]
        .events
        .contains(&GatewayEvent::FlowClosed { peer: 1, flow: 0 }));
    assert!(h
        .server_events
        .contains(&GatewayEvent::FlowClosed { peer: 1, flow: 0 }));
    assert_eq!(h.edges[0].gw.stats().flows_open, 0);
    assert_eq!(h.server_gw.stats().flows_open, 0);
}

fn player_close_reason(h: &Harness, p: usize) -> Option<DisconnectReason> {
    h.players[p].events.iter().find_map(|(_, e)| match e {
        Event::Disconnected { reason } => Some(reason.clone()),
        _ => None,
    })
}

#[test]
fn game_kicking_a_player_closes_it_with_the_games_code() {
    let mut h = harness(5);
    let p = h.connect_player(&ALL).unwrap();
    let conn = h.players[p].game_conn.unwrap();
    h.game.close(h.time, conn, 9, b"kick");
    h.run_for(ms(500));
    let want = DisconnectReason::ClosedByPeer {
        code: 9,
        reason: b"kick".to_vec(),
    };
    assert_eq!(player_close_reason(&h, p), Some(want));
    assert_eq!(h.edges[0].gw.stats().flows_open, 0);
    assert_eq!(h.server_gw.stats().flows_total, 1);
}

#[test]
fn game_server_refusing_closes_the_player() {
    let mut h = Harness::builder(6)
        .game_server(ServerConfig {
            max_connections: 1,
            ..ServerConfig::default()
        })
        .build();
    h.connect_player(&ALL).unwrap();
    let p = h.add_player(&ALL);
    h.run_for(Duration::from_secs(1));
    let Some(DisconnectReason::ClosedByPeer { code, .. }) = player_close_reason(&h, p) else {
        panic!("closed by the edge: {:?}", player_close_reason(&h, p));
    };
    assert_eq!(code, close::REFUSED + 1, "ServerFull");
    assert_eq!(h.server_gw.stats().flows_open, 1);
}

#[test]
fn gateway_full_refuses_players() {
    let mut h = Harness::builder(7)
        .options(TrunkOptions {
            max_flows: 1,
            ..TrunkOptions::default()
        })
        .build();
    h.connect_player(&ALL).unwrap();
    let p = h.add_player(&ALL);
    h.run_for(Duration::from_secs(8));
    let Some(DisconnectReason::ClosedByPeer { code, .. }) = player_close_reason(&h, p) else {
        panic!("refused: {:?}", h.players[p].events);
    };
    assert_eq!(code, close::GATEWAY_FULL);
    assert_eq!(h.edges[0].gw.stats().flows_refused, 1);
}

#[test]
fn bundles_pass_through_both_ways() {
    let mut h = harness(8);
    h.edges[0].gw.send_bundle(h.time, b"tcm up").unwrap();
    h.server_gw.send_bundle(h.time, 1, b"tcm down").unwrap();
    assert_eq!(
        h.server_gw.send_bundle(h.time, 2, b"nobody"),
        Err(crate::trunk::GatewayError::TrunkNotUp)
    );
    h.run_for(ms(100));
    let b = |s: &[u8]| GatewayEvent::Bundle {
        peer: 1,
        bundle: bytes::Bytes::copy_from_slice(s),
    };
    assert!(h.server_events.contains(&b(b"tcm up")));
    assert!(h.edges[0].events.contains(&b(b"tcm down")));
}

/// The game server is unreachable: the server gateway holds the flow's data while its
/// upstream connection tries, up to `max_flow_backlog`, then closes the flow.
#[test]
fn backlog_while_upstream_connects_is_bounded() {
    let mut h = Harness::builder(9)
        .options(TrunkOptions {
            max_flow_backlog: 4096,
            ..TrunkOptions::default()
        })
        .build();
    h.lan_up.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    let p = h.add_player(&[ChannelKind::ReliableUnordered]);
    h.run_for(ms(200));
    for _ in 0..10 {
        let (conn, now) = (h.players[p].conn, h.time);
        let _ = h.players[p]
            .endpoint
            .send(now, conn, 0, vec![0u8; 1000].into(), SendMode::Plain);
        h.run_for(ms(20));
    }
    h.run_for(ms(500));
    assert_eq!(
        h.edges[0].gw.stats().flows_overflowed,
        0,
        "the edge's hold kept up"
    );
    let Some(DisconnectReason::ClosedByPeer { code, .. }) = player_close_reason(&h, p) else {
        panic!("closed: {:?}", player_close_reason(&h, p));
    };
    assert_eq!(code, close::BACKLOG);
    assert_eq!(h.server_gw.stats().flows_overflowed, 1);
    assert_eq!(h.server_gw.stats().flows_open, 0);
}

#[test]
fn hostile_frames_from_the_trunk_are_counted_not_fatal() {
    let mut h = harness(10);
    let p = h.connect_player(&ALL).unwrap();
    let now = h.time;
    let trunk = h.server_gw.trunks()[0].connection;
    let relay = h.server_gw.relay_mut();
    let hostile: &[&[u8]] = &[
        &[],
        &[0xff],
        &[0x13, 0x00, 0x00, 0x01], // a key on an ordered channel
        &[0x10, 0x00, 0x07, b'x'], // no such channel
        &[0x11, 0x09, 0x00, 0x00], // closed/unknown flow (ahead: held early)
        &[0x02, 0x00],             // FlowOpened toward the server gateway
    ];
    for f in hostile {
        if let Some(c) = relay.take_trunk(now, trunk, bytes::Bytes::copy_from_slice(f)) {
            assert_eq!(c, crate::trunk::relay::Control::Opened(0));
        }
    }
    assert_eq!(relay.stats.bad_frames, 4);
    h.player_send(p, 0, b"still fine");
    h.run_for(ms(200));
    assert_eq!(
        payloads(&h.take_game_messages(p), 0),
        [b"still fine".to_vec()]
    );
}

#[test]
fn trunk_loss_of_the_edge_closes_every_player() {
    let mut h = harness(11);
    let p = h.connect_player(&ALL).unwrap();
    h.edges[0].trunk_up.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    h.edges[0].trunk_down.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    h.run_for(Duration::from_secs(12));
    assert!(h.edges[0]
        .events
        .iter()
        .any(|e| matches!(e, GatewayEvent::TrunkDown { .. })));
    let Some(DisconnectReason::ClosedByPeer { code, .. }) = player_close_reason(&h, p) else {
        panic!("closed");
    };
    assert_eq!(code, close::TRUNK_DOWN);
    // the link comes back: the edge redials and new players get through
    h.edges[0].trunk_up.filter = None;
    h.edges[0].trunk_down.filter = None;
    h.run_for(Duration::from_secs(12));
    let ups = h.edges[0]
        .events
        .iter()
        .filter(|e| **e == GatewayEvent::TrunkUp { peer: 1 })
        .count();
    assert_eq!(ups, 2);
    assert!(h.connect_player(&ALL).is_some());
}

/// Short-header packets seen on one direction of the trunk (the form bit, 0x80, clear:
/// `docs/PROTOCOL.md` §2.1).
type Tap = Rc<std::cell::RefCell<Vec<Vec<u8>>>>;

fn tap_data_packets(link: &mut crate::trunk::testing::Wire) -> Tap {
    let seen: Tap = Rc::new(std::cell::RefCell::new(Vec::new()));
    let tap = seen.clone();
    link.filter = Some(Box::new(move |_, _, bytes| {
        if bytes[0] & 0x80 == 0 {
            tap.borrow_mut().push(bytes.clone());
        }
        Verdict::Pass
    }));
    seen
}

/// In every packet of `seen`, the `len` bytes after the first stay the same (one connection
/// id) and the next byte is already the packet number (a longer id would keep it constant).
fn assert_id_len(seen: &Tap, len: usize) {
    let seen = seen.borrow();
    assert!(seen.len() >= 20, "{} data packets", seen.len());
    let id = 1..1 + len;
    assert!(
        seen.iter().all(|d| d[id.clone()] == seen[0][id.clone()]),
        "one id"
    );
    let pn: std::collections::HashSet<u8> = seen.iter().map(|d| d[1 + len]).collect();
    assert!(
        pn.len() >= 10,
        "byte {} is the packet number: {pn:?}",
        1 + len
    );
}

/// The ids the trunk endpoints issue are short: `EDGE_TRUNK_CID_LEN` (2) bytes in every packet
/// towards the edge, `SERVER_TRUNK_CID_LEN` (4) in every packet (mostly ACKs) towards the
/// server gateway.
#[test]
fn trunk_packets_carry_short_connection_ids() {
    let mut h = harness(12);
    let down = tap_data_packets(&mut h.edges[0].trunk_down);
    let up = tap_data_packets(&mut h.edges[0].trunk_up);
    let p = h.connect_player(&[ChannelKind::ReliableOrdered]).unwrap();
    for i in 0..20u8 {
        h.game_send(p, 0, None, &[i; 30]);
        h.run_for(ms(30));
    }
    assert_eq!(h.take_player_messages(p).len(), 20);
    assert_eq!(crate::trunk::EDGE_TRUNK_CID_LEN, 2);
    assert_eq!(crate::trunk::SERVER_TRUNK_CID_LEN, 4);
    assert_id_len(&down, 2);
    assert_id_len(&up, 4);
}

/// A retransmission on the trunk takes the held messages with it: the datagram the server
/// gateway sends when its trunk's timeout fires carries the lost packet's messages and what
/// waited in the hold (at least one more 30-byte message), instead of the hold going in a
/// datagram of its own a few milliseconds later.
#[test]
fn held_messages_ride_with_a_retransmission() {
    let mut h = harness(13);
    let p = h.connect_player(&[ChannelKind::ReliableOrdered]).unwrap();
    // every data packet towards the edge, with its time; the 40th is lost
    let seen: Rc<std::cell::RefCell<Vec<(std::time::Instant, usize)>>> = Rc::default();
    let lost: Rc<std::cell::Cell<Option<(std::time::Instant, usize)>>> = Rc::default();
    let (tap, gone) = (seen.clone(), lost.clone());
    let mut n = 0;
    h.edges[0].trunk_down.filter = Some(Box::new(move |at, _, bytes| {
        if bytes[0] & 0x80 != 0 {
            return Verdict::Pass;
        }
        n += 1;
        tap.borrow_mut().push((at, bytes.len()));
        if n == 40 {
            gone.set(Some((at, bytes.len())));
            return Verdict::Drop;
        }
        Verdict::Pass
    }));
    let rtos = |h: &Harness| {
        let t = h.server_gw.trunk();
        t.connections()
            .filter_map(|c| t.connection_stats(c))
            .map(|s| s.recovery.rto_expirations)
            .sum::<u64>()
    };
    let mut fired = None;
    for i in 0..400u32 {
        h.game_send(p, 0, None, &[i as u8; 30]);
        for _ in 0..3 {
            let before = rtos(&h);
            h.run_for(ms(1));
            if fired.is_none() && rtos(&h) > before {
                fired = Some(h.time);
            }
        }
    }
    h.run_for(ms(200));
    let got = h.take_player_messages(p);
    assert_eq!(got.len(), 400, "all delivered");
    let in_order = got
        .iter()
        .enumerate()
        .all(|(i, (_, m))| m.data[0] == i as u8);
    assert!(in_order, "in order");
    let (_, lost_len) = lost.get().expect("a packet was dropped");
    let fired = fired.expect("the trunk's timeout fired");
    let seen = seen.borrow();
    let sent_then: Vec<usize> = seen
        .iter()
        .filter(|(at, _)| *at + ms(1) > fired && *at <= fired)
        .map(|&(_, len)| len)
        .collect();
    assert_eq!(
        sent_then.len(),
        1,
        "one datagram at the timeout: {sent_then:?}"
    );
    assert!(
        sent_then[0] >= lost_len + 30,
        "the retransmission ({} bytes) carries held messages beyond the lost packet's {lost_len}",
        sent_then[0]
    );
}
