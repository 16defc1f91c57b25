use std::net::SocketAddr;

use proptest::prelude::*;
use thinwire_proto::{ChannelKind, TokenClaims};

use crate::trunk::frame::{Batch, BatchWriter, Data, FlowClose, FlowOpen, Frame, MAX_BATCH};
use crate::trunk::FrameError;

/// Golden frames: (bytes, frame). They also seed the fuzz corpus.
fn golden() -> Vec<(Vec<u8>, Frame<'static>)> {
    let v4: SocketAddr = "192.0.2.7:40000".parse().unwrap();
    let v6: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
    vec![
        (
            vec![0x01, 0x05, 0x02, 0x00, 0x04, 0x04, 192, 0, 2, 7, 0x9c, 0x40],
            Frame::FlowOpen(FlowOpen {
                flow: 5,
                channels: vec![ChannelKind::ReliableOrdered, ChannelKind::LatestReliable],
                player: v4,
                claims: None,
            }),
        ),
        (
            vec![
                0x01, 0x05, 0x01, 0x00, 0x04, 192, 0, 2, 7, 0x9c, 0x40, // as above
                1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0x02, b'a', b'b', // the claims
            ],
            Frame::FlowOpen(FlowOpen {
                flow: 5,
                channels: vec![ChannelKind::ReliableOrdered],
                player: v4,
                claims: Some(TokenClaims {
                    client_id: 0x0102_0304_0506_0708,
                    user_data: b"ab".to_vec(),
                }),
            }),
        ),
        (
            [
                &[0x01, 0x40, 0x40, 0x01, 0x02, 0x06][..],
                &[
                    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
                ],
                &[0x01, 0xbb],
            ]
            .concat(),
            Frame::FlowOpen(FlowOpen {
                flow: 64,
                channels: vec![ChannelKind::Unreliable],
                player: v6,
                claims: None,
            }),
        ),
        (vec![0x02, 0x05], Frame::FlowOpened { flow: 5 }),
        (
            vec![0x03, 0x05, 0x07, 0x03, b'b', b'y', b'e'],
            Frame::FlowClose(FlowClose {
                flow: 5,
                code: 7,
                reason: b"bye",
            }),
        ),
        (vec![0x04, 0xde, 0xad], Frame::Bundle(&[0xde, 0xad])),
        (
            vec![0x10, 0x05, 0x02, b'h', b'i'],
            Frame::Data(Data {
                flow: 5,
                channel: 2,
                seq: None,
                seq8: false,
                deadline_us: None,
                key: None,
                payload: b"hi",
            }),
        ),
        (
            vec![0x80, 0x05, 0x41, 0x00, b'x'],
            Frame::Data(Data {
                flow: 5,
                channel: 0,
                seq: Some(256),
                seq8: false,
                deadline_us: None,
                key: None,
                payload: b"x",
            }),
        ),
        (
            vec![0xc0, 0xaf, 0x07, b'h', b'i'],
            Frame::Data(Data {
                flow: 175,
                channel: 0,
                seq: Some(7),
                seq8: true,
                deadline_us: None,
                key: None,
                payload: b"hi",
            }),
        ),
        (
            vec![0xc1, 0x2c, 0xff, b'!'],
            Frame::Data(Data {
                flow: 300,
                channel: 0,
                seq: Some(255),
                seq8: true,
                deadline_us: None,
                key: None,
                payload: b"!",
            }),
        ),
        (
            vec![0x15, 0x05, 0x02, 0x09, b'z'],
            Frame::Data(Data {
                flow: 5,
                channel: 2,
                seq: Some(9),
                seq8: true,
                deadline_us: None,
                key: None,
                payload: b"z",
            }),
        ),
        (
            vec![0x11, 0x80, 0x00, 0x40, 0x00, 0x00, 0x01],
            Frame::Data(Data {
                flow: 16_384,
                channel: 0,
                seq: Some(1),
                seq8: false,
                deadline_us: None,
                key: None,
                payload: b"",
            }),
        ),
        (
            vec![0x18, 0x05, 0x00, 0x80, 0x00, 0xc3, 0x50, b'd'],
            Frame::Data(Data {
                flow: 5,
                channel: 0,
                seq: None,
                seq8: false,
                deadline_us: Some(50_000),
                key: None,
                payload: b"d",
            }),
        ),
        (
            vec![0x13, 0x05, 0x04, 0x01, 0x2a],
            Frame::Data(Data {
                flow: 5,
                channel: 4,
                seq: Some(1),
                seq8: false,
                deadline_us: None,
                key: Some(42),
                payload: b"",
            }),
        ),
    ]
}

