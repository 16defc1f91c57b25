//! In simulated time: a FlowClose waits for its flow's data (FlowFin); a superseded
//! LatestReliable value is not retransmitted on the trunk; a deadline message keeps its
//! deadline across the trunk.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use thinwire_netmodel::LinkConfig;
use thinwire_proto::{ChannelKind, DeadlineOptions, Event, SendMode, TransportConfig};

use crate::trunk::testing::{Harness, Verdict};

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A cleartext harness (the tests find messages on the wire) with a 100 ms trunk RTT and no
/// redundant bundling on the trunk (a lost message must not ride along in a later packet),
/// and one player with `kind` on channel 0, connected and settled.
fn harness(seed: u64, kind: ChannelKind) -> (Harness, usize) {
    let t = TransportConfig {
        bundling: false,
        ..TransportConfig::default()
    };
    let mut h = Harness::builder(seed)
        .insecure_cleartext()
        .trunk_transport(t)
        .trunk_link(LinkConfig::default().with_delay(Duration::from_millis(50)))
        .build();
    let p = h.connect_player(&[kind]).expect("connects");
    h.run_for(Duration::from_millis(200));
    (h, p)
}

/// Regression: the player's last message was lost on the trunk and its FlowClose (control
/// channel) overtook the retransmission; the server gateway closed the game connection first
/// and the message was dropped.
#[test]
fn a_flow_close_waits_for_the_data_it_overtook() {
    let (mut h, p) = harness(21, ChannelKind::ReliableOrdered);
    let dropped = Rc::new(Cell::new(false));
    let d = dropped.clone();
    h.edges[0].trunk_up.filter = Some(Box::new(move |_, _, bytes| {
        if !d.get() && contains(bytes, b"last words") {
            d.set(true);
            return Verdict::Drop;
        }
        Verdict::Pass
    }));
    h.player_send(p, 0, b"last words");
    h.run_for(Duration::from_millis(12));
    assert!(dropped.get(), "the data's trunk packet was lost");
    let conn = h.players[p].conn;
    h.players[p].endpoint.close(h.time, conn, 7, b"bye");
    h.run_for(Duration::from_secs(2));
    let got: Vec<Vec<u8>> = h
        .take_game_messages(p)
        .into_iter()
        .map(|(_, m)| m.data.to_vec())
        .collect();
    assert_eq!(got, [b"last words".to_vec()]);
    assert!(h
        .game_events
        .iter()
        .any(|(_, _, e)| matches!(e, Event::Disconnected { .. })));
    assert_eq!(h.server_gw.stats().flows_open, 0);
}

/// A LatestReliable value lost on the trunk and then superseded is not sent again: the trunk
/// carries player values on its own LatestReliable channel, keyed by (flow, channel, key).
#[test]
fn a_superseded_latest_value_is_not_retransmitted_on_the_trunk() {
    let (mut h, p) = harness(22, ChannelKind::LatestReliable);
    let old_seen = Rc::new(Cell::new(0u32));
    let seen = old_seen.clone();
    h.edges[0].trunk_up.filter = Some(Box::new(move |_, _, bytes| {
        if contains(bytes, b"position v1") {
            seen.set(seen.get() + 1);
            return Verdict::Drop;
        }
        Verdict::Pass
    }));
    h.player_send_latest(p, 0, 9, b"position v1");
    h.run_for(Duration::from_millis(20));
    assert_eq!(old_seen.get(), 1, "v1 went once, and was lost");
    h.player_send_latest(p, 0, 9, b"position v2");
    h.run_for(Duration::from_secs(2));
    assert_eq!(old_seen.get(), 1, "v1 was superseded, not retransmitted");
    let got: Vec<Vec<u8>> = h
        .take_game_messages(p)
        .into_iter()
        .map(|(_, m)| m.data.to_vec())
        .collect();
    assert_eq!(got, [b"position v2".to_vec()]);
}

/// A player's deadline message crosses the trunk as a deadline message and reaches the game
/// server as one, with what is left of its deadline; it takes no seq of its channel, so the
/// channel's ordered messages around it are not held for it.
#[test]
fn a_deadline_message_keeps_its_deadline_across_the_trunk() {
    let (mut h, p) = harness(23, ChannelKind::ReliableOrdered);
    let conn = h.players[p].conn;
    let opts = DeadlineOptions::new(Duration::from_millis(400), 0.999);
    h.player_send(p, 0, b"before");
    h.players[p]
        .endpoint
        .send(
            h.time,
            conn,
            0,
            Bytes::from_static(b"urgent"),
            SendMode::Deadline(opts),
        )
        .expect("deadline send");
    h.player_send(p, 0, b"after");
    h.run_for(Duration::from_secs(1));
    let got = h.take_game_messages(p);
    let data: Vec<&[u8]> = got.iter().map(|(_, m)| &m.data[..]).collect();
    assert_eq!(data.len(), 3, "{data:?}");
    let ordered: Vec<&[u8]> = data.iter().copied().filter(|d| *d != b"urgent").collect();
    assert_eq!(ordered, [&b"before"[..], b"after"]);
    let (_, m) = got
        .iter()
        .find(|(_, m)| &m.data[..] == b"urgent")
        .expect("delivered");
    let status = m.deadline.expect("a deadline message at the game server");
    // the game server's connection was given what was left: the 400 ms less the player's
    // hop (its age as thinwire reports it: half an RTT estimate, still the initial 250 ms on
    // a young connection), the hold and the trunk's one-way delay (50 ms)
    assert!(status.deadline <= Duration::from_millis(350), "{status:?}");
    assert!(status.deadline >= Duration::from_millis(150), "{status:?}");
    assert!(!status.late);
    assert_eq!(
        h.server_gw.stats().bad_frames + h.edges[0].gw.stats().bad_frames,
        0
    );
}
