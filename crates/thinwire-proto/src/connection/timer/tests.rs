//! The timer table and the connection's timers.

use super::*;

/// The table gives back exactly the instants it was given, before its base or after it,
/// and fires each at that instant; a timer set by its offset from the base is the same as
/// one set at the base plus that offset.
#[test]
fn deadlines_come_back_to_the_nanosecond() {
    let t0 = Instant::now();
    let at = |ns: u64| t0 + Duration::from_nanos(ns);
    let mut t = TimerTable::new(at(1_000_000_000));
    assert_eq!(t.next(), None);
    t.set(Timer::Idle, Some(at(30_000_000_007)));
    t.set(Timer::Ack, Some(at(1_999_999_999)));
    t.set(Timer::Keepalive, Some(at(5)));
    t.set(Timer::Trim, Some(at(1_000_000_001)));
    t.set(Timer::Repair, None);
    assert_eq!(t.next(), Some(at(5)));
    let fired: Vec<_> = t.take_expired(at(4)).collect();
    assert!(fired.is_empty());
    let fired: Vec<_> = t.take_expired(at(1_000_000_001)).collect();
    assert_eq!(fired, [Timer::Keepalive, Timer::Trim]);
    assert_eq!(t.next(), Some(at(1_999_999_999)));
    t.set(Timer::Ack, None);
    assert_eq!(t.next(), Some(at(30_000_000_007)));
    let fired: Vec<_> = t.take_expired(at(30_000_000_006)).collect();
    assert!(fired.is_empty());
    let fired: Vec<_> = t.take_expired(at(30_000_000_007)).collect();
    assert_eq!(fired, [Timer::Idle]);
    assert_eq!(t.next(), None);
    t.set_at(Timer::Close, Stamp(7));
    assert_eq!(t.next(), Some(at(1_000_000_007)));
    t.set(Timer::Drain, Some(at(1_000_000_006)));
    let fired: Vec<_> = t.take_expired(at(1_000_000_007)).collect();
    assert_eq!(fired, [Timer::Close, Timer::Drain]);
}

/// A stamp is the instant to the nanosecond, before the base or after it; `elapsed` is
/// true from the exact nanosecond the duration has passed, and never from no moment.
#[test]
fn stamps_measure_from_the_base_to_the_nanosecond() {
    let t0 = Instant::now();
    let at = |ns: u64| t0 + Duration::from_nanos(ns);
    let t = Timers::new(at(1_000));
    assert_eq!(t.stamp(at(1_000)).get(), Some(0));
    assert_eq!(t.stamp(at(1_007)).get(), Some(7));
    assert_eq!(t.stamp(at(993)).get(), Some(-7));
    let s = t.stamp(at(2_000));
    let d = Duration::from_nanos(500);
    assert!(!t.elapsed(s, d, at(2_499)));
    assert!(t.elapsed(s, d, at(2_500)));
    assert!(t.elapsed(t.stamp(at(10)), d, at(510)));
    assert!(!t.elapsed(t.stamp(at(10)), d, at(509)));
    assert!(!t.elapsed(Stamp::NONE, Duration::ZERO, at(u64::from(u32::MAX))));
    assert_eq!(Stamp::NONE.get(), None);
    // `before` is the inverse of `after`, before the base too; none has no moment before it
    assert_eq!(s.before(d), Some(t.stamp(at(1_500))));
    assert_eq!(s.before(d).map(|b| b.after(d)), Some(s));
    assert_eq!(
        s.before(Duration::from_nanos(1_003)),
        Some(t.stamp(at(997)))
    );
    assert_eq!(t.stamp(at(997)).get(), Some(-3));
    assert_eq!(Stamp::NONE.before(d), None);
    assert_eq!(Stamp(i64::MIN + 1).before(Duration::from_nanos(2)), None);
}

