//! Cipher suites and the sealing of short-header packets.
//!
//! A packet is `header || AEAD(key, nonce(pn), ad = header, frames) || tag`: the frames are
//! encrypted, the header (first byte, destination connection id, truncated packet number) is
//! authenticated, and the nonce is the *full* 64-bit packet number, which a sender never reuses
//! under one key. The nonce layout is Noise's for each cipher (four zero bytes, then the number
//! little-endian for ChaChaPoly, big-endian for AES-GCM).

use std::fmt;

use aes_gcm::Aes256Gcm;
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::ChaCha20Poly1305;

/// Length of the authentication tag of every encrypted suite.
pub(crate) const TAG_LEN: usize = 16;

/// How short-header packets are protected. Negotiated in the handshake: the client lists what
/// it accepts (its order is the preference), the server takes the first it accepts too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CipherSuite {
    /// ChaCha20-Poly1305 (RFC 8439): fast everywhere, constant time without hardware support.
    ChaCha20Poly1305,
    /// AES-256-GCM: fastest where the CPU has AES and carry-less multiplication instructions.
    Aes256Gcm,
    /// **No encryption and no authentication** of data packets: anyone on the path can read,
    /// forge, close or hijack the connection. Only for trusted networks and lab comparisons;
    /// used only when both ends list it. The handshake is still Noise.
    InsecureCleartext,
}

impl CipherSuite {
    /// The suite's code on the wire.
    pub fn code(self) -> u8 {
        match self {
            CipherSuite::InsecureCleartext => 0,
            CipherSuite::ChaCha20Poly1305 => 1,
            CipherSuite::Aes256Gcm => 2,
        }
    }

    /// The suite of a wire code; `None` for codes this version does not know.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(CipherSuite::InsecureCleartext),
            1 => Some(CipherSuite::ChaCha20Poly1305),
            2 => Some(CipherSuite::Aes256Gcm),
            _ => None,
        }
    }

    /// Whether packets are encrypted and authenticated.
    pub fn is_encrypted(self) -> bool {
        self != CipherSuite::InsecureCleartext
    }

    /// Bytes the suite adds to every short-header packet.
    pub fn overhead(self) -> usize {
        if self.is_encrypted() {
            TAG_LEN
        } else {
            0
        }
    }

    /// The default list: both encrypted suites, AES-256-GCM first where this CPU accelerates
    /// it, ChaCha20-Poly1305 first elsewhere. Never the cleartext one.
    pub fn default_preference() -> Vec<CipherSuite> {
        if aes_is_accelerated() {
            vec![CipherSuite::Aes256Gcm, CipherSuite::ChaCha20Poly1305]
        } else {
            vec![CipherSuite::ChaCha20Poly1305, CipherSuite::Aes256Gcm]
        }
    }
}

fn aes_is_accelerated() -> bool {
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

/// One direction's cipher.
enum Cipher {
    ChaCha(ChaCha20Poly1305),
    // boxed: the expanded AES key schedule is large and most connections never use it
    Aes(Box<Aes256Gcm>),
    Cleartext,
}

impl Cipher {
    fn new(suite: CipherSuite, key: &[u8; 32]) -> Self {
        match suite {
            CipherSuite::ChaCha20Poly1305 => Cipher::ChaCha(ChaCha20Poly1305::new(key.into())),
            CipherSuite::Aes256Gcm => Cipher::Aes(Box::new(Aes256Gcm::new(key.into()))),
            CipherSuite::InsecureCleartext => Cipher::Cleartext,
        }
    }
}

fn nonce(suite: CipherSuite, pn: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    match suite {
        CipherSuite::Aes256Gcm => n[4..].copy_from_slice(&pn.to_be_bytes()),
        _ => n[4..].copy_from_slice(&pn.to_le_bytes()),
    }
    n
}

/// The two directions' packet protection of one connection.
pub(crate) struct PacketKeys {
    suite: CipherSuite,
    tx: Cipher,
    rx: Cipher,
}

impl fmt::Debug for PacketKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PacketKeys({:?}, ..)", self.suite)
    }
}

impl PacketKeys {
    /// Keys for sending with `tx` and receiving with `rx`.
    pub(crate) fn new(suite: CipherSuite, tx: &[u8; 32], rx: &[u8; 32]) -> Self {
        Self {
            suite,
            tx: Cipher::new(suite, tx),
            rx: Cipher::new(suite, rx),
        }
    }

    pub(crate) fn suite(&self) -> CipherSuite {
        self.suite
    }

    /// Seals the packet in `buf`: the first `header_len` bytes are the header (authenticated),
    /// the rest the frames (encrypted in place); the tag is appended.
    pub(crate) fn seal(&self, pn: u64, buf: &mut Vec<u8>, header_len: usize) {
        let n = nonce(self.suite, pn);
        let (header, body) = buf.split_at_mut(header_len);
        let tag = match &self.tx {
            Cipher::ChaCha(c) => c.encrypt_in_place_detached((&n).into(), header, body),
            Cipher::Aes(c) => c.encrypt_in_place_detached((&n).into(), header, body),
            Cipher::Cleartext => return,
        };
        // encryption fails only for bodies beyond 2^38 bytes, far above any datagram
        buf.extend_from_slice(&tag.expect("datagram-sized body"));
    }

