//! Runtime fault injection at 20% loss each way: every reliable message arrives, in order on
//! the ordered channel, and the newest value of every key on the latest-value channel.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use common::{key, within, ALL};
use thinwire::{Config, Endpoint, FaultConfig, SendMode};

const N: u32 = 300;
const KEYS: u64 = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reliable_classes_survive_twenty_percent_loss() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), Config::server()).unwrap();
    // 20% loss on everything the client sends and everything it receives
    let faults = FaultConfig::new().drop_rate(0.2).seed(20);
    let client = Endpoint::bind(
        "127.0.0.1:0".parse().unwrap(),
        Config::client().with_faults(faults),
    )
    .unwrap();
    let conn = within(
        10,
        "connect under loss",
        client.connect(server.local_addr(), key(&server), &ALL),
    )
    .await
    .unwrap();
    let peer = within(5, "accept", server.accept()).await.unwrap();

    // a thin stream: a few messages every couple of milliseconds, both ways
    let sender = {
        let (conn, peer) = (conn.clone(), peer.clone());
        tokio::spawn(async move {
            for i in 0..N {
                conn.send(0, i.to_be_bytes().to_vec(), SendMode::Plain)
                    .unwrap();
                conn.send(1, i.to_be_bytes().to_vec(), SendMode::Plain)
                    .unwrap();
                conn.send(
                    4,
                    i.to_be_bytes().to_vec(),
                    SendMode::Latest {
                        key: u64::from(i) % KEYS,
                    },
                )
                .unwrap();
                peer.send(0, i.to_be_bytes().to_vec(), SendMode::Plain)
                    .unwrap();
                if i % 4 == 3 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        })
    };

    let server_side = tokio::spawn(async move {
        let mut ordered = Vec::new();
        let mut unordered = BTreeSet::new();
        let mut latest: HashMap<u64, u32> = HashMap::new();
        let final_of = |k: u64| (0..N).rev().find(|i| u64::from(*i) % KEYS == k).unwrap();
        loop {
            let done = ordered.len() == N as usize
                && unordered.len() == N as usize
                && (0..KEYS).all(|k| latest.get(&k) == Some(&final_of(k)));
            if done {
                break;
            }
            let m = peer.recv().await.expect("connection stays up");
            let v = u32::from_be_bytes(m.data[..4].try_into().unwrap());
            match m.channel {
                0 => ordered.push(v),
                1 => assert!(unordered.insert(v), "duplicate delivery of {v}"),
                4 => {
                    let k = m.key.unwrap();
                    let old = latest.insert(k, v);
                    assert!(
                        old.is_none_or(|o| o < v),
                        "key {k}: {v} delivered after {old:?}"
                    );
                }
                ch => unreachable!("nothing sent on channel {ch}"),
            }
        }
        assert_eq!(
            ordered,
            (0..N).collect::<Vec<_>>(),
            "ordered channel in order, no gaps"
        );
        peer
    });

    let mut back = Vec::new();
    while back.len() < N as usize {
        let m = within(30, "server to client under loss", conn.recv())
            .await
            .unwrap();
        assert_eq!(m.channel, 0);
        back.push(u32::from_be_bytes(m.data[..4].try_into().unwrap()));
    }
    assert_eq!(back, (0..N).collect::<Vec<_>>());
    sender.await.unwrap();
    let _peer = within(30, "client to server under loss", server_side)
        .await
        .unwrap();

    let faults = client.stats().faults.unwrap();
    assert!(
        faults.outbound.lost > 0 && faults.inbound.lost > 0,
        "{faults:?}"
    );
    let lost = (faults.outbound.lost + faults.inbound.lost) as f64;
    let total = (faults.outbound.sent + faults.inbound.sent) as f64;
    assert!(
        (0.1..0.3).contains(&(lost / total)),
        "loss rate {}",
        lost / total
    );
    let stats = conn.stats().unwrap();
    // losses were detected and repaired (by retransmission or by redundant bundling)
    assert!(stats.recovery.packets_lost > 0, "{stats:?}");
    assert!(
        stats.frames.retransmitted + stats.frames.bundled > 0,
        "{stats:?}"
    );
}
