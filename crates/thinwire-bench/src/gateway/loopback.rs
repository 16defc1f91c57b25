//! The same path over loopback UDP, as `thinwire gateway` runs it: the edge and the server
//! gateway are the `run` processes, each on its own thread (a current-thread tokio runtime,
//! its sockets and their system calls included); the game server is a thinwire host on a
//! third thread, the players thinwire hosts on a fourth, from four loopback addresses (a
//! source's connection limit is 64), sending bursts as fast as their send windows allow.
//! Each gateway's report callback runs on its own thread and reads that thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) with its message counter.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire::{ChannelKind, Config, Host, HostEvent, PublicKey, SendMode, ServerConfig};
use thinwire_gateway::run::{expires_in, fresh_nonce, EdgeProcess, Report, Runner, ServerProcess};
use thinwire_gateway::trunk::{GatewayStats, TrunkOptions};
use thinwire_proto::{ServerKey, TransportConfig};

use super::{admission, edge_credential};
use crate::runner::Ctx;
use crate::sys::thread_cpu;

/// Loopback addresses the players come from.
const SOURCES: u8 = 4;

/// (thread CPU, messages, messages dropped and flows overflowed) as a gateway's report saw
/// them.
type Probe = Arc<Mutex<Vec<(Duration, u64, u64)>>>;

fn probe_report(probe: &Probe, count: fn(&GatewayStats) -> u64) -> Report {
    let probe = probe.clone();
    let f = move |s: &GatewayStats| {
        let mut p = probe.lock().unwrap_or_else(PoisonError::into_inner);
        p.push((
            thread_cpu(),
            count(s),
            s.dropped_messages + s.flows_overflowed,
        ));
    };
    (Duration::from_millis(50), Box::new(f))
}

/// Messages per CPU second between two marks of a probe (of gateway `who`).
fn rate(who: &str, probe: &Probe, from: usize) -> Result<f64, String> {
    let p = probe.lock().unwrap_or_else(PoisonError::into_inner);
    let (Some(a), Some(b)) = (p.get(from), p.last()) else {
        return Err("a gateway did not report".into());
    };
    let cpu = b.0.saturating_sub(a.0).as_secs_f64();
    if b.1 <= a.1 || cpu <= 0.0 {
        return Err(format!("no messages relayed ({} → {})", a.1, b.1));
    }
    if b.2 > 0 {
        return Err(format!(
            "{who}: {} messages dropped or flows overflowed ({} before the measurement)",
            b.2, a.2
        ));
    }
    Ok((b.1 - a.1) as f64 / cpu)
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// Runs a gateway process (`start`) on a thread of its own, on a current-thread runtime.
fn spawn<F, Fut>(name: &str, start: F) -> Result<thread::JoinHandle<Result<(), String>>, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let t = thread::Builder::new().name(name.into());
    t.spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(start())
    })
    .map_err(|e| e.to_string())
}

/// Stops the game server's thread when dropped (on every way out of [`measure`]).
struct Done(Arc<AtomicBool>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The result of one run: each gateway's messages per CPU second.
pub(super) struct Sampled {
    pub(super) edge: f64,
    pub(super) server: f64,
}

/// One run over loopback, `players` sending `hz` messages per second each: a load the
/// gateways carry without queueing (a flow whose backlog overflows is closed, which would
/// measure something else; a run where a message is dropped fails).
pub(super) fn measure(
    ctx: &Ctx,
    period: Duration,
    players: usize,
    hz: f64,
) -> Result<Sampled, String> {
    let done = Done(Arc::new(AtomicBool::new(false)));
    // the game server
    // the server gateway's relayed connections all come from 127.0.0.1: a trusted source
    // (as a deployment lists its server gateway), not one of 64 connections per source
    let server_cfg = ServerConfig {
        max_connections: players + 16,
        trusted_sources: vec![Ipv4Addr::LOCALHOST.into()],
        max_connections_per_source: usize::MAX,
        ..ServerConfig::default()
    };
    let mut game = Host::bind(local(0), Config::server().with_server(server_cfg))
        .map_err(|e| format!("game server: {e}"))?;
    let (game_addr, game_key) = (game.local_addr(), game.public_key().ok_or("no key")?);
    let d = done.0.clone();
    let game_thread = thread::spawn(move || {
        while !d.load(Ordering::Relaxed) {
            while let Ok(Some(_)) = game.service(Duration::from_millis(1)) {}
        }
    });
    let options = TrunkOptions {
        period,
        ..TrunkOptions::default()
    };
    let seed = |n: u8| ServerKey::generate([n; 32]);
    let (tx, rx) = mpsc::channel::<(SocketAddr, PublicKey)>();
    let (server_probe, edge_probe) = (Probe::default(), Probe::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (operator_key, peers) = admission();
    let p = ServerProcess {
        listen: local(0),
        upstream_bind: local(0),
        game_server: game_addr,
        game_server_key: game_key,
        key: seed(11),
        operator_key,
        peers,
        upstream_tokens: None,
        options: options.clone(),
        transport: TransportConfig::default(),
    };
    let report = probe_report(&server_probe, |s| s.messages_from_trunk);
    let (stx, srx) = (tx.clone(), stop_rx.clone());
    let server = spawn("tw-server-gw", move || async move {
        let r = Runner::server(p).await.map_err(|e| e.to_string())?;
        let _ = stx.send((r.trunk_addr().map_err(|e| e.to_string())?, r.public_key()));
        r.run(srx, Some(report)).await.map_err(|e| e.to_string())?;
        Ok(())
    })?;
    let (trunk, trunk_key) = rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| "server gateway did not start")?;
    let p = EdgeProcess {
        listen: local(0),
        trunk_bind: local(0),
        credential: edge_credential(
            (trunk, &trunk_key),
            expires_in(Duration::from_secs(86_400)),
            fresh_nonce(),
        )?,
        server_gateway: None,
        players_tokens: None,
        key: seed(12),
        options,
        transport: TransportConfig::default(),
        insecure_cleartext: false,
    };
    let report = probe_report(&edge_probe, |s| s.messages_to_trunk);
    let erx = stop_rx.clone();
    let edge = spawn("tw-edge", move || async move {
        let r = Runner::edge(p).await.map_err(|e| e.to_string())?;
        let _ = tx.send((r.local_addr().map_err(|e| e.to_string())?, r.public_key()));
        r.run(erx, Some(report)).await.map_err(|e| e.to_string())?;
        Ok(())
    })?;
    let (edge_addr, edge_key) = rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| "edge did not start")?;
    let probes = (&edge_probe, &server_probe);
    let result = drive_players(ctx, (players, hz), edge_addr, edge_key, probes);
    let _ = stop_tx.send(true);
    drop(done);
    let _ = game_thread.join();
    for t in [server, edge] {
        t.join().map_err(|_| "a gateway thread panicked")??;
    }
    result
}

