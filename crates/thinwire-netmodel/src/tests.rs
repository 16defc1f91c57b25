//! Tests of the link models against their definitions (seeded, large samples).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

const MS: Duration = Duration::from_millis(1);

fn pkt(id: u64) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

fn id_of(p: &[u8]) -> u64 {
    u64::from_be_bytes(p[..8].try_into().expect("8-byte id"))
}

/// Sends `n` packets spaced `gap` apart and drains everything; returns
/// `(id, send time, delivery time)` in delivery order.
fn run(
    link: &mut Link<Vec<u8>>,
    t0: Instant,
    n: u64,
    gap: Duration,
) -> Vec<(u64, Instant, Instant)> {
    let mut sent_at = Vec::with_capacity(n as usize);
    let mut out = Vec::new();
    let mut now = t0;
    for id in 0..n {
        now = t0 + gap * id as u32;
        while let Some((at, p)) = link.poll_deliver_timed(now) {
            out.push((id_of(&p), sent_at[id_of(&p) as usize], at));
        }
        sent_at.push(now);
        link.send(now, pkt(id), 100);
    }
    while let Some(t) = link.next_delivery() {
        now = now.max(t);
        let (at, p) = link.poll_deliver_timed(now).expect("due packet");
        out.push((id_of(&p), sent_at[id_of(&p) as usize], at));
    }
    out
}

#[test]
fn perfect_link_delivers_everything_in_order() {
    let mut link = Link::new(LinkConfig::default().with_delay(10 * MS), 1);
    let t0 = Instant::now();
    let out = run(&mut link, t0, 1000, MS);
    assert_eq!(out.len(), 1000);
    for (i, (id, s, d)) in out.iter().enumerate() {
        assert_eq!(*id, i as u64);
        assert_eq!(*d - *s, 10 * MS);
    }
    let st = link.stats();
    assert_eq!((st.sent, st.delivered, st.lost), (1000, 1000, 0));
    assert_eq!(st.bytes, 100_000);
}

#[test]
fn bernoulli_loss_rate() {
    let p = 0.1;
    let n = 200_000u64;
    let mut link = Link::new(LinkConfig::default().with_bernoulli_loss(p), 42);
    let t0 = Instant::now();
    for i in 0..n {
        link.send(t0, pkt(i), 50);
    }
    let lost = link.stats().lost as f64 / n as f64;
    // sigma = sqrt(p(1-p)/n) ~ 0.00067; allow > 5 sigma.
    assert!((lost - p).abs() < 0.004, "loss {lost}");
    assert_eq!(link.in_flight() as u64 + link.stats().lost, n);
}

fn loss_pattern(model: LossModel, n: usize, seed: u64) -> Vec<bool> {
    let mut link = Link::new(LinkConfig::default().with_loss(model), seed);
    let t0 = Instant::now();
    (0..n)
        .map(|i| matches!(link.send(t0, pkt(i as u64), 10), SendOutcome::Lost))
        .collect()
}

fn mean_burst(pattern: &[bool]) -> f64 {
    let mut bursts = 0usize;
    let mut losses = 0usize;
    let mut prev = false;
    for &l in pattern {
        if l {
            losses += 1;
            if !prev {
                bursts += 1;
            }
        }
        prev = l;
    }
    losses as f64 / bursts as f64
}

#[test]
fn gilbert_elliott_mean_loss_and_burst_length() {
    for (mean, burst) in [(0.05, 3.0), (0.01, 1.5), (0.2, 5.0)] {
        let ge = GilbertElliott::from_mean_and_burst(mean, burst).expect("valid");
        let model = ge.model();
        assert!((model.mean_loss() - mean).abs() < 1e-12);
        assert!((ge.mean_burst_len() - burst).abs() < 1e-12);
        let pattern = loss_pattern(model, 1_000_000, 7);
        let measured = pattern.iter().filter(|&&l| l).count() as f64 / pattern.len() as f64;
        assert!(
            (measured - mean).abs() < 0.08 * mean,
            "mean loss {measured} vs {mean}"
        );
        let b = mean_burst(&pattern);
        assert!((b - burst).abs() < 0.05 * burst, "burst {b} vs {burst}");
    }
}

#[test]
fn gilbert_elliott_general_stationary_loss() {
    let model = LossModel::GilbertElliott {
        p_good_to_bad: 0.02,
        p_bad_to_good: 0.25,
        loss_good: 0.01,
        loss_bad: 0.5,
    };
    let expect = (0.25 / 0.27) * 0.01 + (0.02 / 0.27) * 0.5;
    assert!((model.mean_loss() - expect).abs() < 1e-12);
    let pattern = loss_pattern(model, 1_000_000, 3);
    let measured = pattern.iter().filter(|&&l| l).count() as f64 / pattern.len() as f64;
    assert!((measured - expect).abs() < 0.004, "{measured} vs {expect}");
}

