use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::scenario::toml_types::PerClientToml;

fn sample_many(d: &ValueDist, n: usize) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    (0..n).map(|_| d.sample(&mut rng)).collect()
}

#[test]
fn lognormal_median_and_clamp() {
    let d = ValueDist::Clamped {
        dist: Box::new(ValueDist::LogNormal {
            median: 75.0,
            sigma: 0.5,
        }),
        min: 10.0,
        max: 300.0,
    };
    let v = sample_many(&d, 20_000);
    assert!(v.iter().all(|x| (10.0..=300.0).contains(x)));
    let (median, p90, _) = quantiles(v).expect("samples");
    assert!((median - 75.0).abs() < 3.0, "{median}");
    // exp(1.2816 * 0.5) * 75 = 142
    assert!((p90 - 142.0).abs() < 8.0, "{p90}");
}

#[test]
fn mixture_weights() {
    let d = ValueDist::Mixture(vec![
        (
            0.9,
            ValueDist::Uniform {
                min: 0.0,
                max: 0.02,
            },
        ),
        (
            0.1,
            ValueDist::Uniform {
                min: 0.05,
                max: 0.15,
            },
        ),
    ]);
    let v = sample_many(&d, 20_000);
    let tail = v.iter().filter(|&&x| x >= 0.05).count() as f64 / v.len() as f64;
    assert!((tail - 0.1).abs() < 0.01, "{tail}");
    assert!(v.iter().all(|&x| x <= 0.15));
}

#[test]
fn gilbert_elliott_keeps_burst_and_matches_mean() {
    let base: LossModel = thinwire_netmodel::GilbertElliott::from_mean_and_burst(0.02, 3.0)
        .expect("valid")
        .into();
    for mean in [0.0, 0.01, 0.1, 0.3] {
        let m = with_mean_loss(&base, mean);
        assert!((m.mean_loss() - mean).abs() < 1e-12, "{mean}: {m:?}");
        let LossModel::GilbertElliott { p_bad_to_good, .. } = m else {
            panic!("{m:?}")
        };
        assert!((p_bad_to_good - 1.0 / 3.0).abs() < 1e-12);
    }
    assert_eq!(
        with_mean_loss(&LossModel::None, 0.05),
        LossModel::Bernoulli { p: 0.05 }
    );
}

#[test]
fn draws_depend_on_client_and_seed_not_direction() {
    let pc = PerClient {
        delay_ms: Some(ValueDist::Uniform {
            min: 10.0,
            max: 200.0,
        }),
        loss: Some(ValueDist::Uniform { min: 0.0, max: 0.1 }),
        ..PerClient::default()
    };
    let mut up = LinkConfig::default();
    let mut down = LinkConfig::default();
    pc.apply(&mut up, 3, 5, 10);
    pc.apply(&mut down, 3, 5, 10);
    assert_eq!(up.delay, down.delay);
    assert_eq!(up.loss, down.loss);
    let mut other = LinkConfig::default();
    pc.apply(&mut other, 3, 6, 10);
    assert_ne!(up.delay, other.delay);
    let mut reseeded = LinkConfig::default();
    pc.apply(&mut reseeded, 4, 5, 10);
    assert_ne!(up.delay, reseeded.delay);
}

fn two_regions() -> PerClient {
    let region = |name: &str, share: f64, delay: f64, loss: f64| ClientGroup {
        name: name.into(),
        share,
        draws: PerClient {
            delay_ms: Some(ValueDist::Constant(delay)),
            loss: Some(ValueDist::Constant(loss)),
            ..PerClient::default()
        },
    };
    PerClient {
        jitter_fraction: Some(0.1),
        groups: vec![
            region("NA", 0.7, 100.0, 0.01),
            region("EU", 0.3, 200.0, 0.03),
        ],
        ..PerClient::default()
    }
}

#[test]
fn groups_take_consecutive_blocks_and_keep_their_parameters_together() {
    let pc = two_regions();
    let mut na = 0;
    for c in 0..1000 {
        let mut cfg = LinkConfig::default();
        pc.apply(&mut cfg, 1, c, 1000);
        let (delay, loss) = if c < 700 { (100, 0.01) } else { (200, 0.03) };
        na += u32::from(pc.group_of(c, 1000).is_some_and(|g| g.name == "NA"));
        assert_eq!(cfg.delay, Duration::from_millis(delay), "client {c}");
        assert_eq!(cfg.loss, LossModel::Bernoulli { p: loss }, "client {c}");
        // the jitter follows the client's own delay
        assert_eq!(cfg.jitter, Duration::from_millis(delay / 10), "client {c}");
    }
    assert_eq!(na, 700);
    // blocks tile any client count exactly (rounding included)
    for n in [1u32, 3, 7, 10_304] {
        let count = |name: &str| {
            (0..n)
                .filter(|&c| pc.group_of(c, n).is_some_and(|g| g.name == name))
                .count() as u32
        };
        assert_eq!(count("NA") + count("EU"), n, "{n}");
        assert_eq!(share_block(0.0, 0.7, n).len() as u32, count("NA"), "{n}");
    }
    assert!(
        pc.describe().contains("group EU (30% of the clients)"),
        "{}",
        pc.describe()
    );
}

#[test]
fn group_falls_back_to_the_top_level_distributions() {
    let mut pc = two_regions();
    pc.groups[1].draws.loss = None;
    pc.loss = Some(ValueDist::Constant(0.2));
    let mut cfg = LinkConfig::default();
    pc.apply(&mut cfg, 1, 9, 10);
    assert_eq!(cfg.loss, LossModel::Bernoulli { p: 0.2 });
    assert_eq!(cfg.delay, Duration::from_millis(200));
}

#[test]
fn group_shares_must_add_up_to_one() {
    let t: PerClientToml = toml::from_str(
        "jitter_fraction = 0.1\n\
         [[groups]]\nname = \"a\"\nshare = 0.7\ndelay_ms = 100\n\
         [[groups]]\nname = \"b\"\nshare = 0.2\ndelay_ms = 200\n",
    )
    .expect("toml");
    let e = per_client(&t).expect_err("shares 0.9");
    assert!(e.contains("add up to 0.9"), "{e}");
    let t: PerClientToml = toml::from_str(
        "[[groups]]\nname = \"a\"\nshare = 0.7\ndelay_ms = 100\njitter_fraction = 0.2\n\
         [[groups]]\nname = \"b\"\nshare = 0.3\nloss = { uniform = [0.0, 0.1] }\n",
    )
    .expect("toml");
    let pc = per_client(&t).expect("valid");
    assert_eq!(pc.groups.len(), 2);
    assert_eq!(pc.groups[0].draws.jitter_fraction, Some(0.2));
    let t: PerClientToml = toml::from_str("jitter_fraction = 11\n").expect("toml");
    assert!(per_client(&t).is_err());
}
