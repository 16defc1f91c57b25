//! Hostile input on the real socket: random bytes, truncated and oversized datagrams, forged
//! handshakes and a flood of Hello packets from many source ports. The server stays up,
//! allocates no connection for any of it, counts it, and serves a real client throughout.
//! Beyond the endpoint's budget of stateless replies, a flood goes unanswered.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{key, within, ALL};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thinwire::{Config, Endpoint, SendMode, ServerConfig};
use thinwire_proto::wire::{self, ConnectionId, LongPacket};

const FLOOD_SOCKETS: usize = 50;
const HELLOS_PER_SOCKET: usize = 20;

fn hello(rng: &mut StdRng) -> Vec<u8> {
    let cid: [u8; 4] = rng.random();
    let mut out = Vec::new();
    LongPacket::Hello {
        version: wire::VERSION,
        src_cid: ConnectionId::new(&cid).unwrap(),
        instance: rng.random(),
        nonce: rng.random(),
    }
    .encode(&mut out);
    out
}

fn forged_connect(rng: &mut StdRng) -> Vec<u8> {
    let cid: [u8; 8] = rng.random();
    let cookie: [u8; 40] = rng.random();
    let mut handshake = vec![0u8; 96];
    rng.fill(&mut handshake[..]);
    let mut out = Vec::new();
    LongPacket::Connect {
        version: wire::VERSION,
        src_cid: ConnectionId::new(&cid).unwrap(),
        instance: rng.random(),
        nonce: rng.random(),
        cookie: cookie.to_vec(),
        handshake,
    }
    .encode(&mut out);
    out
}

