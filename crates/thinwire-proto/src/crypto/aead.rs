//! The AEADs that seal short-header packets, through ring: one direction's key in the form
//! its cipher runs from ([`Keyed`]), and when a direction keeps that form ([`Cipher`]).
//!
//! ring's AES-256-GCM and ChaCha20-Poly1305 are BoringSSL's assembly, chosen at run time for
//! the CPU (on x86-64: VAES with AVX2, or AES-NI with carry-less multiplication; elsewhere
//! its constant-time fallbacks), and ring is built for snow's sake in any case (snow's `std`
//! feature turns it on). Measured against the RustCrypto crates that sealed packets before,
//! on the 2-core Xeon with AVX-512 of `docs/results/bench.md` (a scratch program, best of 5
//! rounds of 200,000 seals per size, four runs, ns per seal): AES-256-GCM at 40 bytes 143-159
//! against aes-gcm 0.10's 196-225 (the faster generation at that size), at 1,174 bytes 331-371
//! against aes-gcm 0.11's 800-1,112; ChaCha20-Poly1305 (chacha20poly1305 0.11) at 40 bytes
//! 234-251 against 1,985-2,322, at 1,174 bytes 962-1,195 against 3,247-3,848. Making an AES
//! key ready (the round keys and GHASH's key powers) took 213 ns there.

use std::cell::OnceCell;

use ring::aead::{Aad, LessSafeKey, Nonce, Tag, UnboundKey};
pub(super) use ring::aead::{Algorithm, AES_256_GCM, CHACHA20_POLY1305};

use crate::prefetch::Hint;

/// Length of the authentication tag of both AEADs.
pub(crate) const TAG_LEN: usize = 16;

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

/// One direction's key in the form its cipher runs from (544 bytes: ring keeps room for the
/// larger of the two AEADs' forms).
pub(super) struct Keyed(LessSafeKey);

impl Keyed {
    /// `key` made ready for `alg` (one of the suites' AEADs, `CipherSuite::aead`).
    pub(super) fn new(alg: &'static Algorithm, key: &[u8; 32]) -> Self {
        // both suites' algorithms take exactly 32-byte keys
        Keyed(LessSafeKey::new(
            UnboundKey::new(alg, key).expect("a 32-byte key"),
        ))
    }

    /// Encrypts `body` in place, `header` authenticated; returns the tag.
    pub(super) fn seal(&self, n: [u8; 12], header: &[u8], body: &mut [u8]) -> [u8; TAG_LEN] {
        let tag = self
            .0
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(n), Aad::from(header), body)
            // sealing fails only for inputs far beyond any datagram (2^36 bytes for GCM)
            .expect("datagram-sized body");
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// Whether `frames` (decrypted in place; garbled when not) came with `tag` under this key.
    pub(super) fn open(
        &self,
        n: [u8; 12],
        header: &[u8],
        frames: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> bool {
        self.0
            .open_in_place_separate_tag(
                Nonce::assume_unique_for_key(n),
                Aad::from(header),
                Tag::from(*tag),
                frames,
                0..,
            )
            .is_ok()
    }
}

/// What one direction's cipher keeps beside its key: with AES-256-GCM, its keyed form
/// ([`Keyed`], boxed), kept from the second packet after a release on, and dropped while the
/// connection is idle (`PacketKeys::release_idle`). A resting connection that wakes for one
/// keepalive and its ACK expands its keys for that packet only and keeps nothing. The key is
/// the direction's secret, which `PacketKeys` holds anyway for the next key update, so it is
/// not copied here: an idle connection holds 32 bytes of key per direction. ChaCha20-Poly1305
/// has nothing to expand (its keyed form is made for each packet, a copy of 32 bytes), and
/// the cleartext opt-out nothing at all, so for them this stays empty. 8 bytes.
pub(super) struct Cipher(OnceCell<Box<Keyed>>);

impl Cipher {
    /// Hints the kept form of the key, if any.
    pub(super) fn prefetch(&self, hint: Hint) {
        if let Some(k) = self.0.get() {
            hint.value(&**k);
        }
    }

    pub(super) fn new() -> Self {
        Cipher(OnceCell::new())
    }