/// The players' hosts and connections, sending `hz` messages per second each.
struct Players {
    hosts: Vec<Host>,
    conns: Vec<(usize, thinwire::ConnectionHandle)>,
    payload: Bytes,
    hz: f64,
    connected: usize,
    /// Messages sent since `paced`.
    sent: u64,
    next: usize,
}

impl Players {
    /// One turn: take the events, send what is due since `paced` (if sending), flush.
    fn turn(&mut self, paced: Option<Instant>) {
        for h in &mut self.hosts {
            while let Ok(Some(ev)) = h.service(Duration::ZERO) {
                if matches!(ev, HostEvent::Connected { .. }) {
                    self.connected += 1;
                }
            }
        }
        let rate = self.hz * self.conns.len() as f64;
        let due = paced.map_or(0, |t| (t.elapsed().as_secs_f64() * rate) as u64);
        while self.sent < due {
            let (h, c) = self.conns[self.next];
            self.next = (self.next + 1) % self.conns.len();
            if self.hosts[h]
                .send(c, 0, self.payload.clone(), SendMode::Plain)
                .is_err()
            {
                break;
            }
            self.sent += 1;
        }
        for h in &mut self.hosts {
            let _ = h.flush();
        }
        thread::sleep(Duration::from_micros(200));
    }
}

/// Connects a player through the edge, again every 50 ms while it is turned away (its
/// trunk is not up yet), for at most 30 s.
fn connect_first(
    host: &mut Host,
    edge: SocketAddr,
    key: PublicKey,
) -> Result<thinwire::ConnectionHandle, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let c = host
            .connect(edge, key, &[ChannelKind::ReliableOrdered])
            .map_err(|e| e.to_string())?;
        loop {
            match host.service(Duration::from_millis(5)) {
                Ok(Some(HostEvent::Connected { conn, .. })) if conn == c => return Ok(c),
                Ok(Some(HostEvent::Disconnected { conn, .. })) if conn == c => break,
                Ok(_) if Instant::now() < deadline => {}
                Ok(_) => return Err("the first player did not connect".into()),
                Err(e) => return Err(e.to_string()),
            }
        }
        thread::sleep(Duration::from_millis(50));
    }
    Err("the first player did not connect".into())
}

/// The players: connect, warm up, then send for `ctx.seconds`; the gateways' rates.
fn drive_players(
    ctx: &Ctx,
    (players, hz): (usize, f64),
    edge: SocketAddr,
    key: PublicKey,
    (edge_probe, server_probe): (&Probe, &Probe),
) -> Result<Sampled, String> {
    let mut p = Players {
        hosts: Vec::new(),
        conns: Vec::new(),
        payload: Bytes::from(vec![7u8; 40]),
        hz,
        connected: 0,
        sent: 0,
        next: 0,
    };
    for s in 0..SOURCES {
        let at = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 2 + s), 0));
        p.hosts
            .push(Host::bind(at, Config::client()).map_err(|e| format!("player host: {e}"))?);
    }
    // players that arrive before the trunk is up are turned away: one connects (again)
    // until the path works, then the others
    let first = connect_first(&mut p.hosts[0], edge, key)?;
    p.conns.push((0, first));
    p.connected = 1;
    for i in 1..players {
        let h = i % usize::from(SOURCES);
        let c = p.hosts[h]
            .connect(edge, key, &[ChannelKind::ReliableOrdered])
            .map_err(|e| e.to_string())?;
        p.conns.push((h, c));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.connected < players {
        if Instant::now() > deadline {
            return Err(format!("{} of {players} players connected", p.connected));
        }
        p.turn(None);
    }
    let start = Instant::now();
    while start.elapsed() < ctx.warmup {
        p.turn(Some(start));
    }
    let len = |p: &Probe| p.lock().unwrap_or_else(PoisonError::into_inner).len();
    let (e0, s0) = (len(edge_probe), len(server_probe));
    let t0 = Instant::now();
    while t0.elapsed() < ctx.seconds {
        p.turn(Some(start));
    }
    Ok(Sampled {
        edge: rate("edge", edge_probe, e0)?,
        server: rate("server gateway", server_probe, s0)?,
    })
}
