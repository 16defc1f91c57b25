//! The blocking `Host` API: against the async endpoint, against itself, and its wait.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{key, within, ALL};
use thinwire::{Config, DisconnectReason, Endpoint, Host, HostEvent, SendMode};

/// Services `host` until `pred` accepts an event, with an overall deadline.
fn wait_for(host: &mut Host, secs: u64, mut pred: impl FnMut(&HostEvent) -> bool) -> HostEvent {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if let Some(e) = host.service(Duration::from_millis(50)).unwrap() {
            if pred(&e) {
                return e;
            }
        }
    }
    panic!("no matching event within {secs} s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_client_talks_to_async_server() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let addr = server.local_addr();
    let server_key = key(&server);
    let srv = server.clone();
    let echo = tokio::spawn(async move {
        let conn = srv.accept().await.unwrap();
        let mut n = 0;
        while let Ok(m) = conn.recv().await {
            n += 1;
            let mode = m
                .key
                .map_or(SendMode::Plain, |key| SendMode::Latest { key });
            let _ = conn.send(m.channel, m.data, mode);
        }
        (n, conn.close_reason())
    });
    let client = tokio::task::spawn_blocking(move || {
        let mut host = Host::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
        let conn = host.connect(addr, server_key, &ALL).unwrap();
        let e = wait_for(&mut host, 5, |e| matches!(e, HostEvent::Connected { .. }));
        assert_eq!(
            e,
            HostEvent::Connected {
                conn,
                remote: addr,
                incoming: false
            }
        );
        for ch in 0..4u8 {
            host.send(conn, ch, vec![ch; 25], SendMode::Plain).unwrap();
        }
        host.send(conn, 4, &b"here"[..], SendMode::Latest { key: 3 })
            .unwrap();
        host.flush().unwrap();
        let mut got = [0; 5];
        while got.iter().sum::<i32>() < 5 {
            if let HostEvent::Message { message, .. } = wait_for(&mut host, 5, |_| true) {
                got[message.channel as usize] += 1;
                if message.channel == 4 {
                    assert_eq!(message.key, Some(3));
                }
            }
        }
        // the RTT was measured (the estimate starts at 250 ms); the smallest sample, since a
        // loaded machine may delay some
        let min_rtt = host.connection_stats(conn).unwrap().path.min_rtt;
        assert!(
            min_rtt.is_some_and(|r| r < Duration::from_millis(100)),
            "{min_rtt:?}"
        );
        host.close(conn, 3, b"bye");
        let e = wait_for(&mut host, 5, |e| {
            matches!(e, HostEvent::Disconnected { .. })
        });
        assert_eq!(
            e,
            HostEvent::Disconnected {
                conn,
                reason: DisconnectReason::LocallyClosed
            }
        );
        assert_eq!(host.connection_count(), 0);
    });
    within(15, "host client", client).await.unwrap();
    let (n, reason) = within(5, "server sees the close", echo).await.unwrap();
    assert_eq!(n, 5);
    assert!(matches!(
        reason.and_then(|r| r.reason().cloned()),
        Some(DisconnectReason::ClosedByPeer { code: 3, .. })
    ));
}

