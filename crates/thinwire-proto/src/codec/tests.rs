//! Tests of the public codec, through its public path (the wire tests cover it again through
//! every frame).

use proptest::prelude::*;

use super::{varint, Reader, Truncated};

#[test]
fn rfc9000_examples() {
    // RFC 9000 appendix A.1, in both directions.
    for (bytes, value) in [
        (&[0x25][..], 37u64),
        (&[0x7b, 0xbd][..], 15_293),
        (&[0x9d, 0x7f, 0x3e, 0x7d][..], 494_878_333),
        (
            &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
            151_288_809_941_952_652,
        ),
    ] {
        let mut r: Reader<'_> = Reader::new(bytes);
        assert_eq!(r.varint(), Ok(value));
        assert!(r.is_empty());
        let mut out = Vec::new();
        varint::write(value, &mut out);
        assert_eq!(out, bytes);
        assert_eq!(varint::encoded_len(value), bytes.len());
    }
    // The non-shortest two-byte form of 37 reads too; a cut one does not, and moves nothing.
    assert_eq!(Reader::<Truncated>::new(&[0x40, 0x25]).varint(), Ok(37));
    let mut cut: Reader<'_> = Reader::new(&[0x40]);
    assert_eq!(cut.varint(), Err(Truncated));
    assert_eq!(cut.position(), 0);
}

#[test]
fn class_boundaries() {
    for (v, len) in [
        (0, 1),
        (63, 1),
        (64, 2),
        (16_383, 2),
        (16_384, 4),
        ((1 << 30) - 1, 4),
        (1 << 30, 8),
        (varint::MAX, 8),
    ] {
        assert_eq!(varint::encoded_len(v), len, "{v}");
    }
}

#[test]
fn reads_fail_without_moving() {
    let mut r: Reader<'_> = Reader::new(&[1, 2, 3]);
    assert_eq!(r.u16(), Ok(0x0102));
    assert_eq!(r.u16(), Err(Truncated));
    assert_eq!(r.bytes(2), Err(Truncated));
    assert_eq!(r.uint_n(9), Err(Truncated));
    assert_eq!(r.position(), 2);
    assert_eq!(r.rest(), &[3]);
    assert!(r.is_empty());
    assert_eq!(r.u8(), Err(Truncated));
}

/// Values spread over the four length classes, boundaries included.
fn arb_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..=varint::MAX,
        (0u32..62, -2i64..=2)
            .prop_map(|(b, d)| ((1i64 << b) + d).clamp(0, varint::MAX as i64) as u64),
    ]
}

proptest! {
    // Deterministic runs, no regression files written into the tree.
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0xc0de_c0de),
        ..ProptestConfig::default()
    })]

    #[test]
    fn prop_round_trip_shortest(v in arb_value(), trailing in prop::collection::vec(any::<u8>(), 0..4)) {
        let mut out = Vec::new();
        varint::write(v, &mut out);
        prop_assert_eq!(out.len(), varint::encoded_len(v));
        // Shortest form: no shorter class holds v.
        let shorter_bits = match out.len() { 1 => 0, 2 => 6, 4 => 14, _ => 30 };
        prop_assert!(out.len() == 1 || v >= 1 << shorter_bits);
        out.extend_from_slice(&trailing);
        let mut r: Reader<'_> = Reader::new(&out);
        prop_assert_eq!(r.varint(), Ok(v));
        prop_assert_eq!(r.rest(), &trailing[..]);
    }

    #[test]
    fn prop_any_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..40), ops in prop::collection::vec(0u8..8, 0..20)) {
        let mut r: Reader<'_> = Reader::new(&bytes);
        for op in ops {
            let before = r.position();
            let left = r.remaining();
            let ok = match op {
                0 => r.u8().is_ok(),
                1 => r.u16().is_ok(),
                2 => r.u32().is_ok(),
                3 => r.u64().is_ok(),
                4 => r.bytes(usize::from(op) * 3).is_ok(),
                5 => r.uint_n(left % 10).is_ok(),
                _ => match r.varint() {
                    Ok(v) => {
                        // Whatever form it came in, the value fits and re-encodes to at most
                        // the bytes it was read from.
                        prop_assert!(v <= varint::MAX);
                        prop_assert!(varint::encoded_len(v) <= r.position() - before);
                        true
                    }
                    Err(Truncated) => false,
                },
            };
            prop_assert_eq!(r.position() + r.remaining(), bytes.len());
            if !ok {
                prop_assert_eq!(r.position(), before);
            }
        }
    }
}
