//! Connect, exchange on every channel class, close; IPv4 and IPv6; async and blocking APIs.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{join, key, within, ALL};
use thinwire::{
    proto, Config, ConnectionError, DisconnectReason, Endpoint, SendError, SendMode,
    TransportConfig,
};

async fn exchange_every_class(bind: &str) {
    let addr: SocketAddr = bind.parse().unwrap();
    let server = Endpoint::bind(addr, Config::server()).unwrap();
    let client = Endpoint::bind(addr, Config::client()).unwrap();
    let (conn, peer) = join(&client, &server).await;
    assert_eq!(peer.channels(), &ALL);

    for ch in 0..4u8 {
        conn.send(ch, vec![ch; 20], SendMode::Plain).unwrap();
    }
    conn.send(4, &b"pos"[..], SendMode::Latest { key: 7 })
        .unwrap();
    peer.send(0, &b"welcome"[..], SendMode::Plain).unwrap();

    let mut seen = [0usize; 5];
    while seen.iter().sum::<usize>() < 5 {
        let m = within(5, "server recv", peer.recv()).await.unwrap();
        let ch = m.channel;
        seen[ch as usize] += 1;
        if ch == 4 {
            assert_eq!((m.key, &m.data[..]), (Some(7), &b"pos"[..]));
        } else {
            assert_eq!(&m.data[..], &vec![ch; 20][..]);
        }
    }
    assert_eq!(seen, [1; 5]);
    let m = within(5, "client recv", conn.recv()).await.unwrap();
    assert_eq!((m.channel, &m.data[..]), (0, &b"welcome"[..]));
    let stats = conn.stats().unwrap();
    // the RTT was measured (the estimate starts at 250 ms); the smallest sample, since a loaded
    // machine may delay some
    assert!(stats.udp.packets_sent > 0, "{stats:?}");
    assert!(
        stats
            .path
            .min_rtt
            .is_some_and(|r| r < Duration::from_millis(100)),
        "{:?}",
        stats.path.min_rtt
    );

    conn.close(7, b"bye");
    let err = within(5, "peer sees close", peer.closed()).await;
    match err {
        ConnectionError::Disconnected(DisconnectReason::ClosedByPeer { code, reason }) => {
            assert_eq!((code, &reason[..]), (7, &b"bye"[..]));
        }
        other => panic!("unexpected {other:?}"),
    }
    let err = within(5, "client close completes", conn.closed()).await;
    assert!(
        matches!(
            err,
            ConnectionError::Disconnected(DisconnectReason::LocallyClosed)
        ),
        "{err:?}"
    );
    assert!(matches!(
        conn.recv().await,
        Err(ConnectionError::Disconnected(
            DisconnectReason::LocallyClosed
        ))
    ));
    within(5, "client idle", client.wait_idle()).await;
    within(5, "server idle", server.wait_idle()).await;
    assert_eq!(server.stats().protocol.connections_accepted, 1);
}

#[tokio::test]
async fn ipv4_every_class_and_close() {
    exchange_every_class("127.0.0.1:0").await;
}

#[tokio::test]
async fn ipv6_every_class_and_close() {
    exchange_every_class("[::1]:0").await;
}

/// An idle connection costs a handful of wake-ups per second (keepalives), not a busy loop.
#[tokio::test]
async fn idle_endpoints_sleep() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    let conn = within(
        5,
        "connect",
        client.connect(server.local_addr(), key(&server), &ALL),
    )
    .await
    .unwrap();
    let _peer = within(5, "accept", server.accept()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (c0, s0) = (client.stats().io.wakeups, server.stats().io.wakeups);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (c1, s1) = (
        client.stats().io.wakeups - c0,
        server.stats().io.wakeups - s0,
    );
    eprintln!("idle wake-ups in 2.5 s: client {c1}, server {s1}");
    // a keepalive every 2 s from the client (the server waits 5/4 of that) plus the acks:
    // a few wake-ups in 2.5 s
    assert!(
        c1 <= 40 && s1 <= 40,
        "client woke {c1} times, server {s1} times in 2.5 s"
    );
    assert!(
        conn.close_reason().is_none(),
        "keepalives keep the connection open"
    );
}

