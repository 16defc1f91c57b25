//! A FlowClose waits for its flow's data (FlowFin), in simulated time.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use thinwire_netmodel::LinkConfig;
use thinwire_proto::{ChannelKind, Event, TransportConfig};

use crate::trunk::testing::{Harness, Verdict};

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Regression: the player's last message was lost on the trunk and its FlowClose (control
/// channel) overtook the retransmission; the server gateway closed the game connection first
/// and the message was dropped.
#[test]
fn a_flow_close_waits_for_the_data_it_overtook() {
    // no redundant bundling: the lost data must not ride along with the close
    let t = TransportConfig {
        bundling: false,
        ..TransportConfig::default()
    };
    let mut h = Harness::builder(21)
        .insecure_cleartext()
        .trunk_transport(t)
        .trunk_link(LinkConfig::default().with_delay(Duration::from_millis(50)))
        .build();
    let p = h
        .connect_player(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    h.run_for(Duration::from_millis(200));
    let dropped = Rc::new(Cell::new(false));
    let d = dropped.clone();
    h.trunk_up.filter = Some(Box::new(move |_, _, bytes| {
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
