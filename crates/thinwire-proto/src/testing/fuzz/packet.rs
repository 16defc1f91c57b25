//! The `packet` fuzz target's body ([`packet`]): every wire decoder on arbitrary datagrams
//! (packets, frames, the handshake payloads, connect tokens), and a decode → encode → decode
//! round trip of whatever decodes. A unit test replays its committed corpus in CI.

use crate::wire::{
    encode_ack, encode_close, encode_copies, encode_padding, encode_path_challenge,
    encode_path_response, encode_ping, frames, is_long_header, pn_decode, seq_expand, AcceptParams,
    ChannelKind, ConnectParams, Frame, LongPacket, SeqField, ShortHeader, KEY_PHASE_BIT,
};
use crate::ConnectToken;

/// The channel table used for frame decoding: one channel of each kind.
const CHANNELS: [ChannelKind; 5] = ChannelKind::ALL;
/// Local connection-id length used for short headers.
const CID_LEN: usize = 8;

/// Encodes one frame with the public encoders (`channels`: the connection's channel table).
pub(crate) fn encode_frame(frame: &Frame<'_>, channels: &[ChannelKind], out: &mut Vec<u8>) {
    match frame {
        Frame::Padding(n) => encode_padding(*n, out),
        Frame::Ping => encode_ping(out),
        Frame::Copies => encode_copies(out),
        Frame::Ack(a) => encode_ack(a, out),
        Frame::Close { code, reason } => encode_close(*code, reason, out),
        Frame::Message(m) => m.encode(channels[usize::from(m.channel)], out),
        Frame::Shard(f) => f.encode(out),
        Frame::PathChallenge(d) => encode_path_challenge(d, out),
        Frame::PathResponse(d) => encode_path_response(d, out),
    }
}

/// The handshake payloads and connect tokens: decode, re-encode, decode again.
fn check_handshake(data: &[u8]) {
    if let Ok(p) = ConnectParams::decode(data) {
        let mut out = Vec::new();
        p.encode(&mut out);
        assert_eq!(
            ConnectParams::decode(&out),
            Ok(p),
            "connect params round trip"
        );
    }
    if let Ok(p) = AcceptParams::decode(data) {
        let mut out = Vec::new();
        p.encode(&mut out);
        assert_eq!(
            AcceptParams::decode(&out),
            Ok(p),
            "accept params round trip"
        );
    }
    if let Ok(t) = ConnectToken::decode(data) {
        assert_eq!(ConnectToken::decode(&t.encode()), Ok(t), "token round trip");
    }
}

fn check_long(data: &[u8]) {
    let peek = LongPacket::peek(data);
    let Ok(packet) = LongPacket::decode(data) else {
        return;
    };
    // Anything that decodes has a readable prefix of the same type.
    let prefix = peek.expect("decoded packet must peek");
    assert_eq!(prefix.packet_type, packet.packet_type());
    let mut out = Vec::new();
    packet.encode(&mut out);
    assert!(is_long_header(&out));
    assert_eq!(
        LongPacket::decode(&out).as_ref(),
        Ok(&packet),
        "long round trip"
    );
}

fn check_short(data: &[u8]) {
    let Ok((header, offset)) = ShortHeader::decode(data, CID_LEN) else {
        return;
    };
    // The header re-encodes to the same bytes (the pn is already truncated).
    let mut out = Vec::new();
    ShortHeader::encode(
        &header.dst_cid,
        header.pn_truncated,
        usize::from(header.pn_len),
        &mut out,
    );
    if header.key_phase {
        out[0] |= KEY_PHASE_BIT;
    }
    assert_eq!(&out[..], &data[..offset], "short header round trip");

    // Frames up to the first error round-trip semantically.
    let decoded: Vec<Frame<'_>> = frames(&data[offset..], &CHANNELS)
        .map_while(Result::ok)
        .collect();
    let mut body = Vec::new();
    for f in &decoded {
        encode_frame(f, &CHANNELS, &mut body);
    }
    let again: Vec<Frame<'_>> = frames(&body, &CHANNELS)
        .collect::<Result<_, _>>()
        .expect("re-encoded frames must decode");
    assert_eq!(again, decoded, "frames round trip");
}

/// Every wire decoder on one datagram, and a round trip of whatever decodes. Panics when a
/// decoder panics or a round trip differs.
pub fn packet(data: &[u8]) {
    let _ = is_long_header(data);
    check_long(data);
    check_short(data);
    check_handshake(data);
    // Also feed the payload straight to the frame parser.
    for f in frames(data, &CHANNELS) {
        if f.is_err() {
            break;
        }
    }
    // Arithmetic helpers must be total.
    if data.len() >= 17 {
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        a.copy_from_slice(&data[..8]);
        b.copy_from_slice(&data[8..16]);
        let (x, y) = (u64::from_be_bytes(a), u64::from_be_bytes(b));
        let len = usize::from(data[16] % 6);
        let _ = pn_decode(x, len, Some(y));
        let s = seq_expand(SeqField::compact(x), y);
        assert_eq!(s & 0xFF, x & 0xFF);
    }
}
