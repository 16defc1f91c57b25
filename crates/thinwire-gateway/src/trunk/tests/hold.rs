//! The hold's promise in simulated time: a message waits at most T, and under sparse traffic
//! (at most one message per period) T/2 on average; dense traffic is held a whole T.

use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thinwire_proto::ChannelKind;

use crate::trunk::hold::{per_item, Hold, Item, Pushed};
use crate::trunk::GatewayStats;

const T: Duration = Duration::from_millis(10);

/// Holds one message at each of `arrivals` (offsets from the start, increasing), pushing at
/// every tick as a gateway does; returns the hold statistics and the number of pushes.
fn run(arrivals: &[Duration]) -> (GatewayStats, usize) {
    let start = Instant::now();
    let mut hold = Hold::new(T, 1 << 20, 32 << 20);
    let mut stats = GatewayStats::default();
    let mut pushes = 0;
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
                deadline: None,
            };
            assert!(hold.push(a, item));
        }
        if hold.due(now) {
            pushes += 1;
            hold.drain(now, usize::MAX, &mut stats, per_item(|_| Pushed::Sent));
        }
    }
    assert_eq!(stats.held_messages, arrivals.len() as u64);
    (stats, pushes)
}

/// Poisson arrivals, `n` of them, `mean_gap` apart on average.
fn poisson(seed: u64, mean_gap: Duration, n: usize) -> Vec<Duration> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut at = Duration::ZERO;
    (0..n)
        .map(|_| {
            let u: f64 = rng.random_range(f64::EPSILON..1.0);
            at += mean_gap.mul_f64(-u.ln());
            at
        })
        .collect()
}

#[test]
fn sparse_messages_wait_at_most_half_a_period() {
    // one message every 1.01 T: each is alone in its batch
    let arrivals: Vec<Duration> = (1..=1000u32).map(|i| T * 101 * i / 100).collect();
    let (s, pushes) = run(&arrivals);
    assert_eq!(pushes, 1000);
    assert!(s.held_delay_max <= T / 2, "max {:?}", s.held_delay_max);
    assert!(
        s.held_delay_mean() <= T / 2,
        "mean {:?}",
        s.held_delay_mean()
    );
    // a batch held a whole T from its first message would hold each of them T
    assert!(s.held_delay_mean() >= T * 45 / 100);
}

#[test]
fn random_sparse_traffic_waits_half_a_period_on_average_and_never_more_than_one() {
    // λT = 1, 0.5, 0.2, 0.02
    for (seed, gap_ms) in [(1u64, 10), (2, 20), (3, 50), (4, 500)] {
        let (s, _) = run(&poisson(seed, Duration::from_millis(gap_ms), 5000));
        let mean = s.held_delay_mean().as_secs_f64() / T.as_secs_f64();
        assert!(
            s.held_delay_max <= T,
            "seed {seed}: max {:?}",
            s.held_delay_max
        );
        assert!(mean <= 0.5, "seed {seed}: mean {mean} T");
    }
    // an idle trunk holds a lone message for almost nothing
    let (s, _) = run(&poisson(5, Duration::from_secs(2), 500));
    assert!(s.held_delay_mean() < T / 50, "{:?}", s.held_delay_mean());
}

#[test]
fn dense_traffic_is_held_a_whole_period_and_never_longer() {
    // λT = 3 and 20: every batch is held T from its first message, so a push carries all
    // that arrived within T of it
    for (seed, gap_us) in [(6u64, 3333), (7, 500)] {
        let arrivals = poisson(seed, Duration::from_micros(gap_us), 20_000);
        let (s, pushes) = run(&arrivals);
        assert!(
            s.held_delay_max <= T,
            "seed {seed}: max {:?}",
            s.held_delay_max
        );
        let span = arrivals.last().copied().unwrap_or_default();
        // batches a whole T apart at least (after a short start while the rate is learnt)
        let most = (span.as_secs_f64() / T.as_secs_f64()).ceil() as usize + 10;
        assert!(
            pushes <= most,
            "seed {seed}: {pushes} pushes, at most {most}"
        );
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
            deadline: None,
        };
        assert!(hold.push(start + T / 4, item));
    }
    // the batch started with the first message; no rate is known yet (λT = 1 assumed)
    let tick = start + T / 4 + T / 2;
    assert_eq!(hold.poll_timeout(), Some(tick));
    let mut taken = 0;
    hold.drain(
        tick,
        usize::MAX,
        &mut stats,
        per_item(|_| {
            taken += 1;
            if taken == 1 {
                Pushed::Sent
            } else {
                Pushed::Blocked
            }
        }),
    );
    assert_eq!(hold.len(), 2);
    assert_eq!(
        hold.poll_timeout(),
        Some(tick + T),
        "the next tick of the same clock"
    );
}
