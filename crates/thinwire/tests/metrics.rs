//! The example game server's `/metrics` (examples/metrics_server.rs, feature `metrics`):
//! a client exchanges messages with it, then a scrape over a real loopback TCP connection
//! finds the connection counters, non-zero.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use thinwire::{ChannelKind, Config, Connection, Endpoint, SendMode};

#[path = "../examples/metrics_server.rs"]
#[allow(dead_code)]
mod example;

/// `GET path` over a plain TCP connection; the whole answer.
fn get(addr: SocketAddr, path: &str) -> String {
    let mut c = TcpStream::connect(addr).expect("connects");
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("writes");
    let mut out = String::new();
    c.read_to_string(&mut out).expect("reads");
    out
}

/// The value of the unlabelled sample `name` in a scrape.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

/// The example server on loopback, and a client endpoint connected to it (one reliable
/// channel).
async fn connected() -> (example::Running, Endpoint, Connection) {
    let server = example::start(
        "127.0.0.1:0".parse().unwrap(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .expect("starts");
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).expect("binds");
    let conn = client
        .connect(
            server.endpoint.local_addr(),
            server.key,
            &[ChannelKind::ReliableOrdered],
        )
        .await
        .expect("connects");
    (server, client, conn)
}

#[tokio::test]
async fn a_scrape_of_the_example_server_finds_connection_counters() {
    let (server, _client, conn) = connected().await;
    for i in 0..20u32 {
        conn.send(0, i.to_be_bytes().to_vec(), SendMode::Plain)
            .expect("sends");
        let echo = tokio::time::timeout(Duration::from_secs(10), conn.recv())
            .await
            .expect("in time")
            .expect("echoed");
        assert_eq!(&echo.data[..], &i.to_be_bytes());
    }
    let addr = server.metrics;
    let text = tokio::task::spawn_blocking(move || get(addr, "/metrics"))
        .await
        .expect("scrapes");
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains(thinwire::metrics::CONTENT_TYPE), "{head}");
    for name in [
        "thinwire_connection_udp_packets_sent_total",
        "thinwire_connection_udp_packets_received_total",
        "thinwire_connection_frames_messages_delivered_total",
        "thinwire_endpoint_connections_accepted_total",
        "thinwire_connections",
    ] {
        let v = sample(body, name).unwrap_or_else(|| panic!("no {name} in {body}"));
        assert!(v > 0.0, "{name} is {v}");
    }
    assert!(
        body.contains(
            "# HELP thinwire_connection_recovery_packets_lost_total Packets declared lost."
        ),
        "{body}"
    );
    // every counter of the core is there, each once
    let types = body.lines().filter(|l| l.starts_with("# TYPE ")).count();
    let counters =
        thinwire::proto::EndpointStats::NAMES.len() + thinwire::ConnectionCounters::NAMES.len();
    assert_eq!(types, counters + 2, "{body}");
    let missing = tokio::task::spawn_blocking(move || get(addr, "/other"))
        .await
        .expect("asks");
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
}

#[tokio::test]
async fn closed_connections_still_count() {
    let (server, client, conn) = connected().await;
    conn.send(0, &b"hi"[..], SendMode::Plain).expect("sends");
    conn.recv().await.expect("echoed");
    let before = server.endpoint.connection_counters();
    conn.close(0, b"bye");
    client.wait_idle().await;
    tokio::time::timeout(Duration::from_secs(10), server.endpoint.wait_idle())
        .await
        .expect("the server forgets it");
    let after = server.endpoint.connection_counters();
    assert!(after.frames.messages_delivered >= before.frames.messages_delivered);
    assert!(after.udp.packets_received >= before.udp.packets_received);
    assert!(after.frames.messages_delivered > 0);
}
