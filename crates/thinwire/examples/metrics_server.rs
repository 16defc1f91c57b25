//! A game server that exports its transport counters for Prometheus: it echoes every message
//! back on its channel and answers `GET /metrics` over HTTP (feature `metrics`).
//!
//! ```text
//! cargo run --release -p thinwire --features metrics --example metrics_server -- \
//!     --listen 127.0.0.1:7777 --metrics 127.0.0.1:9100
//! curl -s http://127.0.0.1:9100/metrics | grep thinwire_connection_udp
//! ```
//!
//! Prints `game server on ADDR`, `server key: HEX` and `metrics on http://ADDR/metrics`, one
//! line each. `RUST_LOG=thinwire=debug` shows handshakes, refusals and closes (the example
//! installs no subscriber of its own beyond the standard `tracing-subscriber` one).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use thinwire::metrics::{registry, serve};
use thinwire::{Config, Endpoint, PublicKey, SendMode};

/// A running server: its game endpoint and where its metrics are.
pub(crate) struct Running {
    /// The game endpoint (a server).
    pub(crate) endpoint: Endpoint,
    /// Its public key, for the clients.
    pub(crate) key: PublicKey,
    /// The address of the `/metrics` listener.
    pub(crate) metrics: SocketAddr,
}

/// Starts the game server on `game` (echoing every message) and the metrics endpoint on
/// `metrics` (port 0 picks one), both on the current tokio runtime.
pub(crate) async fn start(game: SocketAddr, metrics: SocketAddr) -> io::Result<Running> {
    let endpoint = Endpoint::bind(game, Config::server()).map_err(io::Error::other)?;
    let key = endpoint.public_key().expect("a server has a key");
    let listener = tokio::net::TcpListener::bind(metrics).await?;
    let metrics = listener.local_addr()?;
    let registry = Arc::new(registry(&endpoint));
    tokio::spawn(serve(listener, registry, std::future::pending()));
    let server = endpoint.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok(m) = conn.recv().await {
                    if conn.send(m.channel, m.data, SendMode::Plain).is_err() {
                        break;
                    }
                }
            });
        }
    });
    Ok(Running {
        endpoint,
        key,
        metrics,
    })
}

/// `--flag VALUE` from the command line, or `default`.
fn arg(flag: &str, default: &str) -> Result<SocketAddr, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let value = args
        .iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map_or(default, String::as_str);
    Ok(value.parse()?)
}

#[allow(dead_code)] // the test includes this file as a module and calls `start` only
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(io::stderr)
        .init();
    let game = arg("--listen", "127.0.0.1:7777")?;
    let metrics = arg("--metrics", "127.0.0.1:9100")?;
    let running = start(game, metrics).await?;
    println!("game server on {}", running.endpoint.local_addr());
    println!("server key: {}", running.key);
    println!("metrics on http://{}/metrics", running.metrics);
    std::future::pending::<()>().await;
    Ok(())
}