#[test]
fn gilbert_elliott_rejects_bad_parameters() {
    assert!(GilbertElliott::from_mean_and_burst(0.05, 0.5).is_err());
    assert!(GilbertElliott::from_mean_and_burst(1.0, 2.0).is_err());
    assert!(GilbertElliott::from_mean_and_burst(-0.1, 2.0).is_err());
    assert!(GilbertElliott::from_mean_and_burst(0.9, 1.0).is_err());
    let bad = LinkConfig::default().with_bernoulli_loss(1.5);
    assert!(Link::<Vec<u8>>::try_new(bad, 0).is_err());
    assert!(Link::<Vec<u8>>::try_new(LinkConfig::default().with_bandwidth(0), 0).is_err());
}

#[test]
fn bandwidth_serialization_spacing() {
    // 1250 bytes at 1 Mbit/s = 10 ms per packet.
    let cfg = LinkConfig::default()
        .with_bandwidth(1_000_000)
        .with_delay(5 * MS);
    let mut link = Link::new(cfg, 0);
    let t0 = Instant::now();
    for i in 0..20 {
        link.send(t0, pkt(i), 1250);
    }
    let mut prev = None;
    let mut i = 0u64;
    while let Some(t) = link.next_delivery() {
        let p = link.poll_deliver(t).expect("due");
        assert_eq!(id_of(&p), i);
        assert_eq!(t, t0 + 5 * MS + 10 * MS * (i as u32 + 1));
        if let Some(prev) = prev {
            assert_eq!(t - prev, 10 * MS);
        }
        prev = Some(t);
        i += 1;
    }
    assert_eq!(i, 20);
}

#[test]
fn byte_limited_queue_drops_beyond_its_size() {
    let cfg = LinkConfig::default()
        .with_bandwidth(1_000_000)
        .with_queue(QueueLimit::Bytes(10_000));
    let mut link = Link::new(cfg, 0);
    let t0 = Instant::now();
    let outcomes: Vec<_> = (0..100).map(|i| link.send(t0, pkt(i), 1000)).collect();
    let accepted = outcomes
        .iter()
        .filter(|o| matches!(o, SendOutcome::Scheduled(_)))
        .count();
    assert_eq!(accepted, 10);
    assert_eq!(link.stats().dropped_queue, 90);
    assert_eq!(link.backlog_bytes(t0), 10_000);
    // After one packet time (8 ms) there is room for exactly one more.
    let t1 = t0 + 8 * MS;
    assert_eq!(link.backlog_bytes(t1), 9_000);
    assert!(matches!(
        link.send(t1, pkt(100), 1000),
        SendOutcome::Scheduled(_)
    ));
    assert!(matches!(
        link.send(t1, pkt(101), 1000),
        SendOutcome::DroppedQueue
    ));
}

#[test]
fn packet_limited_queue_counts_packets_not_bytes() {
    // ns-2 DropTail with limit 3: three packets wait behind the one on the
    // wire, whatever their sizes.
    let cfg = LinkConfig::default()
        .with_bandwidth(1_000_000)
        .with_queue(QueueLimit::Packets(3));
    let mut link = Link::new(cfg, 0);
    let t0 = Instant::now();
    let sizes = [1000, 40, 1500, 40, 40, 1500];
    let outcomes: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| link.send(t0, pkt(i as u64), s))
        .collect();
    let accepted: Vec<bool> = outcomes
        .iter()
        .map(|o| matches!(o, SendOutcome::Scheduled(_)))
        .collect();
    assert_eq!(accepted, vec![true, true, true, true, false, false]);
    assert_eq!(link.stats().dropped_queue, 2);
    // Once the first packet (1000 B = 8 ms) is on its way there is room for
    // exactly one more, even a large one.
    let t1 = t0 + 8 * MS;
    assert!(matches!(
        link.send(t1, pkt(10), 1500),
        SendOutcome::Scheduled(_)
    ));
    assert!(matches!(
        link.send(t1, pkt(11), 40),
        SendOutcome::DroppedQueue
    ));
}

