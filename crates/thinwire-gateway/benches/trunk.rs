//! Messages per second through the edge → server gateway path (sans-IO, simulated time, no
//! sockets): 50 players each send one 40-byte message per round on a ReliableOrdered channel;
//! a round runs 20 simulated milliseconds, by which the game server has them all.
#![allow(missing_docs)] // criterion's macros generate undocumented functions
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use thinwire_gateway::trunk::testing::Harness;
use thinwire_gateway::trunk::TrunkOptions;
use thinwire_proto::ChannelKind;

const PLAYERS: usize = 50;

fn relay(c: &mut Criterion) {
    for (name, period) in [
        ("period_0ms", Duration::ZERO),
        ("period_10ms", Duration::from_millis(10)),
    ] {
        let mut h = Harness::builder(1)
            .options(TrunkOptions {
                period,
                ..TrunkOptions::default()
            })
            .insecure_cleartext()
            .build();
        let players: Vec<usize> = (0..PLAYERS)
            .map(|_| {
                h.connect_player(&[ChannelKind::ReliableOrdered])
                    .expect("connects")
            })
            .collect();
        let mut group = c.benchmark_group("trunk");
        group.throughput(Throughput::Elements(PLAYERS as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                for &p in &players {
                    h.player_send(p, 0, &[7u8; 40]);
                }
                h.run_for(Duration::from_millis(20));
                h.game_events.clear();
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = relay
}
criterion_main!(benches);
