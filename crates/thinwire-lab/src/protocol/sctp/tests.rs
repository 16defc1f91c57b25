//! Tests of the SCTP model.

use super::*;

const MS: Duration = Duration::from_millis(1);

fn msg(id: u64, size: u32) -> OutMessage {
    crate::protocol::test_message(id, size)
}

/// Moves every packet from `a` to `b` after `delay`, dropping those whose
/// index (counted over the run) is in `drop`; returns delivered ids at `b`
/// with their times.
fn run(drop: &[usize], n: u64, gap: Duration) -> (Vec<(u64, Duration)>, SctpAssoc) {
    let t0 = Instant::now();
    let mut a = SctpAssoc::new(SctpConfig::default());
    let mut b = SctpAssoc::new(SctpConfig::default());
    let delay = 100 * MS;
    let mut in_flight: Vec<(Instant, bool, SctpPacket)> = Vec::new();
    let mut sent = 0usize;
    let mut got = Vec::new();
    let mut now = t0;
    let end = t0 + Duration::from_secs(30);
    let mut next_msg = 0u64;
    while now < end {
        if next_msg < n && now >= t0 + gap * next_msg as u32 {
            a.send(now, 0, &msg(next_msg, 25));
            next_msg += 1;
        }
        while let Some(tx) = a.poll_transmit(now) {
            if !drop.contains(&sent) {
                in_flight.push((now + delay, true, tx.packet));
            }
            sent += 1;
        }
        while let Some(tx) = b.poll_transmit(now) {
            in_flight.push((now + delay, false, tx.packet));
        }
        let (due, rest): (Vec<_>, Vec<_>) = in_flight.drain(..).partition(|p| p.0 <= now);
        in_flight = rest;
        for (_, to_b, p) in due {
            if to_b {
                b.receive(now, 0, p);
            } else {
                a.receive(now, 0, p);
            }
        }
        for ep in [&mut a, &mut b] {
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
            }
        }
        while let Some((_, id)) = b.poll_delivered() {
            got.push((id, now - t0));
        }
        now += MS;
    }
    (got, a)
}

#[test]
fn delivers_in_order_and_recovers_by_fast_retransmit() {
    // 20 messages 10 ms apart; the third packet is lost. Three later
    // packets produce three SACKs reporting it missing: fast retransmit,
    // no timeout, and everything after it waits (one ordered stream).
    let (got, a) = run(&[2], 20, 10 * MS);
    let ids: Vec<u64> = got.iter().map(|g| g.0).collect();
    assert_eq!(ids, (0..20).collect::<Vec<_>>());
    assert_eq!(a.fast_retransmits, 1);
    assert_eq!(a.timeouts, 0);
    // Message 3 was held back behind message 2.
    assert!(got[3].1 >= got[2].1);
    assert!(got[2].1 > Duration::from_millis(200));
}

#[test]
fn a_lone_loss_waits_for_the_one_second_rto() {
    // Messages 2 s apart: no later data to trigger fast retransmit, so
    // the loss is repaired by T3, which is at least RTO.min = 1 s.
    let (got, a) = run(&[0], 3, 2000 * MS);
    assert_eq!(got.len(), 3);
    assert_eq!(a.timeouts, 1);
    assert_eq!(a.fast_retransmits, 0);
    // The first RTO is ns-2's rtoInitial_ of 3 s (no RTT sample yet).
    assert!(got[0].1 >= Duration::from_secs(3), "{:?}", got[0].1);
    assert!(a.rto() >= Duration::from_secs(1));
}

#[test]
fn bundles_chunks_and_counts_headers() {
    let t0 = Instant::now();
    let mut a = SctpAssoc::new(SctpConfig::default());
    for i in 0..3 {
        a.send(t0, 0, &msg(i, 23));
    }
    let tx = a.poll_transmit(t0).expect("packet");
    assert_eq!(tx.packet.data.len(), 3);
    // 20 + 12 + 3 * (16 + 24).
    assert_eq!(tx.wire_bytes, 20 + 12 + 3 * 40);
    assert!(a.poll_transmit(t0).is_none());
    // A lone SACK: 20 + 12 + 16 bytes.
    let mut b = SctpAssoc::new(SctpConfig::default());
    b.receive(t0, 0, tx.packet);
    assert!(b.poll_transmit(t0).is_none(), "SACK is delayed");
    b.handle_timeout(t0 + 200 * MS);
    let s = b.poll_transmit(t0 + 200 * MS).expect("sack");
    assert_eq!(s.wire_bytes, 48);
    assert_eq!(s.packet.sack.expect("sack").cum, Some(2));
}
