//! AES-256-GCM in two generations of RustCrypto's crates, where the CPU makes one of them the
//! faster for small packets ([`small_generation_helps`]): one direction's expanded keys
//! ([`Expanded`]), and when a direction keeps them ([`Cipher`]).

use std::cell::OnceCell;

use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::aes::{cipher::consts::U12, Aes256Enc};
use aes_gcm::AesGcm;
use aes_gcm_small::aead::consts::U12 as U12Small;

/// AES-256-GCM with the encrypting half of the key schedule only: counter mode never
/// decrypts a block, so the decryption round keys (240 bytes) that `aes_gcm::Aes256Gcm` also
/// expands would be memory every packet of a busy server pulls into its cache for nothing.
/// For packets above [`SMALL_BODY`].
pub(super) type Aes256Gcm = AesGcm<Aes256Enc, U12>;

/// AES-256-GCM for packets of at most [`SMALL_BODY`] bytes where [`small_generation_helps`]:
/// aes-gcm 0.10 over aes 0.8, the generation snow uses. aes 0.9 (under aes-gcm 0.11) runs on
/// VAES where the CPU has it, and then broadcasts its round keys into vector registers at
/// every call, which a small packet pays twice (the tag's mask and the key stream): on the
/// AVX-512 machine of the measurement below one block took 58-72 ns, against 3.1 ns a block
/// in batches of 64. aes 0.8 has no VAES path. Its key is 992 bytes, of which AES-NI reads
/// the 240 of the round keys (the rest is the software fallback's schedule, in a union with
/// them).
pub(super) type SmallAes256Gcm = aes_gcm_small::AesGcm<aes_gcm_small::aes::Aes256Enc, U12Small>;

/// Packet bodies (frames, without the tag) of at most this many bytes are sealed and opened
/// with [`SmallAes256Gcm`], larger ones with [`Aes256Gcm`]. Both are AES-256-GCM, so a packet
/// opens with either (tested). Sealing and opening with each, interleaved, 5 rounds of 200,000
/// packets on a 2-core Xeon with AVX-512 (a scratch program on the two crates; median ns,
/// small / large generation, seal and open): 40 B
/// 202 / 359 and 207 / 362, 200 B 374 / 415 and 367 / 431, 360 B 539 / 545 and 524 / 553,
/// 600 B 778 / 592 and 875 / 660, 1,184 B 1,247 / 889 and 1,276 / 751.
pub(super) const SMALL_BODY: usize = 320;

/// Whether this CPU has AES and carry-less multiplication instructions (AES-256-GCM is then
/// the default suite's first choice).
pub(super) fn aes_is_accelerated() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
            && std::arch::is_aarch64_feature_detected!("pmull")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// Whether packets of at most [`SMALL_BODY`] bytes go to [`SmallAes256Gcm`]: on x86 where
/// aes 0.9 runs on VAES (and so broadcasts its keys at every call) and aes 0.8 and polyval 0.6
/// find AES-NI and carry-less multiplication. Elsewhere aes-gcm 0.11 takes every size: on x86
/// without VAES aes 0.9 runs on AES-NI as aes 0.8 does, with no keys to broadcast (not
/// measured: this machine has VAES; when thinwire moved to aes-gcm 0.11, on an earlier
/// machine whose CPU flags were not recorded, 40-byte packets cost the same in both), and on
/// ARM aes 0.8 and polyval 0.6 use the CPU's AES and polynomial instructions only when built
/// with flags of their own (`--cfg aes_armv8`), so they would run in software.
pub(super) fn small_generation_helps() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("vaes") && aes_is_accelerated()
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        false
    }
}

/// One direction's expanded AES-256-GCM keys, each generation's made at the first packet of
/// its sizes: most connections of a game send and receive small packets only, and most
/// directions of a bulk transfer large ones only.
pub(super) struct Expanded {
    /// Where [`small_generation_helps`], the small packets' keys (boxed: elsewhere they take
    /// the 8 bytes of an empty cell, not 992); elsewhere `None`, and every size takes `large`.
    small: Option<OnceCell<Box<SmallAes256Gcm>>>,
    large: OnceCell<Aes256Gcm>,
}

