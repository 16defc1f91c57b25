//! Trunk admission (regression tests for "a public key is not a credential"), many edges on
//! one server gateway, redial after an edge restart, and players' identities end to end.

use std::time::Duration;

use thinwire_proto::{
    ChannelKind, ConnectToken, DisconnectReason, Event, RefuseReason, ServerConfig, TokenClaims,
    TokenKey, TokenPolicy,
};

use crate::trunk::close;
use crate::trunk::testing::{Harness, Verdict, OPERATOR_KEY, SIM_UNIX};
use crate::trunk::{GatewayEvent, TrunkPeer, REDIAL_MIN};

const CH: [ChannelKind; 1] = [ChannelKind::ReliableOrdered];

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn player_closed(h: &Harness, p: usize) -> Option<DisconnectReason> {
    h.players[p].events.iter().find_map(|(_, e)| match e {
        Event::Disconnected { reason } => Some(reason.clone()),
        _ => None,
    })
}

fn game_connections(h: &Harness) -> usize {
    let connected = |(_, _, e): &&(_, _, Event)| matches!(e, Event::Connected { .. });
    h.game_events.iter().filter(connected).count()
}

/// An attacker who knows only the server gateway's public key (and address) mints a
/// "credential" with a key of its own: the core refuses it at the handshake; its edge says
/// why, keeps redialing with a growing wait, and its players are turned away. Nothing reaches
/// the game server. The same holds for a tcm-local (the same edge gateway, carrying bundles).
#[test]
fn a_peer_holding_only_the_public_key_gets_no_trunk() {
    let mut h = Harness::builder(21).build();
    let forged = h.credential(1, &TokenKey::new([0x66; 32]));
    let a = h.add_edge(forged);
    h.run_for(secs(4));
    assert!(!h.edges[a].trunk_up(), "{:?}", h.edges[a].events);
    let refusals: Vec<_> = (h.edges[a].events.iter())
        .filter_map(|e| match e {
            GatewayEvent::TrunkDown {
                reason, redial_in, ..
            } => Some((reason.clone(), *redial_in)),
            _ => None,
        })
        .collect();
    let invalid = DisconnectReason::Refused(RefuseReason::InvalidToken);
    assert!(refusals.len() >= 2, "{refusals:?}");
    assert!(refusals.iter().all(|(r, _)| *r == invalid), "{refusals:?}");
    assert_eq!(refusals[0].1, Some(REDIAL_MIN));
    assert_eq!(refusals[1].1, Some(2 * REDIAL_MIN), "the wait doubles");
    assert!(h.edges[a].gw.send_bundle(h.time, b"forged").is_err());
    let p = h.add_player_at(a, &CH, None);
    h.run_for(secs(2));
    let Some(DisconnectReason::ClosedByPeer { code, .. }) = player_closed(&h, p) else {
        panic!("turned away: {:?}", h.players[p].events);
    };
    assert_eq!(code, close::TRUNK_DOWN);
    // the legitimate edge kept its trunk, alone
    assert_eq!(h.server_gw.trunks().len(), 1);
    assert_eq!(h.server_gw.trunks()[0].peer, 1);
    assert_eq!(game_connections(&h), 0);
    let bundles = |e: &&GatewayEvent| matches!(e, GatewayEvent::Bundle { .. });
    assert_eq!(h.server_events.iter().filter(bundles).count(), 0);
}

