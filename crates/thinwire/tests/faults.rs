//! Runtime fault injection: delay, jitter and duplication do what they say.

mod common;

use std::time::Duration;

use common::{join, within, ALL};
use thinwire::{Config, Endpoint, FaultConfig, Host, HostEvent, SendMode};

#[tokio::test]
async fn delay_and_duplicates_are_injected() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    // 30 ms each way on the client's datagrams, ±5 ms jitter, half of them duplicated
    let faults = FaultConfig::new()
        .delay(Duration::from_millis(30))
        .jitter(Duration::from_millis(5))
        .duplicate(0.5)
        .seed(3);
    let client = Endpoint::bind(
        "127.0.0.1:0".parse().unwrap(),
        Config::client().with_faults(faults),
    )
    .unwrap();
    let (conn, peer) = join(&client, &server).await;
    for i in 0..20u8 {
        conn.send(0, vec![i], SendMode::Plain).unwrap();
        conn.send(2, vec![i], SendMode::Plain).unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut ordered = Vec::new();
    let mut unreliable = Vec::new();
    while ordered.len() < 20 || unreliable.len() < 20 {
        let m = within(5, "recv", peer.recv()).await.unwrap();
        match m.channel {
            0 => ordered.push(m.data[0]),
            _ => unreliable.push(m.data[0]),
        }
    }
    // duplicated datagrams are recognised: every message delivered exactly once
    assert_eq!(ordered, (0..20).collect::<Vec<_>>());
    unreliable.sort_unstable();
    assert_eq!(unreliable, (0..20).collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        peer.try_recv().unwrap().is_none(),
        "no duplicate delivered late"
    );
    let s = peer.stats().unwrap();
    assert!(s.udp.duplicate_packets > 0, "{s:?}");
    // the round trip now includes 2 x 30 ms
    let rtt = conn.stats().unwrap().path.srtt;
    assert!(
        rtt >= Duration::from_millis(50) && rtt < Duration::from_millis(100),
        "srtt {rtt:?}"
    );
    let f = client.stats().faults.unwrap();
    assert!(
        f.outbound.duplicated > 0 && f.inbound.duplicated > 0,
        "{f:?}"
    );
}

#[test]
fn host_with_outbound_loss_still_delivers() {
    let mut server = Host::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    let addr = server.local_addr();
    let server_key = server.public_key().unwrap();
    let faults = FaultConfig::new().drop_rate(0.3).seed(9).outbound_only();
    let client = std::thread::spawn(move || {
        let mut host = Host::bind(
            "127.0.0.1:0".parse().unwrap(),
            Config::client().with_faults(faults),
        )
        .unwrap();
        let conn = host.connect(addr, server_key, &ALL).unwrap();
        for i in 0..100u32 {
            host.send(conn, 1, i.to_be_bytes().to_vec(), SendMode::Plain)
                .unwrap();
        }
        // keep servicing until the server has everything and closes
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Some(HostEvent::Disconnected { .. }) =
                host.service(Duration::from_millis(10)).unwrap()
            {
                let f = host.stats().faults.unwrap();
                assert!(f.outbound.lost > 0 && f.inbound.lost == 0, "{f:?}");
                return;
            }
        }
        panic!("server never closed");
    });
    let mut got = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut peer = None;
    while got.len() < 100 && std::time::Instant::now() < deadline {
        match server.service(Duration::from_millis(10)).unwrap() {
            Some(HostEvent::Connected { conn, .. }) => peer = Some(conn),
            Some(HostEvent::Message { message, .. }) => {
                got.insert(u32::from_be_bytes(message.data[..4].try_into().unwrap()));
            }
            _ => {}
        }
    }
    assert_eq!(
        got.len(),
        100,
        "every reliable message arrives despite 30% outbound loss"
    );
    server.close(peer.unwrap(), 0, b"");
    while server.connection_count() > 0 && std::time::Instant::now() < deadline {
        server.service(Duration::from_millis(10)).unwrap();
    }
    client.join().unwrap();
}