#[test]
fn golden_bytes() {
    for (bytes, frame) in golden() {
        assert_eq!(frame.to_vec(), bytes, "{frame:?}");
        assert_eq!(Frame::parse(&bytes), Ok(frame));
    }
}

fn short(flow: u32, seq: u64, seq8: bool, payload: &'static [u8]) -> Data<'static> {
    Data {
        flow,
        channel: 0,
        seq: Some(seq),
        seq8,
        deadline_us: None,
        key: None,
        payload,
    }
}

/// Golden Batch frames: (bytes, entries). The entries' own bytes are golden above.
fn golden_batches() -> Vec<(Vec<u8>, Vec<Data<'static>>)> {
    let ru = Data {
        flow: 5,
        channel: 1,
        seq: Some(3),
        seq8: false,
        deadline_us: None,
        key: None,
        payload: b"ok",
    };
    vec![
        (
            vec![0x40, 0x04, 0x80, 0x05, 0x00, 0x61, 0x80, 0x05, 0x01, 0x62],
            vec![short(5, 0, false, b"a"), short(5, 1, false, b"b")],
        ),
        (
            vec![
                0x41, // Batch of 3
                0x05, 0xc0, 0xaf, 0x07, 0x68, 0x69, // 5 bytes: flow 175, seq ..07, "hi"
                0x06, 0x11, 0x05, 0x01, 0x03, 0x6f,
                0x6b, // 6 bytes: flow 5, channel 1, seq 3, "ok"
                0xc1, 0x2c, 0xff, 0x21, // the rest: flow 300, seq ..ff, "!"
            ],
            vec![short(175, 7, true, b"hi"), ru, short(300, 255, true, b"!")],
        ),
    ]
}

#[test]
fn batch_golden_bytes() {
    for (bytes, entries) in golden_batches() {
        let mut w = BatchWriter::new();
        for d in &entries {
            assert!(w.push(d));
        }
        assert_eq!(w.finish(), bytes);
        let Ok(Frame::Batch(b)) = Frame::parse(&bytes) else {
            panic!("a batch: {:?}", Frame::parse(&bytes));
        };
        assert_eq!(b.count(), entries.len());
        assert_eq!(Frame::Batch(b).to_vec(), bytes);
        let got: Vec<Data<'_>> = b.entries().map(|(_, d)| d).collect();
        assert_eq!(got, entries);
        for (raw, d) in b.entries() {
            assert_eq!(
                Frame::parse(raw),
                Ok(Frame::Data(d)),
                "an entry is a Data frame"
            );
        }
        assert_eq!(Batch::parse(bytes[0], &bytes[1..]), Ok(b));
    }
}

#[test]
fn a_batch_writer_of_one_entry_writes_the_data_frame_alone() {
    let d = short(175, 7, true, b"hi");
    let mut w = BatchWriter::new();
    assert_eq!(w.finish(), b"");
    w = BatchWriter::new();
    assert_eq!(w.len_with(5), 5);
    assert!(w.push(&d));
    assert_eq!(w.len_with(4), 11, "type, length, 5, 4");
    assert_eq!(w.finish(), [0xc0, 0xaf, 0x07, 0x68, 0x69]);
    // no deadline, no entry over 255 bytes (3 of header here), no 65th entry
    let mut w = BatchWriter::new();
    let long = [0u8; 253];
    let deadline = Data {
        seq: None,
        deadline_us: Some(1),
        ..d.clone()
    };
    assert!(!w.push(&deadline));
    assert!(!w.push(&Data {
        payload: &long,
        ..d.clone()
    }));
    assert!(w.push(&Data {
        payload: &long[..252],
        ..d.clone()
    }));
    for _ in 1..MAX_BATCH {
        assert!(w.push(&d));
    }
    assert!(!w.push(&d));
    assert_eq!(w.count(), MAX_BATCH);
}

#[test]
fn the_long_form_of_a_short_frame_parses_to_the_same_frame() {
    let long = [0x11, 0x05, 0x00, 0x41, 0x00, b'x'];
    let short = [0x80, 0x05, 0x41, 0x00, b'x'];
    assert_eq!(Frame::parse(&long), Frame::parse(&short));
    assert!(Frame::parse(&long).is_ok());
}

#[test]
fn malformed_frames_are_errors() {
    let cases: &[(&[u8], FrameError)] = &[
        (&[], FrameError::Truncated),
        (&[0x7f], FrameError::UnknownType(0x7f)),
        (&[0x01, 0x00, 0x00], FrameError::ChannelCount(0)),
        (&[0x01, 0x00, 65], FrameError::ChannelCount(65)),
        (&[0x01, 0x00, 0x01, 0x09], FrameError::ChannelKind(9)),
        (
            &[0x01, 0x00, 0x01, 0x00, 0x05],
            FrameError::AddressFamily(5),
        ),
        (&[0x01, 0x00, 0x01, 0x00, 0x04, 1, 2], FrameError::Truncated),
        (&[0x02, 0x05, 0x00], FrameError::Trailing),
        (&OPEN_V4_CLAIMS_257, FrameError::UserDataTooLong(257)),
        (&OPEN_V4_CLAIMS_257[..20], FrameError::Truncated),
        (&OPEN_V4_CLAIMS_257[..14], FrameError::Trailing), // 3 bytes: no claims, no frame
        (
            &[
                1, 5, 1, 0, 4, 192, 0, 2, 7, 0x9c, 0x40, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1,
            ],
            FrameError::Truncated,
        ),
        (&[0x03, 0x00, 0x00, 65], FrameError::ReasonTooLong(65)),
        (&[0x03, 0x00, 0x00, 3, b'a'], FrameError::Truncated),
        (
            &[0x02, 0xc0, 0, 0, 1, 0, 0, 0, 0],
            FrameError::FlowOutOfRange,
        ),
        (&[0x11, 0x00, 0x00], FrameError::Truncated),
        // seq8 without a seq
        (&[0x14, 0x00, 0x00], FrameError::UnknownType(0x14)),
        (&[0x16, 0x00, 0x00, 0x01], FrameError::UnknownType(0x16)),
        (&[0x18, 0x00, 0x00], FrameError::Truncated),
        (
            &[0x1c, 0x00, 0x00, 0x01, 0x01],
            FrameError::UnknownType(0x1c),
        ),
        (&[0x20], FrameError::UnknownType(0x20)),
        (&[0x80], FrameError::Truncated),
        (&[0xc0, 0x01], FrameError::Truncated),
        (&[0x80, 0x01, 0x40], FrameError::Truncated),
        (&[0x15, 0x01, 0x00], FrameError::Truncated),
        (&[0x40], FrameError::Truncated),
        // 0x06 is no frame; 0x7f would be a Batch of 65
        (
            &[0x06, 0x02, 0x80, 0x05, 0x00],
            FrameError::UnknownType(0x06),
        ),
        (
            &[0x7f, 0x01, 0x80, 0x05, 0x00],
            FrameError::UnknownType(0x7f),
        ),
        // a zero length, a length past the end, the last entry missing
        (&[0x40, 0x00, 0x80, 0x05, 0x00], FrameError::BatchEntry),
        (&[0x40, 0x09, 0x80, 0x05, 0x00], FrameError::Truncated),
        (&[0x40, 0x03, 0x80, 0x05, 0x00], FrameError::BatchEntry),
        (
            &[0x40, 0x03, 0x80, 0x05, 0x00, 0x80],
            FrameError::BatchEntry,
        ),
        // entries that are no Data frame without a deadline: FlowOpened, a Batch, a deadline
        (
            &[0x40, 0x02, 0x02, 0x05, 0x80, 0x05, 0x00],
            FrameError::BatchEntry,
        ),
        (
            &[
                0x40, 0x03, 0x80, 0x05, 0x00, 0x40, 0x03, 0x80, 0x05, 0x00, 0x80, 0x05, 0x01,
            ],
            FrameError::BatchEntry,
        ),
        (
            &[
                0x40, 0x07, 0x18, 0x05, 0x00, 0x80, 0x00, 0xc3, 0x50, 0x80, 0x05, 0x00,
            ],
            FrameError::BatchEntry,
        ),
        // more entries than the count: the last one runs to the end, and is no Data frame
        (
            &[
                0x40, 0x03, 0x80, 0x05, 0x00, 0x03, 0x80, 0x05, 0x01, 0x80, 0x05, 0x02,
            ],
            FrameError::BatchEntry,
        ),
    ];
    for (bytes, err) in cases {
        assert_eq!(Frame::parse(bytes), Err(*err), "{bytes:?}");
    }
}

#[test]
fn long_reasons_are_cut_to_64_bytes() {
    let reason = [b'r'; 100];
    let bytes = Frame::FlowClose(FlowClose {
        flow: 1,
        code: 2,
        reason: &reason,
    })
    .to_vec();
    let Ok(Frame::FlowClose(c)) = Frame::parse(&bytes) else {
        panic!("parses");
    };
    assert_eq!(c.reason.len(), 64);
}

/// A FlowOpen whose claims announce 257 bytes of user data (one past the bound).
const OPEN_V4_CLAIMS_257: [u8; 21] = [
    0x01, 0x05, 0x01, 0x00, 0x04, 192, 0, 2, 7, 0x9c, 0x40, 0, 0, 0, 0, 0, 0, 0, 9, 0x01, 0x01,
];

fn kind() -> impl Strategy<Value = ChannelKind> {
    (0u8..5).prop_map(|c| ChannelKind::from_code(c).unwrap())
}

fn addr() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, p)| SocketAddr::from((ip, p))),
        (any::<[u8; 16]>(), any::<u16>()).prop_map(|(ip, p)| SocketAddr::from((ip, p))),
    ]
}