#[test]
fn host_to_host_over_ipv6() {
    let mut server = Host::bind("[::1]:0".parse().unwrap(), Config::server()).unwrap();
    let addr: SocketAddr = server.local_addr();
    let server_key = server.public_key().unwrap();
    let client = std::thread::spawn(move || {
        let mut host = Host::bind("[::1]:0".parse().unwrap(), Config::client()).unwrap();
        let conn = host.connect(addr, server_key, &ALL).unwrap();
        wait_for(&mut host, 5, |e| matches!(e, HostEvent::Connected { .. }));
        for i in 0..50u32 {
            host.send(conn, 0, i.to_be_bytes().to_vec(), SendMode::Plain)
                .unwrap();
        }
        host.flush().unwrap();
        // wait for the server's goodbye
        let e = wait_for(&mut host, 5, |e| {
            matches!(e, HostEvent::Disconnected { .. })
        });
        match e {
            HostEvent::Disconnected {
                reason: DisconnectReason::ClosedByPeer { code, .. },
                ..
            } => code,
            other => panic!("{other:?}"),
        }
    });
    let mut got = Vec::new();
    let mut peer = None;
    while got.len() < 50 {
        match wait_for(&mut server, 5, |_| true) {
            HostEvent::Connected { conn, incoming, .. } => {
                assert!(incoming);
                peer = Some(conn);
            }
            HostEvent::Message { message, .. } => {
                got.push(u32::from_be_bytes(message.data[..4].try_into().unwrap()))
            }
            HostEvent::Disconnected { reason, .. } => panic!("{reason}"),
        }
    }
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    server.close(peer.unwrap(), 42, b"server done");
    wait_for(&mut server, 5, |e| {
        matches!(e, HostEvent::Disconnected { .. })
    });
    assert_eq!(client.join().unwrap(), 42);
}

#[test]
fn service_waits_without_spinning() {
    let mut host = Host::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    // How long the wait took past its timeout depends on the machine's load, so only the
    // lower bound is checked; "without spinning" is the wake-up count.
    let t0 = Instant::now();
    assert!(host.service(Duration::from_millis(200)).unwrap().is_none());
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(host.stats().io.wakeups <= 2, "{:?}", host.stats().io);
    // zero timeout: just a look at the socket, no wait
    let before = host.stats().io.wakeups;
    assert!(host.service(Duration::ZERO).unwrap().is_none());
    assert_eq!(host.stats().io.wakeups, before, "{:?}", host.stats().io);
}

/// Like ENet's service, `Host::service` hands a message to the application before sending the
/// ACK it asks for, so the application's answer carries that ACK: a reliable request and its
/// echo, both hosts in one thread on loopback, take two datagrams per round trip (four when
/// every message was acknowledged at once).
#[test]
fn a_reliable_echo_carries_its_ack() {
    let mut server = Host::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let mut client = Host::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    let server_key = server.public_key().unwrap();
    let conn = client
        .connect(server.local_addr(), server_key, &ALL)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut accepted = None;
    let mut connected = false;
    while !(connected && accepted.is_some()) {
        assert!(Instant::now() < deadline, "no connection");
        if let Some(HostEvent::Connected { .. }) = client.service(Duration::ZERO).unwrap() {
            connected = true;
        }
        if let Some(HostEvent::Connected { conn, .. }) = server.service(Duration::ZERO).unwrap() {
            accepted = Some(conn);
        }
    }
    let peer = accepted.unwrap();
    // settle the handshake's own packets
    for _ in 0..20 {
        let _ = client.service(Duration::from_millis(1)).unwrap();
        let _ = server.service(Duration::from_millis(1)).unwrap();
    }
    let sent = |h: &Host| h.stats().io.datagrams_sent;
    let before = sent(&client) + sent(&server);
    const ROUNDS: u64 = 50;
    for i in 0..ROUNDS {
        client
            .send(conn, 0, vec![i as u8; 24], SendMode::Plain)
            .unwrap();
        client.flush().unwrap();
        let echo = loop {
            assert!(Instant::now() < deadline, "no request");
            if let Some(HostEvent::Message { message, .. }) =
                server.service(Duration::from_millis(10)).unwrap()
            {
                break message.data;
            }
        };
        server.send(peer, 0, echo, SendMode::Plain).unwrap();
        server.flush().unwrap();
        loop {
            assert!(Instant::now() < deadline, "no echo");
            if let Some(HostEvent::Message { .. }) =
                client.service(Duration::from_millis(10)).unwrap()
            {
                break;
            }
        }
    }
    let per_round = (sent(&client) + sent(&server) - before) as f64 / ROUNDS as f64;
    assert!(
        per_round <= 2.5,
        "{per_round:.2} datagrams per reliable round trip"
    );
}

