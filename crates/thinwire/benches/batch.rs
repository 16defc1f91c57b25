//! What queuing one tick's messages costs the application of an async server: 100 clients on
//! loopback, one 40-byte unreliable message to each per tick, queued either by
//! `Connection::send` (the endpoint's lock and a wake-up of its driver per message) or by one
//! `Endpoint::batch` (one lock and one wake-up per tick). The driver runs on the runtime's
//! other worker and sends each tick while the next is queued, as in a game server; the
//! clients drain what arrives between ticks. Rounds alternate the two ways, so both see the
//! same machine.
//!
//! Run: `cargo bench -p thinwire --bench batch` (`-- ROUNDS TICKS` for other counts).

use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire::{ChannelKind, Config, Connection, Endpoint, SendMode, ServerConfig};

const CLIENTS: usize = 100;

/// Application time spent queuing `ticks` ticks, in nanoseconds per message.
async fn queue_ticks(
    server: &Endpoint,
    peers: &[Connection],
    clients: &[Connection],
    batch: bool,
    ticks: usize,
) -> f64 {
    let payload = Bytes::from(vec![7u8; 40]);
    let mut spent = Duration::ZERO;
    for _ in 0..ticks {
        let t = Instant::now();
        if batch {
            let mut b = server.batch();
            for p in peers {
                // a full send buffer skips that client this tick, as a game would
                let _ = b.send(p, 0, payload.clone(), SendMode::Plain);
            }
        } else {
            for p in peers {
                let _ = p.send(0, payload.clone(), SendMode::Plain);
            }
        }
        spent += t.elapsed();
        tokio::time::sleep(Duration::from_millis(1)).await;
        for c in clients {
            while let Ok(Some(_)) = c.try_recv() {}
        }
    }
    spent.as_nanos() as f64 / (ticks * peers.len()) as f64
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let rounds: usize = args.next().map_or(6, |n| n.parse().expect("rounds"));
    let ticks: usize = args.next().map_or(300, |n| n.parse().expect("ticks"));
    let any = "127.0.0.1:0".parse().expect("address");
    // every client comes from 127.0.0.1: lift the per-source limits meant for the Internet
    let limits = ServerConfig {
        trusted_sources: vec!["127.0.0.1".parse().expect("address")],
        ..ServerConfig::default()
    };
    let server = Endpoint::bind(any, Config::server().with_server(limits)).expect("bind");
    let key = server.public_key().expect("server key");
    let (mut endpoints, mut clients, mut peers) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..CLIENTS {
        let ep = Endpoint::bind(any, Config::client()).expect("bind");
        let c = ep.connect(server.local_addr(), key, &[ChannelKind::Unreliable]);
        clients.push(c.await.expect("connect"));
        peers.push(server.accept().await.expect("accept"));
        endpoints.push(ep);
    }
    for round in 0..rounds {
        let one = queue_ticks(&server, &peers, &clients, false, ticks).await;
        let batch = queue_ticks(&server, &peers, &clients, true, ticks).await;
        println!(
            "round {round}: {one:.0} ns per message with Connection::send, {batch:.0} with one \
             batch per tick ({:.2}x)",
            batch / one
        );
    }
}
