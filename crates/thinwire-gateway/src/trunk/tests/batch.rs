//! Batch frames and 8-bit seqs end to end: a push of many players' small reliable messages is
//! one trunk message, a full trunk send buffer loses or reorders none of them, and a fast flow
//! keeps its order through a long loss.

use std::time::Duration;

use bytes::Bytes;

use thinwire_netmodel::LinkConfig;
use thinwire_proto::{ChannelKind, TransportConfig};

use crate::trunk::frame;
use crate::trunk::seq8::{Seq8Log, SEQ8_WINDOW};
use crate::trunk::testing::{Harness, Verdict};
use crate::trunk::TrunkOptions;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The payloads player `p` received on `channel`.
fn received(h: &mut Harness, p: usize) -> [Vec<Vec<u8>>; 2] {
    let msgs = h.take_player_messages(p);
    [0, 1].map(|ch| {
        msgs.iter()
            .filter(|(_, m)| m.channel == ch)
            .map(|(_, m)| m.data.to_vec())
            .collect()
    })
}

/// The game sends each of 12 players two ordered messages and one unordered one at once, five
/// rounds: each round is one push of the server gateway, and one Batch on trunk channel 1.
#[test]
fn a_push_of_many_players_messages_is_one_batch() {
    let mut h = Harness::builder(32)
        .trunk_link(LinkConfig::default().with_delay(ms(10)))
        .options(TrunkOptions {
            period: ms(20),
            ..TrunkOptions::default()
        })
        .build();
    let kinds = [ChannelKind::ReliableOrdered, ChannelKind::ReliableUnordered];
    let players: Vec<usize> = (0..12)
        .map(|_| h.connect_player(&kinds).expect("connects"))
        .collect();
    h.run_for(ms(200));
    let conn = h.server_gw.trunks()[0].connection;
    let sent = |h: &Harness| {
        let w = h.server_gw.trunk().send_window(conn, frame::RELIABLE);
        w.expect("the trunk is up").end
    };
    let (before, to_trunk) = (sent(&h), h.server_gw.stats().messages_to_trunk);
    for round in 0..5u8 {
        for &p in &players {
            h.game_send(p, 0, None, &[round, p as u8, 0]);
            h.game_send(p, 0, None, &[round, p as u8, 1]);
            h.game_send(p, 1, None, &[round, p as u8, 2]);
        }
        h.run_for(ms(100));
    }
    assert_eq!(sent(&h) - before, 5, "one trunk message per round");
    let s = h.server_gw.stats().clone();
    assert_eq!(
        s.messages_to_trunk - to_trunk,
        5 * 36,
        "counted per message"
    );
    assert_eq!(h.edges[0].gw.stats().messages_from_trunk, 5 * 36);
    for &p in &players {
        let [ordered, unordered] = received(&mut h, p);
        let want: Vec<Vec<u8>> = (0..5u8)
            .flat_map(|r| [vec![r, p as u8, 0], vec![r, p as u8, 1]])
            .collect();
        assert_eq!(ordered, want, "player {p}, in order");
        let want: Vec<Vec<u8>> = (0..5u8).map(|r| vec![r, p as u8, 2]).collect();
        assert_eq!(unordered, want, "player {p}");
    }
    let e = h.edges[0].gw.stats();
    assert_eq!(e.bad_frames + e.dropped_messages + s.dropped_messages, 0);
}

/// The trunk's send buffer holds 3000 bytes: most Batch sends are refused at first. The
/// refused messages stay in the hold and go later; each player still gets all of its
/// messages once, in order.
#[test]
fn refused_batches_stay_in_the_hold_in_order() {
    let mut h = Harness::builder(33)
        .trunk_link(LinkConfig::default().with_delay(ms(10)))
        .trunk_transport(TransportConfig {
            max_datagram_size: 1300,
            send_buffer: 3000,
            ..TransportConfig::default()
        })
        .build();
    let players: Vec<usize> = (0..10)
        .map(|_| h.connect_player(&[ChannelKind::ReliableOrdered]).unwrap())
        .collect();
    h.run_for(ms(200));
    for i in 0..100u8 {
        for &p in &players {
            h.game_send(p, 0, None, &[i; 60]);
        }
    }
    h.run_for(Duration::from_secs(5));
    let s = h.server_gw.stats().clone();
    assert!(s.held_delay_max > ms(10), "the trunk refused some: {s:?}");
    for &p in &players {
        let [got, _] = received(&mut h, p);
        let want: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i; 60]).collect();
        assert!(got == want, "player {p}: {} messages", got.len());
    }
    assert_eq!(s.messages_to_trunk, 1000);
    assert_eq!(s.dropped_messages + h.edges[0].gw.stats().bad_frames, 0);
}

