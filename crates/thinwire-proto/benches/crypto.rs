//! The cost of security per packet and per connection: sealing and opening a short-header
//! packet with each cipher suite (a 40-byte thin-stream packet, a 200-byte one, one of 600
//! bytes and a full 1,184-byte one; `crypto/aead.rs`), and a whole Noise NK handshake (both
//! sides).
//!
//! Run: `cargo bench -p thinwire-proto --features testing --bench crypto`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use thinwire_proto::testing::crypto::{handshake, PacketCipher};
use thinwire_proto::{CipherSuite, ServerKey};

/// Header of a short packet with an 8-byte id and a 1-byte packet number.
const HEADER: usize = 10;

fn bench_packets(c: &mut Criterion) {
    let mut g = c.benchmark_group("packet");
    for (name, suite) in [
        ("chacha20poly1305", CipherSuite::ChaCha20Poly1305),
        ("aes256gcm", CipherSuite::Aes256Gcm),
    ] {
        let mut tx = PacketCipher::new(suite, false);
        let mut rx = PacketCipher::new(suite, true);
        for frames in [30usize, 190, 590, 1174] {
            g.throughput(Throughput::Bytes((HEADER + frames) as u64));
            let mut plain = vec![0x40u8; HEADER];
            plain.resize(HEADER + frames, 0x2a);
            g.bench_function(format!("seal/{name}/{}B", HEADER + frames), |b| {
                let mut pn = 0u64;
                let mut buf = Vec::with_capacity(1300);
                b.iter(|| {
                    buf.clear();
                    buf.extend_from_slice(&plain);
                    tx.seal(pn, &mut buf, HEADER);
                    pn += 1;
                    buf.len()
                })
            });
            let mut sealed = plain.clone();
            tx.seal(7, &mut sealed, HEADER);
            g.bench_function(format!("open/{name}/{}B", HEADER + frames), |b| {
                let mut buf = sealed.clone();
                let now = std::time::Instant::now();
                b.iter(|| {
                    buf.copy_from_slice(&sealed);
                    let (h, body) = buf.split_at_mut(HEADER);
                    rx.open(now, 7, h, body).expect("opens")
                })
            });
        }
    }
    g.finish();
}

fn bench_handshake(c: &mut Criterion) {
    let server = ServerKey::generate([3; 32]);
    let (m1, m2) = handshake(&server, 1, 40);
    eprintln!("handshake messages: {m1} and {m2} bytes with 40-byte payloads");
    c.bench_function("handshake/noise_nk_both_sides", |b| {
        let mut seed = 0u8;
        b.iter(|| {
            seed = seed.wrapping_add(1);
            handshake(&server, seed, 40)
        })
    });
}

criterion_group!(benches, bench_packets, bench_handshake);
criterion_main!(benches);
