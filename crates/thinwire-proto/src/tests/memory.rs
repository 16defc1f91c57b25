//! Memory and work bounded against a hostile peer: each test replays an attack that
//! grew the endpoint without bound before its fix.

use std::time::Duration;

use bytes::Bytes;
use thinwire_netmodel::LinkConfig;

use crate::testing::{Pair, Verdict};
use crate::wire::{self, Fragment, MessageHeader, ShortHeader};
use crate::{ChannelKind, CipherSuite, SendMode, TransportConfig};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The header of a packet from the client: it carries the server's connection id, which a
/// hostile client (holding its keys, in cleartext here) puts in the packets it writes itself.
fn server_id_header(pair: &mut Pair, c: crate::ConnectionHandle) -> ShortHeader {
    pair.client_mut().set_log_sent(true);
    let now = pair.now();
    let _ =
        pair.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::from_static(b"x"), SendMode::Plain);
    pair.run_for(ms(50));
    pair.client()
        .sent_log()
        .iter()
        .find_map(|(_, d)| ShortHeader::decode(d, 8).ok())
        .map(|(h, _)| h)
        .expect("a short-header packet")
}

/// A connected pair whose client is hostile: every short-header packet it sends reaches the
/// server with its payload replaced by a PING, so the server keeps hearing from it but never
/// learns that anything arrived. The hostile client holds its keys, so it can send anything;
/// in cleartext the filter can write its packets directly (the bounds do not depend on the
/// suite). Returns the pair and the client's and the server's handles.
fn pinging_client(seed: u64) -> (Pair, crate::ConnectionHandle, crate::ConnectionHandle) {
    let mut pair = Pair::builder(seed)
        .link(LinkConfig::default().with_delay(ms(20)))
        .cipher_suites(vec![CipherSuite::InsecureCleartext])
        .build();
    let (c, s) = pair
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    let cid_len = 8;
    pair.client_mut()
        .set_filter(Some(Box::new(move |_, _, d: &mut Vec<u8>| {
            if !wire::is_long_header(d) {
                if let Ok((_, offset)) = ShortHeader::decode(d, cid_len) {
                    d.truncate(offset);
                    wire::encode_ping(d);
                }
            }
            Verdict::Pass
        })));
    (pair, c, s)
}

/// A connected client peer that pings but never acknowledges: every short-header packet it
/// sends reaches the server with its payload replaced by a PING, so the server keeps hearing
/// from it but never learns that anything arrived. Before the fix the server kept every
/// packet it declared lost for ever (`SentPackets::expire` never forgot them) and a thin
/// stream's timeouts never backed off. Now old losses are forgotten after four RTOs and, after
/// six linear timeouts in a row, the probes back off exponentially up to `max_rto`.
#[test]
fn a_peer_that_pings_but_never_acknowledges_is_probed_sparingly() {
    let (mut pair, _c, s) = pinging_client(11);
    let sent_before = pair.server().endpoint().stats().datagrams_sent;
    let mut most_tracked = 0;
    for i in 0..600 {
        if i % 10 == 0 {
            // one reliable update a second: few packets in flight, so the stream counts as thin
            let now = pair.now();
            let _ = pair.server_mut().endpoint_mut().send(
                now,
                s,
                0,
                Bytes::from_static(b"update"),
                SendMode::Plain,
            );
        }
        pair.run_for(ms(100));
        let conn = pair
            .server()
            .endpoint()
            .connection(s)
            .expect("the client keeps it alive");
        most_tracked = most_tracked.max(conn.sent_tracked());
    }
    let sent = pair.server().endpoint().stats().datagrams_sent - sent_before;
    // measured: 180 datagrams and at most 25 packets remembered; before the fix 326 and 172,
    // growing with the length of the run (nothing was ever forgotten)
    assert!(
        sent < 250,
        "server sent {sent} datagrams in 60 s to a peer that never acknowledges"
    );
    assert!(
        most_tracked < 60,
        "server remembered up to {most_tracked} sent packets"
    );
}

