//! Cipher suites and the sealing of short-header packets.
//!
//! A packet is `header || AEAD(key, nonce(pn), ad = header, frames) || tag`: the frames are
//! encrypted, the header (first byte, destination connection id, truncated packet number) is
//! authenticated, and the nonce is the *full* 64-bit packet number, which a sender never reuses
//! under one key. The nonce layout is Noise's for each cipher (four zero bytes, then the number
//! little-endian for ChaChaPoly, big-endian for AES-GCM).

use std::fmt;
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub(crate) use super::aead::TAG_LEN;
use super::aead::{aes_is_accelerated, Algorithm, Cipher, AES_256_GCM, CHACHA20_POLY1305};
use crate::stamp::Stamp;
use crate::wire::KEY_PHASE_BIT;

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

    /// The AEAD of an encrypted suite.
    fn aead(self) -> Option<&'static Algorithm> {
        match self {
            CipherSuite::ChaCha20Poly1305 => Some(&CHACHA20_POLY1305),
            CipherSuite::Aes256Gcm => Some(&AES_256_GCM),
            CipherSuite::InsecureCleartext => None,
        }
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

fn nonce(suite: CipherSuite, pn: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    match suite {
        CipherSuite::Aes256Gcm => n[4..].copy_from_slice(&pn.to_be_bytes()),
        _ => n[4..].copy_from_slice(&pn.to_le_bytes()),
    }
    n
}

/// The next generation of a direction's key: `HMAC-SHA256(key, "thinwire key update")`.
fn next_secret(secret: &[u8; 32]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("any key length works");
    m.update(b"thinwire key update");
    m.finalize().into_bytes().into()
}

/// Smallest `TransportConfig::key_update_packets`: four times the 16 packets a receiver
/// wants under one key before it takes the peer's next (or a second under it), so that an
/// honest sender's update is taken even when three quarters of a key's packets are lost,
/// while a hostile peer cannot make it derive a key on every packet.
pub const MIN_KEY_UPDATE_PACKETS: u64 = 64;

/// Packets a receiver opens under its current key before it takes the peer's next one
/// (unless [`MIN_KEY_PHASE_TIME`] has passed): a hostile peer cannot make it derive and try
/// a key on every packet, while an honest sender, which keeps a key for at least
/// [`MIN_KEY_UPDATE_PACKETS`] packets, is followed even when three quarters of them are lost.
pub(crate) const MIN_PACKETS_PER_KEY_PHASE: u64 = MIN_KEY_UPDATE_PACKETS / 4;

/// Time under one receive key after which the peer's next key is taken however few packets
/// came (so heavy loss cannot strand an honest update).
pub(crate) const MIN_KEY_PHASE_TIME: Duration = Duration::from_secs(1);

/// The two directions' packet protection of one connection, with key updates.
///
/// A sender moves to the next generation of its key after `update_after` packets (AES-GCM's
/// confidentiality limit is 2^23 packets per key, RFC 9001 §6.6) and flips the key phase bit
/// of its headers; each direction updates on its own. A receiver that sees the other phase on
/// a packet newer than any it has takes the next generation once that packet opens with it,
/// and keeps the previous one for late packets of the old phase.
pub(crate) struct PacketKeys {
    suite: CipherSuite,
    tx: Cipher,
    tx_secret: [u8; 32],
    tx_phase: bool,
    /// Whether a packet was sealed since the last release ([`Cipher::with_key`]).
    tx_warm: bool,
    tx_sealed: u64,
    rx: Cipher,
    rx_secret: [u8; 32],
    rx_phase: bool,
    /// Whether a packet was tried since the last release, opened or not ([`Cipher::with_key`]).
    rx_warm: bool,
    /// The previous receive generation and its key; boxed, as `rx_next`: present only
    /// around a key update.
    rx_prev: Option<Box<(Cipher, [u8; 32])>>,
    /// Packets opened under the current receive key, and since when it is in use.
    rx_opened: u64,
    rx_since: Stamp,
    /// The next receive generation, derived on the first packet of the other phase.
    rx_next: Option<Box<(Cipher, [u8; 32])>>,
    update_after: u64,
    /// Key updates this side made, and saw its peer make.
    pub(crate) updates_sent: u64,
    pub(crate) updates_received: u64,
}

impl fmt::Debug for PacketKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PacketKeys({:?}, ..)", self.suite)
    }
}

impl PacketKeys {
    /// Hints the kept form of the key that opens packets (`receiving`) or seals them.
    pub(crate) fn prefetch(&self, hint: crate::prefetch::Hint, receiving: bool) {
        if receiving {
            self.rx.prefetch(hint);
        } else {
            self.tx.prefetch(hint);
        }
    }

    /// Keys for sending with `tx` and receiving with `rx`; the sending key is updated every
    /// `update_after` packets.
    pub(crate) fn new(suite: CipherSuite, tx: &[u8; 32], rx: &[u8; 32], update_after: u64) -> Self {
        Self {
            suite,
            tx: Cipher::new(),
            tx_secret: *tx,
            tx_phase: false,
            tx_warm: false,
            tx_sealed: 0,
            rx: Cipher::new(),
            rx_secret: *rx,
            rx_phase: false,
            rx_warm: false,
            rx_prev: None,
            rx_opened: 0,
            rx_since: Stamp::NONE,
            rx_next: None,
            update_after: update_after.max(1),
            updates_sent: 0,
            updates_received: 0,
        }
    }

