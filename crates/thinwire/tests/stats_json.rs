//! The statistics serialise (feature `serde`): an endpoint's and a connection's, to JSON.

use thinwire::{ChannelKind, Config, Endpoint, SendMode};

#[tokio::test]
async fn endpoint_and_connection_stats_serialise_to_json() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).expect("binds");
    let key = server.public_key().expect("a server key");
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::client()).expect("binds");
    let conn = client
        .connect(server.local_addr(), key, &[ChannelKind::ReliableOrdered])
        .await
        .expect("connects");
    conn.send(0, &b"hello"[..], SendMode::Plain).expect("sends");
    let incoming = server.accept().await.expect("accepts");
    incoming.recv().await.expect("receives");

    let stats = incoming.stats().expect("open");
    let json = serde_json::to_value(&stats).expect("serialises");
    assert_eq!(json["frames"]["messages_delivered"], 1);
    assert!(
        json["udp"]["packets_received"].as_u64().unwrap() >= 1,
        "{json}"
    );
    assert_eq!(json["channels"][0]["kind"], "ReliableOrdered", "{json}");
    let back: thinwire::ConnectionStats = serde_json::from_value(json).expect("parses back");
    assert_eq!(back, stats);

    let ep = server.stats();
    let json = serde_json::to_value(&ep).expect("serialises");
    assert_eq!(json["protocol"]["connections_accepted"], 1, "{json}");
    assert_eq!(json["connections"], 1, "{json}");
    assert!(
        json["io"]["datagrams_received"].as_u64().unwrap() >= 2,
        "{json}"
    );
    let counters = serde_json::to_value(client.connection_counters()).expect("serialises");
    assert!(
        counters["udp"]["packets_sent"].as_u64().unwrap() >= 2,
        "{counters}"
    );
}
