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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::book::{runtime, slot, Book, HostReport, Plan};
use super::driver::Lanes;
use super::thinwire::{config, lanes, report};
use crate::net::host_addr;
use thinwire::SendMode;
use thinwire_gateway::run::{fresh_nonce, EdgeProcess, RunError, Runner, ServerProcess, Stop};
use thinwire_gateway::trunk::{
    mint_trunk_credential, CredentialSpec, GatewayStats, TrunkCredential, TrunkOptions, TrunkPeer,
};
use thinwire_lab::protocol::{lab_server_key, ThinwireProtocol};
use thinwire_lab::workload::{AppEvent, Direction};
use thinwire_peers::{send_on_connection, tagged};
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

/// A gateway's thread: its statistics and the CPU time it used (ms).
type GatewayThread = std::thread::JoinHandle<Result<(GatewayStats, u64), String>>;
/// Where a gateway's thread says it has bound its sockets (or why it could not).
type Ready = tokio::sync::oneshot::Sender<Result<(), String>>;

/// Runs a gateway on a thread of its own with its own runtime, as its own process would run
/// (a new thread stays in the calling thread's network namespace); returns once `body` has
/// told `Ready`.
async fn spawn_gateway<F, Fut>(name: String, body: F) -> Result<GatewayThread, String>
where
    F: FnOnce(Ready) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<GatewayStats, String>>,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let h = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let stats = runtime()?.block_on(body(tx))?;
            Ok((stats, thread_cpu_ms()))
        })
        .map_err(|e| e.to_string())?;
    rx.await
        .map_err(|_| "the gateway thread ended".to_string())??;
    Ok(h)
}

/// Tells `ready` whether the gateway's sockets are bound; passes the runner on.
fn announce<T>(r: Result<T, RunError>, ready: Ready) -> Result<T, String> {
    let r = r.map_err(|e| e.to_string());
    let _ = ready.send(r.as_ref().map(|_| ()).map_err(Clone::clone));
    r
}

/// CPU time (user + system, ms) the calling thread has used, from `/proc/thread-self/stat`
/// (0 where there is none).
fn thread_cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 (utime, stime) in ticks of 1/100 s; `after` starts at field 3.
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) * 10
}

/// Stamps deliveries and counts those that arrive on a ReliableOrdered channel with an id not
/// above the channel's last one (out of order, or twice: ids rise in sending order).
#[derive(Clone)]
struct Order {
    book: Arc<Book>,
    ordered: Arc<Vec<bool>>,
    faults: Arc<AtomicU64>,
}