    /// Runs `f` with `key` made ready for `alg`: the kept form, or a form made for this
    /// packet alone, for ChaCha20-Poly1305 (whose form is the key itself) and for the first
    /// packet tried since the last release (`warm` false, and made true here, whether the
    /// packet then opens or not). Only AES-256-GCM's form, the expanded round keys and
    /// GHASH's key powers (213 ns to make on the machine above), is worth keeping.
    pub(super) fn with_key<R>(
        &self,
        alg: &'static Algorithm,
        key: &[u8; 32],
        warm: &mut bool,
        f: impl FnOnce(&Keyed) -> R,
    ) -> R {
        if let Some(kept) = self.0.get() {
            return f(kept);
        }
        if alg != &AES_256_GCM || !std::mem::replace(warm, true) {
            return f(&Keyed::new(alg, key));
        }
        f(self.0.get_or_init(|| Box::new(Keyed::new(alg, key))))
    }

    /// Drops what can be derived again from the key.
    pub(super) fn release(&mut self) {
        self.0.take();
    }

    /// Whether a keyed form is kept.
    #[cfg(test)]
    pub(super) fn is_kept(&self) -> bool {
        self.0.get().is_some()
    }
}

/// Packet body sizes for the tests: empty, around one and two blocks, around the 128 bytes
/// where ring's AES-GCM code enters its loop of four vectors, a game packet, around the 320
/// bytes where its ChaCha20-Poly1305 code leaves its short path, and a full datagram.
#[cfg(test)]
pub(super) const TEST_SIZES: [usize; 13] =
    [0, 1, 15, 16, 17, 127, 128, 129, 200, 319, 320, 321, 1_200];

#[cfg(test)]
mod tests {
    use super::*;

    /// ring's two AEADs seal exactly what RustCrypto's seal (an independent implementation),
    /// at every test size, and open what they sealed and nothing with a changed tag.
    #[test]
    fn ring_seals_what_rustcrypto_seals() {
        use aes_gcm_oracle::aead::{AeadInPlace, KeyInit as _};
        use chacha20poly1305::aead::KeyInit as _;
        let key = [7u8; 32];
        let aes = aes_gcm_oracle::Aes256Gcm::new((&key).into());
        let chacha = chacha20poly1305::ChaCha20Poly1305::new((&key).into());
        for alg in [&AES_256_GCM, &CHACHA20_POLY1305] {
            let keyed = Keyed::new(alg, &key);
            for len in TEST_SIZES {
                let mut n = [0u8; 12];
                n[4..].copy_from_slice(&(1_000 + len as u64).to_be_bytes());
                let header = [0x40, 1, 2, 3, len as u8];
                let plain: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let mut ours = plain.clone();
                let tag = keyed.seal(n, &header, &mut ours);
                let mut theirs = plain.clone();
                let their_tag: [u8; TAG_LEN] = if alg == &AES_256_GCM {
                    aes.encrypt_in_place_detached((&n).into(), &header, &mut theirs)
                        .unwrap()
                        .into()
                } else {
                    use chacha20poly1305::aead::AeadInOut;
                    chacha
                        .encrypt_inout_detached((&n).into(), &header, (&mut theirs[..]).into())
                        .unwrap()
                        .into()
                };
                assert_eq!(ours, theirs, "{alg:?} {len} B: ciphertexts differ");
                assert_eq!(tag, their_tag, "{alg:?} {len} B: tags differ");
                if len > 0 {
                    assert_ne!(ours, plain, "{alg:?} {len} B: not encrypted");
                }
                let mut bad = tag;
                bad[len % TAG_LEN] ^= 1;
                let mut tried = ours.clone();
                assert!(!keyed.open(n, &header, &mut tried, &bad), "{alg:?} {len} B");
                assert!(keyed.open(n, &header, &mut ours, &tag), "{alg:?} {len} B");
                assert_eq!(ours, plain, "{alg:?} {len} B");
            }
        }
    }

    /// What a busy AES direction keeps, and every packet reads: ring's keyed form, 544
    /// bytes on 64-bit targets.
    #[test]
    fn a_kept_key_fits_its_budget() {
        let size = std::mem::size_of::<Keyed>();
        assert!(size <= 544, "{size} B");
    }

    /// ChaCha20-Poly1305 keeps nothing, however many packets; AES-256-GCM keeps its keyed
    /// form from the second packet on, until released.
    #[test]
    fn only_aes_keeps_its_keyed_form() {
        let key = [3u8; 32];
        for (alg, keeps) in [(&CHACHA20_POLY1305, false), (&AES_256_GCM, true)] {
            let mut cipher = Cipher::new();
            let mut warm = false;
            let mut body = [1u8; 40];
            for _ in 0..3 {
                cipher.with_key(alg, &key, &mut warm, |k| k.seal([0; 12], &[], &mut body));
            }
            assert_eq!(cipher.is_kept(), keeps, "{alg:?}");
            cipher.release();
            assert!(!cipher.is_kept(), "{alg:?}");
        }
    }
}