/// Runs `ROUNDS` reliable request/echo rounds between a client `Host` (this thread) and a
/// server `Host` with `busy_poll` (its own thread); returns how many times the server blocked
/// in `poll(2)` during the rounds.
fn server_waits_in_echo_rounds(busy_poll: Duration) -> u64 {
    const ROUNDS: usize = 50;
    let mut server = Host::bind(
        "127.0.0.1:0".parse().unwrap(),
        Config::server().with_busy_poll(busy_poll),
    )
    .unwrap();
    let addr = server.local_addr();
    let server_key = server.public_key().unwrap();
    let echo = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        let (mut echoed, mut first) = (0, None);
        while echoed < ROUNDS && Instant::now() < deadline {
            if let Some(HostEvent::Message { conn, message }) =
                server.service(Duration::from_millis(100)).unwrap()
            {
                first.get_or_insert(server.stats().io.wakeups);
                server.send(conn, 0, message.data, SendMode::Plain).unwrap();
                server.flush().unwrap();
                echoed += 1;
            }
        }
        assert_eq!(echoed, ROUNDS, "the server echoed too few");
        server.stats().io.wakeups - first.unwrap_or(0)
    });
    let mut client = Host::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    let conn = client.connect(addr, server_key, &ALL).unwrap();
    wait_for(&mut client, 5, |e| matches!(e, HostEvent::Connected { .. }));
    for i in 0..ROUNDS {
        client
            .send(conn, 0, vec![i as u8; 24], SendMode::Plain)
            .unwrap();
        client.flush().unwrap();
        wait_for(&mut client, 5, |e| matches!(e, HostEvent::Message { .. }));
    }
    echo.join().expect("the echo server")
}

/// The low-latency mode (`Config::busy_poll`): a server whose next request arrives within
/// its spin handles it without blocking in `poll(2)`, where the default server blocks for
/// nearly every request.
#[test]
fn busy_poll_handles_arrivals_without_blocking() {
    let blocking = server_waits_in_echo_rounds(Duration::ZERO);
    let spinning = server_waits_in_echo_rounds(Duration::from_millis(200));
    eprintln!("server waits in poll over 50 echoes: {blocking} by default, {spinning} spinning");
    assert!(
        spinning * 4 <= blocking,
        "spinning: {spinning} waits, default: {blocking}"
    );
}

/// Once `service` hands out an event, `pending_events` counts every event of what the host
/// read in that turn: a caller that drains until it reads 0 (a frame's worth of events, as
/// the bench's adapter does) misses none of a burst. A host that turned a batch's datagrams
/// into events one datagram at a time broke this: the events of the datagrams behind the
/// first waited, unseen, for later calls, and the 30 Hz sweep's clients fell behind.
#[test]
fn pending_events_count_the_whole_burst_read() {
    let mut server = Host::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let addr = server.local_addr();
    let key = server.public_key().unwrap();
    let mut client = Host::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    let conn = client.connect(addr, key, &ALL).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut up = (false, false);
    while !(up.0 && up.1) {
        assert!(Instant::now() < deadline, "no connection within 5 s");
        if let Some(HostEvent::Connected { .. }) = client.service(Duration::from_millis(1)).unwrap()
        {
            up.0 = true;
        }
        if let Some(HostEvent::Connected { .. }) = server.service(Duration::ZERO).unwrap() {
            up.1 = true;
        }
    }
    // three datagrams' worth of unreliable messages, all in the server's socket before it
    // reads (loopback delivers within microseconds; it waits 200 ms)
    let count = 90;
    for i in 0..count {
        client
            .send(conn, 2, vec![i as u8; 40], SendMode::Plain)
            .unwrap();
    }
    client.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let first = server.service(Duration::from_millis(100)).unwrap();
    assert!(
        matches!(first, Some(HostEvent::Message { .. })),
        "{first:?}"
    );
    assert_eq!(server.pending_events(), count - 1);
    let mut rest = 0;
    while server.pending_events() > 0 {
        if let Some(HostEvent::Message { .. }) = server.service(Duration::ZERO).unwrap() {
            rest += 1;
        }
    }
    assert_eq!(rest, count - 1);
}