impl Order {
    fn new(book: &Arc<Book>, kinds: &[thinwire::ChannelKind]) -> Self {
        let ordered = kinds
            .iter()
            .map(|&k| k == thinwire::ChannelKind::ReliableOrdered);
        Order {
            book: book.clone(),
            ordered: Arc::new(ordered.collect()),
            faults: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Stamps `m`, checking it against `last` (the last id of each channel).
    fn deliver(&self, last: &mut Vec<Option<u64>>, m: &thinwire::Message) {
        self.book.delivered(&m.data);
        let ch = usize::from(m.channel);
        let id = m.data.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok());
        let (Some(true), Some(id)) = (self.ordered.get(ch), id.map(u64::from_le_bytes)) else {
            return;
        };
        last.resize(last.len().max(ch + 1), None);
        if last[ch].is_some_and(|l| id <= l) {
            self.faults.fetch_add(1, Ordering::Relaxed);
        }
        last[ch] = Some(id);
    }

    fn faults(&self) -> u64 {
        self.faults.load(Ordering::Relaxed)
    }
}

/// Adds one side's counters once its gateway `gw` was told to stop: the gateway's, the CPU
/// time of its thread (`cpu.0`) and of this host's thread (`cpu.1`), and the order faults.
fn side_counters(
    rep: &mut HostReport,
    gw: GatewayThread,
    cpu: (&'static str, &'static str),
    order: &Order,
) -> Result<(), String> {
    let (stats, gw_cpu) = gw.join().map_err(|_| "gateway thread panicked")??;
    gateway_counters(&stats, rep);
    let counters = [
        (cpu.0, gw_cpu),
        (cpu.1, thread_cpu_ms()),
        ("messages_out_of_order", order.faults()),
    ];
    super::book::merge_counters(&mut rep.counters, &counters);
    Ok(())
}

/// Stamps the deliveries of the game server's connection `c`; its hello goes to `hellos`.
fn serve(
    c: thinwire::Connection,
    hello: u8,
    order: Order,
    hellos: tokio::sync::mpsc::UnboundedSender<(usize, thinwire::Connection)>,
) {
    tokio::spawn(async move {
        let mut last = Vec::new();
        while let Ok(m) = c.recv().await {
            if m.channel != hello {
                order.deliver(&mut last, &m);
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
    let process = ServerProcess {
        listen: SocketAddr::from((here, TRUNK_PORT)),
        upstream_bind: SocketAddr::from((here, 0)),
        game_server: game.local_addr(),
        game_server_key: lab_server_key().public(),
        key: gateway_key(),
        operator_key: operator_key(),
        peers,
        upstream_tokens: None,
        options: options(),
        transport: t.transport(),
    };
    let (stop, rx) = Stop::new();
    let gw = spawn_gateway("gw-server".into(), move |ready| async move {
        let runner = announce(Runner::server(process).await, ready)?;
        runner.run(rx, None).await.map_err(|e| e.to_string())
    })
    .await?;
    let (kinds, hello) = channels(t, &plan);
    let order = Order::new(&book, &kinds);
    let (tx, mut hellos) = tokio::sync::mpsc::unbounded_channel();
    let order2 = order.clone();
    let mut conns: Vec<Option<thinwire::Connection>> = Vec::new();
    conns.resize_with(plan.clients as usize, || None);
    let accepting = game.clone();
    tokio::spawn(async move {
        while let Some(c) = accepting.accept().await {
            serve(c, hello, order2.clone(), tx.clone());
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
    let mut rep = out;
    let cpu = ("cpu_ms_server_gateway", "cpu_ms_game_server");
    side_counters(&mut rep, gw, cpu, &order)?;
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
    let process = EdgeProcess {
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, EDGE_PORT)),
        trunk_bind: SocketAddr::from((here, 0)),
        credential: edge_credential(peer)?,
        server_gateway: None,
        players_tokens: None,
        key: edge_key(peer),
        options: options(),
        transport: t.transport(),
        insecure_cleartext: t.insecure_cleartext,
    };
    let edge_addr = process.listen;
    let (stop, rx) = Stop::new();
    let gw = spawn_gateway(format!("gw-edge-{peer}"), move |ready| async move {
        let runner = announce(Runner::edge(process).await, ready)?;
        runner.run(rx, None).await.map_err(|e| e.to_string())
    })
    .await?;
    let (kinds, hello) = channels(t, &plan);
    let order = Order::new(&book, &kinds);
    let mut eps = Vec::new();
    let mut conns: Vec<Option<thinwire::Connection>> = Vec::new();
    conns.resize_with(plan.clients as usize, || None);
    let mine = |c: u32| c % plan.gateway_edges.max(1) == edge;
    for c in (0..plan.clients).filter(|&c| mine(c)) {
        let settle = eps.is_empty().then_some(Duration::from_millis(300));
        let (ep, conn) = connect_player(t, player_addr(c), edge_addr, peer, &kinds, settle).await?;
        let id = bytes::Bytes::copy_from_slice(&u64::from(c).to_le_bytes());
        conn.send(hello, id, SendMode::Plain)
            .map_err(|e| e.to_string())?;
        spawn_reader(&conn, &order);
        conns[c as usize] = Some(conn);
        eps.push(ep);
    }
    let out = run_plan(t, Some(&mine), &plan, &book, &conns).await;
    stop.stop();
    let mut rep = out;
    side_counters(&mut rep, gw, ("cpu_ms_edges", "cpu_ms_players"), &order)?;
    for ep in eps {
        ep.close(0, b"done");
    }
    Ok(rep)
}

/// Client `c`'s own loopback address on its edge's host: players
/// have addresses of their own, as on the Internet, so the edge's per-source limits (64
/// connections) see one player per source.
fn player_addr(c: u32) -> Ipv4Addr {
    let c = c.min(62_499);
    Ipv4Addr::new(127, 2, (c / 250) as u8, (c % 250 + 1) as u8)
}

/// Connects a player from `bind` to edge `peer`. Until the edge's trunk is up, the edge
/// closes every player right after its handshake (`TRUNK_DOWN`); with `settle`, the player
/// waits that long for such a close and connects again (at most 100 times), so that the
/// first player of each edge waits for its trunk.
async fn connect_player(
    t: ThinwireProtocol,
    bind: Ipv4Addr,
    edge_addr: SocketAddr,
    peer: u64,
    kinds: &[thinwire::ChannelKind],
    settle: Option<Duration>,
) -> Result<(thinwire::Endpoint, thinwire::Connection), String> {
    let ep = thinwire::Endpoint::bind(SocketAddr::from((bind, 0)), config(t, false))
        .map_err(|e| e.to_string())?;
    for _ in 0..100 {
        let conn = ep
            .connect(edge_addr, edge_key(peer).public(), kinds)
            .await
            .map_err(|e| e.to_string())?;
        let Some(settle) = settle else {
            return Ok((ep, conn));
        };
        match tokio::time::timeout(settle, conn.recv()).await {
            Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(200)).await,
            _ => return Ok((ep, conn)),
        }
    }
    Err(format!("the trunk of edge {peer} did not come up"))
}

/// Stamps (and checks the order of) the deliveries of a client's connection `c`.
fn spawn_reader(c: &thinwire::Connection, order: &Order) {
    let (c, order) = (c.clone(), order.clone());
    tokio::spawn(async move {
        let mut last = Vec::new();
        while let Ok(m) = c.recv().await {
            order.deliver(&mut last, &m);
        }
    });
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
    let lanes = lanes(t, &plan.classes);
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
        tracing::warn!(
            ?late,
            "gateway peer: connections took longer than the setup time"
        );
    }
    for id in ids {
        let ev = plan.events[id];
        tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + ev.at)).await;
        let conn = match players {
            None => conns.get(slot(None, &ev)),
            Some(_) => conns.get(ev.client as usize),
        };
        if let Some(Some(c)) = conn {
            send(c, &lanes, id, &ev, book);
        }
    }
    tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + plan.end)).await;
    let stats: Vec<_> = conns.iter().flatten().filter_map(|c| c.stats()).collect();
    report(&stats)
}

/// Sends message `id` (event `ev`) on `c` as the driver would on a blocking host; a
/// refused message is lost.
fn send(c: &thinwire::Connection, lanes: &Lanes, id: usize, ev: &AppEvent, book: &Book) {
    book.sent(id);
    let data = tagged(ev.msg.size as usize, id as u64);
    let (channel, msg) = lanes.message(ev, &data);
    let kind = lanes.channels.get(usize::from(channel)).copied();
    let _ = send_on_connection(c, kind, channel, msg);
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
                tracing::warn!(edge = edge + 1, error = %e, "gateway peer: edge failed");
            }
            r
        }
        Some(_) => Ok(HostReport::default()),
    }
}
