//! Loopback benchmark of the runtime: round-trip time and messages per second with one server
//! and 1 or 100 clients (each client on its own socket), and memory per idle connection.
//!
//! ```text
//! cargo run --release -p thinwire --example bench
//! cargo run --release -p thinwire --example bench -- --seconds 5 --idle 5000
//! cargo run --release -p thinwire --example bench -- --insecure-cleartext   # encryption's cost
//! ```
//!
//! * round trip: every client sends a 32-byte message on a ReliableOrdered channel and waits
//!   for the echo before sending the next, back to back (a saturation test: with 100 clients
//!   the round trip is mostly queueing for the two cores) and paced at one every 50 ms (a game's
//!   thin stream);
//! * throughput: every client sends 32-byte messages as fast as the connection accepts them
//!   (backing off when the send window is full); the server counts what it delivers;
//! * memory: a child process opens `--idle` connections to a server in this process; the
//!   server's resident set grows by the per-connection cost (core state, runtime slot, maps).

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use thinwire::proto::SendError as CoreSendError;
use thinwire::{ChannelKind, Config, Endpoint, PublicKey, SendError, ServerConfig};

/// The server's address and public key.
type Server = (SocketAddr, PublicKey);

const CHANNELS: [ChannelKind; 3] = [
    ChannelKind::ReliableOrdered,
    ChannelKind::ReliableUnordered,
    ChannelKind::Unreliable,
];

#[derive(Parser, Debug)]
#[command(about = "thinwire loopback benchmark")]
struct Args {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Idle connections opened for the memory measurement (0 skips it).
    #[arg(long, default_value_t = 2000)]
    idle: usize,
    /// Both ends use the INSECURE cleartext opt-out (to measure what encryption costs).
    #[arg(long)]
    insecure_cleartext: bool,
    /// Internal: run as the connecting child of the memory measurement.
    #[arg(long, hide = true, num_args = 3, value_names = ["SERVER", "KEY", "N"])]
    connector: Option<Vec<String>>,
}

/// Whether every endpoint of this run uses the insecure cleartext opt-out.
static CLEARTEXT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A configuration with this run's security setting.
fn with_security(config: Config) -> Config {
    if CLEARTEXT.load(Ordering::Relaxed) {
        config.insecure_cleartext()
    } else {
        config
    }
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A server endpoint on loopback. Every client connects from 127.0.0.1, which the server counts
/// as one source: the per-source limits meant for the Internet (64 connections, 32 Connects a
/// second) are lifted.
fn bind_server() -> Result<(Endpoint, Server), Box<dyn std::error::Error>> {
    let config = ServerConfig {
        max_connections_per_source: usize::MAX,
        handshakes_per_second_per_source: 100_000,
        ..ServerConfig::default()
    };
    let ep = Endpoint::bind(
        "127.0.0.1:0".parse()?,
        with_security(Config::server().with_server(config)),
    )?;
    let key = ep.public_key().ok_or("a server has a key")?;
    let addr = ep.local_addr();
    Ok((ep, (addr, key)))
}

async fn echo_server(server: Endpoint, delivered: Arc<AtomicU64>) {
    while let Some(conn) = server.accept().await {
        let delivered = delivered.clone();
        tokio::spawn(async move {
            while let Ok((ch, m)) = conn.recv().await {
                if ch == 0 {
                    let _ = conn.send(0, m.data);
                } else {
                    delivered.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

async fn clients(n: usize, (server, key): Server) -> Vec<(Endpoint, thinwire::Connection)> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        tasks.push(tokio::spawn(async move {
            let ep = Endpoint::bind(
                "127.0.0.1:0".parse().expect("addr"),
                with_security(Config::client()),
            )
            .expect("bind");
            let conn = ep.connect(server, key, &CHANNELS).await.expect("connect");
            (ep, conn)
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("client task"));
    }
    out
}

async fn round_trips(
    n: usize,
    server: Server,
    secs: u64,
    gap: Option<Duration>,
) -> (Histogram<u64>, f64) {
    let cl = clients(n, server).await;
    let epoch = Instant::now();
    let end = epoch + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    let n = cl.len() as u32;
    for (i, (ep, conn)) in cl.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
            let mut payload = [0u8; 32];
            if let Some(gap) = gap {
                // paced clients start spread over one period, as players' ticks are
                tokio::time::sleep(gap * i as u32 / n).await;
            }
            while Instant::now() < end {
                let t0 = Instant::now();
                payload[..8]
                    .copy_from_slice(&(t0.duration_since(epoch).as_nanos() as u64).to_be_bytes());
                if conn.send(0, payload.to_vec()).is_err() {
                    break;
                }
                if conn.recv().await.is_err() {
                    break;
                }
                let _ = h.record((t0.elapsed().as_micros() as u64).max(1));
                if let Some(gap) = gap {
                    tokio::time::sleep(gap).await;
                }
            }
            conn.close(0, b"");
            let _ = conn.closed().await;
            drop(ep);
            h
        }));
    }
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    for t in tasks {
        let _ = all.add(t.await.expect("rtt task"));
    }
    let rate = all.len() as f64 / secs as f64;
    (all, rate)
}

async fn throughput(
    n: usize,
    server: Server,
    secs: u64,
    channel: u8,
    delivered: &AtomicU64,
) -> f64 {
    let cl = clients(n, server).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for (ep, conn) in cl {
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let payload = bytes::Bytes::from_static(&[7u8; 32]);
            let mut burst = 0;
            while !stop.load(Ordering::Relaxed) {
                match conn.send(channel, payload.clone()) {
                    Ok(()) => {
                        burst += 1;
                        if burst == 64 {
                            burst = 0;
                            tokio::task::yield_now().await;
                        }
                    }
                    Err(SendError::Rejected(CoreSendError::BufferFull)) => {
                        tokio::time::sleep(Duration::from_micros(500)).await;
                    }
                    Err(_) => break,
                }
            }
            conn.close(0, b"");
            let _ = tokio::time::timeout(Duration::from_secs(10), conn.closed()).await;
            drop(ep);
        }));
    }
    // measure after a short warm-up
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c0 = delivered.load(Ordering::Relaxed);
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let got = delivered.load(Ordering::Relaxed) - c0;
    let rate = got as f64 / t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    rate
}

