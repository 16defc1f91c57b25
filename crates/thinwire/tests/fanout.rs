//! A server fanning out to 100 clients: one flush carries a datagram to each, in far fewer
//! send system calls than datagrams (`sendmmsg` on Linux), and every datagram arrives.

mod common;

use std::time::{Duration, Instant};

use common::within;
use thinwire::{ChannelKind, Config, Endpoint, Host, HostEvent, IoStats, SendMode, ServerConfig};

const CLIENTS: usize = 100;
/// Unreliable: a lost datagram would be a lost message, not a retransmission.
const CHANNELS: [ChannelKind; 1] = [ChannelKind::Unreliable];

fn server_config() -> Config {
    // every client comes from 127.0.0.1: lift the per-source limits meant for the Internet
    Config::server().with_server(ServerConfig {
        trusted_sources: vec!["127.0.0.1".parse().unwrap()],
        ..ServerConfig::default()
    })
}

/// The send system calls and datagrams of one flush, checked: far fewer calls than datagrams
/// where `sendmmsg` batches them.
fn check_batched(before: &IoStats, after: &IoStats) -> (u64, u64) {
    let calls = after.send_calls - before.send_calls;
    let datagrams = after.datagrams_sent - before.datagrams_sent;
    assert_eq!(after.send_errors, before.send_errors);
    assert!(datagrams >= CLIENTS as u64, "{datagrams} datagrams");
    println!("one flush to {CLIENTS} clients: {datagrams} datagrams in {calls} send calls");
    if cfg!(target_os = "linux") {
        assert!(
            calls * 10 <= datagrams,
            "{calls} send calls for {datagrams} datagrams"
        );
    }
    (calls, datagrams)
}

#[test]
fn host_flush_to_a_hundred_clients_batches_its_sends() {
    let mut server = Host::bind("127.0.0.1:0".parse().unwrap(), server_config()).unwrap();
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let mut clients: Vec<Host> = (0..CLIENTS)
        .map(|_| {
            let mut c = Host::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
            c.connect(addr, key, &CHANNELS).unwrap();
            c
        })
        .collect();

    // handshakes, then a quiet moment for the last acknowledgements
    let mut conns = Vec::new();
    let mut connected = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while conns.len() < CLIENTS || connected < CLIENTS {
        assert!(Instant::now() < deadline, "{} accepted", conns.len());
        while let Some(e) = server.service(Duration::ZERO).unwrap() {
            if let HostEvent::Connected { conn, .. } = e {
                conns.push(conn);
            }
        }
        for c in &mut clients {
            while let Some(e) = c.service(Duration::ZERO).unwrap() {
                assert!(matches!(e, HostEvent::Connected { .. }), "{e:?}");
                connected += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let quiet = Instant::now() + Duration::from_millis(200);
    while Instant::now() < quiet {
        assert!(server.service(Duration::ZERO).unwrap().is_none());
        for c in &mut clients {
            assert!(c.service(Duration::ZERO).unwrap().is_none());
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    // one flush: a message for every client
    let received_before: u64 = clients
        .iter()
        .map(|c| c.stats().io.datagrams_received)
        .sum();
    let before = server.stats().io;
    for (i, &conn) in conns.iter().enumerate() {
        server
            .send(conn, 0, format!("update {i}").into_bytes(), SendMode::Plain)
            .unwrap();
    }
    server.flush().unwrap();
    let (_, datagrams) = check_batched(&before, &server.stats().io);

    // every datagram arrives (the server is not serviced any more: it sends nothing else)
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while got < CLIENTS {
        assert!(Instant::now() < deadline, "{got} of {CLIENTS} messages");
        for c in &mut clients {
            while let Some(e) = c.service(Duration::ZERO).unwrap() {
                match e {
                    HostEvent::Message { message, .. } => {
                        assert!(message.data.starts_with(b"update "));
                        got += 1;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
    }
    let received: u64 = clients
        .iter()
        .map(|c| c.stats().io.datagrams_received)
        .sum();
    assert_eq!(received - received_before, datagrams);
}

#[tokio::test(flavor = "current_thread")]
async fn endpoint_flush_to_a_hundred_clients_batches_its_sends() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), server_config()).unwrap();
    let (addr, key) = (server.local_addr(), server.public_key().unwrap());
    let mut clients = Vec::new();
    let mut conns = Vec::new();
    within(20, "connect", async {
        for _ in 0..CLIENTS {
            let ep = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
            let conn = ep.connect(addr, key, &CHANNELS).await.unwrap();
            conns.push(server.accept().await.unwrap());
            clients.push((ep, conn));
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    // on this one thread the sends below all happen before the driver runs: one flush
    let before = server.stats().io;
    for (i, conn) in conns.iter().enumerate() {
        conn.send(0, format!("update {i}").into_bytes(), SendMode::Plain)
            .unwrap();
    }
    within(10, "every client gets its update", async {
        for (_, conn) in &clients {
            let m = conn.recv().await.unwrap();
            assert!(m.data.starts_with(b"update "));
        }
    })
    .await;
    check_batched(&before, &server.stats().io);
}
