//! An echo server for clients in any language (the C and C# clients talk to it in CI): it
//! prints where it listens and its public key, one line each, then sends every message back
//! on the channel it came on, until killed or for `--for-secs` seconds.
//!
//! ```text
//! cargo run --release -p thinwire --example echo_server -- --listen 127.0.0.1:0
//! echo server on 127.0.0.1:40123
//! server key: 3f9a…c2                     (64 hex digits: the client connects with it)
//! ```
//!
//! Echoes are plain sends, except on latest-value channels, which refuse plain sends: there a
//! message comes back as the newest value of its own key.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use thinwire::{Config, Endpoint, SendMode};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut listen: SocketAddr = "127.0.0.1:7778".parse()?;
    let mut for_secs = None;
    let mut args = std::env::args().skip(1);
    while let Some(option) = args.next() {
        let value = args.next().ok_or(format!("{option} needs a value"))?;
        match option.as_str() {
            "--listen" => listen = value.parse()?,
            "--for-secs" => for_secs = Some(Duration::from_secs(value.parse()?)),
            _ => {
                return Err(format!("unknown option {option} (--listen ADDR, --for-secs N)").into())
            }
        }
    }
    let endpoint = Endpoint::bind(listen, Config::server())?;
    announce(&endpoint, &mut std::io::stdout())?;
    match for_secs {
        Some(limit) => _ = tokio::time::timeout(limit, echo(endpoint)).await,
        None => echo(endpoint).await,
    }
    Ok(())
}

// `pub(crate)`: crates/thinwire-ffi/tests/c_echo.rs runs this server inside its process.

/// Prints `echo server on ADDR` and `server key: HEX`, the two lines clients wait for.
pub(crate) fn announce(endpoint: &Endpoint, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "echo server on {}", endpoint.local_addr())?;
    if let Some(key) = endpoint.public_key() {
        writeln!(out, "server key: {key}")?;
    }
    out.flush()
}

/// Echoes every message of every connection `endpoint` accepts, until it closes.
pub(crate) async fn echo(endpoint: Endpoint) {
    while let Some(conn) = endpoint.accept().await {
        tokio::spawn(async move {
            while let Ok(m) = conn.recv().await {
                let mode = m
                    .key
                    .map_or(SendMode::Plain, |key| SendMode::Latest { key });
                if conn.send(m.channel, m.data, mode).is_err() {
                    break;
                }
            }
        });
    }
}