    /// Opens a received packet in place: `body` is everything after the header, tag included.
    /// Returns the length of the frames at the start of `body`, or `None` when the packet is
    /// forged, damaged or from another key (nothing may then be used of it).
    pub(crate) fn open(&self, pn: u64, header: &[u8], body: &mut [u8]) -> Option<usize> {
        let n = nonce(self.suite, pn);
        let split = match &self.rx {
            Cipher::Cleartext => return Some(body.len()),
            _ => body.len().checked_sub(TAG_LEN)?,
        };
        let (frames, tag) = body.split_at_mut(split);
        let tag: &[u8] = tag;
        let ok = match &self.rx {
            Cipher::ChaCha(c) => c
                .decrypt_in_place_detached((&n).into(), header, frames, tag.into())
                .is_ok(),
            Cipher::Aes(c) => c
                .decrypt_in_place_detached((&n).into(), header, frames, tag.into())
                .is_ok(),
            Cipher::Cleartext => true,
        };
        ok.then_some(split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(suite: CipherSuite) -> (PacketKeys, PacketKeys) {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        (
            PacketKeys::new(suite, &a, &b),
            PacketKeys::new(suite, &b, &a),
        )
    }

    #[test]
    fn sealed_packets_open_only_unchanged_with_the_right_number() {
        for suite in [CipherSuite::ChaCha20Poly1305, CipherSuite::Aes256Gcm] {
            let (alice, bob) = pair(suite);
            let mut buf = b"\x40hdr\x07frames here".to_vec();
            alice.seal(7, &mut buf, 5);
            assert_eq!(buf.len(), 5 + 11 + TAG_LEN);
            assert_ne!(&buf[5..16], b"frames here", "{suite:?}: body encrypted");
            let open = |pn: u64, d: &[u8]| {
                let mut d = d.to_vec();
                let (h, b) = d.split_at_mut(5);
                bob.open(pn, h, b).map(|n| b[..n].to_vec())
            };
            assert_eq!(open(7, &buf), Some(b"frames here".to_vec()));
            assert_eq!(open(8, &buf), None, "{suite:?}: wrong packet number");
            for i in 0..buf.len() {
                let mut bad = buf.clone();
                bad[i] ^= 0x01;
                assert_eq!(
                    open(7, &bad),
                    None,
                    "{suite:?}: bit flip at byte {i} accepted"
                );
            }
            // the sender's own key does not open its packets (directions are separate)
            let mut d = buf.clone();
            let (h, b) = d.split_at_mut(5);
            assert_eq!(alice.open(7, h, b), None);
            assert_eq!(open(7, &buf[..10]), None, "truncated");
        }
    }

    #[test]
    fn codes_round_trip_and_cleartext_adds_nothing() {
        for s in [
            CipherSuite::ChaCha20Poly1305,
            CipherSuite::Aes256Gcm,
            CipherSuite::InsecureCleartext,
        ] {
            assert_eq!(CipherSuite::from_code(s.code()), Some(s));
        }
        assert_eq!(CipherSuite::from_code(9), None);
        assert!(!CipherSuite::default_preference().contains(&CipherSuite::InsecureCleartext));
        let (alice, bob) = pair(CipherSuite::InsecureCleartext);
        let mut buf = b"\x40hdr\x07frames".to_vec();
        alice.seal(1, &mut buf, 5);
        assert_eq!(&buf[5..], b"frames");
        let (h, b) = buf.split_at_mut(5);
        assert_eq!(bob.open(1, h, b), Some(6));
    }
}

#[cfg(test)]
mod golden {
    use super::*;

    /// One sealed packet of each suite, for implementers: keys `01 × 32` (client to server),
    /// packet number 7, header `40 0123456789abcdef 07`, frames `01` (a PING). The same
    /// bytes are in docs/PROTOCOL.md.
    #[test]
    fn golden_sealed_ping() {
        let header = [0x40, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x07];
        for (suite, expected) in [
            // both checked against Python's `cryptography` (an independent implementation)
            (
                CipherSuite::ChaCha20Poly1305,
                "3a0ea83ccc5f75328f96dfa7395f165e04",
            ),
            (CipherSuite::Aes256Gcm, "ee29a46c0f39e1ed6266a7933d14bfd52e"),
        ] {
            let keys = PacketKeys::new(suite, &[1; 32], &[2; 32]);
            let mut buf = header.to_vec();
            buf.push(0x01);
            keys.seal(7, &mut buf, header.len());
            let hex: String = buf[header.len()..]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(hex, expected, "{suite:?}");
        }
    }
}
