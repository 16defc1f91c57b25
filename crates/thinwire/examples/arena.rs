//! A small MMORPG arena on loopback: one server and N bot clients in one process.
//!
//! Each bot sends about 8 messages a second of 23-27 bytes in the published MMORPG mix:
//! 84% moves (LatestReliable, keyed by the bot's entity), 12% attacks (ReliableUnordered,
//! relayed to the target) and 4% chat (ReliableOrdered, relayed to everyone). Every 200 ms the
//! server fans the latest position of every entity out to every client. Every few seconds the
//! program prints the one-way latency of each class (p50/p99/max): `up` is bot → server, `down`
//! is server → bot. With `--loss` every bot's endpoint drops that share of datagrams each way
//! (runtime fault injection).
//!
//! ```text
//! cargo run --release -p thinwire --example arena -- --clients 50 --seconds 20 --loss 0.02
//! ```

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use hdrhistogram::Histogram;
use rand::Rng;
use thinwire::{
    ChannelKind, Config, Connection, ConnectionHandle, Endpoint, FaultConfig, PublicKey, SendMode,
    ServerConfig,
};

/// Channel 0: moves / positions, 1: attacks, 2: chat.
const CHANNELS: [ChannelKind; 3] = [
    ChannelKind::LatestReliable,
    ChannelKind::ReliableUnordered,
    ChannelKind::ReliableOrdered,
];
const CLASSES: [&str; 6] = [
    "up move",
    "up attack",
    "up chat",
    "down state",
    "down attack",
    "down chat",
];

#[derive(Parser, Debug)]
#[command(about = "thinwire arena: server + bot clients on loopback, per-class latency")]
struct Args {
    /// Number of bot clients (each with its own socket).
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// How long the bots play.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Datagram loss probability injected on every bot's endpoint, each way.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Messages per second per bot.
    #[arg(long, default_value_t = 8.0)]
    rate: f64,
    /// Seconds between latency reports.
    #[arg(long, default_value_t = 3)]
    report_every: u64,
    /// Fan-out period of the server, in milliseconds.
    #[arg(long, default_value_t = 200)]
    tick_ms: u64,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_us() -> u64 {
    epoch().elapsed().as_micros() as u64
}

/// A 23-27 byte message: send time (µs), entity, target, then filler.
fn payload(rng: &mut impl Rng, entity: u32, target: u32) -> Vec<u8> {
    let len = rng.random_range(23..=27);
    let mut p = vec![0u8; len];
    p[..8].copy_from_slice(&now_us().to_be_bytes());
    p[8..12].copy_from_slice(&entity.to_be_bytes());
    p[12..16].copy_from_slice(&target.to_be_bytes());
    rng.fill(&mut p[16..]);
    p
}

fn restamp(p: &[u8]) -> Bytes {
    let mut v = p.to_vec();
    if v.len() >= 8 {
        v[..8].copy_from_slice(&now_us().to_be_bytes());
    }
    Bytes::from(v)
}

fn field(p: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(p.get(at..at + 4)?.try_into().ok()?))
}

fn latency_us(p: &[u8]) -> Option<u64> {
    let sent = u64::from_be_bytes(p.get(..8)?.try_into().ok()?);
    Some(now_us().saturating_sub(sent).max(1))
}

struct Stats {
    interval: Vec<Histogram<u64>>,
    total: Vec<Histogram<u64>>,
    sent: [u64; 3],
}

impl Stats {
    fn new() -> Self {
        let h = || Histogram::new_with_bounds(1, 120_000_000, 3).expect("valid bounds");
        Self {
            interval: (0..6).map(|_| h()).collect(),
            total: (0..6).map(|_| h()).collect(),
            sent: [0; 3],
        }
    }

    fn record(&mut self, class: usize, us: u64) {
        let _ = self.interval[class].record(us);
        let _ = self.total[class].record(us);
    }
}

type Shared = Arc<Mutex<Stats>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Stats> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

