//! A flood of valid-cookie Connects over real UDP on loopback (`docs/PROTOCOL.md` §5.6, §11):
//! 49 attacker sources (127.0.0.2 to 127.0.0.50, each a socket of its own, receiving its
//! Challenges like any client) ask for cookies and spend each on Connects carrying random
//! bytes as Noise message 1, and resend old cookies, for a bounded time and count, while an
//! established client exchanges messages and five new clients, each from an address of its
//! own, connect.
//!
//! What is asserted can fail but does not depend on timing: the server read no more Noise
//! messages than its budget allows in the time it ran, the flood wanted more than that, every
//! honest client connected, every echo came back. The established client's round-trip times
//! during the flood are printed, not asserted.
//!
//! A second test runs a shorter flood against the blocking `Host`, which reads handshakes in
//! its turns the same way; a third checks that a client over the per-source cap is told why
//! it was refused.
//!
//! For measurements, three environment variables change the flood (the defaults are what CI
//! runs): `THINWIRE_FLOOD_SOURCES` (attacker sources from 127.0.0.2 on, default 49),
//! `THINWIRE_FLOOD_SECS` (default 5) and `THINWIRE_FLOOD_DEFAULTS=1` (the server's default
//! budgets instead of a read budget of 200 a second and 1000 Connects a second per source).
#![cfg(target_os = "linux")]

mod common;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{key, server_with, within};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use thinwire::proto::wire::{ConnectionId, LongPacket, VERSION};
use thinwire::proto::EndpointStats;
use thinwire::{
    ChannelKind, Config, ConnectError, DisconnectReason, Endpoint, Host, HostEvent, RefuseReason,
    SendMode, ServerConfig,
};

/// Noise reads the server may do per second: low, so that the flood is well above it.
const BUDGET: u32 = 200;
/// Most datagrams of the flood per second.
const MAX_FLOOD_RATE: u64 = 80_000;

/// The flood: its sources and length.
#[derive(Debug, Clone, Copy)]
struct Flood {
    sources: u8,
    length: Duration,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Flood {
    fn from_env() -> Self {
        Self {
            sources: env_or("THINWIRE_FLOOD_SOURCES", 49u8).clamp(1, 250),
            length: Duration::from_secs(env_or("THINWIRE_FLOOD_SECS", 5u64).clamp(1, 60)),
        }
    }
}
/// Each source asks for a cookie this often, and spends it on this many Connects.
const HELLO_EVERY: Duration = Duration::from_millis(10);
const CONNECTS_PER_COOKIE: usize = 3;
/// Cookies a source keeps to send again (about 0.6 s of them).
const REUSE_AFTER: usize = 60;
const CHANNELS: [ChannelKind; 1] = [ChannelKind::ReliableOrdered];

/// An attacker's address: 127.0.0.`last`.
fn attacker(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, last)
}

/// A player's address: 127.0.1.`last`, apart from every attacker.
fn player(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 1, last)
}

fn hello(cid: ConnectionId, nonce: u64) -> Vec<u8> {
    let mut out = Vec::new();
    LongPacket::Hello {
        version: VERSION,
        src_cid: cid,
        instance: 1,
        nonce,
    }
    .encode(&mut out);
    out
}

fn garbage_connect(
    cid: ConnectionId,
    nonce: u64,
    cookie: &[u8],
    rng: &mut impl RngCore,
) -> Vec<u8> {
    let mut handshake = vec![0u8; 72];
    rng.fill_bytes(&mut handshake);
    let mut out = Vec::new();
    LongPacket::Connect {
        version: VERSION,
        src_cid: cid,
        instance: 1,
        nonce,
        cookie: cookie.to_vec(),
        handshake,
    }
    .encode(&mut out);
    out
}

/// One attacker source.
struct Source {
    socket: UdpSocket,
    nonce: u64,
    cookies: std::collections::VecDeque<(ConnectionId, u64, Vec<u8>)>,
}

