//! What the sender holds and owes: a late acknowledgement of a packet declared lost
//! acknowledges its data, `Endpoint::repair_due` says when data goes whatever the
//! application sends, and `Endpoint::send_window` what the peer may still miss.

use std::time::Duration;

use bytes::Bytes;

use crate::channel::SEND_WINDOW;
use crate::connection::SEND_MESSAGE_OVERHEAD;
use crate::testing::{drop_next, Pair, Verdict};
use crate::{ChannelKind, SendMode, TransportConfig};
use thinwire_netmodel::LinkConfig;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Messages the client still holds on channel 0.
fn held(p: &Pair, c: crate::ConnectionHandle) -> usize {
    p.client().endpoint().connection_stats(c).unwrap().channels[0].send_queue_messages
}

/// The ACK of a message is lost; the timeout retransmits it; the ACK of the next packet (sent
/// 30 ms later) shows the first one arrived after all. From then on the message is no longer
/// owed: the sender does not wait for the retransmission's own ACK (before, the lost packet's
/// data was forgotten at the timeout, so a late ACK acknowledged nothing, and the repair
/// copies of the retransmission went anyway).
#[test]
fn a_late_ack_of_a_packet_declared_lost_acknowledges_its_data() {
    let link = LinkConfig::default().with_delay(ms(50));
    let mut p = Pair::builder(31)
        .link(link)
        .transport(TransportConfig::default())
        .build();
    let (c, _) = p
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    p.warm_up(c, 10, ms(150));
    let before = p.client().endpoint().connection_stats(c).unwrap();
    p.server_mut().set_filter(Some(drop_next()));
    let start = p.now();
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"first"), SendMode::Plain)
        .unwrap();
    p.run_for(ms(30));
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"second"), SendMode::Plain)
        .unwrap();
    // the timeout fires near 100 ms and the retransmission's ACK comes 100 ms later; the
    // second packet's ACK, which covers the first, comes at 130 ms
    p.run_until(start + ms(150));
    let mid = p.client().endpoint().connection_stats(c).unwrap();
    assert_eq!(
        mid.recovery.rto_expirations - before.recovery.rto_expirations,
        1,
        "{mid:?}"
    );
    assert_eq!(
        mid.recovery.spurious_losses - before.recovery.spurious_losses,
        1,
        "{mid:?}"
    );
    assert_eq!(held(&p, c), 0, "nothing is owed once the late ACK came");
    p.run_for(ms(300));
    assert_eq!(p.server_mut().take_messages(0).len(), 2);
}

/// `repair_due` is true from the moment the timeout queues a retransmission until the datagram
/// carrying it is polled, and false otherwise.
#[test]
fn repair_due_covers_a_queued_retransmission() {
    let link = LinkConfig::default().with_delay(ms(50));
    let mut p = Pair::builder(32).link(link).build();
    let (c, _) = p
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    p.warm_up(c, 10, ms(150));
    // every datagram from the server is lost: nothing is acknowledged
    p.server_mut()
        .set_filter(Some(Box::new(|_, _, _| Verdict::Drop)));
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 0, Bytes::from_static(b"owed"), SendMode::Plain)
        .unwrap();
    p.flush();
    assert!(
        !p.client().endpoint().repair_due(c, p.now()),
        "first transmission"
    );
    let rto = p
        .client_mut()
        .endpoint_mut()
        .poll_timeout()
        .expect("the RTO is armed");
    assert!(rto > p.now() + ms(90), "{:?}", rto - p.now());
    assert!(!p.client().endpoint().repair_due(c, rto - ms(1)));
    p.client_mut().endpoint_mut().handle_timeout(rto);
    assert!(
        p.client().endpoint().repair_due(c, rto),
        "retransmission queued"
    );
    let mut buf = Vec::new();
    let mut sent = 0;
    while p
        .client_mut()
        .endpoint_mut()
        .poll_transmit(rto, &mut buf)
        .is_some()
    {
        sent += 1;
    }
    assert!(sent >= 1);
    assert!(!p.client().endpoint().repair_due(c, rto), "it went");
    assert!(!p
        .client()
        .endpoint()
        .repair_due(crate::ConnectionHandle(99), rto));
}

/// `send_window` spans the messages not yet acknowledged, and moves past them as their ACKs
/// come; an unknown channel has none.
#[test]
fn send_window_spans_the_unacknowledged_messages() {
    let link = LinkConfig::default().with_delay(ms(50));
    let mut p = Pair::builder(33).link(link).build();
    let (c, _) = p
        .connect(&[ChannelKind::ReliableUnordered, ChannelKind::Unreliable])
        .expect("connects");
    assert_eq!(p.client().endpoint().send_window(c, 0), Some(0..0));
    assert_eq!(p.client().endpoint().send_window(c, 2), None);
    for i in 0..3u8 {
        let now = p.now();
        p.client_mut()
            .endpoint_mut()
            .send(now, c, 0, Bytes::from(vec![i; 10]), SendMode::Plain)
            .unwrap();
    }
    p.flush();
    assert_eq!(p.client().endpoint().send_window(c, 0), Some(0..3));
    p.run_for(ms(150));
    assert_eq!(p.client().endpoint().send_window(c, 0), Some(3..3));
    // unreliable: a message leaves the window when it is sent (it was counted, not held, there)
    let now = p.now();
    p.client_mut()
        .endpoint_mut()
        .send(now, c, 1, Bytes::from_static(b"u"), SendMode::Plain)
        .unwrap();
    assert_eq!(p.client().endpoint().send_window(c, 1), Some(0..1));
    p.flush();
    assert_eq!(p.client().endpoint().send_window(c, 1), Some(1..1));
}

