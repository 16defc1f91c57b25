//! A sans-IO client/server pair exchanging small messages on a perfect link, on one core:
//! how many messages per second the core moves end to end (encode, route, decode, ack, deliver).
//!
//! Run: `cargo bench -p thinwire-proto --features testing --bench pair`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use thinwire_proto::testing::Pair;
use thinwire_proto::ChannelKind;

const MESSAGES: u64 = 10_000;

/// Sends `MESSAGES` 24-byte messages, 10 per millisecond of simulated time, and runs until all
/// arrived. Returns how many arrived.
fn exchange(pair: &mut Pair, channel: u8, latest: bool) -> u64 {
    let (c, _) = (thinwire_proto::ConnectionHandle(0), ());
    let payload = Bytes::from_static(b"move x=1204 y=88 z=17 ..");
    let mut delivered = 0u64;
    for i in 0..MESSAGES {
        let r = if latest {
            pair.client
                .endpoint
                .send_latest(pair.time, c, channel, i % 64, payload.clone())
        } else {
            pair.client
                .endpoint
                .send(pair.time, c, channel, payload.clone())
        };
        r.expect("send");
        if i % 10 == 9 {
            pair.run_for(Duration::from_millis(1));
            delivered += pair.server.events.drain(..).count() as u64;
        }
    }
    pair.run_for(Duration::from_millis(50));
    delivered + pair.server.events.drain(..).count() as u64
}

fn setup(kind: ChannelKind) -> Pair {
    let mut pair = Pair::builder(1)
        .link(thinwire_netmodel::LinkConfig::default().with_delay(Duration::from_millis(1)))
        .build();
    pair.connect(&[kind]).expect("connects");
    pair
}

fn bench_pair(c: &mut Criterion) {
    let mut g = c.benchmark_group("pair");
    g.throughput(Throughput::Elements(MESSAGES));
    g.sample_size(20);
    for (name, kind) in [
        ("reliable_ordered", ChannelKind::ReliableOrdered),
        ("unreliable", ChannelKind::Unreliable),
        ("latest", ChannelKind::LatestReliable),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || setup(kind),
                |mut pair| {
                    let n = exchange(&mut pair, 0, kind == ChannelKind::LatestReliable);
                    assert!(n > 0);
                    n
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
    // one plain measurement for the record, independent of criterion's statistics
    let mut pair = setup(ChannelKind::ReliableOrdered);
    let start = Instant::now();
    let n = exchange(&mut pair, 0, false);
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "pair/reliable_ordered: {n} messages in {secs:.3} s = {:.0} msg/s",
        n as f64 / secs
    );
}

criterion_group!(benches, bench_pair);
criterion_main!(benches);
