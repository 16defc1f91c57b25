//! Round-trip measurement: a client sends timestamped pings, a server echoes them, the client
//! prints the round-trip distribution and the connection's statistics.
//!
//! ```text
//! cargo run --release -p thinwire --example echo                       # both on loopback
//! cargo run --release -p thinwire --example echo -- --loss 0.05 --count 2000
//! cargo run --release -p thinwire --example echo -- --serve 0.0.0.0:7778     # prints its key
//! cargo run --release -p thinwire --example echo -- --connect 192.0.2.1:7778 --key KEY --interval-ms 50
//! ```

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use thinwire::{ChannelKind, Config, Endpoint, FaultConfig, PublicKey, SendMode};

#[derive(Parser, Debug)]
#[command(about = "thinwire round-trip measurement")]
struct Args {
    /// Only run a server on this address.
    #[arg(long)]
    serve: Option<SocketAddr>,
    /// Only run a client against this server.
    #[arg(long, requires = "key")]
    connect: Option<SocketAddr>,
    /// With --connect: the server's public key (64 hex digits, printed by --serve).
    #[arg(long)]
    key: Option<PublicKey>,
    /// Pings to send.
    #[arg(long, default_value_t = 1000)]
    count: u32,
    /// Gap between pings in milliseconds (0: next ping as soon as the echo arrives).
    #[arg(long, default_value_t = 0)]
    interval_ms: u64,
    /// Payload size in bytes (at least 8).
    #[arg(long, default_value_t = 32)]
    size: usize,
    /// Channel class: ordered, unordered, unreliable, sequenced.
    #[arg(long, default_value = "ordered")]
    class: String,
    /// Fault injection on the client: loss probability each way.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Fault injection on the client: added one-way delay in milliseconds.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
}

async fn serve(endpoint: Endpoint) {
    while let Some(conn) = endpoint.accept().await {
        tokio::spawn(async move {
            while let Ok(m) = conn.recv().await {
                if conn.send(m.channel, m.data, SendMode::Plain).is_err() {
                    break;
                }
            }
        });
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    // `RUST_LOG=thinwire=debug` shows handshakes, refusals (a wrong key among them) and closes
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    if let Some(addr) = args.serve {
        let endpoint = Endpoint::bind(addr, Config::server())?;
        println!("echo server on {}", endpoint.local_addr());
        if let Some(key) = endpoint.public_key() {
            println!("server key: {key}");
        }
        serve(endpoint).await;
        return Ok(());
    }
    let kind = match args.class.as_str() {
        "ordered" => ChannelKind::ReliableOrdered,
        "unordered" => ChannelKind::ReliableUnordered,
        "unreliable" => ChannelKind::Unreliable,
        "sequenced" => ChannelKind::UnreliableSequenced,
        other => return Err(format!("unknown class {other}").into()),
    };
    let (server_addr, key, _server) = match (args.connect, args.key) {
        (Some(a), Some(key)) => (a, key, None),
        _ => {
            let ep = Endpoint::bind("127.0.0.1:0".parse()?, Config::server())?;
            let addr = ep.local_addr();
            let key = ep.public_key().ok_or("a server has a key")?;
            tokio::spawn(serve(ep.clone()));
            (addr, key, Some(ep))
        }
    };
    let mut config = Config::client();
    if args.loss > 0.0 || args.delay_ms > 0 {
        config = config.with_faults(
            FaultConfig::new()
                .drop_rate(args.loss)
                .delay(Duration::from_millis(args.delay_ms)),
        );
    }
    let bind: SocketAddr = if server_addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()?;
    let client = Endpoint::bind(bind, config)?;
    let conn = client.connect(server_addr, key, &[kind]).await?;
    let epoch = Instant::now();
    let mut rtt = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut lost = 0u32;
    let size = args.size.max(8);
    for i in 0..args.count {
        let mut payload = vec![0u8; size];
        payload[..8].copy_from_slice(&(epoch.elapsed().as_nanos() as u64).to_be_bytes());
        conn.send(0, payload, SendMode::Plain)?;
        // unreliable pings may be lost: give each one a second
        match tokio::time::timeout(Duration::from_secs(1), conn.recv()).await {
            Ok(r) => {
                let m = r?;
                let sent = u64::from_be_bytes(m.data[..8].try_into()?);
                let now = epoch.elapsed().as_nanos() as u64;
                rtt.record((now.saturating_sub(sent) / 1000).max(1))?;
            }
            Err(_) => lost += 1,
        }
        if args.interval_ms > 0 {
            tokio::time::sleep(Duration::from_millis(args.interval_ms)).await;
        }
        if i > 0 && i % 1000 == 0 {
            println!("{i} pings, p50 {} µs", rtt.value_at_quantile(0.5));
        }
    }
    println!(
        "{} round trips ({} unanswered) over {:?} {}: min {} µs, p50 {} µs, p90 {} µs, p99 {} µs, max {} µs",
        rtt.len(),
        lost,
        kind,
        server_addr,
        rtt.min(),
        rtt.value_at_quantile(0.5),
        rtt.value_at_quantile(0.9),
        rtt.value_at_quantile(0.99),
        rtt.max()
    );
    if let Some(s) = conn.stats() {
        println!(
            "connection: srtt {:?}, min_rtt {:?}, packets sent {}, lost {}, retransmitted frames {}, bundled frames {}",
            s.path.srtt, s.path.min_rtt, s.udp.packets_sent, s.recovery.packets_lost, s.frames.retransmitted, s.frames.bundled
        );
    }
    conn.close(0, b"done");
    let _ = conn.closed().await;
    Ok(())
}
