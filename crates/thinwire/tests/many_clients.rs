//! 200 clients, each on its own socket, connected to one server at the same time.

mod common;

use std::sync::Arc;

use common::{key, within};
use thinwire::{ChannelKind, Config, Endpoint, SendMode, ServerConfig};
use tokio::sync::Barrier;

const CLIENTS: usize = 200;
const MESSAGES: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_clients_at_once() {
    let channels = [ChannelKind::ReliableOrdered, ChannelKind::LatestReliable];
    // all 200 clients connect from 127.0.0.1, one source for the server: lift the per-source
    // limits (64 connections, 32 Connects a second) meant for the Internet
    let limits = ServerConfig {
        max_connections_per_source: CLIENTS,
        handshakes_per_second_per_source: 100_000,
        ..ServerConfig::default()
    };
    let server = Endpoint::bind(
        "127.0.0.1:0".parse().unwrap(),
        Config::server().with_server(limits),
    )
    .unwrap();
    let addr = server.local_addr();
    let server_key = key(&server);

    // server: echo every message back on the same channel
    let srv = server.clone();
    let echo = tokio::spawn(async move {
        let mut accepted = 0;
        while accepted < CLIENTS {
            let Some(conn) = srv.accept().await else {
                break;
            };
            accepted += 1;
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
        accepted
    });

    let all_connected = Arc::new(Barrier::new(CLIENTS + 1));
    let all_checked = Arc::new(Barrier::new(CLIENTS + 1));
    let mut tasks = Vec::new();
    for i in 0..CLIENTS {
        let (connected, checked) = (all_connected.clone(), all_checked.clone());
        tasks.push(tokio::spawn(async move {
            let ep = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
            let conn = ep
                .connect(addr, server_key, &channels)
                .await
                .expect("connects");
            connected.wait().await;
            for n in 0..MESSAGES {
                conn.send(
                    0,
                    format!("client {i} message {n}").into_bytes(),
                    SendMode::Plain,
                )
                .unwrap();
            }
            conn.send(
                1,
                format!("pos of {i}").into_bytes(),
                SendMode::Latest { key: i as u64 },
            )
            .unwrap();
            let mut ordered = 0;
            let mut latest = false;
            while ordered < MESSAGES || !latest {
                let m = conn.recv().await.expect("echo");
                if m.channel == 0 {
                    assert_eq!(m.data, format!("client {i} message {ordered}").into_bytes());
                    ordered += 1;
                } else {
                    assert_eq!(
                        (m.key, &m.data[..]),
                        (Some(i as u64), format!("pos of {i}").as_bytes())
                    );
                    latest = true;
                }
            }
            checked.wait().await;
            conn.close(0, b"done");
            let _ = conn.closed().await;
            ep.wait_idle().await;
        }));
    }
    within(20, "all clients connect", all_connected.wait()).await;
    assert_eq!(
        server.connection_count(),
        CLIENTS,
        "every client holds a connection at once"
    );
    within(20, "all echoes arrive", all_checked.wait()).await;
    for t in tasks {
        within(20, "client finishes", t).await.unwrap();
    }
    assert_eq!(within(5, "accept loop", echo).await.unwrap(), CLIENTS);
    within(10, "server idle", server.wait_idle()).await;
    let stats = server.stats();
    assert_eq!(stats.protocol.connections_accepted, CLIENTS as u64);
    assert_eq!(stats.connections, 0);
}