/// The endpoint reports misuse as local errors and stays usable.
#[tokio::test]
async fn misuse_is_reported_not_fatal() {
    use thinwire::proto::SendError as Core;
    use thinwire::SendError;
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    assert!(
        client.accept().await.is_none(),
        "a client endpoint accepts nothing"
    );
    let err = client
        .connect(server.local_addr(), key(&server), &[])
        .await
        .unwrap_err();
    assert!(matches!(err, thinwire::ConnectError::Rejected(_)), "{err}");
    let conn = within(
        5,
        "connect",
        client.connect(server.local_addr(), key(&server), &ALL),
    )
    .await
    .unwrap();
    assert!(matches!(
        conn.send(9, &b"x"[..], SendMode::Plain),
        Err(SendError::Rejected(Core::UnknownChannel(9)))
    ));
    assert!(matches!(
        conn.send(4, &b"x"[..], SendMode::Plain),
        Err(SendError::Rejected(Core::WrongChannelKind { .. }))
    ));
    assert!(matches!(
        conn.send(0, &b"x"[..], SendMode::Latest { key: 1 }),
        Err(SendError::Rejected(Core::WrongChannelKind { .. }))
    ));
    let big = vec![0u8; 5000];
    assert!(matches!(
        conn.send(2, big, SendMode::Plain),
        Err(SendError::Rejected(Core::MessageTooLarge { .. }))
    ));
    conn.send(0, &b"still fine"[..], SendMode::Plain).unwrap();
    let peer = within(5, "accept", server.accept()).await.unwrap();
    let m = within(5, "recv", peer.recv()).await.unwrap();
    assert_eq!(&m.data[..], b"still fine");
}

/// A handshake to a port nobody answers fails with a typed error after the handshake timeout.
#[tokio::test]
async fn connect_to_nobody_times_out() {
    let transport = thinwire::TransportConfig {
        handshake_timeout: Duration::from_millis(400),
        ..Default::default()
    };
    let client = Endpoint::bind(
        "127.0.0.1:0".parse().unwrap(),
        Config::client().with_transport(transport),
    )
    .unwrap();
    // a bound socket that never answers
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let err = within(
        5,
        "handshake gives up",
        client.connect(
            silent.local_addr().unwrap(),
            thinwire::ServerKey::generate([1; 32]).public(),
            &ALL,
        ),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            thinwire::ConnectError::Handshake(DisconnectReason::HandshakeTimedOut)
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("the server did not answer"), "{text}");
    assert_eq!(client.connection_count(), 0);
}

/// A dual-stack IPv6 endpoint reaches an IPv4 server (through IPv4-mapped addresses).
#[tokio::test]
async fn dual_stack_client_reaches_ipv4_server() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let client = match Endpoint::bind("[::]:0".parse().unwrap(), Config::client()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no IPv6 here ({e}); skipped");
            return;
        }
    };
    let conn = within(
        5,
        "connect",
        client.connect(server.local_addr(), key(&server), &ALL),
    )
    .await
    .unwrap();
    conn.send(0, &b"mapped"[..], SendMode::Plain).unwrap();
    let peer = within(5, "accept", server.accept()).await.unwrap();
    let m = within(5, "recv", peer.recv()).await.unwrap();
    assert_eq!(&m.data[..], b"mapped");
    peer.send(0, &b"back"[..], SendMode::Plain).unwrap();
    let m = within(5, "recv back", conn.recv()).await.unwrap();
    assert_eq!(&m.data[..], b"back");
}

/// A deadline message over real UDP: erasure-coded, decoded, flagged in time.
#[tokio::test]
async fn deadline_message_over_udp() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    let conn = client
        .connect(
            server.local_addr(),
            key(&server),
            &[thinwire::ChannelKind::Unreliable],
        )
        .await
        .unwrap();
    let peer = server.accept().await.unwrap();
    let data: Vec<u8> = (0..2048u32).map(|i| (i % 251) as u8).collect();
    let opts = thinwire::DeadlineOptions::new(std::time::Duration::from_millis(500), 0.999);
    conn.send(0, data.clone(), SendMode::Deadline(opts))
        .unwrap();
    let msg = tokio::time::timeout(std::time::Duration::from_secs(5), peer.recv())
        .await
        .expect("arrives")
        .unwrap();
    assert_eq!(msg.channel, 0);
    assert_eq!(&msg.data[..], &data[..]);
    let status = msg.deadline.expect("deadline status");
    assert!(!status.late);
}

