//! Seed derivation: every random stream of a run gets its own seed, mixed
//! from the run seed, a tag naming the stream and an index (a client, a
//! workload, a direction). The same run seed therefore gives every protocol
//! the same links, workload and per-client draws, and adding a stream changes
//! no other.
//!
//! [`derive`](fn@derive) is the mixer (the SplitMix64 finaliser); the other functions are
//! the forms the lab consumes it in. [`salted`] and [`pair`] are two older
//! mixers kept as they are because results depend on their exact values.
//!
//! | tag | stream |
//! |-----|--------|
//! | [`ACCESS_UP`], [`ACCESS_DOWN`] | access link of a client (index: client) |
//! | [`BOTTLENECK_UP`], [`BOTTLENECK_DOWN`] | the shared bottleneck |
//! | [`CLIENT_ENDPOINT`], [`SERVER_ENDPOINT`] | a transport endpoint (index: client) |
//! | [`CROSS_UP`], [`CROSS_DOWN`] | cross-traffic arrivals |
//! | [`CROSS_CALIBRATION`] | cross-traffic calibration (index: direction) |
//! | [`BANDWIDTH_UP`], [`BANDWIDTH_DOWN`] | per-client access bandwidth (index: client) |
//! | [`PER_CLIENT_DELAY`], [`PER_CLIENT_LOSS`] | `[access.per_client]` draws (index: client) |
//! | [`WORKLOAD`] | one workload of a scenario (index: workload) |
//! | [`PROFILE`], [`MMORPG_UP`], [`MMORPG_DOWN`], [`MESSAGING`], [`REPLAY`] | a workload's source (index: client) |
//! | [`THINWIRE_KEY`] | thinwire's endpoint secret (index: 8-byte chunk) |
//! | [`THINWIRE_SERVER_KEY`] | the simulated thinwire servers' static key (seed 0, index: 8-byte chunk) |
//! | [`REPETITION`] | the run seed of repetition `r >= 1` of `--runs` (index: `r`) |

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Access link client to server.
pub const ACCESS_UP: u64 = 0x4c55;
/// Access link server to client.
pub const ACCESS_DOWN: u64 = 0x4c44;
/// Bottleneck client to server.
pub const BOTTLENECK_UP: u64 = 0x4255;
/// Bottleneck server to client.
pub const BOTTLENECK_DOWN: u64 = 0x4244;
/// A client's transport endpoint.
pub const CLIENT_ENDPOINT: u64 = 0x0045_5043;
/// A server transport endpoint.
pub const SERVER_ENDPOINT: u64 = 0x0045_5053;
/// Cross traffic client to server.
pub const CROSS_UP: u64 = 0x0043_5255;
/// Cross traffic server to client.
pub const CROSS_DOWN: u64 = 0x0043_5244;
/// Calibration of the cross-traffic rate.
pub const CROSS_CALIBRATION: u64 = 0x0043_414c;
/// Per-client bandwidth, client to server.
pub const BANDWIDTH_UP: u64 = 0x0042_5755;
/// Per-client bandwidth, server to client.
pub const BANDWIDTH_DOWN: u64 = 0x0042_5744;
/// Per-client one-way delay draws.
pub const PER_CLIENT_DELAY: u64 = 0x5043_444c;
/// Per-client loss-rate draws.
pub const PER_CLIENT_LOSS: u64 = 0x5043_4c53;
/// One workload of a scenario.
pub const WORKLOAD: u64 = 0x5752_4b4c;
/// A game-profile source.
pub const PROFILE: u64 = 0x5052_4f46;
/// An MMORPG client's own messages.
pub const MMORPG_UP: u64 = 0x4d4d_4f55;
/// The MMORPG server's updates to a client.
pub const MMORPG_DOWN: u64 = 0x4d4d_4f44;
/// A messaging source.
pub const MESSAGING: u64 = 0x4d53_4753;
/// A trace-replay source.
pub const REPLAY: u64 = 0x5250_4c59;
/// thinwire's endpoint secret.
pub const THINWIRE_KEY: u64 = 0x5457;
/// The static key of simulated thinwire servers (one for every run).
pub const THINWIRE_SERVER_KEY: u64 = 0x5457_534b;
/// The seeds of a scenario's repetitions (`--runs`).
pub const REPETITION: u64 = 0x5245_5054;

/// The seed of stream `tag`, `index` of run seed `seed` (SplitMix64
/// finaliser over the combination).
pub fn derive(seed: u64, tag: u64, index: u64) -> u64 {
    let z = seed
        .wrapping_add(tag.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(index.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A random generator on stream [`derive`](fn@derive)`(seed, tag, index)`.
pub fn rng(seed: u64, tag: u64, index: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(derive(seed, tag, index))
}

/// A number in `[0, 1)` from the top 53 bits of [`derive`](fn@derive)`(seed, tag, index)`.
pub fn unit(seed: u64, tag: u64, index: u64) -> f64 {
    (derive(seed, tag, index) >> 11) as f64 / (1u64 << 53) as f64
}

/// 32 bytes: [`derive`](fn@derive)`(seed, tag, i)` for `i` in `0..4`, little-endian.
pub fn bytes32(seed: u64, tag: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&derive(seed, tag, i as u64).to_le_bytes());
    }
    out
}

/// `seed` XOR `salt`: the cross-traffic calibration's side streams (its
/// background load and its link), which predate [`derive`](fn@derive).
pub fn salted(seed: u64, salt: u64) -> u64 {
    seed ^ salt
}

/// The emulator's per-link mixer for the link from host `a` to host `b`: a
/// single SplitMix64-style round with other shifts than [`derive`](fn@derive).
pub fn pair(seed: u64, a: u64, b: u64) -> u64 {
    let x = seed ^ (a << 32 | b).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let x = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derive_is_splitmix64() {
        // SplitMix64's first output for state 0 (its finaliser of the golden gamma).
        assert_eq!(derive(0, 0, 0), 0xE220_A839_7B1D_CDAF);
        assert_ne!(derive(1, ACCESS_UP, 0), derive(1, ACCESS_DOWN, 0));
        assert_ne!(derive(1, ACCESS_UP, 0), derive(1, ACCESS_UP, 1));
    }

    #[test]
    fn forms_follow_derive() {
        let u = unit(5, PER_CLIENT_DELAY, 3);
        assert!((0.0..1.0).contains(&u));
        let b = bytes32(5, THINWIRE_KEY);
        assert_eq!(b[8..16], derive(5, THINWIRE_KEY, 1).to_le_bytes());
        assert_eq!(salted(0xff, 0x0f), 0xf0);
    }

    #[test]
    fn pair_is_the_emulators_mixer() {
        // The emulator's former inline mixer, kept value for value.
        let old = |seed: u64, a: usize, b: usize| {
            let mut x = seed ^ ((a as u64) << 32 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            x ^= x >> 31;
            x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x ^ (x >> 29)
        };
        for (s, a, b) in [(0, 0, 1), (7, 3, 0), (u64::MAX, 249, 12)] {
            assert_eq!(pair(s, a as u64, b as u64), old(s, a, b));
        }
    }
}