/// A valid credential whose id the server gateway does not list: the trunk is closed at once
/// with NOT_ADMITTED, and the FlowOpen and bundle its edge sent in the moment it thought the
/// trunk was up reach nothing.
#[test]
fn a_valid_credential_not_in_the_allowed_peers_is_refused() {
    let mut h = Harness::builder(22).build();
    let stranger = h.credential(9, &TokenKey::new(OPERATOR_KEY));
    let a = h.add_edge(stranger);
    // hold back what follows the handshake answer (after the cookie challenge) for a while, so that the edge believes its
    // trunk is up and sends on it
    let until = h.time + Duration::from_millis(300);
    h.edges[a].trunk_down.filter = Some(Box::new(move |t, i, _| {
        if i >= 2 && t < until {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    }));
    h.run_while(secs(2), |h| h.edges[a].trunk_up());
    assert!(
        h.edges[a].trunk_up(),
        "the handshake itself succeeds: {:?} {:?}",
        h.edges[a].events,
        h.server_events
    );
    h.edges[a]
        .gw
        .send_bundle(h.time, b"smuggled")
        .expect("sent");
    let p = h.add_player_at(a, &CH, None);
    h.run_for(secs(3));
    // refused again at each redial (1 s, then 2 s later)
    let refused = |e: &&GatewayEvent| matches!(e, GatewayEvent::TrunkRefused { .. });
    let n = h.server_events.iter().filter(refused).count() as u64;
    assert!(n >= 2, "{:?}", h.server_events);
    assert_eq!(h.server_gw.stats().trunks_refused, n);
    assert!(h.server_events.contains(&GatewayEvent::TrunkRefused {
        peer: 9,
        reason: close::Refusal::NotAdmitted
    }));
    let not_admitted = |e: &GatewayEvent| {
        matches!(e, GatewayEvent::TrunkDown {
            reason: DisconnectReason::ClosedByPeer { code, .. }, ..
        } if *code == close::NOT_ADMITTED)
    };
    assert!(
        h.edges[a].events.iter().any(not_admitted),
        "{:?}",
        h.edges[a].events
    );
    let line = h.edges[a]
        .events
        .iter()
        .find(|e| not_admitted(e))
        .and_then(GatewayEvent::log_line);
    assert!(line.is_some_and(|l| l.contains("not admitted")));
    assert!(h.server_events.iter().all(|e| !matches!(
        e,
        GatewayEvent::Bundle { .. } | GatewayEvent::FlowOpened { .. }
    )));
    assert_eq!(game_connections(&h), 0, "no flow from a refused trunk");
    assert!(player_closed(&h, p).is_some(), "its player is not served");
    assert_eq!(h.server_gw.trunks().len(), 1);
}

/// Three edges through one server gateway: every message is delivered once and in order per
/// flow, flows are counted per peer, bundles name their peer.
#[test]
fn three_edges_share_one_server_gateway() {
    let mut h = Harness::builder(23).edges(3).build();
    assert_eq!(h.server_gw.trunks().len(), 3);
    let mut players = Vec::new();
    for e in 0..3 {
        for _ in 0..2 {
            players.push(h.connect_player_at(e, &CH, None).expect("connects"));
        }
    }
    let per_peer: Vec<usize> = h.server_gw.trunks().iter().map(|t| t.flows_open).collect();
    assert_eq!(per_peer, [2, 2, 2]);
    for n in 0..50u32 {
        for &p in &players {
            h.player_send(p, 0, format!("{p}-{n}").as_bytes());
            h.game_send(p, 0, None, format!("to{p}-{n}").as_bytes());
        }
        h.run_for(Duration::from_millis(7));
    }
    h.run_for(secs(1));
    for &p in &players {
        let up: Vec<Vec<u8>> = h
            .take_game_messages(p)
            .into_iter()
            .map(|(_, m)| m.data.to_vec())
            .collect();
        let want: Vec<Vec<u8>> = (0..50).map(|n| format!("{p}-{n}").into_bytes()).collect();
        assert_eq!(up, want, "player {p} → game");
        let down: Vec<Vec<u8>> = h
            .take_player_messages(p)
            .into_iter()
            .map(|(_, m)| m.data.to_vec())
            .collect();
        let want: Vec<Vec<u8>> = (0..50).map(|n| format!("to{p}-{n}").into_bytes()).collect();
        assert_eq!(down, want, "game → player {p}");
    }
    h.edges[2].gw.send_bundle(h.time, b"from 3").expect("up");
    h.server_gw.send_bundle(h.time, 2, b"to 2").expect("up");
    h.run_for(Duration::from_millis(100));
    let b = |peer, s: &[u8]| GatewayEvent::Bundle {
        peer,
        bundle: bytes::Bytes::copy_from_slice(s),
    };
    assert!(h.server_events.contains(&b(3, b"from 3")));
    assert!(h.edges[1].events.contains(&b(2, b"to 2")));
    assert!(!h.edges[0]
        .events
        .iter()
        .any(|e| matches!(e, GatewayEvent::Bundle { .. })));
}

/// A peer's own flow bound holds while the others still open flows.
#[test]
fn flow_bounds_are_per_trunk() {
    let peers = vec![
        TrunkPeer {
            max_flows: Some(1),
            ..Harness::default_peer(0)
        },
        Harness::default_peer(1),
    ];
    let mut h = Harness::builder(24).edges(2).peers(peers).build();
    assert!(h.connect_player_at(0, &CH, None).is_some());
    let p = h.add_player_at(0, &CH, None);
    h.run_for(secs(2));
    let Some(DisconnectReason::ClosedByPeer { code, .. }) = player_closed(&h, p) else {
        panic!("refused: {:?}", h.players[p].events);
    };
    assert_eq!(code, close::GATEWAY_FULL);
    assert!(
        h.connect_player_at(1, &CH, None).is_some(),
        "the other edge is not full"
    );
    assert!(h.connect_player_at(1, &CH, None).is_some());
}

/// An edge restarts: the server gateway still holds its old trunk, so the core refuses the
/// new one (AlreadyConnected) until the old one times out there; the edge says so, keeps
/// dialing every REDIAL_MIN, regains its trunk within the idle timeout and serves players.
#[test]
fn a_restarted_edge_regains_its_trunk_and_says_why_it_waited() {
    let mut h = Harness::builder(25).build();
    h.connect_player(&CH).expect("connects");
    h.restart_edge(0);
    let regained = h.run_while(secs(20), |h| h.edges[0].trunk_up());
    assert!(regained, "{:?}", h.edges[0].events);
    let refused = DisconnectReason::Refused(RefuseReason::AlreadyConnected);
    let waits: Vec<_> = (h.edges[0].events.iter())
        .filter_map(|e| match e {
            GatewayEvent::TrunkDown {
                reason, redial_in, ..
            } if *reason == refused => Some(*redial_in),
            _ => None,
        })
        .collect();
    assert!(!waits.is_empty());
    assert!(waits.iter().all(|w| *w == Some(REDIAL_MIN)), "{waits:?}");
    let line = (h.edges[0].events.iter())
        .find_map(GatewayEvent::log_line)
        .expect("logged");
    assert!(line.contains("still holds a trunk"), "{line}");
    // the server gateway ended the old trunk (and its flow) before admitting the new one
    let down =
        (h.server_events.iter()).position(|e| matches!(e, GatewayEvent::TrunkDown { peer: 1, .. }));
    let up = (h.server_events.iter()).rposition(|e| *e == GatewayEvent::TrunkUp { peer: 1 });
    assert!(down.is_some() && down < up, "{:?}", h.server_events);
    assert_eq!(h.server_gw.stats().flows_open, 0);
    let q = h
        .connect_player(&CH)
        .expect("the edge serves players again");
    h.player_send(q, 0, b"back");
    h.run_for(Duration::from_millis(200));
    assert_eq!(h.take_game_messages(q).len(), 1);
}

/// Players present connect tokens from the game's backend to the edge; the game server,
/// with a token policy of its own, reads each player's claims from the token the server
/// gateway minted for the flow.
#[test]
fn players_identities_reach_the_game_server() {
    let backend = TokenKey::new([0x21; 32]);
    let game_key = TokenKey::new([0x31; 32]);
    let policy = |key: &TokenKey| ServerConfig {
        connect_tokens: Some(TokenPolicy {
            key: key.clone(),
            public_addresses: Vec::new(),
        }),
        ..ServerConfig::default()
    };
    let mut h = Harness::builder(26)
        .players_server(policy(&backend))
        .game_server(policy(&game_key))
        .upstream_tokens(game_key)
        .build();
    let edge_key = h.edges[0].gw.players_public_key();
    let addr = h.edges[0].players_addr;
    let expires = (SIM_UNIX + secs(3600)).as_secs();
    let mut want = Vec::new();
    for (i, id) in [(0u8, 1001u64), (1, 1002)] {
        let claims = TokenClaims {
            client_id: id,
            user_data: format!("player {id}").into_bytes(),
        };
        let token = ConnectToken::mint(&backend, &claims, edge_key.0, &[addr], expires, [i; 24])
            .expect("token");
        let p = h.connect_player_at(0, &CH, Some(&token)).expect("connects");
        want.push((p, claims));
    }
    for (p, claims) in want {
        let conn = h.players[p].game_conn.expect("relayed");
        assert_eq!(h.game.token_claims(conn), Some(&claims));
    }
    // a player without a token is refused by the edge's players endpoint itself
    let p = h.add_player_at(0, &CH, None);
    h.run_for(secs(2));
    assert_eq!(
        player_closed(&h, p),
        Some(DisconnectReason::Refused(RefuseReason::InvalidToken))
    );
}
