//! Wire-format benchmarks: encode and decode of a typical data packet
//! (short header + ack frame + ten 24-byte compact messages on mixed
//! channels). Run: `cargo bench -p thinwire-proto --features fuzzing --bench wire` (the codec is
//! public only under that feature).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use thinwire_proto::wire::{
    encode_ack, encode_message, frames, message_frame_len, AckFrame, ChannelKind, ConnectionId,
    Frame, MessageHeader, ShortHeader,
};

const CHANNELS: [ChannelKind; 5] = ChannelKind::ALL;

fn ack() -> AckFrame {
    // A realistic ack: a few holes in the last ~100 packets.
    AckFrame::from_ranges(
        [1000..=1040, 1030..=1035, 980..=1020, 950..=975, 900..=940].into_iter(),
        2_500,
        32,
    )
    .expect("non-empty ack")
}

fn encode_packet(cid: &ConnectionId, pn: u64, ack: &AckFrame, payload: &[u8], out: &mut Vec<u8>) {
    ShortHeader::encode(cid, pn, 1, out);
    encode_ack(ack, out);
    for i in 0..10u64 {
        let channel = (i % 5) as u8;
        let kind = CHANNELS[usize::from(channel)];
        let key = kind.has_key().then_some(i * 7);
        let header = MessageHeader {
            channel,
            kind,
            seq: 500 + i,
            compact_seq: true,
            key,
            fragment: None,
        };
        encode_message(&header, payload, out);
    }
}

fn bench_wire(c: &mut Criterion) {
    let cid = ConnectionId::new(&[0xAB, 0xCD]).expect("valid cid");
    let ack = ack();
    let payload = [0x5Au8; 24];

    let mut packet = Vec::with_capacity(1500);
    encode_packet(&cid, 1041, &ack, &payload, &mut packet);
    let expected_len = ShortHeader::encoded_len(2, 1)
        + ack.encoded_len()
        + (0..10u64)
            .map(|i| {
                let kind = CHANNELS[(i % 5) as usize];
                let header = MessageHeader {
                    channel: (i % 5) as u8,
                    kind,
                    seq: 500 + i,
                    compact_seq: true,
                    key: kind.has_key().then_some(i * 7),
                    fragment: None,
                };
                message_frame_len(&header, 24)
            })
            .sum::<usize>();
    assert_eq!(packet.len(), expected_len);

    let mut group = c.benchmark_group("wire");
    group.throughput(Throughput::Bytes(packet.len() as u64));
    group.bench_function("encode_packet", |b| {
        let mut out = Vec::with_capacity(1500);
        b.iter(|| {
            out.clear();
            encode_packet(
                black_box(&cid),
                black_box(1041),
                black_box(&ack),
                black_box(&payload),
                &mut out,
            );
            black_box(out.len())
        })
    });
    group.bench_function("decode_packet", |b| {
        b.iter(|| {
            let datagram = black_box(&packet[..]);
            let (header, offset) = ShortHeader::decode(datagram, 2).expect("valid header");
            let mut payload_bytes = 0usize;
            for frame in frames(&datagram[offset..], &CHANNELS) {
                match frame.expect("valid frame") {
                    Frame::Message(m) => payload_bytes += m.payload.len(),
                    Frame::Ack(a) => payload_bytes += a.ranges.len(),
                    _ => {}
                }
            }
            black_box((header.pn(Some(1040)), payload_bytes))
        })
    });
    group.finish();
}

criterion_group!(benches, bench_wire);
criterion_main!(benches);
