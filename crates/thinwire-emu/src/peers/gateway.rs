//! thinwire through a multiplexing gateway pair as a real peer: the players' side of the
//! emulated network carries one trunk instead of one connection per player.
//!
//! ```text
//!  host 1 (netns): every client ──► edge gateway ══ trunk over the emulated link ══►
//!  host 0 (netns): server gateway ──► the game server (an unmodified thinwire endpoint)
//! ```
//!
//! Hosts 2.. stay idle: all players run on host 1 beside the edge (a LAN with no loss), so
//! the emulated link between hosts 1 and 0 plays the server's link, as the proxy of
//! Griwodz & Halvorsen (NOSSDAV 2006) sits near the players. The game server lists the
//! server gateway's address in `trusted_sources`, its only change. The server gateway opens
//! the players' connections in the order the players connected (they connect one after
//! another, and host 0's loopback loses nothing), so the server's n-th accepted connection
//! is client n.

use std::net::SocketAddr;
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
use thinwire_proto::{ServerConfig, ServerKey, TokenKey};

const GAME_PORT: u16 = 7300;
const TRUNK_PORT: u16 = 7400;
const EDGE_PORT: u16 = 7500;
/// The trunk's period T (messages toward the trunk are held and sent together every T).
pub(crate) const PERIOD: Duration = Duration::from_millis(10);

fn gateway_key() -> ServerKey {
    ServerKey::generate([0x6a; 32])
}

/// The operator key of the emulated deployment (the edge is peer 1).
fn operator_key() -> TokenKey {
    TokenKey::new([0x6c; 32])
}

/// The edge's trunk credential, valid for a day of wall-clock time.
fn edge_credential() -> Result<TrunkCredential, String> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let expires = now.map_err(|e| e.to_string())?.as_secs() + 86_400;
    let gw = SocketAddr::from((host_addr(0), TRUNK_PORT));
    let key = gateway_key().public();
    mint_trunk_credential(
        &operator_key(),
        &CredentialSpec {
            peer_id: 1,
            name: "edge",
            server_gateway_key: &key,
            addresses: &[gw],
            expires_unix_s: expires,
        },
        fresh_nonce(),
    )
    .map_err(|e| e.to_string())
}

fn edge_key() -> ServerKey {
    ServerKey::generate([0x6b; 32])
}

fn options() -> TrunkOptions {
    TrunkOptions {
        period: PERIOD,
        ..TrunkOptions::default()
    }
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
        ],
    );
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
    let gw = Runner::server(ServerProcess {
        listen: SocketAddr::from((here, TRUNK_PORT)),
        upstream_bind: SocketAddr::from((here, 0)),
        game_server: game.local_addr(),
        game_server_key: lab_server_key().public(),
        key: gateway_key(),
        operator_key: operator_key(),
        peers: vec![TrunkPeer::new(1, "edge")],
        upstream_tokens: None,
        options: options(),
        transport: t.transport(),
    })
    .await
    .map_err(|e| e.to_string())?;
    let (stop, rx) = Stop::new();
    let gw_task = tokio::spawn(gw.run(rx, None));
    let mut conns = Vec::new();
    for _ in 0..plan.clients {
        conns.push(Some(game.accept().await.ok_or("endpoint closed")?));
    }
    let out = run_plan(t, None, &plan, &book, &conns).await;
    stop.stop();
    let stats = gw_task.await.map_err(|e| e.to_string())?;
    let mut rep = out;
    gateway_counters(&stats.map_err(|e| e.to_string())?, &mut rep);
    game.close(0, b"done");
    Ok(rep)
}

/// Host 1: the edge gateway and every client.
async fn players_side(
    t: ThinwireProtocol,
    plan: Arc<Plan>,
    book: Arc<Book>,
) -> Result<HostReport, String> {
    let here = host_addr(1);
    let edge = Runner::edge(EdgeProcess {
        listen: SocketAddr::from((here, EDGE_PORT)),
        trunk_bind: SocketAddr::from((here, 0)),
        credential: edge_credential()?,
        server_gateway: None,
        players_tokens: None,
        key: edge_key(),
        options: options(),
        transport: t.transport(),
        insecure_cleartext: t.insecure_cleartext,
    })
    .await
    .map_err(|e| e.to_string())?;
    let edge_addr = edge.local_addr().map_err(|e| e.to_string())?;
    let (stop, rx) = Stop::new();
    let edge_task = tokio::spawn(edge.run(rx, None));
    let (kinds, _) = t.channels(&plan.classes);
    let mut eps = Vec::new();
    let mut conns = Vec::new();
    for _ in 0..plan.clients {
        let ep = thinwire::Endpoint::bind(SocketAddr::from((here, 0)), config(t, false))
            .map_err(|e| e.to_string())?;
        let conn = ep
            .connect(edge_addr, edge_key().public(), &kinds)
            .await
            .map_err(|e| e.to_string())?;
        conns.push(Some(conn));
        eps.push(ep);
    }
    let out = run_plan(t, Some(()), &plan, &book, &conns).await;
    stop.stop();
    let stats = edge_task.await.map_err(|e| e.to_string())?;
    let mut rep = out;
    gateway_counters(&stats.map_err(|e| e.to_string())?, &mut rep);
    for ep in eps {
        ep.close(0, b"done");
    }
    Ok(rep)
}

/// Stamps deliveries on every connection, sends this side's messages on time (the players'
/// side: every client's upstream messages), then waits for the end of the plan.
async fn run_plan(
    t: ThinwireProtocol,
    players: Option<()>,
    plan: &Plan,
    book: &Arc<Book>,
    conns: &[Option<thinwire::Connection>],
) -> HostReport {
    for c in conns.iter().flatten() {
        let (c, book) = (c.clone(), book.clone());
        tokio::spawn(async move {
            while let Ok((_, m)) = c.recv().await {
                book.delivered(&m.data);
            }
        });
    }
    let (_, per_class) = t.channels(&plan.classes);
    let mut ids: Vec<usize> = match players {
        None => plan.ids_of(None),
        Some(()) => (0..plan.clients)
            .flat_map(|c| plan.ids_of(Some(c)))
            .collect(),
    };
    ids.sort_by_key(|&id| plan.events[id].at);
    for id in ids {
        let ev = plan.events[id];
        tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + ev.at)).await;
        let conn = match players {
            None => conns.get(slot(None, &ev)),
            Some(()) => conns.get(ev.client as usize),
        };
        if let Some(Some(c)) = conn {
            send(t, c, &per_class, id, &ev, book);
        }
    }
    tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + plan.end)).await;
    report(conns)
}

/// Runs one host of the gateway peer: host 0 the server side, host 1 the players' side,
/// others nothing.
pub(crate) fn gateway_host(
    t: ThinwireProtocol,
    client: Option<u32>,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    let (plan, book) = (plan.clone(), book.clone());
    match client {
        None => runtime()?.block_on(server_side(t, plan, book)),
        Some(0) => runtime()?.block_on(players_side(t, plan, book)),
        Some(_) => Ok(HostReport::default()),
    }
}
