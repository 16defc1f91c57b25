//! thinwire through multiplexing gateways as a real peer: the players' side of the emulated
//! network carries one trunk per edge gateway instead of one connection per player.
//!
//! ```text
//!  host k (netns), k = 1..=N: its clients ──► edge gateway k ══ trunk k over the emulated link ══╗
//!  host 0 (netns): server gateway (one trunk per edge) ──► the game server (an unmodified endpoint) ◄╝
//! ```
//!
//! N is the scenario's `gateway_edges` (default 1); client `c` runs on host `c % N + 1`
//! beside its edge, on a loopback address of its own (127.2.x.y, so that the edge's
//! per-source limits see one player per address, as on the Internet), which plays a LAN
//! with no loss; so the emulated links between the edges' hosts and
//! host 0 play the server's links, as the proxy of Griwodz & Halvorsen (NOSSDAV 2006) sits
//! near the players. Each edge holds its own trunk credential (peer id `k`) and the server
//! gateway admits exactly those peers. The game server lists the server gateway's address
//! in `trusted_sources`, its only change.
//!
//! Every player's connections arrive at the game server from the server gateway's one
//! address, in an order the edges do not control, so each client says who it is: right after
//! connecting it sends its index on one extra ReliableOrdered channel (the *hello* channel,
//! after the workload's channels), and the game server files each connection under the
//! client its hello names before the workload starts.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use super::book::{runtime, slot, Book, HostReport, Plan};
use super::thinwire::{config, report, send};
use crate::net::host_addr;
use thinwire_gateway::run::{fresh_nonce, EdgeProcess, Runner, ServerProcess, Stop};
use thinwire_gateway::trunk::{
    mint_trunk_credential, CredentialSpec, GatewayStats, TrunkCredential, TrunkOptions, TrunkPeer,
};
use thinwire_lab::protocol::{lab_server_key, ThinwireProtocol};
use thinwire_lab::workload::Direction;
use thinwire_proto::{ServerConfig, ServerKey, TokenKey};

const GAME_PORT: u16 = 7300;
const TRUNK_PORT: u16 = 7400;
const EDGE_PORT: u16 = 7500;
/// The trunk's period T (messages toward the trunk are held and sent together every T).
pub(crate) const PERIOD: Duration = Duration::from_millis(10);

fn gateway_key() -> ServerKey {
    ServerKey::generate([0x6a; 32])
}

/// The operator key of the emulated deployment (edge `k` on host `k` is peer `k`).
fn operator_key() -> TokenKey {
    TokenKey::new([0x6c; 32])
}

fn edge_name(peer: u64) -> String {
    format!("edge-{peer}")
}

/// Edge `peer`'s trunk credential, valid for a day of wall-clock time.
fn edge_credential(peer: u64) -> Result<TrunkCredential, String> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let expires = now.map_err(|e| e.to_string())?.as_secs() + 86_400;
    let gw = SocketAddr::from((host_addr(0), TRUNK_PORT));
    let key = gateway_key().public();
    mint_trunk_credential(
        &operator_key(),
        &CredentialSpec {
            peer_id: peer,
            name: &edge_name(peer),
            server_gateway_key: &key,
            addresses: &[gw],
            expires_unix_s: expires,
        },
        fresh_nonce(),
    )
    .map_err(|e| e.to_string())
}

/// Edge `peer`'s players key.
fn edge_key(peer: u64) -> ServerKey {
    let mut seed = [0x6b; 32];
    seed[..8].copy_from_slice(&peer.to_le_bytes());
    ServerKey::generate(seed)
}

fn options() -> TrunkOptions {
    TrunkOptions {
        period: PERIOD,
        ..TrunkOptions::default()
    }
}

/// The workload's channels and, after them, the hello channel; its index.
fn channels(t: ThinwireProtocol, plan: &Plan) -> (Vec<thinwire::ChannelKind>, u8) {
    let (mut kinds, _) = t.channels(&plan.classes);
    let hello = kinds.len() as u8;
    kinds.push(thinwire::ChannelKind::ReliableOrdered);
    (kinds, hello)
}

/// The gateway's counters for the results.
fn gateway_counters(s: &GatewayStats, report: &mut HostReport) {
    let held_us = s.held_delay_total.as_micros() as u64;
    super::book::merge_counters(
        &mut report.counters,
        &[
            ("gateway_flows", s.flows_total),
            ("gateway_trunk_packets_sent", s.trunk.packets_sent),
            ("gateway_trunk_bytes_sent", s.trunk.bytes_sent),
            ("gateway_held_messages", s.held_messages),
            ("gateway_held_delay_total_us", held_us),
            (
                "gateway_held_delay_max_us",
                s.held_delay_max.as_micros() as u64,
            ),
            ("gateway_dropped_messages", s.dropped_messages),
            ("gateway_flows_refused", s.flows_refused),
        ],
    );
}