const V: u64 = (1 << 62) - 1;

/// The fields of a Data frame without a deadline, at most 146 bytes long.
type Fields = (u32, u8, Option<u64>, bool, Option<u64>, Vec<u8>);

fn entry() -> impl Strategy<Value = Fields> {
    (
        any::<u32>(),
        any::<u8>(),
        prop::option::of(0..=V),
        any::<bool>(),
        prop::option::of(0..=V),
        prop::collection::vec(any::<u8>(), 0..120),
    )
}

/// The Data frame of `f` (an 8-bit seq carries its low 8 bits only).
fn data_of(f: &Fields) -> Data<'_> {
    let (flow, channel, seq, seq8, key, payload) = f;
    let seq8 = *seq8 && seq.is_some();
    Data {
        flow: *flow,
        channel: *channel,
        seq: if seq8 { seq.map(|s| s & 0xff) } else { *seq },
        seq8,
        deadline_us: None,
        key: *key,
        payload,
    }
}

/// The trunk message a [`BatchWriter`] makes of `entries`, and the length it predicted.
fn batch_of(entries: &[Data<'_>]) -> (Vec<u8>, usize) {
    let mut w = BatchWriter::new();
    let mut predicted = 0;
    for d in entries {
        predicted = w.len_with(d.encoded_len());
        assert!(w.push(d));
    }
    (w.finish(), predicted)
}

proptest! {
    // Deterministic runs, no regression files written into the tree.
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x7417_7e01),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn round_trip_open(
        flow: u32,
        channels in prop::collection::vec(kind(), 1..=64),
        player in addr(),
        claims in prop::option::of((any::<u64>(), prop::collection::vec(any::<u8>(), 0..=256))),
    ) {
        let claims = claims.map(|(client_id, user_data)| TokenClaims { client_id, user_data });
        let f = Frame::FlowOpen(FlowOpen { flow, channels, player, claims });
        let bytes = f.to_vec();
        prop_assert_eq!(Frame::parse(&bytes), Ok(f));
    }

    #[test]
    fn round_trip_close(flow: u32, code in 0..=V, reason in prop::collection::vec(any::<u8>(), 0..=64)) {
        let f = Frame::FlowClose(FlowClose { flow, code, reason: &reason });
        let bytes = f.to_vec();
        prop_assert_eq!(Frame::parse(&bytes), Ok(f));
    }

    #[test]
    fn round_trip_data(
        flow: u32,
        channel: u8,
        seq in prop::option::of(0..=V),
        seq8: bool,
        key in prop::option::of(0..=V),
        deadline_us in prop::option::of(0..=V),
        payload in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        // an 8-bit seq carries the low 8 bits only
        let seq8 = seq8 && seq.is_some();
        let seq = if seq8 { seq.map(|s| s & 0xff) } else { seq };
        let d = Data { flow, channel, seq, seq8, deadline_us, key, payload: &payload };
        let mut header = Vec::new();
        d.emit_header(&mut header);
        prop_assert_eq!(header.len(), d.header_len());
        let f = Frame::Data(d);
        let bytes = f.to_vec();
        prop_assert_eq!(Frame::parse(&bytes), Ok(f));
    }

    /// Small flows on channel 0 take the short form: type and flow in two bytes, no channel
    /// byte, a one-byte seq when it is 8-bit.
    #[test]
    fn short_form_is_used_and_shorter(flow in 0u32..16_384, seq in 0..=V, seq8: bool) {
        let seq = if seq8 { seq & 0xff } else { seq };
        let d = Data { flow, channel: 0, seq: Some(seq), seq8, deadline_us: None, key: None, payload: b"p" };
        let bytes = Frame::Data(d.clone()).to_vec();
        prop_assert!(bytes[0] & 0x80 != 0);
        let seq_len = bytes.len() - 3;
        prop_assert_eq!(d.header_len(), 2 + seq_len);
        prop_assert!(!seq8 || seq_len == 1);
        prop_assert_eq!(bytes.len(), d.header_len() + 1);
        prop_assert_eq!(Frame::parse(&bytes), Ok(Frame::Data(d)));
    }

    #[test]
    fn round_trip_small(flow: u32, bundle in prop::collection::vec(any::<u8>(), 0..200)) {
        let f = Frame::FlowOpened { flow };
        let bytes = f.to_vec();
        prop_assert_eq!(Frame::parse(&bytes), Ok(f));
        let f = Frame::Bundle(&bundle);
        let bytes = f.to_vec();
        prop_assert_eq!(Frame::parse(&bytes), Ok(f));
    }

    /// Any run of entries makes one Data frame (one entry) or a Batch that parses back to
    /// exactly them, of the length the writer predicted.
    #[test]
    fn round_trip_batch(fields in prop::collection::vec(entry(), 1..=MAX_BATCH)) {
        let entries: Vec<Data<'_>> = fields.iter().map(data_of).collect();
        let (bytes, predicted) = batch_of(&entries);
        prop_assert_eq!(bytes.len(), predicted);
        match Frame::parse(&bytes) {
            Ok(Frame::Batch(b)) => {
                prop_assert!(entries.len() >= 2);
                prop_assert_eq!(b.entries().len(), entries.len());
                let got: Vec<Data<'_>> = b.entries().map(|(_, d)| d).collect();
                prop_assert_eq!(got, entries);
                prop_assert_eq!(Frame::Batch(b).to_vec(), bytes);
            }
            Ok(Frame::Data(d)) => {
                prop_assert_eq!(entries.len(), 1);
                prop_assert_eq!(&d, &entries[0]);
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    /// A Batch with bytes changed, cut or inserted never panics; whatever still parses
    /// re-emits to the same frame, and a Batch's entries are Data frames on their own.
    #[test]
    fn mutated_batches_never_panic(
        fields in prop::collection::vec(entry(), 2..=6),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
    ) {
        let entries: Vec<Data<'_>> = fields.iter().map(data_of).collect();
        let (mut bytes, _) = batch_of(&entries);
        for (at, b, op) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = b,
                1 => bytes.truncate(i),
                _ => bytes.insert(i, b),
            }
        }
        // the fuzz target's invariant (it panics when broken)
        crate::fuzz::trunk(&bytes);
    }

    /// Whatever parses re-emits to bytes that parse to the same frame.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(f) = Frame::parse(&bytes) {
            let again = f.to_vec();
            prop_assert_eq!(Frame::parse(&again), Ok(f));
        }
    }
}