/// A peer that opens many fragmented messages and never completes one: each empty fragment
/// frame (7 bytes on the wire) used to allocate a slot vector for the claimed 1,024 fragments
/// (32 kB) that the receive budget did not count. Now only arrived fragments are stored, and
/// each costs the budget its payload plus a fixed overhead, so once the budget is spent the
/// packets are refused whole (and not acknowledged).
#[test]
fn a_fragment_bomb_stays_within_the_receive_budget() {
    let budget = 64 * 1024;
    let transport = TransportConfig {
        recv_buffer: budget,
        ..TransportConfig::default()
    };
    let mut pair = Pair::builder(12)
        .link(LinkConfig::default().with_delay(ms(10)))
        .server_transport(transport)
        .cipher_suites(vec![CipherSuite::InsecureCleartext])
        .build();
    let (_c, s) = pair
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    let hdr = server_id_header(&mut pair, _c);
    let from = pair.client().addr();
    let mut seq = 10u64;
    for i in 0..200u64 {
        // 60 empty first fragments of distinct messages per datagram (a packet may carry 64
        // messages), far-ahead packet numbers
        let mut d = Vec::new();
        ShortHeader::encode(&hdr.dst_cid, 1_000 + i, 4, &mut d);
        for _ in 0..60 {
            let header = MessageHeader {
                channel: 0,
                kind: ChannelKind::ReliableOrdered,
                seq,
                compact_seq: false,
                key: None,
                fragment: Some(Fragment {
                    index: 0,
                    count: 1024,
                }),
            };
            wire::encode_message(&header, &[], &mut d);
            seq += 1;
        }
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .handle_datagram(now, from, &d);
    }
    let stats = pair
        .server()
        .endpoint()
        .connection_stats(s)
        .expect("connection");
    let conn = pair.server().endpoint().connection(s).expect("connection");
    let accounted = stats.channels[0].recv_buffered_bytes;
    let held = conn.reassembly_held_bytes();
    assert!(
        stats.udp.dropped_buffer_full > 0,
        "no packet was refused: {accounted} bytes accounted"
    );
    // one datagram of frames may land past the budget before the next is refused
    assert!(
        accounted <= budget + 60 * 200,
        "accounted {accounted} bytes"
    );
    assert!(
        held <= accounted,
        "really held {held} bytes, accounted {accounted}"
    );
}

/// A connected peer that opens partial messages without end, each as cheap as it can make them
/// (one empty first fragment of two): with a receive budget far above what they cost, the
/// count of messages under reassembly is what stops them, at `max_partial_messages`.
#[test]
fn partial_messages_are_capped_per_connection() {
    let transport = TransportConfig {
        recv_buffer: 64 << 20,
        max_partial_messages: 300,
        ..TransportConfig::default()
    };
    let mut pair = Pair::builder(13)
        .link(LinkConfig::default().with_delay(ms(10)))
        .server_transport(transport)
        .cipher_suites(vec![CipherSuite::InsecureCleartext])
        .build();
    let (c, s) = pair
        .connect(&[ChannelKind::ReliableUnordered, ChannelKind::ReliableOrdered])
        .expect("connects");
    let hdr = server_id_header(&mut pair, c);
    let from = pair.client().addr();
    let mut seq = 10u64;
    for i in 0..40u64 {
        let mut d = Vec::new();
        ShortHeader::encode(&hdr.dst_cid, 1_000 + i, 4, &mut d);
        for _ in 0..50 {
            let header = MessageHeader {
                channel: (seq % 2) as u8,
                kind: [ChannelKind::ReliableUnordered, ChannelKind::ReliableOrdered]
                    [(seq % 2) as usize],
                seq: seq / 2 + 10,
                compact_seq: false,
                key: None,
                fragment: Some(Fragment { index: 0, count: 2 }),
            };
            wire::encode_message(&header, &[], &mut d);
            seq += 1;
        }
        let now = pair.now();
        pair.server_mut()
            .endpoint_mut()
            .handle_datagram(now, from, &d);
    }
    let conn = pair.server().endpoint().connection(s).expect("connection");
    let partial = conn.partial_messages();
    assert!(partial <= 300, "{partial} messages under reassembly");
    assert!(
        partial >= 250,
        "{partial}: the cap, not something else, stopped them"
    );
    let st = pair.server().endpoint().connection_stats(s).expect("stats");
    assert!(st.udp.dropped_buffer_full > 0);
    // whole messages, which free what they take at once, still get through (the peer only
    // blocked its own fragmented messages)
    let now = pair.now();
    pair.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from(vec![5u8; 500]), SendMode::Plain)
        .expect("send");
    pair.run_for(ms(200));
    assert!(pair
        .server_mut()
        .take_messages(0)
        .iter()
        .any(|m| m.data.len() == 500));
}

/// A peer that keeps this side acknowledging (a PING every 2 ms) while it never acknowledges
/// this side's one outstanding update. ACK-only packets are not recorded, and the ledger of
/// sent packets holds entries only for recorded ones: with a window indexed by packet number
/// (holes for every ACK-only packet), it grew by one entry per ACK sent, about 250 a second.
#[test]
fn acknowledging_a_busy_peer_does_not_grow_the_sent_ledger() {
    let (mut pair, c, s) = pinging_client(12);
    let now = pair.now();
    let _ = pair.server_mut().endpoint_mut().send(
        now,
        s,
        0,
        Bytes::from_static(b"update"),
        SendMode::Plain,
    );
    let acks_before = pair.server().endpoint().stats().datagrams_sent;
    let mut most_held = 0;
    for _ in 0..2500 {
        // anything the client sends reaches the server as a PING
        let now = pair.now();
        let _ = pair.client_mut().endpoint_mut().send(
            now,
            c,
            0,
            Bytes::from_static(b"x"),
            SendMode::Plain,
        );
        pair.run_for(ms(2));
        let conn = pair.server().endpoint().connection(s).expect("kept alive");
        most_held = most_held.max(conn.sent_tracked());
    }
    let sent = pair.server().endpoint().stats().datagrams_sent - acks_before;
    assert!(sent > 1000, "the server acknowledged only {sent} times");
    assert!(
        most_held < 40,
        "the server's sent ledger held up to {most_held} entries after {sent} datagrams"
    );
}