impl Expanded {
    /// Keys split between the generations where this CPU makes that faster, nothing made yet.
    pub(super) fn new() -> Self {
        Self::with_split(small_generation_helps())
    }

    /// Keys split between the two generations or not, as `split` says, nothing made yet.
    pub(super) fn with_split(split: bool) -> Self {
        Expanded {
            small: split.then(OnceCell::new),
            large: OnceCell::new(),
        }
    }

    /// The small packets' generation, for a body of `len` bytes, if it takes them.
    fn small(&self, key: &[u8; 32], len: usize) -> Option<&SmallAes256Gcm> {
        use aes_gcm_small::aead::KeyInit as _;
        let small = self.small.as_ref().filter(|_| len <= SMALL_BODY)?;
        Some(small.get_or_init(|| Box::new(SmallAes256Gcm::new(key.into()))))
    }

    fn large(&self, key: &[u8; 32]) -> &Aes256Gcm {
        self.large.get_or_init(|| Aes256Gcm::new(key.into()))
    }

    /// Encrypts `body` in place, `header` authenticated; returns the tag.
    pub(super) fn seal(
        &self,
        key: &[u8; 32],
        n: &[u8; 12],
        header: &[u8],
        body: &mut [u8],
    ) -> [u8; 16] {
        use aes_gcm_small::aead::AeadInPlace;
        // encryption fails only for bodies beyond 2^36 bytes, far above any datagram
        const FITS: &str = "datagram-sized body";
        if let Some(small) = self.small(key, body.len()) {
            small
                .encrypt_in_place_detached(n.into(), header, body)
                .expect(FITS)
                .into()
        } else {
            let large = self.large(key);
            large
                .encrypt_inout_detached(n.into(), header, body.into())
                .expect(FITS)
                .into()
        }
    }

    /// Whether `frames` (decrypted in place) came with `tag` under this key.
    pub(super) fn open(
        &self,
        key: &[u8; 32],
        n: &[u8; 12],
        header: &[u8],
        frames: &mut [u8],
        tag: &[u8; 16],
    ) -> bool {
        use aes_gcm_small::aead::AeadInPlace;
        if let Some(small) = self.small(key, frames.len()) {
            small
                .decrypt_in_place_detached(n.into(), header, frames, tag.into())
                .is_ok()
        } else {
            let large = self.large(key);
            large
                .decrypt_inout_detached(n.into(), header, frames.into(), tag.into())
                .is_ok()
        }
    }
}

/// What one direction's cipher keeps beside its key: with AES-256-GCM, its expanded keys
/// ([`Expanded`]), kept from the second packet after a release on, and dropped while the
/// connection is idle (`PacketKeys::release_idle`). A resting connection that wakes for one
/// keepalive and its ACK expands its keys for that packet only and keeps nothing (with the
/// small packets' generation, about 1.4 KB per direction). The key is the direction's secret,
/// which `PacketKeys` holds anyway for the next key update, so it is not copied here: an
/// idle connection holds 32 bytes of key per direction. ChaCha20-Poly1305 has nothing to
/// expand (its cipher is made from the key for each packet, a copy of 32 bytes), and the
/// cleartext opt-out nothing at all, so for them this stays empty; the suite, which
/// `PacketKeys` keeps once, says which. 8 bytes.
pub(super) struct Cipher(OnceCell<Box<Expanded>>);

impl Cipher {
    pub(super) fn new() -> Self {
        Cipher(OnceCell::new())
    }

    /// Runs `f` with the AES-256-GCM keys under `key`: the kept ones, or, for the first
    /// packet tried since the last release (`warm` false, and made true here, whether the
    /// packet then opens or not), keys expanded for this packet alone.
    pub(super) fn with_aes<R>(&self, warm: &mut bool, f: impl FnOnce(&Expanded) -> R) -> R {
        if let Some(kept) = self.0.get() {
            return f(kept);
        }
        if !std::mem::replace(warm, true) {
            return f(&Expanded::new());
        }
        f(self.0.get_or_init(|| Box::new(Expanded::new())))
    }

