//! A chat room over one ReliableOrdered channel, in two (or more) terminals.
//!
//! ```text
//! terminal 1:  cargo run -p thinwire --example chat -- server 127.0.0.1:7777
//!              (prints "server key: KEY", 64 hex digits)
//! terminal 2:  cargo run -p thinwire --example chat -- client 127.0.0.1:7777 alice KEY
//! terminal 3:  cargo run -p thinwire --example chat -- client 127.0.0.1:7777 bob KEY
//! ```
//! Type a line and press enter; every other client prints it. The server prints joins, lines
//! and leaves (with the reason a connection ended). End a client with Ctrl-D.
//!
//! The connection is encrypted, and the client knows it talks to the real server: only the
//! holder of the secret half of KEY can complete the handshake (with the wrong key, the server
//! refuses it: "the server did not accept this server key"). The server draws a new key pair at every start and
//! prints its secret on stderr; `server ADDR --secret SECRET` keeps the key across restarts.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use thinwire::{
    ChannelKind, Config, Connection, ConnectionHandle, DisconnectReason, Endpoint, PublicKey,
    SendMode, ServerKey,
};
use tokio::io::{AsyncBufReadExt, BufReader};

const CHANNELS: [ChannelKind; 1] = [ChannelKind::ReliableOrdered];

type Room = Arc<Mutex<HashMap<ConnectionHandle, (String, Connection)>>>;

fn usage() -> ! {
    eprintln!("usage: chat server [BIND_ADDR] [--secret SECRET]   (default 127.0.0.1:7777)");
    eprintln!("       chat client SERVER_ADDR NAME SERVER_KEY");
    eprintln!("SECRET and SERVER_KEY are 64 hex digits; the server prints its key");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("server") => {
            let mut addr = "127.0.0.1:7777".to_owned();
            let mut secret = None;
            let mut rest = args[1..].iter();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--secret" => secret = Some(rest.next().unwrap_or_else(|| usage())),
                    _ => addr.clone_from(a),
                }
            }
            let key = match secret {
                Some(hex) => ServerKey::from_secret(parse_hex32(hex).unwrap_or_else(|| usage())),
                None => {
                    let key = ServerKey::generate(rand::random());
                    eprintln!(
                        "new key pair; to keep it across restarts: --secret {}",
                        hex(&key.secret_bytes())
                    );
                    key
                }
            };
            server(addr.parse()?, key).await
        }
        Some("client") => {
            let (Some(addr), Some(name), Some(key)) = (args.get(1), args.get(2), args.get(3))
            else {
                usage()
            };
            let key: PublicKey = key.parse()?;
            client(addr.parse()?, name.clone(), key).await
        }
        _ => usage(),
    }
}

/// 64 hex digits as 32 bytes.
fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.trim();
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn broadcast(room: &Room, from: ConnectionHandle, line: &str) {
    let members = room.lock().unwrap_or_else(|e| e.into_inner());
    for (h, (_, conn)) in members.iter() {
        if *h != from {
            // a member whose buffer is full or who just left misses the line
            let _ = conn.send(0, line.as_bytes().to_vec(), SendMode::Plain);
        }
    }
}

async fn server(addr: SocketAddr, key: ServerKey) -> Result<(), Box<dyn std::error::Error>> {
    let endpoint = Endpoint::bind(addr, Config::server().with_server_key(key))?;
    println!("chat server on {}", endpoint.local_addr());
    if let Some(key) = endpoint.public_key() {
        println!("server key: {key}");
    }
    let room: Room = Arc::default();
    while let Some(conn) = endpoint.accept().await {
        let room = room.clone();
        tokio::spawn(async move {
            let h = conn.handle();
            // the first message is the member's name
            let name = match conn.recv().await {
                Ok(m) => String::from_utf8_lossy(&m.data).into_owned(),
                Err(e) => {
                    println!("{} left before saying its name: {e}", conn.remote_address());
                    return;
                }
            };
            println!("{name} joined from {}", conn.remote_address());
            broadcast(&room, h, &format!("* {name} joined"));
            room.lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(h, (name.clone(), conn.clone()));
            let why = loop {
                match conn.recv().await {
                    Ok(m) => {
                        let line = format!("{name}: {}", String::from_utf8_lossy(&m.data));
                        println!("{line}");
                        broadcast(&room, h, &line);
                    }
                    Err(e) => break e,
                }
            };
            room.lock().unwrap_or_else(|e| e.into_inner()).remove(&h);
            println!("{name} left: {why}");
            broadcast(&room, h, &format!("* {name} left"));
        });
    }
    Ok(())
}

async fn client(
    server: SocketAddr,
    name: String,
    key: PublicKey,
) -> Result<(), Box<dyn std::error::Error>> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()?;
    let endpoint = Endpoint::bind(bind, Config::client())?;
    let conn = endpoint.connect(server, key, &CHANNELS).await?;
    conn.send(0, name.into_bytes(), SendMode::Plain)?;
    eprintln!("connected to {server}; type lines, Ctrl-D to leave");

    let printer = {
        let conn = conn.clone();
        tokio::spawn(async move {
            loop {
                match conn.recv().await {
                    Ok(m) => println!("{}", String::from_utf8_lossy(&m.data)),
                    Err(e) if matches!(e.reason(), Some(DisconnectReason::LocallyClosed)) => return,
                    Err(e) => {
                        eprintln!("disconnected: {e}");
                        std::process::exit(1);
                    }
                }
            }
        })
    };
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        if !line.is_empty() {
            conn.send(0, line.into_bytes(), SendMode::Plain)?;
        }
    }
    conn.close(0, b"bye");
    let _ = conn.closed().await;
    printer.abort();
    Ok(())
}
