//! A chat room over one ReliableOrdered channel, in two (or more) terminals.
//!
//! ```text
//! terminal 1:  cargo run -p thinwire --example chat -- server 127.0.0.1:7777
//! terminal 2:  cargo run -p thinwire --example chat -- client 127.0.0.1:7777 alice
//! terminal 3:  cargo run -p thinwire --example chat -- client 127.0.0.1:7777 bob
//! ```
//! Type a line and press enter; every other client prints it. The server prints joins, lines
//! and leaves (with the reason a connection ended). End a client with Ctrl-D.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use thinwire::{ChannelKind, Config, Connection, ConnectionHandle, DisconnectReason, Endpoint};
use tokio::io::{AsyncBufReadExt, BufReader};

const CHANNELS: [ChannelKind; 1] = [ChannelKind::ReliableOrdered];

type Room = Arc<Mutex<HashMap<ConnectionHandle, (String, Connection)>>>;

fn usage() -> ! {
    eprintln!("usage: chat server [BIND_ADDR]      (default 127.0.0.1:7777)");
    eprintln!("       chat client SERVER_ADDR NAME");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("server") => {
            let addr: SocketAddr = args
                .get(1)
                .map_or("127.0.0.1:7777", String::as_str)
                .parse()?;
            server(addr).await
        }
        Some("client") => {
            let (Some(addr), Some(name)) = (args.get(1), args.get(2)) else {
                usage()
            };
            client(addr.parse()?, name.clone()).await
        }
        _ => usage(),
    }
}

fn broadcast(room: &Room, from: ConnectionHandle, line: &str) {
    let members = room.lock().unwrap_or_else(|e| e.into_inner());
    for (h, (_, conn)) in members.iter() {
        if *h != from {
            // a member whose buffer is full or who just left misses the line
            let _ = conn.send(0, line.as_bytes().to_vec());
        }
    }
}

async fn server(addr: SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    let endpoint = Endpoint::bind(addr, Config::server())?;
    println!("chat server on {}", endpoint.local_addr());
    let room: Room = Arc::default();
    while let Some(conn) = endpoint.accept().await {
        let room = room.clone();
        tokio::spawn(async move {
            let h = conn.handle();
            // the first message is the member's name
            let name = match conn.recv().await {
                Ok((_, m)) => String::from_utf8_lossy(&m.data).into_owned(),
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
                    Ok((_, m)) => {
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

async fn client(server: SocketAddr, name: String) -> Result<(), Box<dyn std::error::Error>> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()?;
    let endpoint = Endpoint::bind(bind, Config::client())?;
    let conn = endpoint.connect(server, &CHANNELS).await?;
    conn.send(0, name.into_bytes())?;
    eprintln!("connected to {server}; type lines, Ctrl-D to leave");

    let printer = {
        let conn = conn.clone();
        tokio::spawn(async move {
            loop {
                match conn.recv().await {
                    Ok((_, m)) => println!("{}", String::from_utf8_lossy(&m.data)),
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
            conn.send(0, line.into_bytes())?;
        }
    }
    conn.close(0, b"bye");
    let _ = conn.closed().await;
    printer.abort();
    Ok(())
}