async fn connector((server, key): Server, n: usize) {
    let before = rss_kib();
    let ep = Endpoint::bind(
        "127.0.0.1:0".parse().expect("addr"),
        with_security(Config::client()),
    )
    .expect("bind");
    let mut conns = Vec::with_capacity(n);
    for chunk in 0..n.div_ceil(100) {
        let mut tasks = Vec::new();
        for _ in 0..100.min(n - chunk * 100) {
            let ep = ep.clone();
            tasks.push(tokio::spawn(async move {
                ep.connect(server, key, &CHANNELS).await
            }));
        }
        for t in tasks {
            conns.push(t.await.expect("task").expect("connect"));
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    println!("CLIENT {n} {before} {after}");
    // stay connected until the parent has measured (it closes our stdin)
    let mut line = String::new();
    let _ = tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut line)).await;
    ep.close(0, b"measured");
    let _ = tokio::time::timeout(Duration::from_secs(5), ep.wait_idle()).await;
    drop(conns);
}

async fn idle_memory(n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let (server, (addr, key)) = bind_server()?;
    let accepted = Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let (server, accepted) = (server.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Some(c) = server.accept().await {
                accepted.lock().unwrap_or_else(|e| e.into_inner()).push(c);
            }
        });
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss_kib();
    let mut child = Command::new(std::env::current_exe()?);
    if CLEARTEXT.load(Ordering::Relaxed) {
        child.arg("--insecure-cleartext");
    }
    let mut child = child
        .args([
            "--connector",
            &addr.to_string(),
            &key.to_string(),
            &n.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("child stdout")?;
    let line = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        line
    })
    .await?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.connection_count() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    let held = server.connection_count();
    drop(child.stdin.take());
    let _ = child.wait();
    accepted.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let _ = tokio::time::timeout(Duration::from_secs(5), server.wait_idle()).await;
    let per = (after.saturating_sub(before)) as f64 * 1024.0 / held.max(1) as f64;
    println!("memory per idle connection (server process, {held} connections): {per:.0} bytes");
    let parts: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    if let [cn, cb, ca] = parts[..] {
        let cper = (ca.saturating_sub(cb)) as f64 * 1024.0 / cn.max(1) as f64;
        println!("memory per idle connection (client process, one endpoint, {cn} connections): {cper:.0} bytes");
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    CLEARTEXT.store(args.insecure_cleartext, Ordering::Relaxed);
    if let Some(c) = &args.connector {
        connector((c[0].parse()?, c[1].parse()?), c[2].parse()?).await;
        return Ok(());
    }
    println!(
        "thinwire loopback benchmark, {} s per measurement, 32-byte messages, {}",
        args.seconds,
        if args.insecure_cleartext {
            "INSECURE cleartext (no encryption, no authentication)"
        } else {
            "encrypted"
        }
    );
    // first, while the heap is fresh: freed memory of the other runs would hide the growth
    if args.idle > 0 {
        idle_memory(args.idle).await?;
    }
    let (server, addr) = bind_server()?;
    let delivered = Arc::new(AtomicU64::new(0));
    tokio::spawn(echo_server(server.clone(), delivered.clone()));
    for n in [1usize, 100] {
        for (what, gap) in [
            ("back to back", None),
            ("paced, 1 per 50 ms", Some(Duration::from_millis(50))),
        ] {
            let (h, rate) = round_trips(n, addr, args.seconds, gap).await;
            println!(
                "{n:>3} client(s) round trip (ReliableOrdered, {what}): {:.0} round trips/s, p50 {} µs, p99 {} µs, max {} µs",
                rate,
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.max()
            );
        }
        let r = throughput(n, addr, args.seconds, 1, &delivered).await;
        println!("{n:>3} client(s) throughput (ReliableUnordered): {r:.0} messages/s delivered");
        let u = throughput(n, addr, args.seconds, 2, &delivered).await;
        println!("{n:>3} client(s) throughput (Unreliable): {u:.0} messages/s delivered");
        let _ = tokio::time::timeout(Duration::from_secs(10), server.wait_idle()).await;
    }
    let st = server.stats();
    println!(
        "server socket (GSO up to {}, GRO up to {} segments): {} datagrams in {} receive calls ({:.1} per call), {} out in {} send calls",
        st.io.gso_segments,
        st.io.gro_segments,
        st.io.datagrams_received,
        st.io.recv_calls,
        st.io.datagrams_received as f64 / st.io.recv_calls.max(1) as f64,
        st.io.datagrams_sent,
        st.io.send_calls
    );
    Ok(())
}
