//! TCM throughput: 60-byte-payload IPv4/UDP game packets from 20 flows through
//! push -> bundle -> demux (the project's target is >= 200k packets/s per core).
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use etherparse::PacketBuilder;
use thinwire_gateway::tcm::{Demultiplexer, Multiplexer, TcmConfig};

/// 1000 packets of 20 players, each player's IPv4 id incrementing, checksums right.
fn packets() -> Vec<Vec<u8>> {
    (0..1000u16)
        .map(|i| {
            let player = (i % 20) as u8;
            let mut p = Vec::new();
            PacketBuilder::ipv4([10, 0, 0, player], [192, 0, 2, 1], 64)
                .udp(27005, 27015)
                .write(&mut p, &[player; 60])
                .unwrap();
            p[4..6].copy_from_slice(&(i / 20).to_be_bytes());
            p[10..12].copy_from_slice(&[0, 0]);
            let mut acc: u32 = p[..20]
                .chunks(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]) as u32)
                .sum();
            while acc > 0xffff {
                acc = (acc & 0xffff) + (acc >> 16);
            }
            p[10..12].copy_from_slice(&(!(acc as u16)).to_be_bytes());
            p
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let packets = packets();
    let config = TcmConfig::default();
    let mut group = c.benchmark_group("tcm");
    const BATCH: u64 = 1000;
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("push_bundle_demux_60B_udp", |b| {
        let mut mux = Multiplexer::new(config.clone()).unwrap();
        let mut demux = Demultiplexer::new(&config).unwrap();
        let mut now = Instant::now();
        let mut buf = Vec::with_capacity(2048);
        let mut restored = 0usize;
        b.iter(|| {
            for p in &packets {
                // 20 packets per 25 ms period, as 20 players at 50 ms would give at T = 50.
                now += Duration::from_micros(1250);
                mux.push(now, p).unwrap();
                if mux.poll_timeout().is_some_and(|t| t <= now) {
                    mux.handle_timeout(now);
                }
                while mux.poll_output(now, &mut buf).is_some() {
                    restored += demux
                        .handle_bundle(&buf, &mut |p| {
                            black_box(p);
                        })
                        .unwrap_or(0);
                }
            }
        });
        black_box(restored);
        let s = mux.stats();
        assert_eq!(s.uncompressed_records, 0);
        assert!(s.compressed_records > 20 * s.full_records);
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
