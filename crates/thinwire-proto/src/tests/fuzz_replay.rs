//! The fuzz targets' bodies, replayed in CI: every input of their committed corpora
//! (`fuzz/corpus/{endpoint,packet}`), then seeded random inputs.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::testing::fuzz::{self, drive, packet};

/// The committed corpus of one of this crate's fuzz targets.
fn corpus(target: &str) -> Vec<Vec<u8>> {
    fuzz::corpus(&format!(
        "{}/fuzz/corpus/{target}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

#[test]
fn endpoint_fuzz_corpus_replays_clean() {
    for input in corpus("endpoint") {
        drive(&input);
    }
}

#[test]
fn packet_fuzz_corpus_replays_clean() {
    for input in corpus("packet") {
        packet(&input);
    }
}

#[test]
fn the_drive_checks_delivery_of_what_it_sent() {
    // reliable sends on channels 0 and 1, then time: nothing forged, everything delivered
    let input = [1, 20, 0, 0, 40, 0, 0, 1, 40, 0, 1, 0, 40, 0, 3, 250];
    let out = drive(&input);
    assert!(out.connected && !out.forged, "{out:?}");
    assert_eq!(out.delivered, 3, "{out:?}");
    // a mutated copy of a real datagram counts as forged, and delivery is still checked
    // (send on 0; time; op 5: datagram 0, one byte flipped; send on 1; op 7: a cleartext packet
    // with the live id; time)
    let forged = drive(&[
        1, 20, 0, 0, 40, 0, 3, 50, 5, 0, 0, 0, 0, 0, 255, 1, 1, 40, 0, 7, 1, 0, 9, 1, 2, 3, 4, 5,
        6, 7, 8, 9, 3, 250,
    ]);
    assert!(forged.forged, "{forged:?}");
    assert_eq!(forged.delivered, 2, "{forged:?}");
}

#[test]
fn fuzz_bodies_hold_on_random_inputs() {
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    for _ in 0..64 {
        let len = rng.random_range(0..512);
        let input: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        drive(&input);
        packet(&input);
    }
}