#[test]
fn an_8_bit_seq_expands_to_the_smallest_seq_at_or_above_the_next_expected() {
    use crate::trunk::inbound::expand_seq8;
    assert_eq!(expand_seq8(0, 0), Some(0));
    assert_eq!(expand_seq8(0, 7), Some(7));
    assert_eq!(expand_seq8(250, 3), Some(259));
    assert_eq!(expand_seq8(256, 0), Some(256));
    assert_eq!(expand_seq8(1000, 0xe8), Some(1000));
    assert_eq!(expand_seq8(1000, 0xe7), Some(1255));
    assert_eq!(expand_seq8(u64::MAX - 3, 0), None);
    for next in [0u64, 1, 200, 255, 256, 70_000] {
        for seq in next..next + 256 {
            assert_eq!(expand_seq8(next, seq as u8), Some(seq));
        }
    }
}

#[test]
fn latest_keys_pack_flow_channel_and_key_or_do_not_fit() {
    use crate::trunk::frame::latest_key;
    assert_eq!(latest_key(0, 0, 0), Some(0));
    assert_eq!(latest_key(1, 2, 3), Some(1 << 40 | 2 << 34 | 3));
    assert_eq!(latest_key((1 << 24) - 1, 63, (1 << 34) - 1), Some(u64::MAX));
    assert_eq!(latest_key(1 << 24, 0, 0), None);
    assert_eq!(latest_key(0, 64, 0), None);
    assert_eq!(latest_key(0, 0, 1 << 34), None);
    // distinct (flow, channel, key) never share a trunk key
    let mut seen = std::collections::HashSet::new();
    for flow in [0u32, 1, 255, (1 << 24) - 1] {
        for channel in [0u8, 1, 63] {
            for key in [0u64, 1, (1 << 34) - 1] {
                assert!(seen.insert(latest_key(flow, channel, key)));
            }
        }
    }
}
