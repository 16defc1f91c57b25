//! Percentile and summary definitions of `thinwire_lab::metrics`.

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thinwire_lab::metrics::{latency_summary, nearest_rank, Quantile};

/// A seeded generator for property loops.
fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

#[test]
fn nearest_rank_on_known_samples() {
    let ten: Vec<u64> = (1..=10).collect();
    assert_eq!(nearest_rank(&ten, Quantile::P50), Some(5));
    assert_eq!(nearest_rank(&ten, Quantile::P90), Some(9));
    assert_eq!(nearest_rank(&ten, Quantile::P99), Some(10));
    assert_eq!(nearest_rank(&ten, Quantile::P999), Some(10));

    let hundred: Vec<u64> = (1..=100).collect();
    assert_eq!(nearest_rank(&hundred, Quantile::P50), Some(50));
    assert_eq!(nearest_rank(&hundred, Quantile::P90), Some(90));
    assert_eq!(nearest_rank(&hundred, Quantile::P99), Some(99));
    assert_eq!(nearest_rank(&hundred, Quantile::P999), Some(100));

    let thousand: Vec<u64> = (1..=1000).collect();
    assert_eq!(nearest_rank(&thousand, Quantile::P99), Some(990));
    assert_eq!(nearest_rank(&thousand, Quantile::P999), Some(999));

    // Odd count: ceil(0.5 * 5) = 3rd sample.
    assert_eq!(nearest_rank(&[10, 20, 30, 40, 50], Quantile::P50), Some(30));
    // Duplicates.
    assert_eq!(nearest_rank(&[1, 1, 1, 9], Quantile::P50), Some(1));
    assert_eq!(nearest_rank(&[1, 1, 1, 9], Quantile::P90), Some(9));
    // Single sample and empty input.
    assert_eq!(nearest_rank(&[42], Quantile::P999), Some(42));
    assert_eq!(nearest_rank(&[], Quantile::P50), None);
}

#[test]
fn nearest_rank_matches_its_definition_on_random_samples() {
    let mut rng = rng(0x7417_3e11);
    let qs = [
        Quantile::P50,
        Quantile::P90,
        Quantile::P99,
        Quantile::P999,
        Quantile { num: 1, den: 3 },
        Quantile { num: 1, den: 1 },
    ];
    for _ in 0..500 {
        let n = 1 + rng.random_range(0..3000) as usize;
        let mut s: Vec<u64> = (0..n).map(|_| rng.random_range(0..500)).collect();
        s.sort_unstable();
        for q in qs {
            let got = nearest_rank(&s, q).unwrap();
            // Definition: the smallest sample x with count(<= x) >= q * n.
            let covers = |x: u64| {
                let c = s.partition_point(|&v| v <= x) as u128;
                c * u128::from(q.den) >= u128::from(q.num) * n as u128
            };
            let want = *s.iter().find(|&&x| covers(x)).unwrap();
            assert_eq!(got, want, "n={n} q={q:?}");
        }
    }
}

#[test]
fn summary_mean_jitter_and_percentiles() {
    // 2,4,4,4,5,5,7,9 ms: mean 5 ms, population standard deviation 2 ms.
    let s: Vec<u64> = [2u64, 4, 4, 4, 5, 5, 7, 9]
        .iter()
        .map(|ms| ms * 1000)
        .collect();
    let l = latency_summary(&s);
    assert_eq!(l.mean, 5.0);
    assert_eq!(l.jitter, 2.0);
    assert_eq!(l.p50, 4.0);
    assert_eq!(l.p90, 9.0);
    assert_eq!(l.p99, 9.0);
    assert_eq!(l.p999, 9.0);
    assert_eq!(l.max, 9.0);

    // Microsecond resolution survives: 1500 us = 1.5 ms.
    let l = latency_summary(&[1500]);
    assert_eq!((l.mean, l.jitter, l.p50, l.max), (1.5, 0.0, 1.5, 1.5));

    // Nothing delivered: zeros.
    let l = latency_summary(&[]);
    assert_eq!((l.mean, l.jitter, l.p999, l.max), (0.0, 0.0, 0.0, 0.0));
}

#[test]
fn summary_on_random_samples_is_consistent() {
    let mut rng = rng(99);
    for _ in 0..200 {
        let n = 1 + rng.random_range(0..2000) as usize;
        let mut s: Vec<u64> = (0..n).map(|_| rng.random_range(0..1_000_000)).collect();
        s.sort_unstable();
        let l = latency_summary(&s);
        let min = s[0] as f64 / 1000.0;
        assert!(min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99);
        assert!(l.p99 <= l.p999 && l.p999 <= l.max);
        assert!(min <= l.mean && l.mean <= l.max);
        assert!(l.jitter >= 0.0 && l.jitter <= (l.max - min));
        let mean = s.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1000.0;
        // Mean and jitter are rounded to 1e-6 ms.
        assert!((l.mean - mean).abs() <= 5e-7 + 1e-12 * mean);
    }
}