/// Sends `datagrams` from `socket` in chunks, each time waiting until the server has read them
/// all, so that no datagram is lost in the kernel and the counts below are exact.
async fn deliver(server: &Endpoint, socket: &UdpSocket, to: SocketAddr, datagrams: &[Vec<u8>]) {
    for chunk in datagrams.chunks(64) {
        let before = server.stats().io.datagrams_received;
        for d in chunk {
            socket.send_to(d, to).unwrap();
        }
        let want = before + chunk.len() as u64;
        within(5, "server reads the chunk", async {
            while server.stats().io.datagrams_received < want {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_datagrams_do_not_hurt_the_server() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let addr = server.local_addr();
    let mut rng = StdRng::seed_from_u64(0xBAD);

    // a real client playing throughout: one reliable ping-pong every 5 ms
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    let conn = within(5, "connect", client.connect(addr, key(&server), &ALL))
        .await
        .unwrap();
    let peer = within(5, "accept", server.accept()).await.unwrap();
    let echo = tokio::spawn(async move {
        while let Ok(m) = peer.recv().await {
            if peer.send(m.channel, m.data, SendMode::Plain).is_err() {
                break;
            }
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    let round_trips = Arc::new(AtomicU64::new(0));
    let player = {
        let (stop, round_trips, conn) = (stop.clone(), round_trips.clone(), conn.clone());
        tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                conn.send(0, i.to_be_bytes().to_vec(), SendMode::Plain)
                    .unwrap();
                let m = within(2, "echo during the attack", conn.recv())
                    .await
                    .unwrap();
                assert_eq!(&m.data[..], &i.to_be_bytes());
                round_trips.fetch_add(1, Ordering::Relaxed);
                i += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };

    let before = server.stats();
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();

    // 1. random bytes of random length (1..1500); 2. truncated handshake packets;
    // 3. oversized datagrams (60 000 bytes: random, and a Hello padded to that size);
    // 4. Connects with forged cookies.
    let mut junk: Vec<Vec<u8>> = Vec::new();
    for _ in 0..300 {
        let len = rng.random_range(1..1500);
        let mut d = vec![0u8; len];
        rng.fill(&mut d[..]);
        junk.push(d);
    }
    for _ in 0..100 {
        let mut d = if rng.random() {
            hello(&mut rng)
        } else {
            forged_connect(&mut rng)
        };
        let cut = rng.random_range(0..d.len());
        d.truncate(cut.max(1));
        junk.push(d);
    }
    for i in 0..20 {
        let mut d = if i % 2 == 0 {
            vec![0u8; 0]
        } else {
            hello(&mut rng)
        };
        let start = d.len();
        d.resize(60_000, 0);
        if i % 2 == 0 {
            rng.fill(&mut d[start..]);
        }
        junk.push(d);
    }
    let forged: Vec<Vec<u8>> = (0..100).map(|_| forged_connect(&mut rng)).collect();
    deliver(&server, &attacker, addr, &junk).await;
    deliver(&server, &attacker, addr, &forged).await;

    // 5. a flood of Hellos from many source ports
    let mut flooders = Vec::new();
    for _ in 0..FLOOD_SOCKETS {
        flooders.push(UdpSocket::bind("127.0.0.1:0").unwrap());
    }
    for f in &flooders {
        let hellos: Vec<Vec<u8>> = (0..HELLOS_PER_SOCKET).map(|_| hello(&mut rng)).collect();
        deliver(&server, f, addr, &hellos).await;
    }
    let hellos = (FLOOD_SOCKETS * HELLOS_PER_SOCKET) as u64;

    // the real client kept playing through all of it
    let trips_during = round_trips.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(50)).await;
    stop.store(true, Ordering::Relaxed);
    within(5, "player stops", player).await.unwrap();
    assert!(
        round_trips.load(Ordering::Relaxed) > trips_during,
        "client still served after the attack"
    );
    assert!(
        trips_during >= 5,
        "client served during the attack ({trips_during} round trips)"
    );

    let after = server.stats();
    let p = |s: &thinwire::EndpointStats| s.protocol.clone();
    let (b, a) = (p(&before), p(&after));
    // nothing was allocated
    assert_eq!(
        server.connection_count(),
        1,
        "only the real client holds a connection"
    );
    assert_eq!(a.connections_accepted, 1);
    // every datagram was counted, by reason
    let attack = (junk.len() + forged.len()) as u64 + hellos;
    assert!(after.io.datagrams_received - before.io.datagrams_received >= attack);
    assert_eq!(
        a.dropped_bad_cookie - b.dropped_bad_cookie,
        forged.len() as u64 + count_bad_cookies(&junk)
    );
    assert!(a.dropped_malformed > b.dropped_malformed, "{a:?}");
    assert!(
        a.dropped_unknown_connection > b.dropped_unknown_connection,
        "{a:?}"
    );
    // each Hello was answered statelessly (or its reply dropped and counted)
    let answered = (a.challenges_sent - b.challenges_sent)
        + (a.dropped_reply_queue_full - b.dropped_reply_queue_full);
    assert!(
        answered >= hellos,
        "{answered} of {hellos} hellos answered or counted"
    );

    conn.close(0, b"done");
    let _ = within(5, "close", conn.closed()).await;
    within(5, "echo task ends", echo).await.unwrap();
}

/// Junk that still parses as a Connect (a truncation can leave a shorter but valid cookie) is
/// dropped for its cookie; count those so the assertion above is exact.
fn count_bad_cookies(junk: &[Vec<u8>]) -> u64 {
    junk.iter()
        .filter(|d| matches!(LongPacket::decode(d), Ok(LongPacket::Connect { version, .. }) if version == wire::VERSION))
        .count() as u64
}

/// Hellos beyond the endpoint's budget of stateless replies (a burst of one second's worth,
/// then its rate) go unanswered and are counted; a client already connected keeps being served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_flood_beyond_the_reply_budget_goes_unanswered() {
    const BUDGET: u32 = 200;
    let limits = ServerConfig {
        stateless_replies_per_second: BUDGET,
        ..ServerConfig::default()
    };
    let server = Endpoint::bind(
        "127.0.0.1:0".parse().unwrap(),
        Config::server().with_server(limits),
    )
    .unwrap();
    let addr = server.local_addr();
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
    let conn = within(5, "connect", client.connect(addr, key(&server), &ALL))
        .await
        .unwrap();
    let peer = within(5, "accept", server.accept()).await.unwrap();
    let before = server.stats().protocol;

    let mut rng = StdRng::seed_from_u64(0xF100D);
    let flooders: Vec<UdpSocket> = (0..FLOOD_SOCKETS)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let t0 = std::time::Instant::now();
    for f in &flooders {
        let hellos: Vec<Vec<u8>> = (0..HELLOS_PER_SOCKET).map(|_| hello(&mut rng)).collect();
        deliver(&server, f, addr, &hellos).await;
    }
    let took = t0.elapsed();
    let hellos = (FLOOD_SOCKETS * HELLOS_PER_SOCKET) as u64;
    let after = server.stats().protocol;
    let answered = after.challenges_sent - before.challenges_sent;
    let limited = after.dropped_rate_limited - before.dropped_rate_limited;
    let queue_full = after.dropped_reply_queue_full - before.dropped_reply_queue_full;
    // the handshake above spent one reply; the rest of the burst, then the rate
    let most = u64::from(BUDGET) + (f64::from(BUDGET) * took.as_secs_f64()).ceil() as u64;
    assert!(
        answered <= most && answered < hellos,
        "{answered} of {hellos} hellos answered in {took:?}"
    );
    assert_eq!(
        answered + limited + queue_full,
        hellos,
        "every hello counted"
    );

    conn.send(0, &b"still here"[..], SendMode::Plain).unwrap();
    let m = within(5, "recv", peer.recv()).await.unwrap();
    assert_eq!(&m.data[..], b"still here");
}

/// Connects (each costs the server a Noise message) beyond a source's budget are dropped; the
/// clients' retransmissions get through as the budget refills, so every client connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_beyond_the_source_budget_wait_their_turn() {
    const CLIENTS: usize = 30;
    let limits = ServerConfig {
        handshakes_per_second_per_source: 10, // a burst of 20, then 10 a second
        ..ServerConfig::default()
    };
    let server = Endpoint::bind(
        "127.0.0.1:0".parse().unwrap(),
        Config::server().with_server(limits),
    )
    .unwrap();
    let (addr, server_key) = (server.local_addr(), key(&server));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        tasks.push(tokio::spawn(async move {
            let ep = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).unwrap();
            let conn = ep.connect(addr, server_key, &ALL).await.expect("connects");
            (ep, conn)
        }));
    }
    let mut held = Vec::new();
    for t in tasks {
        held.push(within(10, "client connects", t).await.unwrap());
    }
    let stats = server.stats().protocol;
    assert_eq!(stats.connections_accepted, CLIENTS as u64);
    assert!(stats.dropped_rate_limited >= 5, "{stats:?}");
}