    pub(crate) fn suite(&self) -> CipherSuite {
        self.suite
    }

    /// Seals the packet in `buf`: the first `header_len` bytes are the header (authenticated,
    /// its key phase bit set here), the rest the frames (encrypted in place); the tag is
    /// appended.
    pub(crate) fn seal(&mut self, pn: u64, buf: &mut Vec<u8>, header_len: usize) {
        let Some(aead) = self.suite.aead() else {
            return;
        };
        if self.tx_sealed >= self.update_after {
            self.tx_secret = next_secret(&self.tx_secret);
            self.tx = Cipher::new();
            self.tx_phase = !self.tx_phase;
            self.tx_sealed = 0;
            self.updates_sent += 1;
            tracing::debug!(
                updates = self.updates_sent,
                "key update: sealing under new keys"
            );
        }
        if self.tx_phase {
            buf[0] |= KEY_PHASE_BIT;
        }
        self.tx_sealed += 1;
        let n = nonce(self.suite, pn);
        let (header, body) = buf.split_at_mut(header_len);
        let tag = (self.tx).with_key(aead, &self.tx_secret, &mut self.tx_warm, |k| {
            k.seal(n, header, body)
        });
        buf.extend_from_slice(&tag);
    }

    /// Opens a received packet in place: `body` is everything after the header, tag included;
    /// `largest` the largest packet number received so far. Returns the length of the frames
    /// at the start of `body`, or `None` when the packet is forged, damaged or from another key
    /// (nothing may then be used of it; `body` may be garbled). A packet of the next key
    /// phase is not even tried before [`MIN_PACKETS_PER_KEY_PHASE`] packets (or
    /// [`MIN_KEY_PHASE_TIME`]) under the current key.
    pub(crate) fn open(
        &mut self,
        now: Stamp,
        pn: u64,
        (header, body): (&[u8], &mut [u8]),
        largest: Option<u64>,
    ) -> Option<usize> {
        if !self.suite.is_encrypted() {
            return Some(body.len());
        }
        if self.rx_since == Stamp::NONE {
            self.rx_since = now;
        }
        let since = self.rx_since;
        let phase = header.first().is_some_and(|b| b & KEY_PHASE_BIT != 0);
        if phase == self.rx_phase {
            let len = open_with(
                (&self.rx, &mut self.rx_warm),
                &self.rx_secret,
                self.suite,
                pn,
                header,
                body,
            )?;
            self.rx_opened += 1;
            return Some(len);
        }
        if largest.is_some_and(|l| pn <= l) {
            // a late packet of the previous generation
            let (cipher, key) = self.rx_prev.as_deref()?;
            return open_with((cipher, &mut true), key, self.suite, pn, header, body);
        }
        if self.rx_opened < MIN_PACKETS_PER_KEY_PHASE
            && now.since(since).unwrap_or_default() < MIN_KEY_PHASE_TIME
        {
            // too soon after the last update: not a key an honest peer would use yet
            return None;
        }
        let (cipher, secret) = match self.rx_next.take() {
            Some(next) => *next,
            None => {
                let secret = next_secret(&self.rx_secret);
                (Cipher::new(), secret)
            }
        };
        let Some(len) = open_with((&cipher, &mut true), &secret, self.suite, pn, header, body)
        else {
            // keep the derived key for the genuine update; a forgery changes nothing
            self.rx_next = Some(Box::new((cipher, secret)));
            return None;
        };
        let prev = std::mem::replace(&mut self.rx, cipher);
        self.rx_prev = Some(Box::new((
            prev,
            std::mem::replace(&mut self.rx_secret, secret),
        )));
        self.rx_phase = phase;
        self.rx_opened = 1;
        self.rx_since = now;
        self.updates_received += 1;
        tracing::debug!(
            updates = self.updates_received,
            "key update: the peer's new keys in use"
        );
        Some(len)
    }
}

impl PacketKeys {
    /// The connection went idle: drops the expanded key schedules (made again from the keys,
    /// and kept from each direction's second packet on, [`Cipher::with_key`]) and the previous
    /// receive generation (a packet of it this late is dropped).
    pub(crate) fn release_idle(&mut self) {
        self.tx.release();
        self.rx.release();
        self.tx_warm = false;
        self.rx_warm = false;
        self.rx_prev = None;
        if let Some(next) = &mut self.rx_next {
            next.0.release();
        }
    }
}

/// One decryption attempt with `cipher` under `key` (`warm`: see [`Cipher::with_key`]), for
/// an encrypted `suite` (`PacketKeys::open` answers for the cleartext one before it gets here).
fn open_with(
    (cipher, warm): (&Cipher, &mut bool),
    key: &[u8; 32],
    suite: CipherSuite,
    pn: u64,
    header: &[u8],
    body: &mut [u8],
) -> Option<usize> {
    let aead = suite.aead()?;
    let n = nonce(suite, pn);
    let split = body.len().checked_sub(TAG_LEN)?;
    let (frames, tag) = body.split_at_mut(split);
    let tag: &[u8; TAG_LEN] = (&*tag).try_into().ok()?;
    let ok = cipher.with_key(aead, key, warm, |k| k.open(n, header, frames, tag));
    ok.then_some(split)
}

#[cfg(test)]
mod tests;

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
            let mut keys = PacketKeys::new(suite, &[1; 32], &[2; 32], u64::MAX);
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