#[test]
fn time_limited_queue_bounds_queueing_delay() {
    let limit = 50 * MS;
    let bw = 200_000u64; // 200 kbit/s
    let delay = 20 * MS;
    let cfg = LinkConfig::default()
        .with_bandwidth(bw)
        .with_delay(delay)
        .with_queue(QueueLimit::Time(limit));
    let mut link: Link<Vec<u8>> = Link::new(cfg, 9);
    let t0 = Instant::now();
    // Offer ~2x the capacity with random sizes, in bursts.
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut sizes = Vec::new();
    let mut sent_at = Vec::new();
    let mut now = t0;
    let mut max_wait = Duration::ZERO;
    let mut delivered = 0;
    for id in 0..20_000u64 {
        now += Duration::from_micros(rng.random_range(0..4000));
        while let Some((at, p)) = link.poll_deliver_timed(now) {
            let i = id_of(&p) as usize;
            let ser = Duration::from_nanos((sizes[i] as u64 * 8 * 1_000_000_000).div_ceil(bw));
            let wait = at - sent_at[i] - delay - ser;
            max_wait = max_wait.max(wait);
            delivered += 1;
        }
        let size = rng.random_range(40..200usize);
        sizes.push(size);
        sent_at.push(now);
        link.send(now, pkt(id), size);
    }
    assert!(link.stats().dropped_queue > 1000, "queue must overflow");
    assert!(delivered > 5000);
    assert!(max_wait <= limit, "queued {max_wait:?} > {limit:?}");
    assert!(
        max_wait > limit - 10 * MS,
        "queue should fill up to the limit"
    );
}

#[test]
fn no_reordering_without_reorder_flag() {
    let cfg = LinkConfig::default()
        .with_delay(100 * MS)
        .with_jitter(50 * MS)
        .with_reorder(false);
    let mut link = Link::new(cfg, 11);
    let out = run(&mut link, Instant::now(), 20_000, MS);
    assert_eq!(out.len(), 20_000);
    for w in out.windows(2) {
        assert!(w[0].0 < w[1].0, "reordered");
        assert!(w[0].2 <= w[1].2);
    }
    for (_, s, d) in &out {
        assert!(*d - *s >= 50 * MS);
    }
}

#[test]
fn jitter_reorders_when_allowed_and_stays_in_bounds() {
    for dist in [JitterDistribution::Uniform, JitterDistribution::Normal] {
        let cfg = LinkConfig::default()
            .with_delay(10 * MS)
            .with_jitter(30 * MS)
            .with_jitter_distribution(dist)
            .with_reorder(true);
        let mut link = Link::new(cfg, 12);
        let out = run(&mut link, Instant::now(), 20_000, MS);
        assert_eq!(out.len(), 20_000);
        let reordered = out.windows(2).filter(|w| w[0].0 > w[1].0).count();
        assert!(reordered > 100, "{dist:?}: {reordered}");
        let mut zero = 0;
        for (_, s, d) in &out {
            let dl = *d - *s;
            assert!(dl <= 40 * MS);
            if dl.is_zero() {
                zero += 1;
            }
        }
        // Delay never negative: samples below zero are clipped to zero.
        if dist == JitterDistribution::Uniform {
            assert!(zero > 0);
        }
    }
}

#[test]
fn duplicates_and_corruptions_at_their_rates() {
    let n = 100_000u64;
    let cfg = LinkConfig::default()
        .with_duplicate(0.05)
        .with_corrupt(0.02);
    let mut link = Link::new(cfg, 13);
    let t0 = Instant::now();
    for i in 0..n {
        link.send(t0, vec![0u8; 16], 16);
        let _ = i;
    }
    let st = *link.stats();
    let dup = st.duplicated as f64 / n as f64;
    assert!((dup - 0.05).abs() < 0.004, "dup {dup}");
    let copies = n + st.duplicated;
    let cor = st.corrupted as f64 / copies as f64;
    assert!((cor - 0.02).abs() < 0.003, "corrupt {cor}");
    let mut damaged = 0u64;
    let mut total = 0u64;
    while let Some(p) = link.poll_deliver(t0) {
        total += 1;
        let ones: u32 = p.iter().map(|b| b.count_ones()).sum();
        assert!(ones <= 1);
        damaged += u64::from(ones);
    }
    assert_eq!(total, copies);
    assert_eq!(damaged, st.corrupted);
    assert_eq!(link.stats().delivered, copies);
}

