//! One mode at one loss rate: the network built, the workload driven through it, the
//! counters read.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thinwire_proto::{Endpoint, EndpointConfig, PublicKey, ServerConfig, TransportConfig};

use super::gateways::{self, EdgeNode, ServerGwNode};
use super::ledger::{Ledger, Workload};
use super::net::{Ev, Net, Node, Site};
use super::nodes::{GameServer, Player, Trouble};
use super::results::{AoModeResult, ByteBreakdown, PayloadCount, TrunkSummary};
use super::AoOptions;
use thinwire_gateway::trunk::TrunkOptions;

/// Which way the players reach the game server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// One thinwire connection per player across the server's link.
    Direct,
    /// Players → edge gateway → one trunk across the server's link → server gateway → one
    /// connection per player to the game server.
    Multiplexed,
}

/// Time every player has to connect and log in before the workload starts (not counted).
pub(super) const WARMUP: Duration = Duration::from_secs(5);
/// Longest the run goes on after the workload's end for the last deliveries.
const DRAIN: Duration = Duration::from_secs(60);
/// The player-side LAN between the edge gateway and the players.
const LAN_DELAY: Duration = Duration::ZERO;
/// Seed tags: the links, and the endpoints (index: node).
const LINK_TAG: u64 = 0x414f_4c4e;
const ENDPOINT_TAG: u64 = 0x414f_4550;

/// The game server's node (always the first).
const SERVER_NODE: usize = 0;

fn v4(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(a, b, c, d), port))
}

/// The game server.
fn server_addr() -> SocketAddr {
    v4(10, 0, 0, 1, 4433)
}

/// The player of `flow`.
fn player_addr(flow: usize) -> SocketAddr {
    let [_, b, c, d] = (flow as u32).to_be_bytes();
    v4(10, 1 + b, c, d, 5000)
}

/// The server gateway's sockets: toward the game server, and the trunk.
fn server_gw_addrs() -> (SocketAddr, SocketAddr) {
    (v4(10, 0, 0, 2, 4500), v4(10, 0, 0, 2, 4600))
}

/// The edge gateway's sockets: toward the players, and the trunk.
fn edge_addrs() -> (SocketAddr, SocketAddr) {
    (v4(10, 200, 0, 1, 4433), v4(10, 200, 0, 1, 4600))
}

/// The configuration of endpoint `index` of run seed `seed`: thinwire's defaults.
fn endpoint_config(seed: u64, index: u64) -> EndpointConfig {
    let s = crate::seed::derive(seed, ENDPOINT_TAG, index);
    EndpointConfig::new(crate::seed::bytes32(s, crate::seed::THINWIRE_KEY))
}

/// A server configuration for `flows` connections, lifting the per-source limits for
/// `trusted`.
fn server_config(flows: usize, trusted: Option<IpAddr>) -> ServerConfig {
    ServerConfig {
        max_connections: flows.saturating_mul(2).max(16),
        max_stateless_queue: flows.max(1024),
        trusted_sources: trusted.into_iter().collect(),
        ..ServerConfig::default()
    }
}

fn game_server(opts: &AoOptions, now: Instant, trusted: Option<IpAddr>) -> GameServer {
    let ep = Endpoint::new(
        endpoint_config(opts.seed, 0),
        Some(server_config(opts.flows, trusted)),
        now,
    )
    .expect("the default thinwire configuration is valid");
    GameServer::new(ep, opts.flows)
}

fn add_players(net: &mut Net, opts: &AoOptions, now: Instant, to: (SocketAddr, PublicKey)) {
    for f in 0..opts.flows {
        let ep = Endpoint::new(endpoint_config(opts.seed, 1 + f as u64), None, now)
            .expect("the default thinwire configuration is valid");
        let p = Player::new(ep, f, now, to.0, to.1);
        net.add(Node::Player(p), Site::Players, &[player_addr(f)]);
    }
}

/// The direct mode's network at `now`: the game server and the players.
fn direct(opts: &AoOptions, loss: f64, now: Instant) -> Net {
    let seed = crate::seed::derive(opts.seed, LINK_TAG, 0);
    let mut net = Net::new(&opts.wan(loss), LAN_DELAY, seed, Ledger::new(opts.flows));
    let server = game_server(opts, now, None);
    let key = server.ep.public_key().expect("a server has a key");
    net.add(Node::Server(server), Site::Server, &[server_addr()]);
    add_players(&mut net, opts, now, (server_addr(), key));
    net
}

/// The multiplexed mode's network at `now`: the game server, the two gateways, the players.
fn multiplexed(opts: &AoOptions, loss: f64, now: Instant) -> Net {
    let seed = crate::seed::derive(opts.seed, LINK_TAG, 1);
    let mut net = Net::new(&opts.wan(loss), LAN_DELAY, seed, Ledger::new(opts.flows));
    let (sg_up, sg_trunk) = server_gw_addrs();
    let server = game_server(opts, now, Some(sg_up.ip()));
    let server_key = server.ep.public_key().expect("a server has a key");
    net.add(Node::Server(server), Site::Server, &[server_addr()]);
    let base = 1 + opts.flows as u64;
    let trunk_options = TrunkOptions {
        period: opts.period,
        paired_acks: opts.paired_acks,
        ..TrunkOptions::default()
    };
    let trunk_transport = Arc::new(trunk_options.transport(&TransportConfig::default()));
    let sg = ServerGwNode::new(
        now,
        gateways::ServerGwSetup {
            opts,
            trunk: endpoint_config(opts.seed, base),
            trunk_transport: trunk_transport.clone(),
            upstream: endpoint_config(opts.seed, base + 1),
            game_server: (server_addr(), server_key),
            addrs: (sg_up, sg_trunk),
        },
    );
    let sg_key = sg.trunk_public_key();
    net.add(
        Node::ServerGw(Box::new(sg)),
        Site::Server,
        &[sg_up, sg_trunk],
    );
    let (edge_players, edge_trunk) = edge_addrs();
    let edge = EdgeNode::new(
        now,
        gateways::EdgeSetup {
            opts,
            players: endpoint_config(opts.seed, base + 2),
            players_server: server_config(opts.flows, None),
            trunk: endpoint_config(opts.seed, base + 3),
            trunk_transport,
            server_gateway: (sg_trunk, sg_key),
            addrs: (edge_players, edge_trunk),
        },
    );
    let key = edge.players_public_key();
    net.add(
        Node::Edge(Box::new(edge)),
        Site::Players,
        &[edge_players, edge_trunk],
    );
    add_players(&mut net, opts, now, (edge_players, key));
    net
}