/// The flood, on one thread until its length has passed, `stop` is set or `MAX_FLOOD_RATE`
/// datagrams a second went out. Returns the datagrams sent.
fn flood(server: SocketAddr, f: Flood, stop: Arc<AtomicBool>) -> u64 {
    let mut rng = StdRng::seed_from_u64(7);
    let most = MAX_FLOOD_RATE * f.length.as_secs();
    let mut sources: Vec<Source> = (2..2 + f.sources)
        .map(|i| {
            let socket = UdpSocket::bind((attacker(i), 0)).expect("bind a loopback source");
            socket.set_nonblocking(true).expect("non-blocking");
            Source {
                socket,
                nonce: u64::from(i) << 32,
                cookies: Default::default(),
            }
        })
        .collect();
    let start = Instant::now();
    let mut next_hello = start;
    let mut sent = 0u64;
    let mut buf = [0u8; 2048];
    while start.elapsed() < f.length && !stop.load(Ordering::Relaxed) && sent < most {
        let hellos = Instant::now() >= next_hello;
        if hellos {
            next_hello += HELLO_EVERY;
        }
        for s in &mut sources {
            if hellos {
                s.nonce += 1;
                let cid = ConnectionId::new(&s.nonce.to_be_bytes()).expect("8 bytes");
                sent += u64::from(s.socket.send_to(&hello(cid, s.nonce), server).is_ok());
                if s.cookies.len() >= REUSE_AFTER {
                    let (cid, nonce, cookie) = s.cookies.pop_front().expect("a cookie");
                    let d = garbage_connect(cid, nonce, &cookie, &mut rng);
                    sent += u64::from(s.socket.send_to(&d, server).is_ok());
                }
            }
            while let Ok(n) = s.socket.recv(&mut buf) {
                if let Ok(LongPacket::Challenge {
                    dst_cid,
                    nonce,
                    cookie,
                    ..
                }) = LongPacket::decode(&buf[..n])
                {
                    for _ in 0..CONNECTS_PER_COOKIE {
                        let d = garbage_connect(dst_cid, nonce, &cookie, &mut rng);
                        sent += u64::from(s.socket.send_to(&d, server).is_ok());
                    }
                    s.cookies.push_back((dst_cid, nonce, cookie));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    sent
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_flood_is_read_within_budget_and_everyone_gets_through() {
    let f = Flood::from_env();
    let limits = if env_or("THINWIRE_FLOOD_DEFAULTS", 0u8) == 1 {
        ServerConfig::default()
    } else {
        over_budget()
    };
    let budget = limits.handshake_reads_per_second;
    let above = limits.handshakes_per_second_per_source > budget;
    let started = Instant::now();
    let server = server_with(limits);
    let addr = server.local_addr();
    let server_key = key(&server);
    let srv = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = srv.accept().await {
            tokio::spawn(async move {
                while let Ok(m) = conn.recv().await {
                    if conn.send(m.channel, m.data, SendMode::Plain).is_err() {
                        break;
                    }
                }
            });
        }
    });

    // the established player, before the flood
    let established = Endpoint::bind((player(100), 0).into(), Config::client()).unwrap();
    let conn = within(
        5,
        "established player",
        established.connect(addr, server_key, &CHANNELS),
    )
    .await
    .expect("connects");

    let stop = Arc::new(AtomicBool::new(false));
    let flooder = {
        let stop = stop.clone();
        std::thread::spawn(move || flood(addr, f, stop))
    };

    // five new players, from addresses of their own, during the flood
    let newcomers = tokio::spawn(async move {
        let mut took = Vec::new();
        for i in 0..5u8 {
            tokio::time::sleep(f.length / 7).await;
            let ep = Endpoint::bind((player(101 + i), 0).into(), Config::client()).unwrap();
            let t = Instant::now();
            let r = within(10, "new player", ep.connect(addr, server_key, &CHANNELS)).await;
            took.push((t.elapsed(), r.map(|_| ()).map_err(|e| e.to_string())));
        }
        took
    });

    // the established player's round trips meanwhile
    let mut rtts = Vec::new();
    let flood_end = Instant::now() + f.length;
    let mut seq = 0u64;
    while Instant::now() < flood_end {
        seq += 1;
        let t = Instant::now();
        conn.send(
            0,
            Bytes::copy_from_slice(&seq.to_be_bytes()),
            SendMode::Plain,
        )
        .expect("send");
        let m = within(10, "echo", conn.recv()).await.expect("echo");
        assert_eq!(
            &m.data[..],
            &seq.to_be_bytes(),
            "echoes in order, nothing else"
        );
        rtts.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let sent = flooder.join().expect("flooder");
    let took = within(60, "new players", newcomers).await.expect("task");
    let elapsed = started.elapsed();
    let stats = server.stats().protocol;

    rtts.sort();
    eprintln!(
        "established player during the flood: {} round trips, p50 {:?}, p99 {:?}, max {:?}",
        rtts.len(),
        percentile(&rtts, 0.5),
        percentile(&rtts, 0.99),
        rtts.last().copied().unwrap_or_default()
    );
    eprintln!(
        "flood: {sent} datagrams from {} sources in {:?}",
        f.sources, f.length
    );
    eprintln!("new players: {took:?}");
    eprintln!("server: {stats:?}");

    for (i, (_, r)) in took.iter().enumerate() {
        assert!(r.is_ok(), "new player {i}: {r:?}");
    }
    assert_reads_within(&stats, budget, elapsed, above);
    assert_eq!(stats.connections_accepted, 6, "the flood got no connection");
}

/// The server's configuration for the flood tests: a read budget of [`BUDGET`], and a
/// Connect budget per source well above it, so that the global budget is what is tested.
fn over_budget() -> ServerConfig {
    ServerConfig {
        handshake_reads_per_second: BUDGET,
        handshakes_per_second_per_source: 1000,
        ..ServerConfig::default()
    }
}

/// Checks that the server read no more Noise messages than `budget` allows in `elapsed` (a
/// quarter second's burst, then `budget` a second, in whole milliseconds), and, when the
/// flood was above the budget, that it wanted more reads than it got.
fn assert_reads_within(stats: &EndpointStats, budget: u32, elapsed: Duration, above: bool) {
    let bound = u64::from(budget / 4) + u64::from(budget) * (elapsed.as_millis() as u64 + 1) / 1000;
    assert!(
        stats.handshakes_attempted <= bound,
        "{} reads in {elapsed:?}, budget {bound}",
        stats.handshakes_attempted
    );
    assert!(
        !above
            || stats.handshakes_queued + stats.dropped_handshake_queue > stats.handshakes_attempted,
        "the flood wanted more reads than it got"
    );
}

/// The blocking [`Host`] reads handshakes in its turns the same way: a Host server under a
/// two-second flood from 20 sources reads within its budget, and a Host client gets in.
#[test]
fn a_host_server_under_a_flood_reads_within_budget_and_lets_a_client_in() {
    let started = Instant::now();
    let mut server = Host::bind(
        "127.0.0.1:0".parse().unwrap(),
        Config::server().with_server(over_budget()),
    )
    .unwrap();
    let (addr, server_key) = (server.local_addr(), server.public_key().expect("key"));
    let stop = Arc::new(AtomicBool::new(false));
    let f = Flood {
        sources: 20,
        length: Duration::from_secs(2),
    };
    let flooder = {
        let stop = stop.clone();
        std::thread::spawn(move || flood(addr, f, stop))
    };
    let serving = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                server.service(Duration::from_millis(5)).expect("service");
            }
            server.stats()
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let mut client = Host::bind((player(130), 0).into(), Config::client()).unwrap();
    let t = Instant::now();
    client.connect(addr, server_key, &CHANNELS).expect("start");
    let mut outcome = None;
    while outcome.is_none() && t.elapsed() < Duration::from_secs(10) {
        match client.service(Duration::from_millis(10)).expect("service") {
            Some(HostEvent::Connected { .. }) => outcome = Some(Ok(t.elapsed())),
            Some(HostEvent::Disconnected { reason, .. }) => outcome = Some(Err(reason)),
            _ => {}
        }
    }
    let sent = flooder.join().expect("flooder");
    stop.store(true, Ordering::Relaxed);
    let stats = serving.join().expect("server").protocol;
    let elapsed = started.elapsed();
    eprintln!("Host server: flood of {sent} datagrams; client: {outcome:?}; {stats:?}");
    assert!(matches!(outcome, Some(Ok(_))), "{outcome:?}");
    assert_reads_within(&stats, BUDGET, elapsed, true);
}

/// A client over `max_connections_per_source` learns why: `ConnectError::Handshake` with
/// `Refused(TooManyFromSource)`, whose text says it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_the_source_cap_is_told_why() {
    let limits = ServerConfig {
        max_connections_per_source: 1,
        ..ServerConfig::default()
    };
    let server = server_with(limits);
    let (addr, server_key) = (server.local_addr(), key(&server));
    let client = Endpoint::bind((player(120), 0).into(), Config::client()).unwrap();
    let _first = within(5, "first", client.connect(addr, server_key, &CHANNELS))
        .await
        .expect("the first connects");
    let other = Endpoint::bind((player(120), 0).into(), Config::client()).unwrap();
    let err = within(5, "second", other.connect(addr, server_key, &CHANNELS))
        .await
        .expect_err("the second is refused");
    assert!(
        matches!(
            err,
            ConnectError::Handshake(DisconnectReason::Refused(RefuseReason::TooManyFromSource))
        ),
        "{err:?}"
    );
    let text = err.to_string();
    eprintln!("the client sees: {text}");
    assert!(
        text.contains("too many connections from this address"),
        "{text}"
    );
}