/// A fast flow's early message is lost on the trunk for 1.5 s, every retransmission of it too,
/// while the flow sends 600 more. Those are acknowledged as they arrive (trunk channel 1 is
/// unordered), so few messages are ever unacknowledged, yet the server gateway still waits
/// for the lost one: 8-bit seqs more than 255 above it would expand wrongly. Every message
/// reaches the game server once and in order.
#[test]
fn a_fast_flow_keeps_its_order_through_a_long_loss() {
    let mut h = Harness::builder(31)
        .trunk_link(LinkConfig::default().with_delay(ms(20)))
        .build();
    let p = h.connect_player(&[ChannelKind::ReliableOrdered]).unwrap();
    h.player_send(p, 0, b"first");
    h.run_for(ms(100));
    let until = h.time + ms(1500);
    // only the lost message (700 bytes) makes a trunk datagram this large
    h.edges[0].trunk_up.filter = Some(Box::new(move |t, _, bytes| {
        if t < until && bytes.len() > 500 {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    }));
    h.player_send(p, 0, &[0xbb; 700]);
    for i in 0..600u16 {
        h.player_send(p, 0, &i.to_be_bytes());
        if i % 4 == 3 {
            h.run_for(ms(5));
        }
    }
    h.run_for(ms(3000));
    let got: Vec<Vec<u8>> = h
        .take_game_messages(p)
        .into_iter()
        .map(|(_, m)| m.data.to_vec())
        .collect();
    let mut want = vec![b"first".to_vec(), vec![0xbb; 700]];
    want.extend((0..600u16).map(|i| i.to_be_bytes().to_vec()));
    assert_eq!(got.len(), want.len(), "every message, once");
    let first_wrong = got.iter().zip(&want).position(|(g, w)| g != w);
    assert_eq!(first_wrong, None, "in order");
    let (e, s) = (h.edges[0].gw.stats(), h.server_gw.stats());
    assert_eq!(s.bad_frames + s.dropped_messages + e.dropped_messages, 0);
}

/// The server gateway takes Batches as if their entries had come one by one: a bad one is one
/// bad frame and delivers nothing; entries for a flow whose FlowOpen has not arrived yet are
/// held for it like Data frames.
#[test]
fn batches_arrive_whole_or_not_at_all() {
    let mut h = Harness::builder(34).build();
    let a = h.connect_player(&[ChannelKind::ReliableOrdered]).unwrap();
    let (now, trunk) = (h.time, h.server_gw.trunks()[0].connection);
    let relay = h.server_gw.relay_mut();
    // flow 0 seq 0 "a", then an entry that is a FlowOpened
    let bad = [0x40, 0x04, 0x80, 0x00, 0x00, b'a', 0x02, 0x00];
    assert!(relay
        .take_trunk(now, trunk, Bytes::copy_from_slice(&bad))
        .is_none());
    assert_eq!(relay.stats.bad_frames, 1);
    // flow 0 seqs 0 and 1; flow 1 (not open yet) seqs 0 and 1
    let good = [
        0x42, 0x04, 0x80, 0x00, 0x00, b'a', 0x04, 0x80, 0x01, 0x00, b'x', 0x04, 0x80, 0x00, 0x01,
        b'b', 0x80, 0x01, 0x01, b'y',
    ];
    assert!(relay
        .take_trunk(now, trunk, Bytes::copy_from_slice(&good))
        .is_none());
    assert_eq!(relay.stats.bad_frames, 1);
    let b = h.connect_player(&[ChannelKind::ReliableOrdered]).unwrap();
    h.run_for(ms(100));
    let data = |h: &mut Harness, p| -> Vec<Vec<u8>> {
        let msgs = h.take_game_messages(p);
        msgs.into_iter().map(|(_, m)| m.data.to_vec()).collect()
    };
    assert_eq!(data(&mut h, a), [b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(data(&mut h, b), [b"x".to_vec(), b"y".to_vec()]);
}

/// The records of 8-bit seqs: dropped once their core message is below the send window,
/// bounded, and no 8-bit seq while a push was not recorded.
#[test]
fn seq8_records_follow_the_acknowledgements() {
    let mut log = Seq8Log::default();
    assert!(
        log.allows(0, 1000, None),
        "nothing recorded: the seq itself"
    );
    for seq in 0..100 {
        log.record(0, seq, 10 + seq / 4);
    }
    assert!(log.allows(0, 100, None));
    assert!(log.allows(0, 239, None));
    assert!(!log.allows(0, 240, None), "240 above the lowest recorded");
    assert!(log.allows(1, 500, None), "another channel");
    assert!(log.allows(1, 500, Some(300)));
    assert!(
        !log.allows(1, 600, Some(300)),
        "entries ahead in its batch count"
    );
    log.acked_below(20); // core 10..=19 acknowledged: seqs 0..40
    assert_eq!(log.len(), 60);
    assert!(log.allows(0, 279, None) && !log.allows(0, 280, None));
    // full: the next pushes are not recorded, and no 8-bit seq until they are acknowledged
    for seq in 100..100 + SEQ8_WINDOW as u64 {
        log.record(0, seq, 40 + seq);
    }
    assert_eq!(log.len(), SEQ8_WINDOW);
    assert!(!log.allows(0, 340, None) && !log.allows(1, 0, None));
    log.acked_below(40 + 279);
    assert!(
        !log.allows(1, 0, None),
        "the newest unrecorded one is not acknowledged"
    );
    log.acked_below(40 + 340);
    assert_eq!(log.len(), 0);
    assert!(log.allows(0, 340, None));
}