/// Payload counters of the connections crossing the server's link in `mode`.
fn wan_payload(net: &Net, mode: Mode) -> PayloadCount {
    let mut total = PayloadCount::default();
    for n in net.nodes() {
        match (n, mode) {
            (Node::Server(s), Mode::Direct) => s.payload(&mut total),
            (Node::Player(p), Mode::Direct) => p.payload(&mut total),
            (Node::Edge(e), Mode::Multiplexed) => e.payload(&mut total),
            (Node::ServerGw(g), Mode::Multiplexed) => g.payload(&mut total),
            _ => {}
        }
    }
    total
}

/// Runs `mode` at `loss`.
pub(super) fn run_mode(opts: &AoOptions, loss: f64, mode: Mode) -> AoModeResult {
    let base = Instant::now();
    let start = base + WARMUP;
    let end = start + opts.duration;
    let mut net = match mode {
        Mode::Direct => direct(opts, loss, base),
        Mode::Multiplexed => multiplexed(opts, loss, base),
    };
    net.measure_from = start;
    let n_nodes = net.nodes().count();
    for n in 0..n_nodes {
        net.service(base, n);
    }
    let mut wl = Workload::new(opts.seed, opts.flows, opts.sessions(start));
    for f in 0..opts.flows {
        if let Some(at) = wl.first(f) {
            net.push(at, Ev::App(f));
        }
    }
    let mut before: Option<(PayloadCount, Trouble, bool)> = None;
    let mut last = start;
    while let Some((now, ev)) = net.pop() {
        if now > end + DRAIN {
            break;
        }
        if before.is_none() && now >= start {
            let ready = matches!(net.node(SERVER_NODE), Node::Server(s) if s.all_logged_in());
            before = Some((wan_payload(&net, mode), trouble(&net).0, ready));
        }
        last = now;
        match ev {
            Ev::App(f) => {
                let (size, next) = wl.next(f, now);
                let data = net.ledger.send(f, size, now);
                if let Node::Server(s) = net.node_mut(SERVER_NODE) {
                    s.send(now, f, data);
                }
                net.service(now, SERVER_NODE);
                if let Some(next) = next.filter(|&n| n < end) {
                    net.push(next, Ev::App(f));
                }
            }
            ev => net.handle(now, ev),
        }
        if now >= end && net.ledger.delivered() == net.ledger.sent() {
            break;
        }
    }
    let (before, trouble, ready) = before.unwrap_or_default();
    let since = Since {
        payload: wan_payload(&net, mode).since(before),
        trouble,
        ready,
    };
    let hold = match mode {
        Mode::Direct => Duration::ZERO,
        Mode::Multiplexed => opts.period,
    };
    let late = net.ledger.late(opts.delay, hold);
    AoModeResult {
        late,
        ..finish(net, since, last - start)
    }
}

/// The trouble counters of every endpoint of `net` so far, and the trunk's summary (multiplexed).
fn trouble(net: &Net) -> (Trouble, Option<TrunkSummary>) {
    let mut trouble = Trouble::default();
    let mut trunk = None;
    for n in net.nodes() {
        let t = match n {
            Node::Server(s) => s.trouble,
            Node::Player(p) => p.trouble,
            Node::Edge(e) => e.trouble(),
            Node::ServerGw(g) => {
                trunk = Some(g.trunk_summary());
                g.trouble()
            }
        };
        trouble.disconnects += t.disconnects;
        trouble.refused_sends += t.refused_sends;
    }
    (trouble, trunk)
}

/// What was counted from the start of the measurement (`before`, taken then) to the end.
struct Since {
    payload: PayloadCount,
    trouble: Trouble,
    ready: bool,
}

fn finish(mut net: Net, since: Since, simulated: Duration) -> AoModeResult {
    net.wan.finish();
    let (all, trunk) = trouble(&net);
    let trouble = Trouble {
        disconnects: all.disconnects - since.trouble.disconnects,
        refused_sends: all.refused_sends - since.trouble.refused_sends,
    };
    let (payload, ready) = (since.payload, since.ready);
    let l = &net.ledger;
    AoModeResult {
        wan: net.wan,
        breakdown: ByteBreakdown::of(&net.wan, l.payload_bytes(), payload),
        all_ready_at_start: ready,
        disconnects: trouble.disconnects,
        refused_sends: trouble.refused_sends,
        unroutable: net.unroutable,
        simulated_s: simulated.as_secs_f64(),
        trunk,
        ..l.result()
    }
}