fn print_table(title: &str, hists: &[Histogram<u64>]) {
    println!("{title}");
    println!(
        "  {:<12} {:>8} {:>9} {:>9} {:>9}",
        "class", "count", "p50 ms", "p99 ms", "max ms"
    );
    for (name, h) in CLASSES.iter().zip(hists) {
        if h.is_empty() {
            println!("  {name:<12} {:>8}", 0);
            continue;
        }
        let ms = |v: u64| v as f64 / 1000.0;
        println!(
            "  {name:<12} {:>8} {:>9.2} {:>9.2} {:>9.2}",
            h.len(),
            ms(h.value_at_quantile(0.5)),
            ms(h.value_at_quantile(0.99)),
            ms(h.max())
        );
    }
}

type Clients = Arc<Mutex<HashMap<ConnectionHandle, (u32, Connection)>>>;
type World = Arc<Mutex<HashMap<u32, Vec<u8>>>>;

async fn server_conn(conn: Connection, clients: Clients, world: World, stats: Shared) {
    let mut entity = None;
    while let Ok(m) = conn.recv().await {
        let (ch, data) = (m.channel, &m.data[..]);
        if let Some(us) = latency_us(data) {
            lock(&stats).record(ch as usize, us);
        }
        let Some(from) = field(data, 8) else { continue };
        if entity.is_none() {
            entity = Some(from);
            clients
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(conn.handle(), (from, conn.clone()));
        }
        match ch {
            0 => {
                world
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(from, data.to_vec());
            }
            1 => {
                let target = field(data, 12);
                let out = restamp(data);
                let cl = clients.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((_, c)) = cl.values().find(|(e, _)| Some(*e) == target) {
                    let _ = c.send(1, out, SendMode::Plain);
                }
            }
            _ => {
                let out = restamp(data);
                let cl = clients.lock().unwrap_or_else(|e| e.into_inner());
                for (h, (_, c)) in cl.iter() {
                    if *h != conn.handle() {
                        let _ = c.send(2, out.clone(), SendMode::Plain);
                    }
                }
            }
        }
    }
    clients
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&conn.handle());
}

async fn fan_out(clients: Clients, world: World, tick: Duration) {
    let mut interval = tokio::time::interval(tick);
    loop {
        interval.tick().await;
        let snapshot: Vec<(u32, Bytes)> = world
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(e, p)| (*e, restamp(p)))
            .collect();
        let targets: Vec<(u32, Connection)> = clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for (me, conn) in targets {
            for (e, p) in &snapshot {
                if *e != me {
                    let _ = conn.send(0, p.clone(), SendMode::Latest { key: u64::from(*e) });
                }
            }
        }
    }
}

async fn bot(
    id: u32,
    n: u32,
    (server, key): (SocketAddr, PublicKey),
    args: Arc<Args>,
    stats: Shared,
) -> Result<(), String> {
    let mut config = Config::client();
    if args.loss > 0.0 {
        config = config.with_faults(FaultConfig::new().drop_rate(args.loss));
    }
    let ep = Endpoint::bind("127.0.0.1:0".parse().map_err(|e| format!("{e}"))?, config)
        .map_err(|e| e.to_string())?;
    let conn = ep
        .connect(server, key, &CHANNELS)
        .await
        .map_err(|e| e.to_string())?;
    let receiver = {
        let (conn, stats) = (conn.clone(), stats.clone());
        tokio::spawn(async move {
            while let Ok(m) = conn.recv().await {
                if let Some(us) = latency_us(&m.data) {
                    lock(&stats).record(3 + m.channel as usize, us);
                }
            }
        })
    };
    let end = Instant::now() + Duration::from_secs(args.seconds);
    let mean = 1.0 / args.rate.max(0.01);
    // the first message is a move, so the server learns the entity at once
    let mut first = true;
    while Instant::now() < end {
        let (class, target) = {
            let mut rng = rand::rng();
            let r: f64 = rng.random();
            let class = if first || r < 0.84 {
                0
            } else if r < 0.96 {
                1
            } else {
                2
            };
            (class, rng.random_range(0..n.max(1)))
        };
        first = false;
        let p = payload(&mut rand::rng(), id, target);
        let r = match class {
            0 => conn.send(0, p, SendMode::Latest { key: u64::from(id) }),
            c => conn.send(c, p, SendMode::Plain),
        };
        match r {
            Ok(()) => lock(&stats).sent[class as usize] += 1,
            Err(e) => return Err(format!("bot {id}: {e}")),
        }
        let gap = mean * rand::rng().random_range(0.5..1.5);
        tokio::time::sleep(Duration::from_secs_f64(gap)).await;
    }
    conn.close(0, b"game over");
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
    receiver.abort();
    Ok(())
}

