//! The hold's promise in simulated time: a message waits at most T, and under sparse traffic
//! T/2 on average (the free-running period clock).

use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thinwire_proto::ChannelKind;

use crate::trunk::hold::{Hold, Item, Pushed};
use crate::trunk::GatewayStats;

const T: Duration = Duration::from_millis(10);

/// Holds one message at each of `arrivals` (offsets from the start, increasing), pushing at
/// every tick as a gateway does; returns the hold statistics.
fn run(arrivals: &[Duration]) -> GatewayStats {
    let start = Instant::now();
    let mut hold = Hold::new(T, 1 << 20, 32 << 20);
    let mut stats = GatewayStats::default();
    let mut next = arrivals.iter().map(|&a| start + a).peekable();
    loop {
        let tick = hold.poll_timeout();
        let now = match (next.peek(), tick) {
            (Some(&a), Some(t)) => a.min(t),
            (Some(&a), None) => a,
            (None, Some(t)) => t,
            (None, None) => break,
        };
        while let Some(a) = next.next_if(|&a| a <= now) {
            let item = Item {
                flow: 1,
                channel: 0,
                kind: ChannelKind::ReliableOrdered,
                key: None,
                data: Bytes::from_static(b"x"),
                since: a,
            };
            assert!(hold.push(a, item));
        }
        if hold.due(now) {
            hold.drain(now, usize::MAX, &mut stats, |_| Pushed::Sent);
        }
    }
    assert_eq!(stats.held_messages, arrivals.len() as u64);
    stats
}

#[test]
fn sparse_messages_at_every_phase_wait_half_a_period_on_average() {
    // one message every 1.01 T: the arrivals step through 100 phases of the period clock
    let arrivals: Vec<Duration> = (1..=1000u32).map(|i| T * 101 * i / 100).collect();
    let s = run(&arrivals);
    assert!(s.held_delay_max <= T, "max {:?}", s.held_delay_max);
    assert!(
        s.held_delay_mean() <= T / 2,
        "mean {:?}",
        s.held_delay_mean()
    );
    // a batch clock started by each message would hold every one of them a whole period
    assert!(s.held_delay_mean() >= T * 45 / 100);
}

#[test]
fn random_sparse_and_dense_traffic_never_waits_more_than_a_period() {
    for (seed, mean_gap_ms) in [(1u64, 50.0f64), (2, 25.0), (3, 3.0), (4, 0.5)] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut at = Duration::from_micros(rng.random_range(0..10_000));
        let arrivals: Vec<Duration> = (0..5000)
            .map(|_| {
                let u: f64 = rng.random_range(f64::EPSILON..1.0);
                at += Duration::from_secs_f64(-u.ln() * mean_gap_ms / 1000.0);
                at
            })
            .collect();
        let s = run(&arrivals);
        assert!(
            s.held_delay_max <= T,
            "seed {seed}: max {:?}",
            s.held_delay_max
        );
        // Poisson arrivals fall uniformly within the clock's period: mean T/2 (± sampling)
        let mean = s.held_delay_mean().as_secs_f64() / T.as_secs_f64();
        assert!((0.47..=0.53).contains(&mean), "seed {seed}: mean {mean} T");
    }
}

#[test]
fn what_the_trunk_would_not_take_goes_at_the_next_tick() {
    let start = Instant::now();
    let mut hold = Hold::new(T, 1 << 20, 32 << 20);
    let mut stats = GatewayStats::default();
    for i in 0..3u8 {
        let item = Item {
            flow: u32::from(i),
            channel: 0,
            kind: ChannelKind::ReliableOrdered,
            key: None,
            data: Bytes::from_static(b"x"),
            since: start,
        };
        assert!(hold.push(start + T / 4, item));
    }
    // the first message ever held starts the clock: its first tick is one period later
    assert_eq!(hold.poll_timeout(), Some(start + T / 4 + T));
    let tick = start + T / 4 + T;
    let mut taken = 0;
    hold.drain(tick, usize::MAX, &mut stats, |_| {
        taken += 1;
        if taken == 1 {
            Pushed::Sent
        } else {
            Pushed::Blocked
        }
    });
    assert_eq!(hold.len(), 2);
    assert_eq!(
        hold.poll_timeout(),
        Some(tick + T),
        "the next tick of the same clock"
    );
}