    /// Drops what can be derived again from the key.
    pub(super) fn release(&mut self) {
        self.0.take();
    }

    /// Whether expanded keys are kept.
    #[cfg(test)]
    pub(super) fn is_kept(&self) -> bool {
        self.0.get().is_some()
    }
}

/// Packet body sizes on both sides of [`SMALL_BODY`], for the tests.
#[cfg(test)]
pub(super) const SWITCH_SIZES: [usize; 10] = [
    0,
    1,
    15,
    16,
    17,
    200,
    SMALL_BODY - 1,
    SMALL_BODY,
    SMALL_BODY + 1,
    1_200,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The two AES-256-GCM generations are one cipher: at every size around the switch
    /// between them each seals exactly the bytes the other seals.
    #[test]
    fn both_generations_seal_alike() {
        use aes_gcm_small::aead::{AeadInPlace, KeyInit as _};
        let key = [7u8; 32];
        let small = SmallAes256Gcm::new((&key).into());
        let large = Aes256Gcm::new((&key).into());
        for len in SWITCH_SIZES {
            let mut n = [0u8; 12];
            n[4..].copy_from_slice(&(1_000 + len as u64).to_be_bytes());
            let header = [0x40, 1, 2, 3, len as u8];
            let plain: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut a = plain.clone();
            let ta = small
                .encrypt_in_place_detached((&n).into(), &header, &mut a)
                .unwrap();
            let mut b = plain.clone();
            let tb = large
                .encrypt_inout_detached((&n).into(), &header, (&mut b[..]).into())
                .unwrap();
            assert_eq!(a, b, "{len} B: ciphertexts differ");
            assert_eq!(ta.as_slice(), tb.as_slice(), "{len} B: tags differ");
            if len > 0 {
                assert_ne!(a, plain, "{len} B: not encrypted");
            }
        }
    }

    /// A CPU that splits the sizes and one that does not are two ends of one connection:
    /// each opens what the other sealed, at every size around the switch, and nothing with
    /// its tag changed.
    #[test]
    fn split_and_one_generation_keys_open_each_others_packets() {
        let key = [9u8; 32];
        let ends = [Expanded::with_split(true), Expanded::with_split(false)];
        for len in SWITCH_SIZES {
            for (from, to) in [(0, 1), (1, 0)] {
                let n = [len as u8; 12];
                let header = [0x40, len as u8];
                let plain: Vec<u8> = (0..len).map(|i| (i * 5) as u8).collect();
                let mut body = plain.clone();
                let tag = ends[from].seal(&key, &n, &header, &mut body);
                let mut bad = tag;
                bad[len % 16] ^= 1;
                let mut tried = body.clone();
                assert!(
                    !ends[to].open(&key, &n, &header, &mut tried, &bad),
                    "{len} B"
                );
                assert!(ends[to].open(&key, &n, &header, &mut body, &tag), "{len} B");
                assert_eq!(body, plain, "{len} B from {from} to {to}");
            }
        }
        // the split end used its small packets' keys, and only for small packets
        assert!(ends[0].small.as_ref().is_some_and(|s| s.get().is_some()));
        assert!(ends[1].small.is_none());
    }

    /// What a busy connection's expanded AES keys cost, and every packet reads: the
    /// encrypting schedule and GHASH's key powers, not the decrypting schedule too. The small
    /// packets' generation holds its software fallback's schedule beside the AES-NI one (a
    /// union), which no packet reads where AES-NI runs: 992 bytes in all, per direction.
    #[test]
    fn an_expanded_aes_key_holds_the_encrypting_schedule_only() {
        let size = std::mem::size_of::<Aes256Gcm>();
        let full = std::mem::size_of::<aes_gcm::Aes256Gcm>();
        assert!(size <= 384, "{size} B");
        assert!(size + 240 <= full, "{size} B against {full} B");
        let small = std::mem::size_of::<SmallAes256Gcm>();
        assert!(small <= 1_000, "{small} B");
    }
}