/// Unreliable messages wait for their packet in the send queue, not in their channel's window
/// (`Connection::queue`): on both unreliable classes, interleaved with a reliable channel's,
/// more than one packet holds, they are counted while queued (statistics, send window, memory
/// budget), leave in the order they were sent, each once and with its own payload and sequence
/// number, and free everything they held once sent.
#[test]
fn unreliable_messages_wait_in_the_queue_and_leave_in_order() {
    let mut p = Pair::builder(34).build();
    let kinds = [
        ChannelKind::Unreliable,
        ChannelKind::UnreliableSequenced,
        ChannelKind::ReliableOrdered,
    ];
    let (c, _) = p.connect(&kinds).expect("connects");
    p.run_for(ms(100));
    let base = p.client().endpoint().stats().memory_held;
    // 3 packets' worth on each channel, sizes differing by channel
    let n = 60u8;
    let size = |ch: u8| 20 + 10 * usize::from(ch);
    for i in 0..n {
        for ch in 0..3u8 {
            let now = p.now();
            let mut payload = vec![i; size(ch)];
            payload[0] = ch;
            p.client_mut()
                .endpoint_mut()
                .send(now, c, ch, Bytes::from(payload), SendMode::Plain)
                .unwrap();
        }
    }
    let stats = p.client().endpoint().connection_stats(c).unwrap();
    for ch in 0..2u8 {
        let s = &stats.channels[usize::from(ch)];
        assert_eq!(s.send_queue_messages, usize::from(n));
        assert_eq!(s.send_queue_bytes, usize::from(n) * size(ch));
        let window = p.client().endpoint().send_window(c, ch);
        assert_eq!(window, Some(0..u64::from(n)));
    }
    let held = p.client().endpoint().stats().memory_held - base;
    let cost: usize = (0..3).map(|ch| size(ch) + SEND_MESSAGE_OVERHEAD).sum();
    assert_eq!(held, (usize::from(n) * cost) as u64);
    p.run_for(ms(200));
    for ch in 0..2u8 {
        let got = p.server_mut().take_messages(ch);
        assert_eq!(got.len(), usize::from(n), "channel {ch}");
        for (i, m) in (0..n).zip(&got) {
            assert_eq!((m.data[0], m.data[1], m.data.len()), (ch, i, size(ch)));
            let seq = (ch == 1).then_some(u64::from(i));
            assert_eq!(m.seq, seq, "channel {ch}");
        }
    }
    assert_eq!(p.server_mut().take_messages(2).len(), usize::from(n));
    let stats = p.client().endpoint().connection_stats(c).unwrap();
    for ch in 0..2u8 {
        let s = &stats.channels[usize::from(ch)];
        assert_eq!((s.send_queue_messages, s.send_queue_bytes), (0, 0));
        let window = p.client().endpoint().send_window(c, ch);
        assert_eq!(window, Some(u64::from(n)..u64::from(n)));
    }
    assert_eq!(p.client().endpoint().stats().memory_held, base);
}

/// An unreliable channel holds at most `SEND_WINDOW` messages not sent yet, as a reliable one
/// holds that many unacknowledged: the next send is refused until a packet takes some.
#[test]
fn an_unreliable_channel_holds_at_most_a_window_of_unsent_messages() {
    let mut p = Pair::builder(35).build();
    let (c, _) = p.connect(&[ChannelKind::Unreliable]).expect("connects");
    p.run_for(ms(100));
    let now = p.now();
    let e = p.client_mut().endpoint_mut();
    let mut queued = 0;
    while e
        .send(now, c, 0, Bytes::from_static(b"u"), SendMode::Plain)
        .is_ok()
    {
        queued += 1;
        assert!(queued <= SEND_WINDOW, "no limit");
    }
    assert_eq!(queued, SEND_WINDOW);
    let refused = e.send(now, c, 0, Bytes::from_static(b"u"), SendMode::Plain);
    assert_eq!(refused, Err(crate::SendError::BufferFull));
    p.flush();
    let now = p.now();
    let e = p.client_mut().endpoint_mut();
    assert!(e
        .send(now, c, 0, Bytes::from_static(b"u"), SendMode::Plain)
        .is_ok());
}

/// A send after a packet went, before its connection was drained (a caller that stops at a
/// full socket), counts the connection's memory in full: the packet freed the unreliable
/// messages it carried, and the record the endpoint kept still charged them.
#[test]
fn a_send_after_an_undrained_packet_counts_memory_in_full() {
    let mut p = Pair::builder(36).build();
    let (c, _) = p.connect(&[ChannelKind::Unreliable]).expect("connects");
    p.run_for(ms(100));
    let base = p.client().endpoint().stats().memory_held;
    let send = |p: &mut Pair| {
        let now = p.now();
        let e = p.client_mut().endpoint_mut();
        e.send(now, c, 0, Bytes::from(vec![7; 40]), SendMode::Plain)
            .unwrap();
    };
    for _ in 0..60 {
        send(&mut p);
    }
    // one packet out of three, and no more
    let now = p.now();
    let mut buf = Vec::new();
    let sent = p.client_mut().endpoint_mut().poll_transmit(now, &mut buf);
    assert!(sent.is_some());
    send(&mut p);
    let queued = p.client().endpoint().connection_stats(c).unwrap().channels[0].send_queue_messages;
    assert!(queued < 60, "the packet took some: {queued} left");
    let expected = base + (queued * (40 + SEND_MESSAGE_OVERHEAD)) as u64;
    assert_eq!(p.client().endpoint().stats().memory_held, expected);
}
