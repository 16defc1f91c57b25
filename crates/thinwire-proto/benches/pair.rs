//! A sans-IO client/server pair exchanging small messages on a perfect link, on one core:
//! how many messages per second the core moves end to end (encode, seal, route, open, decode,
//! ack, deliver), encrypted (the default suites) and with the insecure cleartext opt-out; at
//! the end, five interleaved encrypted/cleartext pairs of plain runs give the ratio.
//!
//! Run: `cargo bench -p thinwire-proto --features testing --bench pair`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use thinwire_proto::testing::Pair;
use thinwire_proto::{ChannelKind, CipherSuite, SendMode};

const MESSAGES: u64 = 10_000;

/// Sends `MESSAGES` 24-byte messages, 10 per millisecond of simulated time, and runs until all
/// arrived. Returns how many arrived.
fn exchange(pair: &mut Pair, channel: u8, latest: bool) -> u64 {
    let (c, _) = (thinwire_proto::ConnectionHandle(0), ());
    let payload = Bytes::from_static(b"move x=1204 y=88 z=17 ..");
    let mut delivered = 0u64;
    for i in 0..MESSAGES {
        let mode = if latest {
            SendMode::Latest { key: i % 64 }
        } else {
            SendMode::Plain
        };
        let now = pair.now();
        let r = pair
            .client_mut()
            .endpoint_mut()
            .send(now, c, channel, payload.clone(), mode);
        r.expect("send");
        if i % 10 == 9 {
            pair.run_for(Duration::from_millis(1));
            delivered += pair.server_mut().events_mut().drain(..).count() as u64;
        }
    }
    pair.run_for(Duration::from_millis(50));
    delivered + pair.server_mut().events_mut().drain(..).count() as u64
}

fn setup(kind: ChannelKind, cleartext: bool) -> Pair {
    let mut builder = Pair::builder(1)
        .link(thinwire_netmodel::LinkConfig::default().with_delay(Duration::from_millis(1)));
    if cleartext {
        builder = builder.cipher_suites(vec![CipherSuite::InsecureCleartext]);
    }
    let mut pair = builder.build();
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
        for cleartext in [false, true] {
            let label = if cleartext { "cleartext" } else { "encrypted" };
            g.bench_function(format!("{name}/{label}"), |b| {
                b.iter_batched(
                    || setup(kind, cleartext),
                    |mut pair| {
                        let n = exchange(&mut pair, 0, kind == ChannelKind::LatestReliable);
                        assert!(n > 0);
                        n
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    g.finish();
    // plain measurements for the record, independent of criterion's statistics: encrypted and
    // cleartext interleaved, five pairs
    for kind in [ChannelKind::ReliableOrdered, ChannelKind::Unreliable] {
        let mut ratios = Vec::new();
        for _ in 0..5 {
            let mut rate = [0.0f64; 2];
            for (i, cleartext) in [false, true].into_iter().enumerate() {
                let mut pair = setup(kind, cleartext);
                let start = Instant::now();
                let n = exchange(&mut pair, 0, false);
                rate[i] = n as f64 / start.elapsed().as_secs_f64();
            }
            eprintln!(
                "pair/{kind:?}: encrypted {:.0} msg/s, cleartext {:.0} msg/s",
                rate[0], rate[1]
            );
            ratios.push(rate[0] / rate[1]);
        }
        ratios.sort_by(f64::total_cmp);
        eprintln!(
            "pair/{kind:?}: encrypted / cleartext = {:.3} (median of 5; range {:.3}-{:.3})",
            ratios[2], ratios[0], ratios[4]
        );
    }
}

criterion_group!(benches, bench_pair);
criterion_main!(benches);