#[test]
fn corruption_of_other_packet_types() {
    let cfg = LinkConfig::default().with_corrupt(1.0);
    let mut link: Link<(u32, bytes::Bytes)> = Link::new(cfg, 1);
    let t0 = Instant::now();
    link.send(t0, (7, bytes::Bytes::from_static(&[0, 0, 0])), 3);
    let (tag, data) = link.poll_deliver(t0).expect("delivered");
    assert_eq!(tag, 7);
    assert_eq!(data.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
}

fn fingerprint(seed: u64) -> Vec<(Vec<u8>, Duration)> {
    let ge = GilbertElliott::from_mean_and_burst(0.05, 2.0).expect("valid");
    let cfg = LinkConfig::default()
        .with_delay(30 * MS)
        .with_jitter(10 * MS)
        .with_reorder(true)
        .with_loss(ge.into())
        .with_duplicate(0.01)
        .with_corrupt(0.01)
        .with_bandwidth(1_000_000)
        .with_queue(QueueLimit::Time(40 * MS));
    let mut link: Link<Vec<u8>> = Link::new(cfg, seed);
    let t0 = Instant::now();
    let mut out = Vec::new();
    for id in 0..5000u64 {
        let now = t0 + MS * id as u32;
        while let Some((at, p)) = link.poll_deliver_timed(now) {
            out.push((p, at - t0));
        }
        link.send(now, pkt(id), 100);
    }
    while let Some(t) = link.next_delivery() {
        let (at, p) = link.poll_deliver_timed(t).expect("due");
        out.push((p, at - t0));
    }
    out
}

#[test]
fn deterministic_for_a_seed() {
    let a = fingerprint(99);
    let b = fingerprint(99);
    let c = fingerprint(100);
    assert!(a.len() > 4500, "{}", a.len());
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn trace_overrides_loss_and_delay() {
    let trace = Trace::parse("# delay_ms,lost\n10,0\n20.5,1\n\n30,0\n").expect("valid");
    assert_eq!(trace.len(), 3);
    let cfg = LinkConfig::default()
        .with_delay(500 * MS)
        .with_bernoulli_loss(1.0)
        .with_reorder(true)
        .with_trace(Arc::new(trace));
    let mut link = Link::new(cfg, 0);
    let t0 = Instant::now();
    let outcomes: Vec<_> = (0..6).map(|i| link.send(t0, pkt(i), 10)).collect();
    assert_eq!(
        outcomes,
        vec![
            SendOutcome::Scheduled(t0 + 10 * MS),
            SendOutcome::Lost,
            SendOutcome::Scheduled(t0 + 30 * MS),
            SendOutcome::Scheduled(t0 + 10 * MS),
            SendOutcome::Lost,
            SendOutcome::Scheduled(t0 + 30 * MS),
        ]
    );
    // Ties are delivered in send order.
    let ids: Vec<u64> = std::iter::from_fn(|| link.poll_deliver(t0 + 30 * MS))
        .map(|p| id_of(&p))
        .collect();
    assert_eq!(ids, vec![0, 3, 2, 5]);
}

#[test]
fn trace_parse_errors_name_the_line() {
    let e = Trace::parse("10,0\n5,2\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.msg.contains("0 or 1"), "{e}");
    let e = Trace::parse("# c\n\nabc,0\n").unwrap_err();
    assert_eq!(e.line, 3);
    let e = Trace::parse("1,0,3\n").unwrap_err();
    assert_eq!(e.line, 1);
    let e = Trace::parse("-1,0\n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(Trace::parse("# only comments\n").is_err());
    let err = Trace::from_file(std::path::Path::new("/nonexistent/trace.txt")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/trace.txt"));
}

#[test]
fn next_delivery_and_poll_respect_time() {
    let mut link = Link::new(LinkConfig::default().with_delay(10 * MS), 0);
    let t0 = Instant::now();
    assert_eq!(link.next_delivery(), None);
    link.send(t0, pkt(1), 1);
    assert_eq!(link.poll_deliver(t0 + 9 * MS), None);
    assert_eq!(link.next_delivery(), Some(t0 + 10 * MS));
    assert_eq!(link.poll_deliver(t0 + 10 * MS).map(|p| id_of(&p)), Some(1));
    assert_eq!(link.poll_deliver(t0 + 100 * MS), None);
}

#[test]
fn link_stats_add_field_by_field() {
    let a = LinkStats {
        sent: 1,
        bytes: 2,
        delivered: 3,
        bytes_delivered: 4,
        lost: 5,
        dropped_queue: 6,
        duplicated: 7,
        corrupted: 8,
    };
    let mut sum = a;
    sum += a;
    assert_eq!(
        sum,
        LinkStats {
            sent: 2,
            bytes: 4,
            delivered: 6,
            bytes_delivered: 8,
            lost: 10,
            dropped_queue: 12,
            duplicated: 14,
            corrupted: 16,
        }
    );
}