/// An idle connection's loss recovery and ACK state rest packed between its keepalive
/// exchanges, on both ends, in about a hundred bytes; neither reading their statistics nor
/// a forged packet unpacks it; a message sent on a resting connection goes and arrives as
/// on any other.
#[test]
fn an_idle_connection_rests_packed_between_keepalives() {
    use crate::testing::Pair;
    use crate::{ChannelKind, Event, SendMode};

    let mut pair = Pair::builder(11)
        .link(thinwire_netmodel::LinkConfig::default().with_delay(Duration::from_millis(20)))
        .build();
    let (ours, theirs) = pair
        .connect(&[ChannelKind::ReliableOrdered])
        .expect("connects");
    pair.warm_up(ours, 20, Duration::from_millis(30));
    let (mut parked_steps, mut steps) = (0, 0);
    for step in 0..200 {
        pair.run_for(Duration::from_millis(50));
        let ends = [
            pair.server().endpoint().connection(theirs),
            pair.client().endpoint().connection(ours),
        ]
        .map(|c| c.expect("held"));
        // from 2 s on, once both have trimmed
        if step < 40 {
            continue;
        }
        // an application that shows every player's ping reads the statistics often: the
        // look does not unpack a resting connection
        let srtt = [
            pair.server().endpoint().connection_stats(theirs),
            pair.client().endpoint().connection_stats(ours),
        ]
        .map(|s| s.expect("held").path.srtt);
        assert!(
            srtt.iter().all(|s| *s > Duration::from_millis(30)),
            "{srtt:?}"
        );
        steps += 1;
        if ends.iter().all(|c| c.flow.is_parked()) {
            parked_steps += 1;
            // a forged packet for the server's connection (an on-path attacker knows its
            // id) is dropped unauthenticated, and does not unpack it
            let cid = ends[0].local_cid();
            let mut forged = Vec::new();
            crate::wire::ShortHeader::encode(&cid, 1_000_000 + step, 4, &mut forged);
            forged.resize(60, 0xa5);
            let (now, from) = (pair.now(), pair.client().addr());
            pair.server_mut()
                .endpoint_mut()
                .handle_datagram(now, from, &forged);
            let conn = pair.server().endpoint().connection(theirs).expect("held");
            assert!(
                conn.flow.is_parked(),
                "a forged packet unpacked a resting connection"
            );
            let ends = [
                conn,
                pair.client().endpoint().connection(ours).expect("held"),
            ];
            for c in ends {
                // 400 bytes unpacked
                assert!(
                    c.flow.heap_bytes() <= 104,
                    "{} B packed",
                    c.flow.heap_bytes()
                );
            }
        }
    }
    // a keepalive exchange every 2 s takes a round trip and a little: parked the rest
    assert!(
        parked_steps * 10 >= steps * 8,
        "parked in {parked_steps} of {steps} steps"
    );
    pair.server_mut().events_mut().clear();
    pair.client_send(
        ours,
        0,
        bytes::Bytes::from_static(b"awake"),
        SendMode::Plain,
    )
    .expect("sent");
    pair.run_for(Duration::from_millis(100));
    let got = pair
        .server_mut()
        .events_mut()
        .drain(..)
        .any(|(_, e)| matches!(e, Event::Message(m) if &m.data[..] == b"awake"));
    assert!(got, "a message from a resting connection did not arrive");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]

    /// Packing loses nothing of what a connection's loss recovery and ACK state became
    /// through traffic on a lossy path: what unpacks is, field by field, what was packed.
    #[test]
    fn recovery_and_acks_come_back_as_they_were_packed(
        seed in proptest::prelude::any::<u64>(),
        loss in 0.0..0.2f64,
        messages in 1..120usize,
    ) {
        use crate::pack::{Pack, Packer, Unpacker};
        use crate::testing::Pair;
        use crate::{ChannelKind, SendMode};

        let link = thinwire_netmodel::LinkConfig::default()
            .with_delay(Duration::from_millis(15))
            .with_bernoulli_loss(loss);
        let mut pair = Pair::builder(seed).link(link).build();
        let Some((ours, theirs)) = pair.connect(&[ChannelKind::ReliableOrdered]) else {
            return Ok(()); // the handshake can lose out to a lossy path: nothing to pack
        };
        for i in 0..messages {
            let data = bytes::Bytes::from(vec![i as u8; 1 + i % 100]);
            // a connection the path killed refuses sends: nothing more to send then
            let _ = pair.client_send(ours, 0, data, SendMode::Plain);
            pair.run_for(Duration::from_millis(5 + (i as u64 * 7) % 40));
        }
        pair.run_for(Duration::from_millis(300));
        let ends = [
            pair.server().endpoint().connection(theirs),
            pair.client().endpoint().connection(ours),
        ];
        for c in ends.into_iter().flatten() {
            // what traffic made of it, packets in flight aside (a recovery packs only
            // when it remembers none)
            let recovery = c.flow.recovery.forgetting_packets();
            let mut p = Packer::default();
            proptest::prop_assert!(recovery.pack(&mut p));
            let back = Recovery::unpack(&mut Unpacker::new(&p.finish()));
            proptest::prop_assert_eq!(format!("{back:?}"), format!("{recovery:?}"));
            let mut p = Packer::default();
            proptest::prop_assert!(c.flow.rx.pack(&mut p));
            let back = ReceivedPackets::unpack(&mut Unpacker::new(&p.finish()));
            proptest::prop_assert_eq!(format!("{back:?}"), format!("{:?}", c.flow.rx));
        }
    }
}
