//! Golden bytes of each record kind, and the multiplexer's period, MTU, native and buffer
//! rules.

use std::time::{Duration, Instant};

use super::context::{fill_v4_checksum, sum};
use super::*;

/// An IPv4/UDP packet 10.0.0.1:27005 -> 192.0.2.1:27015 with correct checksums (or a zero UDP
/// checksum when `zero_csum`).
fn v4_udp(id: u16, payload: &[u8], zero_csum: bool) -> Vec<u8> {
    let len = 28 + payload.len();
    let mut p = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 192, 0, 2, 1,
    ];
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    fill_v4_checksum(&mut p);
    p.extend_from_slice(&27005u16.to_be_bytes());
    p.extend_from_slice(&27015u16.to_be_bytes());
    p.extend_from_slice(&((len - 20) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    if !zero_csum {
        let pseudo = sum(0, &p[12..20]) as u32 + 17 + (len - 20) as u32;
        let c = !sum(pseudo, &p[20..]);
        let c = if c == 0 { 0xffff } else { c };
        p[26..28].copy_from_slice(&c.to_be_bytes());
    }
    p
}

fn config() -> TcmConfig {
    TcmConfig {
        single_native: false,
        ..TcmConfig::default()
    }
}

/// Pushes `packets` at t0, closes the period, returns the outputs.
fn run(config: TcmConfig, packets: &[Vec<u8>]) -> Vec<(Output, Vec<u8>)> {
    let t0 = Instant::now();
    let mut mux = Multiplexer::new(config).unwrap();
    for p in packets {
        mux.push(t0, p).unwrap();
    }
    let end = mux.poll_timeout().unwrap();
    mux.handle_timeout(end);
    let mut outs = Vec::new();
    let mut buf = Vec::new();
    while let Some(o) = mux.poll_output(end, &mut buf) {
        outs.push((o, buf.clone()));
    }
    outs
}

fn demux_all(config: &TcmConfig, bundles: &[Vec<u8>]) -> (Vec<Vec<u8>>, TcmStats) {
    let mut d = Demultiplexer::new(config).unwrap();
    let mut got = Vec::new();
    for b in bundles {
        d.handle_bundle(b, &mut |p| got.push(p.to_vec())).unwrap();
    }
    (got, *d.stats())
}

#[test]
fn tcm_golden_full_then_compressed() {
    let a = v4_udp(0x1234, b"abcd", false);
    let b = v4_udp(0x1235, b"efgh", false);
    let outs = run(config(), &[a.clone(), b.clone()]);
    assert_eq!(outs.len(), 1);
    let (kind, bundle) = &outs[0];
    assert_eq!(*kind, Output::Bundle);
    let mut want = vec![0x10, 37, 0x80, 0, 0x11, 0x12, 0x34];
    want.extend_from_slice(&a);
    // COMPRESSED: len 9, gen 1 idx 0, ctx 0, id low byte, UDP checksum, payload.
    want.extend_from_slice(&[9, 0x08, 0, 0x01, b[26], b[27]]);
    want.extend_from_slice(b"efgh");
    assert_eq!(bundle, &want);
    // MH + RH of the steady flow: 6 bytes.
    assert_eq!(bundle.len() - 1 - (a.len() + 6) - 4, 6);
    let (got, stats) = demux_all(&config(), std::slice::from_ref(bundle));
    assert_eq!(got, vec![a, b]);
    assert_eq!((stats.full_records, stats.compressed_records), (1, 1));
}

#[test]
fn tcm_golden_zero_checksum_carries_crc() {
    let a = v4_udp(7, b"xy", true);
    let b = v4_udp(8, b"zw", true);
    let outs = run(config(), &[a.clone(), b.clone()]);
    let bundle = &outs[0].1;
    let rec = &bundle[1 + 1 + 5 + a.len()..];
    // len 8: flags (gen 1, CRC), ctx, id, checksum 0 0, crc, payload.
    assert_eq!(&rec[..6], &[8, 0x09, 0, 1, 0, 0]);
    assert_eq!(rec[6], super::context::crc8(&b[..28]));
    let (got, _) = demux_all(&config(), std::slice::from_ref(bundle));
    assert_eq!(got, vec![a, b]);
}

#[test]
fn tcm_golden_uncompressed() {
    let mut gre = v4_udp(1, b"q", false);
    gre[9] = 47;
    fill_v4_checksum(&mut gre);
    let two = run(config(), &[gre.clone(), gre.clone()]);
    let mut want = vec![0x10];
    for _ in 0..2 {
        want.push(gre.len() as u8 + 1);
        want.push(0x81);
        want.extend_from_slice(&gre);
    }
    assert_eq!(two[0].1, want);
    let (got, stats) = demux_all(&config(), &[want]);
    assert_eq!(got, vec![gre.clone(), gre]);
    assert_eq!(stats.uncompressed_records, 2);
}

#[test]
fn two_byte_length_prefix() {
    let a = v4_udp(1, &[0xab; 200], false);
    let outs = run(config(), std::slice::from_ref(&a));
    let body = a.len() + 5;
    assert_eq!(
        &outs[0].1[..3],
        &[0x10, 0x80 | (body >> 8) as u8, body as u8]
    );
}

#[test]
fn single_packet_goes_native() {
    let a = v4_udp(1, b"solo", false);
    let outs = run(TcmConfig::default(), std::slice::from_ref(&a));
    assert_eq!(outs, vec![(Output::Native, a.clone())]);
    // Its FULL never went out: the next packet of the flow must be FULL again.
    let b = v4_udp(2, b"next", false);
    let c = v4_udp(3, b"more", false);
    let t0 = Instant::now();
    let mut mux = Multiplexer::new(TcmConfig::default()).unwrap();
    mux.push(t0, &a).unwrap();
    let end = mux.poll_timeout().unwrap();
    let mut buf = Vec::new();
    assert_eq!(mux.poll_output(end, &mut buf), Some(Output::Native));
    mux.push(end, &b).unwrap();
    mux.push(end, &c).unwrap();
    let end2 = mux.poll_timeout().unwrap();
    assert_eq!(end2, end + Duration::from_millis(25));
    assert_eq!(mux.poll_output(end2, &mut buf), Some(Output::Bundle));
    let (got, _) = demux_all(&TcmConfig::default(), &[buf.clone()]);
    assert_eq!(got, vec![b, c]);
}

#[test]
fn bundles_never_exceed_mtu() {
    let config = TcmConfig {
        mtu: 300,
        ..config()
    };
    let packets: Vec<_> = (0..40).map(|i| v4_udp(i, &[i as u8; 61], false)).collect();
    let outs = run(config.clone(), &packets);
    assert!(outs.len() > 1);
    assert!(outs
        .iter()
        .all(|(k, b)| *k == Output::Bundle && b.len() <= 300));
    let bundles: Vec<_> = outs.into_iter().map(|(_, b)| b).collect();
    assert_eq!(demux_all(&config, &bundles).0, packets);
}

#[test]
fn oversized_packet_goes_native() {
    let config = TcmConfig {
        mtu: 100,
        ..config()
    };
    let big = v4_udp(1, &[1; 200], false);
    let small = v4_udp(2, b"s", false);
    let outs = run(config, &[small.clone(), big.clone(), small.clone()]);
    let kinds: Vec<_> = outs.iter().map(|o| o.0).collect();
    assert_eq!(kinds, vec![Output::Bundle, Output::Native, Output::Bundle]);
    assert_eq!(outs[1].1, big);
}

#[test]
fn large_buffer_drops_tail() {
    let config = TcmConfig {
        buffer: BufferPolicy::Large { max_bytes: 100 },
        ..config()
    };
    let packets: Vec<_> = (0..5).map(|i| v4_udp(i, &[0; 22], false)).collect();
    let t0 = Instant::now();
    let mut mux = Multiplexer::new(config).unwrap();
    for p in &packets {
        mux.push(t0, p).unwrap();
    }
    assert_eq!(mux.stats().buffer_drops, 3); // 50-byte packets, 100 bytes held at most
}

#[test]
fn time_limited_buffer_drops_old_packets() {
    let config = TcmConfig {
        buffer: BufferPolicy::TimeLimited(Duration::from_millis(30)),
        ..config()
    };
    let t0 = Instant::now();
    let mut mux = Multiplexer::new(config.clone()).unwrap();
    for i in 0..4 {
        mux.push(t0, &v4_udp(i, b"p", false)).unwrap();
    }
    // The caller does not poll for 40 ms: all four are older than the limit.
    let mut buf = Vec::new();
    assert_eq!(
        mux.poll_output(t0 + Duration::from_millis(40), &mut buf),
        None
    );
    assert_eq!(mux.stats().buffer_drops, 4);
    // Their FULL was dropped: the next packets re-establish the context.
    let t1 = t0 + Duration::from_millis(41);
    let (x, y) = (v4_udp(9, b"x", false), v4_udp(10, b"y", false));
    mux.push(t1, &x).unwrap();
    mux.push(t1, &y).unwrap();
    let end = mux.poll_timeout().unwrap();
    assert!(end <= t1 + Duration::from_millis(25));
    assert_eq!(mux.poll_output(end, &mut buf), Some(Output::Bundle));
    assert_eq!(demux_all(&config, &[buf]).0, vec![x, y]);
    assert!(mux.stats().hold_max <= Duration::from_millis(25));
}

#[test]
fn lost_full_is_detected_and_refreshed() {
    let config = TcmConfig {
        refresh_every: 4,
        ..config()
    };
    let t0 = Instant::now();
    let mut mux = Multiplexer::new(config.clone()).unwrap();
    let mut bundles = Vec::new();
    let mut buf = Vec::new();
    for i in 0..12u16 {
        let t = t0 + Duration::from_millis(25 * i as u64);
        mux.handle_timeout(t);
        while mux.poll_output(t, &mut buf).is_some() {
            bundles.push(buf.clone());
        }
        // two packets of two flows per period; the second flow differs by port
        mux.push(t, &v4_udp(i, b"a", false)).unwrap();
        let mut other = v4_udp(i, b"b", false);
        other[21] ^= 1;
        other[26..28].copy_from_slice(&[0, 0]);
        mux.push(t, &other).unwrap();
    }
    // Lose the first bundle (both reset FULLs): the compressed records after it are dropped,
    // counted, and the refresh FULLs (every 4th packet) restore service.
    let (got, stats) = demux_all(&config, &bundles[1..]);
    assert_eq!(stats.context_losses, 6);
    assert_eq!(got.len(), 2 * (bundles.len() - 1) - 6);
    assert_eq!(stats.check_failures, 0);
}

#[test]
fn context_table_is_bounded_and_lru() {
    let config = TcmConfig {
        max_contexts: 2,
        ..config()
    };
    let packets: Vec<_> = (0..6u16)
        .map(|i| {
            let mut p = v4_udp(i, b"z", true);
            p[21] = (i % 3) as u8; // three flows cycling through two slots
            p
        })
        .collect();
    let outs = run(config.clone(), &packets);
    let bundle = &outs[0].1;
    let (got, stats) = demux_all(&config, std::slice::from_ref(bundle));
    assert_eq!(got, packets);
    assert_eq!(stats.full_records, 6); // every packet evicts the flow it needs next
    let mut d = Demultiplexer::new(&config).unwrap();
    // A context id beyond the table is a malformed record, not a panic.
    d.handle_bundle(&[0x10, 7, 0x08, 5, 0, 0, 0, 0, 0], &mut |_| ())
        .unwrap();
    assert_eq!(d.stats().malformed_records, 1);
}

#[test]
fn config_validation() {
    assert!(TcmConfig::default().validate().is_ok());
    let bad = [
        TcmConfig {
            period: Duration::ZERO,
            ..TcmConfig::default()
        },
        TcmConfig {
            mtu: 10,
            ..TcmConfig::default()
        },
        TcmConfig {
            max_contexts: 257,
            ..TcmConfig::default()
        },
        TcmConfig {
            refresh_every: 0,
            ..TcmConfig::default()
        },
    ];
    for c in bad {
        assert!(matches!(c.validate(), Err(TcmError::InvalidConfig(_))));
    }
}

#[test]
fn bwr_asymptote_matches_paper_shape() {
    use super::bwr::*;
    let k = KStats::from_counts([1, 3, 3, 0, 5]);
    assert_eq!(k.periods, 4);
    assert!((k.p_single - 0.25).abs() < 1e-12);
    assert!((k.mean_multi - 11.0 / 3.0).abs() < 1e-12);
    let many = KStats {
        p_single: 0.0,
        p_multi: 1.0,
        mean: 1e9,
        mean_multi: 1e9,
        periods: 1,
    };
    let i = BwrInputs {
        k: many,
        ch: 25.0,
        nh: 28.0,
        mh: 1.0,
        rh: 5.0,
        payload: 61.0,
    };
    assert!((bwr(&i) - bwr_asymptote(&i)).abs() < 1e-6);
    assert!((bwr_asymptote(&i) - 67.0 / 89.0).abs() < 1e-12);
}
