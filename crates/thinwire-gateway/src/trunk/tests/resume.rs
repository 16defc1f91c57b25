//! Moving between edges: a player whose edge dies, or who moves for a
//! better round trip, comes back through another edge with the same client id and carries on
//! over the same game-server connection. Simulated time; the gaps are measured in round trips
//! of the player ↔ game server path.

use std::time::{Duration, Instant};

use thinwire_netmodel::LinkConfig;
use thinwire_proto::{
    ChannelKind, ConnectToken, ConnectionHandle, DisconnectReason, Event, RefuseReason,
    ServerConfig, TokenClaims, TokenKey, TokenPolicy,
};

use crate::trunk::close;
use crate::trunk::testing::{Harness, Verdict, SIM_UNIX};
use crate::trunk::{GatewayEvent, TrunkOptions};

const CH: [ChannelKind; 3] = [
    ChannelKind::ReliableOrdered,
    ChannelKind::Unreliable,
    ChannelKind::LatestReliable,
];
const BACKEND: [u8; 32] = [0x21; 32];
/// One-way delays: player ↔ edge, edge ↔ server gateway, server gateway ↔ game server.
const ACCESS_MS: u64 = 10;
const TRUNK_MS: u64 = 20;
const LAN_MS: u64 = 1;
/// The round trip of the path player ↔ game server (without the hold).
const RTT: Duration = Duration::from_millis(2 * (ACCESS_MS + TRUNK_MS + LAN_MS));
const TICK: Duration = Duration::from_millis(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Two edges whose players need tokens of the backend, the given delays, period 10 ms.
fn harness(seed: u64, options: TrunkOptions) -> Harness {
    lossy_harness(seed, options, 0.0)
}

/// The same with `loss` on every trunk.
fn lossy_harness(seed: u64, options: TrunkOptions, loss: f64) -> Harness {
    let policy = ServerConfig {
        connect_tokens: Some(TokenPolicy {
            key: TokenKey::new(BACKEND),
            public_addresses: Vec::new(),
        }),
        ..ServerConfig::default()
    };
    Harness::builder(seed)
        .edges(2)
        .players_server(policy)
        .access_link(LinkConfig::default().with_delay(ms(ACCESS_MS)))
        .trunk_link(
            LinkConfig::default()
                .with_delay(ms(TRUNK_MS))
                .with_bernoulli_loss(loss),
        )
        .lan_link(LinkConfig::default().with_delay(ms(LAN_MS)))
        .options(options)
        .build()
}

/// A token for edge `e` carrying `client`, minted with `key` (the backend's, or a forger's).
fn token(h: &Harness, e: usize, client: u64, key: [u8; 32], n: u8) -> ConnectToken {
    let claims = TokenClaims {
        client_id: client,
        user_data: b"player".to_vec(),
    };
    let edge = &h.edges[e];
    let expires = (SIM_UNIX + Duration::from_secs(3600)).as_secs();
    let k = TokenKey::new(key);
    let addrs = [edge.players_addr];
    ConnectToken::mint(
        &k,
        &claims,
        edge.gw.players_public_key().0,
        &addrs,
        expires,
        [n; 24],
    )
    .expect("token")
}

/// The default options with `resume_grace` set.
fn grace(resume_grace: Duration) -> TrunkOptions {
    TrunkOptions {
        resume_grace,
        ..TrunkOptions::default()
    }
}

/// A player with client id `client` connected at edge 0 of `h`: its index and the game
/// server's connection.
fn start(mut h: Harness, client: u64) -> (Harness, usize, ConnectionHandle) {
    let t = token(&h, 0, client, BACKEND, 1);
    let a = h.connect_player_at(0, &CH, Some(&t)).expect("connects");
    let conn = h.players[a].game_conn.expect("relayed");
    (h, a, conn)
}

/// Player `old` comes back at edge `e` with `token`: a new player whose game connection is
/// the old one's; returns it and when its connection to the edge was established.
fn come_back(h: &mut Harness, old: usize, e: usize, token: &ConnectToken) -> (usize, Instant) {
    let p = h.add_player_at(e, &CH, Some(token));
    h.players[p].game_conn = h.players[old].game_conn;
    let connected = |h: &Harness| {
        h.players[p]
            .events
            .iter()
            .find_map(|(t, e)| matches!(e, Event::Connected { .. }).then_some(*t))
    };
    assert!(h.run_while(Duration::from_secs(5), |h| connected(h).is_some()));
    let at = connected(h).expect("connected");
    h.players[p]
        .events
        .retain(|(_, e)| !matches!(e, Event::Connected { .. }));
    (p, at)
}

/// Edge `e` stops: nothing crosses its trunk any more, nor the links of `players`.
fn kill_edge(h: &mut Harness, e: usize, players: &[usize]) {
    h.edges[e].trunk_up.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    h.edges[e].trunk_down.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    for &p in players {
        h.players[p].up.filter = Some(Box::new(|_, _, _| Verdict::Drop));
        h.players[p].down.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    }
}

/// `d` of traffic: every tick the game sends `g<n>` to player `to` on the ordered channel,
/// and player `from` (if any) sends `p<n>`; `n` counts on.
fn traffic(h: &mut Harness, from: Option<usize>, to: usize, n: &mut u32, d: Duration) {
    let end = h.time + d;
    while h.time < end {
        h.game_send(to, 0, None, format!("g{n}").as_bytes());
        if let Some(p) = from {
            h.player_send(p, 0, format!("p{n}").as_bytes());
        }
        *n += 1;
        let next = h.time + TICK;
        h.run_until(next);
    }
}

fn number(data: &[u8]) -> u32 {
    std::str::from_utf8(&data[1..])
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("a numbered message")
}

fn game_disconnects(h: &Harness, conn: ConnectionHandle) -> Vec<DisconnectReason> {
    (h.game_events.iter())
        .filter_map(|(_, c, e)| match e {
            Event::Disconnected { reason } if *c == conn => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

/// The first message each way after `at`, as a gap in round trips; checks both ways stay
/// in order (numbers increase) on the ordered channel.
fn gaps(h: &mut Harness, old: usize, new: usize, at: Instant) -> (f64, f64) {
    let up = h.take_game_messages(old);
    let down = h.take_player_messages(new);
    let ordered = |v: &[u32]| v.windows(2).all(|w| w[0] < w[1]);
    let up_n: Vec<u32> = up.iter().map(|(_, m)| number(&m.data)).collect();
    let down_n: Vec<u32> = (down.iter().filter(|(_, m)| m.channel == 0))
        .map(|(_, m)| number(&m.data))
        .collect();
    assert!(ordered(&up_n), "toward the game server in order: {up_n:?}");
    assert!(ordered(&down_n), "toward the player in order: {down_n:?}");
    let first = |v: &[(Instant, thinwire_proto::Message)]| {
        let t = v
            .iter()
            .map(|(t, _)| *t)
            .find(|t| *t >= at)
            .expect("delivery resumed");
        t.duration_since(at).as_secs_f64() / RTT.as_secs_f64()
    };
    let up_new = h.players[new].game_conn.expect("same game connection");
    assert_eq!(Some(up_new), h.players[old].game_conn);
    (first(&up), first(&down))
}

/// Edge A dies; 300 ms later the player connects to edge B with a token carrying the same
/// client id (the server gateway has not noticed A's death yet: the flow moves from A's
/// dead trunk). The game server sees no disconnect, ever (the run goes past every timeout),
/// and delivery resumes both ways within 2 round trips of the player reaching B.
#[test]
fn an_edge_dies_and_its_player_carries_on_through_another() {
    let (mut h, a, conn) = start(harness(251, TrunkOptions::default()), 7);
    let mut n = 0;
    traffic(&mut h, Some(a), a, &mut n, ms(500));
    assert!(!h.take_game_messages(a).is_empty());
    kill_edge(&mut h, 0, &[a]);
    traffic(&mut h, None, a, &mut n, ms(300));
    let t = token(&h, 1, 7, BACKEND, 2);
    let (b, at) = come_back(&mut h, a, 1, &t);
    h.take_game_messages(a);
    traffic(&mut h, Some(b), a, &mut n, ms(500));
    let (up, down) = gaps(&mut h, a, b, at);
    eprintln!("edge killed, moved at once: first message after reaching edge B: to the game server {up:.2} RTT, to the player {down:.2} RTT (RTT {RTT:?})");
    assert!(up <= 2.0 && down <= 2.0, "up {up} down {down} RTTs");
    // past every timeout: A's trunk times out at the server gateway, the flow stays on B
    traffic(&mut h, Some(b), a, &mut n, Duration::from_secs(25));
    assert!(game_disconnects(&h, conn).is_empty());
    assert!((h.server_events.iter()).any(|e| matches!(e, GatewayEvent::TrunkDown { peer: 1, .. })));
    let s = h.server_gw.stats();
    assert_eq!((s.flows_resumed, s.flows_parked, s.flows_open), (1, 0, 1));
    assert!(!h.take_game_messages(a).is_empty(), "still delivering");
    assert!(!h.take_player_messages(b).is_empty(), "still delivering");
}

/// Edge A dies and the server gateway notices (its trunk times out): the flow is parked,
/// its game-server connection kept. What the game server sends meanwhile is held (ordered
/// messages all, the newest latest value, no unreliable one) and reaches the player when it
/// comes back through edge B; delivery resumes within 2 round trips.
#[test]
fn a_parked_flow_resumes_when_its_player_comes_back() {
    let (mut h, a, conn) = start(harness(252, TrunkOptions::default()), 9);
    let mut n = 0;
    traffic(&mut h, Some(a), a, &mut n, ms(300));
    kill_edge(&mut h, 0, &[a]);
    let parked = |h: &Harness| h.server_gw.parked_flows() == 1;
    assert!(h.run_while(Duration::from_secs(30), parked));
    assert!((h.server_events.iter()).any(|e| matches!(
        e,
        GatewayEvent::FlowParked {
            peer: 1,
            flow: 0,
            client_id: 9
        }
    )));
    let first_held = n;
    traffic(&mut h, None, a, &mut n, ms(200));
    for v in 0..3u8 {
        h.game_send(a, 1, None, b"unreliable");
        h.game_send(a, 2, Some(5), &[v]);
    }
    h.run_for(ms(500));
    let t = token(&h, 1, 9, BACKEND, 2);
    let (b, at) = come_back(&mut h, a, 1, &t);
    h.take_game_messages(a);
    traffic(&mut h, Some(b), a, &mut n, ms(500));
    let got = h.players[b].events.iter().filter_map(|(_, e)| match e {
        Event::Message(m) => Some((m.channel, m.data.clone())),
        _ => None,
    });
    let got: Vec<_> = got.collect();
    let ordered: Vec<u32> = (got.iter().filter(|(c, _)| *c == 0))
        .map(|(_, d)| number(d))
        .collect();
    assert_eq!(
        ordered.first(),
        Some(&first_held),
        "held messages come first"
    );
    assert!(
        got.iter().all(|(c, _)| *c != 1),
        "unreliable ones were dropped"
    );
    let latest: Vec<_> = (got.iter().filter(|(c, _)| *c == 2)).collect();
    assert_eq!(latest, [&(2, bytes::Bytes::from_static(&[2]))]);
    let (up, down) = gaps(&mut h, a, b, at);
    eprintln!("edge killed, flow parked then resumed: to the game server {up:.2} RTT, to the player {down:.2} RTT (RTT {RTT:?})");
    assert!(up <= 2.0 && down <= 2.0, "up {up} down {down} RTTs");
    h.run_for(Duration::from_secs(15));
    assert!(game_disconnects(&h, conn).is_empty());
    let s = h.server_gw.stats();
    assert_eq!(
        (s.flows_parked, s.flows_resumed, s.flows_resume_expired),
        (1, 1, 0)
    );
    let resumed = (h.server_events.iter()).find(|e| matches!(e, GatewayEvent::FlowResumed { .. }));
    let line = resumed.and_then(GatewayEvent::log_line).expect("logged");
    assert!(
        line.contains("player 9 resumed on flow 0 of peer 2"),
        "{line}"
    );
}

/// Edge A stays up; the player connects to edge B (a better round trip) with its client id:
/// the flow moves, A's flow is closed with MOVED (the player's old connection reads it), and
/// the game server sees no disconnect.
#[test]
fn a_player_moves_for_a_better_round_trip() {
    let (mut h, a, conn) = start(harness(253, TrunkOptions::default()), 11);
    let mut n = 0;
    traffic(&mut h, Some(a), a, &mut n, ms(300));
    let t = token(&h, 1, 11, BACKEND, 2);
    let (b, at) = come_back(&mut h, a, 1, &t);
    h.take_player_messages(a);
    traffic(&mut h, Some(b), a, &mut n, ms(500));
    let old_closed = h.players[a].events.iter().find_map(|(_, e)| match e {
        Event::Disconnected { reason } => Some(reason.clone()),
        _ => None,
    });
    assert!(
        matches!(old_closed, Some(DisconnectReason::ClosedByPeer { code, .. }) if code == close::MOVED),
        "{old_closed:?}"
    );
    let (up, down) = gaps(&mut h, a, b, at);
    eprintln!("moved with edge A up: to the game server {up:.2} RTT, to the player {down:.2} RTT (RTT {RTT:?})");
    assert!(up <= 2.0 && down <= 2.0, "up {up} down {down} RTTs");
    h.run_for(Duration::from_secs(12));
    assert!(game_disconnects(&h, conn).is_empty());
    assert_eq!(h.server_gw.stats().flows_resumed, 1);
    assert_eq!(
        h.server_gw
            .trunks()
            .iter()
            .map(|t| t.flows_open)
            .sum::<usize>(),
        1
    );
}

/// Regression (hostile players): a parked flow is taken over by its own client id only. A
/// player with another id gets a connection of its own; a token for the parked id forged with
/// another key is refused by the edge. The grace then runs out and the game server reads the
/// loss.
#[test]
fn only_its_own_client_id_takes_a_flow_over_and_the_grace_runs_out() {
    let options = grace(Duration::from_secs(3));
    let (mut h, a, conn) = start(harness(254, options), 21);
    kill_edge(&mut h, 0, &[a]);
    assert!(h.run_while(Duration::from_secs(30), |h| h.server_gw.parked_flows() == 1));
    let parked_at = h.time;
    // another client id: a flow and a game-server connection of its own
    let t = token(&h, 1, 22, BACKEND, 2);
    let other = h.connect_player_at(1, &CH, Some(&t)).expect("connects");
    assert_ne!(h.players[other].game_conn, Some(conn));
    // the parked id, forged with another key: refused by edge B
    let forged = token(&h, 1, 21, [0x66; 32], 3);
    let f = h.add_player_at(1, &CH, Some(&forged));
    h.run_for(ms(500));
    let refused = h.players[f].events.iter().any(|(_, e)| {
        matches!(
            e,
            Event::Disconnected {
                reason: DisconnectReason::Refused(RefuseReason::InvalidToken)
            }
        )
    });
    assert!(refused);
    assert_eq!(h.server_gw.parked_flows(), 1);
    assert!(game_disconnects(&h, conn).is_empty());
    let s = h.server_gw.stats();
    assert_eq!((s.flows_resumed, s.flows_open), (0, 1));
    // the grace runs out: the game server reads that the trunk went down
    h.run_until(parked_at + Duration::from_secs(4));
    let gone = game_disconnects(&h, conn);
    assert!(
        matches!(&gone[..], [DisconnectReason::ClosedByPeer { code, .. }] if *code == close::TRUNK_DOWN),
        "{gone:?}"
    );
    assert_eq!(h.server_gw.stats().flows_resume_expired, 1);
    assert_eq!(h.server_gw.parked_flows(), 0);
    assert!((h.server_events.iter())
        .any(|e| matches!(e, GatewayEvent::FlowResumeExpired { client_id: 21, .. })));
    // coming back now is too late: a new game-server connection
    let t = token(&h, 1, 21, BACKEND, 4);
    let late = h.connect_player_at(1, &CH, Some(&t)).expect("connects");
    assert_ne!(h.players[late].game_conn, Some(conn));
}

/// With `resume_grace` zero nothing parks: the flow of a dead edge closes as before.
#[test]
fn no_grace_no_parking() {
    let options = grace(Duration::ZERO);
    let (mut h, a, conn) = start(harness(255, options), 31);
    kill_edge(&mut h, 0, &[a]);
    assert!(
        h.run_while(Duration::from_secs(30), |h| !game_disconnects(h, conn)
            .is_empty())
    );
    assert_eq!(h.server_gw.stats().flows_parked, 0);
}

/// The edge stays up but loses the player (its connection times out there): the edge's
/// FlowClose says so (`TIMED_OUT`), the flow parks, and the player coming back through the
/// other edge carries on.
#[test]
fn a_player_its_edge_lost_comes_back_through_another() {
    let (mut h, a, conn) = start(harness(256, TrunkOptions::default()), 41);
    let mut n = 0;
    traffic(&mut h, Some(a), a, &mut n, ms(200));
    h.players[a].up.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    h.players[a].down.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    assert!(h.run_while(Duration::from_secs(30), |h| h.server_gw.parked_flows() == 1));
    let peers: Vec<u64> = h.server_gw.trunks().iter().map(|t| t.peer).collect();
    assert_eq!(peers, [1, 2], "edge A's trunk is still up");
    let t = token(&h, 1, 41, BACKEND, 2);
    let (b, at) = come_back(&mut h, a, 1, &t);
    h.take_game_messages(a);
    traffic(&mut h, Some(b), a, &mut n, ms(500));
    let (up, down) = gaps(&mut h, a, b, at);
    assert!(up <= 2.0 && down <= 2.0, "up {up} down {down} RTTs");
    assert!(game_disconnects(&h, conn).is_empty());
    assert_eq!(h.server_gw.stats().flows_resumed, 1);
}

/// Parked flows count toward `max_flows`: while one is parked, another player is refused,
/// and the parked player can still come back.
#[test]
fn parked_flows_count_toward_max_flows() {
    let options = TrunkOptions {
        max_flows: 1,
        ..TrunkOptions::default()
    };
    let (mut h, a, _) = start(harness(257, options), 51);
    kill_edge(&mut h, 0, &[a]);
    assert!(h.run_while(Duration::from_secs(30), |h| h.server_gw.parked_flows() == 1));
    let t = token(&h, 1, 52, BACKEND, 2);
    let other = h.add_player_at(1, &CH, Some(&t));
    h.run_for(Duration::from_secs(1));
    let closed = h.players[other].events.iter().find_map(|(_, e)| match e {
        Event::Disconnected { reason } => Some(reason.clone()),
        _ => None,
    });
    assert!(
        matches!(closed, Some(DisconnectReason::ClosedByPeer { code, .. }) if code == close::GATEWAY_FULL),
        "{closed:?}"
    );
    let t = token(&h, 1, 51, BACKEND, 3);
    let (b, _) = come_back(&mut h, a, 1, &t);
    let mut n = 0;
    traffic(&mut h, Some(b), a, &mut n, ms(300));
    assert!(!h.take_game_messages(a).is_empty());
    assert_eq!(h.server_gw.stats().flows_resumed, 1);
}

/// A trunk outage long enough for both ends to give the trunk up: the edge closes its players
/// and dials again; the server gateway parks their flows. A player reconnecting through the
/// same edge once its trunk is back carries on: the game server sees no disconnect.
#[test]
fn a_trunk_outage_no_longer_disconnects_players_from_the_game_server() {
    let options = grace(Duration::from_secs(30));
    let (mut h, a, conn) = start(harness(258, options), 61);
    h.edges[0].trunk_up.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    h.edges[0].trunk_down.filter = Some(Box::new(|_, _, _| Verdict::Drop));
    let parked_and_closed = |h: &Harness| {
        h.server_gw.parked_flows() == 1
            && (h.players[a].events.iter()).any(|(_, e)| matches!(e, Event::Disconnected { .. }))
    };
    assert!(h.run_while(Duration::from_secs(30), parked_and_closed));
    h.edges[0].trunk_up.filter = None;
    h.edges[0].trunk_down.filter = None;
    let ups = |h: &Harness| {
        let up = |e: &&GatewayEvent| matches!(e, GatewayEvent::TrunkUp { .. });
        h.edges[0].events.iter().filter(up).count()
    };
    assert!(h.run_while(Duration::from_secs(20), |h| ups(h) == 2));
    let t = token(&h, 0, 61, BACKEND, 2);
    let (b, _) = come_back(&mut h, a, 0, &t);
    let mut n = 0;
    traffic(&mut h, Some(b), a, &mut n, ms(500));
    assert!(!h.take_game_messages(a).is_empty());
    assert!(!h.take_player_messages(b).is_empty());
    assert!(game_disconnects(&h, conn).is_empty());
    assert_eq!(h.server_gw.stats().flows_resumed, 1);
}

/// With loss on the trunks, a move keeps both directions in order and never delivers a
/// message of the old flow into the new one: what the game server received, before and
/// after the move, is strictly increasing (an old message retransmitted on edge A's trunk
/// after the move would come in late with a lower number).
#[test]
fn a_move_under_loss_delivers_nothing_stale_and_keeps_order() {
    let (mut h, a, conn) = start(lossy_harness(259, TrunkOptions::default(), 0.05), 71);
    let mut n = 0;
    traffic(&mut h, Some(a), a, &mut n, ms(1000));
    let t = token(&h, 1, 71, BACKEND, 2);
    let (b, at) = come_back(&mut h, a, 1, &t);
    traffic(&mut h, Some(b), a, &mut n, Duration::from_secs(2));
    h.run_for(Duration::from_secs(2));
    let (up, down) = gaps(&mut h, a, b, at);
    eprintln!(
        "moved under 5% trunk loss: to the game server {up:.2} RTT, to the player {down:.2} RTT"
    );
    assert!(game_disconnects(&h, conn).is_empty());
    assert_eq!(h.server_gw.stats().flows_resumed, 1);
}

/// The whole outage when the player's only detector is its own connection timing out: edge
/// A is killed, the player's connection to it times out (the idle timeout, 10 s), the player
/// connects to edge B at once. Delivery stops for the idle timeout plus a handshake and
/// about one round trip; the game server sees no disconnect.
#[test]
fn the_whole_outage_is_the_players_detection_plus_a_handshake() {
    let (mut h, a, conn) = start(harness(260, TrunkOptions::default()), 81);
    let mut n = 0;
    traffic(&mut h, Some(a), a, &mut n, ms(300));
    let killed = h.time;
    kill_edge(&mut h, 0, &[a]);
    let lost = |h: &Harness| {
        (h.players[a].events.iter()).any(|(_, e)| matches!(e, Event::Disconnected { .. }))
    };
    let end = h.time + Duration::from_secs(30);
    while !lost(&h) && h.time < end {
        traffic(&mut h, None, a, &mut n, TICK);
    }
    let detected = h.time.duration_since(killed);
    let t = token(&h, 1, 81, BACKEND, 2);
    let (b, at) = come_back(&mut h, a, 1, &t);
    h.take_game_messages(a);
    traffic(&mut h, Some(b), a, &mut n, ms(500));
    let (up, down) = gaps(&mut h, a, b, at);
    let handshake = at.duration_since(killed) - detected;
    let stop = |gap: f64| detected + handshake + RTT.mul_f64(gap);
    eprintln!(
        "whole outage: detected after {detected:?}, handshake {handshake:?}; delivery stopped {:?} toward the game server, {:?} toward the player",
        stop(up),
        stop(down)
    );
    assert!(up <= 2.0 && down <= 2.0, "up {up} down {down} RTTs");
    assert!(detected <= Duration::from_secs(11), "{detected:?}");
    assert!(game_disconnects(&h, conn).is_empty());
}