/// Prints the interval table every `every` until aborted.
async fn report_every(stats: Shared, every: Duration) {
    let start = Instant::now();
    loop {
        tokio::time::sleep(every).await;
        let mut s = lock(&stats);
        print_table(
            &format!(
                "-- t = {:.0} s (last {:?})",
                start.elapsed().as_secs_f64(),
                every
            ),
            &s.interval,
        );
        for h in &mut s.interval {
            h.reset();
        }
    }
}

/// The whole run's table, the message mix and the server's counters.
fn print_summary(s: &Stats, server: &Endpoint) {
    print_table("== whole run", &s.total);
    let sent: u64 = s.sent.iter().sum();
    let pct = |v: u64| 100.0 * v as f64 / sent.max(1) as f64;
    println!(
        "bots sent {sent} messages: {:.1}% moves, {:.1}% attacks, {:.1}% chat",
        pct(s.sent[0]),
        pct(s.sent[1]),
        pct(s.sent[2])
    );
    let st = server.stats();
    println!(
        "server: {} datagrams in, {} out, {} recv calls, {} send calls, drops: malformed {}, unknown connection {}",
        st.io.datagrams_received,
        st.io.datagrams_sent,
        st.io.recv_calls,
        st.io.send_calls,
        st.protocol.dropped_malformed,
        st.protocol.dropped_unknown_connection
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Arc::new(Args::parse());
    epoch();
    // Every bot connects from 127.0.0.1, which the server counts as one source: lift the
    // per-source limits (64 connections, 32 Connects a second) meant for the Internet.
    let server_config = ServerConfig {
        max_connections_per_source: usize::MAX,
        handshakes_per_second_per_source: 100_000,
        ..ServerConfig::default()
    };
    let server = Endpoint::bind(
        "127.0.0.1:0".parse()?,
        Config::server().with_server(server_config),
    )?;
    let addr = server.local_addr();
    let key = server.public_key().ok_or("a server has a key")?;
    println!(
        "arena: server {addr}, {} bots for {} s at {} msg/s, loss {:.1}% each way on the bots",
        args.clients,
        args.seconds,
        args.rate,
        args.loss * 100.0
    );
    let stats: Shared = Arc::new(Mutex::new(Stats::new()));
    let clients: Clients = Arc::default();
    let world: World = Arc::default();

    {
        let (server, clients, world, stats) = (
            server.clone(),
            clients.clone(),
            world.clone(),
            stats.clone(),
        );
        tokio::spawn(async move {
            while let Some(conn) = server.accept().await {
                tokio::spawn(server_conn(
                    conn,
                    clients.clone(),
                    world.clone(),
                    stats.clone(),
                ));
            }
        });
    }
    let fan = tokio::spawn(fan_out(
        clients.clone(),
        world.clone(),
        Duration::from_millis(args.tick_ms),
    ));
    let reporter = tokio::spawn(report_every(
        stats.clone(),
        Duration::from_secs(args.report_every.max(1)),
    ));

    let n = args.clients as u32;
    let mut bots = Vec::new();
    for id in 0..n {
        bots.push(tokio::spawn(bot(
            id,
            n,
            (addr, key),
            args.clone(),
            stats.clone(),
        )));
        // stagger the joins a little, like players arriving
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut failed = 0;
    for b in bots {
        match b.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                failed += 1;
                eprintln!("{e}");
            }
            Err(e) => {
                failed += 1;
                eprintln!("bot task: {e}");
            }
        }
    }
    fan.abort();
    reporter.abort();
    let _ = tokio::time::timeout(Duration::from_secs(3), server.wait_idle()).await;

    print_summary(&lock(&stats), &server);
    if failed > 0 {
        return Err(format!("{failed} bots failed").into());
    }
    Ok(())
}