/// Stamps the deliveries of the game server's connection `c`; its hello goes to `hellos`.
fn serve(
    c: thinwire::Connection,
    hello: u8,
    book: Arc<Book>,
    hellos: tokio::sync::mpsc::UnboundedSender<(usize, thinwire::Connection)>,
) {
    tokio::spawn(async move {
        while let Ok((_, m)) = c.recv().await {
            if m.channel != hello {
                book.delivered(&m.data);
            } else if let Ok(id) = <[u8; 8]>::try_from(&m.data[..]) {
                let _ = hellos.send((u64::from_le_bytes(id) as usize, c.clone()));
            }
        }
    });
}

/// Host 0: the game server and the server gateway.
async fn server_side(
    t: ThinwireProtocol,
    plan: Arc<Plan>,
    book: Arc<Book>,
) -> Result<HostReport, String> {
    let here = host_addr(0);
    let server_config = ServerConfig {
        key: Some(lab_server_key().clone()),
        trusted_sources: vec![here.into()],
        ..ServerConfig::default()
    };
    let game = thinwire::Endpoint::bind(
        SocketAddr::from((here, GAME_PORT)),
        config(t, true).with_server(server_config),
    )
    .map_err(|e| e.to_string())?;
    let peers = (1..=u64::from(plan.gateway_edges))
        .map(|k| TrunkPeer::new(k, &edge_name(k)))
        .collect();
    let gw = Runner::server(ServerProcess {
        listen: SocketAddr::from((here, TRUNK_PORT)),
        upstream_bind: SocketAddr::from((here, 0)),
        game_server: game.local_addr(),
        game_server_key: lab_server_key().public(),
        key: gateway_key(),
        operator_key: operator_key(),
        peers,
        options: options(),
        transport: t.transport(),
    })
    .await
    .map_err(|e| e.to_string())?;
    let (stop, rx) = Stop::new();
    let gw_task = tokio::spawn(gw.run(rx, None));
    let (_, hello) = channels(t, &plan);
    let (tx, mut hellos) = tokio::sync::mpsc::unbounded_channel();
    let book2 = book.clone();
    let mut conns: Vec<Option<thinwire::Connection>> = Vec::new();
    conns.resize_with(plan.clients as usize, || None);
    let accepting = game.clone();
    tokio::spawn(async move {
        while let Some(c) = accepting.accept().await {
            serve(c, hello, book2.clone(), tx.clone());
        }
    });
    let give_up = tokio::time::Instant::from_std(book.t0 + plan.end);
    for n in 0..plan.clients {
        let hello = tokio::time::timeout_at(give_up, hellos.recv()).await;
        let (id, c) = hello
            .map_err(|_| format!("only {n} of {} clients said hello", plan.clients))?
            .ok_or("no hello")?;
        let slot = conns.get_mut(id).ok_or("hello from an unknown client")?;
        if slot.replace(c).is_some() {
            return Err(format!("two connections say they are client {id}"));
        }
    }
    let out = run_plan(t, None, &plan, &book, &conns).await;
    stop.stop();
    let stats = gw_task.await.map_err(|e| e.to_string())?;
    let mut rep = out;
    gateway_counters(&stats.map_err(|e| e.to_string())?, &mut rep);
    game.close(0, b"done");
    Ok(rep)
}

/// Host `edge + 1`: edge gateway `edge + 1` and its clients (`c % edges == edge`).
async fn players_side(
    t: ThinwireProtocol,
    edge: u32,
    plan: Arc<Plan>,
    book: Arc<Book>,
) -> Result<HostReport, String> {
    let here = host_addr(edge as usize + 1);
    let peer = u64::from(edge) + 1;
    let gw = Runner::edge(EdgeProcess {
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, EDGE_PORT)),
        trunk_bind: SocketAddr::from((here, 0)),
        credential: edge_credential(peer)?,
        key: edge_key(peer),
        options: options(),
        transport: t.transport(),
        insecure_cleartext: t.insecure_cleartext,
    })
    .await
    .map_err(|e| e.to_string())?;
    let edge_addr = gw.local_addr().map_err(|e| e.to_string())?;
    let (stop, rx) = Stop::new();
    let edge_task = tokio::spawn(gw.run(rx, None));
    let (kinds, hello) = channels(t, &plan);
    wait_for_trunk(t, Ipv4Addr::new(127, 1, 0, 1), edge_addr, peer, &kinds).await?;
    let mut eps = Vec::new();
    let mut conns: Vec<Option<thinwire::Connection>> = Vec::new();
    conns.resize_with(plan.clients as usize, || None);
    let mine = |c: u32| c % plan.gateway_edges.max(1) == edge;
    for c in (0..plan.clients).filter(|&c| mine(c)) {
        let ep = thinwire::Endpoint::bind(SocketAddr::from((player_addr(c), 0)), config(t, false))
            .map_err(|e| e.to_string())?;
        let conn = ep
            .connect(edge_addr, edge_key(peer).public(), &kinds)
            .await
            .map_err(|e| e.to_string())?;
        let id = bytes::Bytes::copy_from_slice(&u64::from(c).to_le_bytes());
        conn.send(hello, id).map_err(|e| e.to_string())?;
        spawn_readers(std::slice::from_ref(&conn), &book);
        conns[c as usize] = Some(conn);
        eps.push(ep);
    }
    let out = run_plan(t, Some(&mine), &plan, &book, &conns).await;
    stop.stop();
    let stats = edge_task.await.map_err(|e| e.to_string())?;
    let mut rep = out;
    gateway_counters(&stats.map_err(|e| e.to_string())?, &mut rep);
    for ep in eps {
        ep.close(0, b"done");
    }
    Ok(rep)
}