/// Like `Host::service`, the driver hands a message to the application before sending the ACK
/// it asks for, so an answer queued at once carries that ACK: a reliable request and its echo
/// take two datagrams per round trip (four when every message was acknowledged at once, which
/// is what the driver did before it held its ACKs).
#[tokio::test]
async fn a_reliable_echo_carries_its_ack() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    let (conn, peer) = join(&client, &server).await;
    let echo = tokio::spawn(async move {
        while let Ok(m) = peer.recv().await {
            if peer.send(0, m.data, SendMode::Plain).is_err() {
                break;
            }
        }
    });
    // settle the handshake's own packets
    tokio::time::sleep(Duration::from_millis(50)).await;
    let sent = || client.stats().io.datagrams_sent + server.stats().io.datagrams_sent;
    let before = sent();
    const ROUNDS: u64 = 50;
    for i in 0..ROUNDS {
        conn.send(0, vec![i as u8; 24], SendMode::Plain).unwrap();
        let m = within(5, "echo", conn.recv()).await.unwrap();
        assert_eq!(&m.data[..], &[i as u8; 24][..]);
    }
    let per_round = (sent() - before) as f64 / ROUNDS as f64;
    assert!(
        per_round <= 2.5,
        "{per_round:.2} datagrams per reliable round trip"
    );
    echo.abort();
}

/// A server's batch queues messages to several connections under one lock: every message
/// arrives, in order on each connection, and a refused one (a connection of another endpoint,
/// an unknown channel, a closed connection) is reported as `Connection::send` reports it,
/// without losing those queued before it.
#[tokio::test]
async fn a_batch_reaches_every_client_and_reports_refusals() {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = Endpoint::bind(any, Config::server()).unwrap();
    let clients = [
        Endpoint::bind(any, Config::client()).unwrap(),
        Endpoint::bind(any, Config::client()).unwrap(),
    ];
    let (a, peer_a) = join(&clients[0], &server).await;
    let (b, peer_b) = join(&clients[1], &server).await;
    {
        let mut batch = server.batch();
        for i in 0..10u8 {
            batch.send(&peer_a, 0, vec![1, i], SendMode::Plain).unwrap();
            batch.send(&peer_b, 0, vec![2, i], SendMode::Plain).unwrap();
        }
        let err = batch.send(&a, 0, &b"x"[..], SendMode::Plain).unwrap_err();
        assert!(
            matches!(
                err,
                SendError::Rejected(proto::SendError::UnknownConnection)
            ),
            "{err:?}"
        );
        let err = batch
            .send(&peer_a, 9, &b"x"[..], SendMode::Plain)
            .unwrap_err();
        assert!(
            matches!(
                err,
                SendError::Rejected(proto::SendError::UnknownChannel(9))
            ),
            "{err:?}"
        );
        assert_eq!(batch.queued(), 20);
    }
    for (conn, tag) in [(&a, 1u8), (&b, 2)] {
        for i in 0..10u8 {
            let m = within(5, "a batched message", conn.recv()).await.unwrap();
            assert_eq!((m.channel, &m.data[..]), (0, &[tag, i][..]));
        }
    }
    peer_b.close(1, b"bye");
    within(5, "close", peer_b.closed()).await;
    let mut batch = server.batch();
    let err = batch
        .send(&peer_b, 0, &b"x"[..], SendMode::Plain)
        .unwrap_err();
    assert!(
        matches!(
            err,
            SendError::Closed(ConnectionError::Disconnected(
                DisconnectReason::LocallyClosed
            ))
        ),
        "{err:?}"
    );
    batch
        .send(&peer_a, 0, &b"still open"[..], SendMode::Plain)
        .unwrap();
    drop(batch);
    let m = within(5, "after a refusal", a.recv()).await.unwrap();
    assert_eq!(&m.data[..], b"still open");
}

/// Dropping a batch wakes the driver at once. With keepalives a minute apart, once the
/// connection has gone quiet (its ACKs out, its idle memory given back after about a second)
/// the driver's next timer is that keepalive, so without the wake-up the batch's message would
/// wait for it; it arrives within seconds.
#[tokio::test]
async fn dropping_a_batch_sends_it_at_once() {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let quiet = TransportConfig {
        keepalive_interval: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(120),
        ..TransportConfig::default()
    };
    let server = Endpoint::bind(any, Config::server().with_transport(quiet.clone())).unwrap();
    let client = Endpoint::bind(any, Config::client().with_transport(quiet)).unwrap();
    let (conn, peer) = join(&client, &server).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut batch = server.batch();
    batch.send(&peer, 0, &b"now"[..], SendMode::Plain).unwrap();
    drop(batch);
    let m = within(5, "the batch's message", conn.recv()).await.unwrap();
    assert_eq!(&m.data[..], b"now");
}
