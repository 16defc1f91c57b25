//! The fuzz targets' committed corpora, replayed in CI through the same functions the targets
//! call, then seeded random inputs.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::trunk::Frame;

/// The committed corpus of one of this crate's fuzz targets.
fn corpus(target: &str) -> Vec<Vec<u8>> {
    thinwire_proto::testing::fuzz::corpus(&format!(
        "{}/fuzz/corpus/{target}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

#[test]
fn tcm_fuzz_corpus_replays_clean() {
    for input in corpus("tcm") {
        super::tcm(&input);
    }
}

#[test]
fn trunk_fuzz_corpus_replays_clean() {
    let inputs = corpus("trunk");
    for input in &inputs {
        super::trunk(input);
    }
    // the corpus reaches past the parser's first check: some inputs are whole frames
    assert!(inputs.iter().any(|i| Frame::parse(i).is_ok()));
}

#[test]
fn gateway_fuzz_targets_hold_on_random_inputs() {
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    for _ in 0..256 {
        let len = rng.random_range(0..512);
        let input: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        super::tcm(&input);
        super::trunk(&input);
    }
}