/// Client `c`'s own loopback address on its edge's host (the probe uses 127.1.0.1): players
/// have addresses of their own, as on the Internet, so the edge's per-source limits (64
/// connections) see one player per source.
fn player_addr(c: u32) -> Ipv4Addr {
    let c = c.min(62_499);
    Ipv4Addr::new(127, 2, (c / 250) as u8, (c % 250 + 1) as u8)
}

/// Waits until edge `peer`'s trunk is up: until then the edge closes every player right
/// after its handshake (`TRUNK_DOWN`), so a probe player that stays connected for 300 ms
/// means it is. (The game server accepts the probe's flow too, which never says hello.)
async fn wait_for_trunk(
    t: ThinwireProtocol,
    here: Ipv4Addr,
    edge_addr: SocketAddr,
    peer: u64,
    kinds: &[thinwire::ChannelKind],
) -> Result<(), String> {
    let ep = thinwire::Endpoint::bind(SocketAddr::from((here, 0)), config(t, false))
        .map_err(|e| e.to_string())?;
    for _ in 0..100 {
        let conn = ep
            .connect(edge_addr, edge_key(peer).public(), kinds)
            .await
            .map_err(|e| e.to_string())?;
        match tokio::time::timeout(Duration::from_millis(300), conn.recv()).await {
            Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(200)).await,
            _ => {
                ep.close(0, b"probe");
                return Ok(());
            }
        }
    }
    Err("the trunk did not come up in 50 s".into())
}

/// Stamps deliveries on every connection.
fn spawn_readers(conns: &[thinwire::Connection], book: &Arc<Book>) {
    for c in conns {
        let (c, book) = (c.clone(), book.clone());
        tokio::spawn(async move {
            while let Ok((_, m)) = c.recv().await {
                book.delivered(&m.data);
            }
        });
    }
}

/// Sends this side's messages on time (the game server's, or with `players` the upstream
/// messages of the clients it accepts), then waits for the end of the plan.
async fn run_plan(
    t: ThinwireProtocol,
    players: Option<&dyn Fn(u32) -> bool>,
    plan: &Plan,
    book: &Arc<Book>,
    conns: &[Option<thinwire::Connection>],
) -> HostReport {
    let (_, per_class) = t.channels(&plan.classes);
    let ids: Vec<usize> = match players {
        None => plan.ids_of(None),
        Some(mine) => (0..plan.events.len())
            .filter(|&i| {
                let e = &plan.events[i];
                e.dir == Direction::Up && mine(e.client)
            })
            .collect(),
    };
    if std::time::Instant::now() > book.t0 {
        let late = std::time::Instant::now() - book.t0;
        eprintln!("thinwire-gateway: connections took {late:?} longer than the setup time");
    }
    for id in ids {
        let ev = plan.events[id];
        tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + ev.at)).await;
        let conn = match players {
            None => conns.get(slot(None, &ev)),
            Some(_) => conns.get(ev.client as usize),
        };
        if let Some(Some(c)) = conn {
            send(t, c, &per_class, id, &ev, book);
        }
    }
    tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + plan.end)).await;
    report(conns)
}

/// Runs one host of the gateway peer: host 0 the server side, host `k` (`client` `k - 1`)
/// edge `k` and its clients.
pub(crate) fn gateway_host(
    t: ThinwireProtocol,
    client: Option<u32>,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    let (plan, book) = (plan.clone(), book.clone());
    match client {
        None => runtime()?.block_on(server_side(t, plan, book)),
        Some(edge) if edge < plan.gateway_edges.max(1) => {
            let r = runtime()?.block_on(players_side(t, edge, plan, book));
            if let Err(e) = &r {
                eprintln!("thinwire-gateway: edge {}: {e}", edge + 1);
            }
            r
        }
        Some(_) => Ok(HostReport::default()),
    }
}
