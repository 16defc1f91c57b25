//! The handshake: `Noise_NK_25519_ChaChaPoly_BLAKE2s` in the Connect and Accept packets.
//!
//! NK: the client (initiator) knows the server's static key. Message 1 (`e, es`) already
//! encrypts the client's parameters to that key; message 2 (`e, ee`) proves the server holds
//! the secret half and gives both sides forward-secret keys. The prologue binds the cleartext
//! fields of Connect and Accept (version, client connection id, instance, nonce), so changing
//! any of them in flight makes the handshake fail.
//!
//! Randomness comes from the endpoint's seeded generator (a fresh 32-byte seed per handshake),
//! so simulations stay deterministic; a runtime seeds the endpoint from the operating system.

use std::fmt;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};
use snow::{Builder, HandshakeState};

use super::keys::{PublicKey, ServerKey};
use crate::wire::ConnectionId;

const PATTERN: &str = "Noise_NK_25519_ChaChaPoly_BLAKE2s";

/// Longest handshake message accepted (a Noise message is at most 65 535 bytes; ours carry a
/// few dozen bytes of parameters and at most one connect token).
pub(crate) const HANDSHAKE_MAX: usize = crate::wire::MAX_HANDSHAKE_LEN;

/// Bytes message 1 adds to its payload (`e` and the payload's tag); message 2 the same.
#[cfg(test)]
const MESSAGE_OVERHEAD: usize = 32 + 16;

struct SeededRandom(ChaCha20Rng);

impl Random for SeededRandom {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        self.0.fill_bytes(dest);
        Ok(())
    }
}

/// The default primitives, with the endpoint's randomness instead of the operating system's.
struct Resolver {
    seed: [u8; 32],
}

impl CryptoResolver for Resolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        Some(Box::new(SeededRandom(ChaCha20Rng::from_seed(self.seed))))
    }
    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        (*choice == DHChoice::Curve25519).then(super::x25519::x25519)
    }
    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver.resolve_cipher(choice)
    }
}

/// The Noise prologue: the cleartext fields of Connect and Accept that the handshake binds.
pub(crate) fn prologue(
    version: u32,
    client_cid: &ConnectionId,
    instance: u64,
    nonce: u64,
) -> Vec<u8> {
    let mut p = Vec::with_capacity(48);
    p.extend_from_slice(b"thinwire handshake");
    p.extend_from_slice(&version.to_be_bytes());
    p.push(client_cid.len() as u8);
    p.extend_from_slice(client_cid.as_bytes());
    p.extend_from_slice(&instance.to_be_bytes());
    p.extend_from_slice(&nonce.to_be_bytes());
    p
}

fn builder(seed: [u8; 32]) -> Builder<'static> {
    let params = PATTERN.parse().expect("a valid Noise pattern name");
    Builder::with_resolver(params, Box::new(Resolver { seed }))
}

/// The keys a finished handshake gives one side.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct SessionKeys {
    /// For the packets this side sends.
    pub(crate) tx: [u8; 32],
    /// For the packets this side receives.
    pub(crate) rx: [u8; 32],
}

impl fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKeys(..)")
    }
}

/// The client's half-done handshake, between its Connect and the server's Accept.
pub(crate) struct Initiator {
    hs: Box<HandshakeState>,
}

impl fmt::Debug for Initiator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Initiator(..)")
    }
}

impl Initiator {
    /// Writes message 1 carrying `payload`, encrypted to `server`.
    pub(crate) fn start(
        server: &PublicKey,
        prologue: &[u8],
        seed: [u8; 32],
        payload: &[u8],
    ) -> Result<(Self, Vec<u8>), snow::Error> {
        let mut hs = builder(seed)
            .remote_public_key(&server.0)?
            .prologue(prologue)?
            .build_initiator()?;
        let mut msg = vec![0u8; payload.len() + 64];
        let n = hs.write_message(payload, &mut msg)?;
        msg.truncate(n);
        Ok((Self { hs: Box::new(hs) }, msg))
    }

    /// Reads message 2: the server's payload and the session keys, or `None` if it was not
    /// written by the holder of the server's key for this handshake (the state is unchanged
    /// then, so the genuine Accept can still be read).
    pub(crate) fn finish(&mut self, msg: &[u8]) -> Option<(Vec<u8>, SessionKeys)> {
        if msg.len() > HANDSHAKE_MAX {
            return None;
        }
        let mut payload = vec![0u8; msg.len()];
        let n = self.hs.read_message(msg, &mut payload).ok()?;
        payload.truncate(n);
        let (tx, rx) = self.hs.dangerously_get_raw_split();
        Some((payload, SessionKeys { tx, rx }))
    }
}

/// The server's side: reads message 1, then (once the endpoint has decided to accept) writes
/// message 2.
pub(crate) struct Responder {
    hs: Box<HandshakeState>,
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Responder(..)")
    }
}

impl Responder {
    /// Reads message 1; `None` if it was not encrypted to this server's key with this prologue.
    pub(crate) fn read(
        key: &ServerKey,
        prologue: &[u8],
        seed: [u8; 32],
        msg: &[u8],
    ) -> Option<(Self, Vec<u8>)> {
        if msg.len() > HANDSHAKE_MAX {
            return None;
        }
        let secret = key.secret_bytes();
        let mut hs = builder(seed)
            .local_private_key(&secret)
            .ok()?
            .prologue(prologue)
            .ok()?
            .build_responder()
            .ok()?;
        let mut payload = vec![0u8; msg.len()];
        let n = hs.read_message(msg, &mut payload).ok()?;
        payload.truncate(n);
        Some((Self { hs: Box::new(hs) }, payload))
    }

    /// Writes message 2 carrying `payload`; returns it with the server's session keys.
    pub(crate) fn finish(mut self, payload: &[u8]) -> Result<(Vec<u8>, SessionKeys), snow::Error> {
        let mut msg = vec![0u8; payload.len() + 64];
        let n = self.hs.write_message(payload, &mut msg)?;
        msg.truncate(n);
        let (k1, k2) = self.hs.dangerously_get_raw_split();
        Ok((msg, SessionKeys { tx: k2, rx: k1 }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_derive_mirrored_keys_and_see_the_payloads() {
        let server = ServerKey::generate([1; 32]);
        let (mut client, m1) =
            Initiator::start(&server.public(), b"pro", [2; 32], b"params").unwrap();
        assert_eq!(m1.len(), b"params".len() + MESSAGE_OVERHEAD);
        assert!(!m1.windows(6).any(|w| w == b"params"), "payload encrypted");
        let (resp, got) = Responder::read(&server, b"pro", [3; 32], &m1).unwrap();
        assert_eq!(got, b"params");
        let (m2, skeys) = resp.finish(b"accept").unwrap();
        assert_eq!(m2.len(), b"accept".len() + MESSAGE_OVERHEAD);
        let (got, ckeys) = client.finish(&m2).unwrap();
        assert_eq!(got, b"accept");
        assert_eq!(ckeys.tx, skeys.rx);
        assert_eq!(ckeys.rx, skeys.tx);
        assert_ne!(ckeys.tx, ckeys.rx);
    }

    #[test]
    fn wrong_key_prologue_or_damage_fails_and_a_forgery_does_not_spoil_the_state() {
        let server = ServerKey::generate([1; 32]);
        let impostor = ServerKey::generate([4; 32]);
        let (mut client, m1) = Initiator::start(&server.public(), b"pro", [2; 32], b"p").unwrap();
        assert!(Responder::read(&impostor, b"pro", [3; 32], &m1).is_none());
        assert!(Responder::read(&server, b"other", [3; 32], &m1).is_none());
        let mut bad = m1.clone();
        bad[40] ^= 1;
        assert!(Responder::read(&server, b"pro", [3; 32], &bad).is_none());
        // an impostor cannot answer: it cannot read message 1, so it forges message 2 from its
        // own handshake with the client's public ephemeral; the client refuses it
        let (fake, _) = Initiator::start(&impostor.public(), b"pro", [5; 32], b"p").unwrap();
        drop(fake);
        let (resp, _) = Responder::read(&server, b"pro", [3; 32], &m1).unwrap();
        let (m2, _) = resp.finish(b"ok").unwrap();
        let mut forged = m2.clone();
        forged[0] ^= 1;
        assert!(client.finish(&forged).is_none());
        assert!(
            client.finish(&m2).is_some(),
            "the genuine answer still works"
        );
    }

    #[test]
    fn golden_prologue() {
        let cid = ConnectionId::new(&[0x11, 0x22, 0x33, 0x44]).unwrap();
        let p = prologue(3, &cid, 0x0102030405060708, 0xa1a2a3a4a5a6a7a8);
        let mut expected = b"thinwire handshake".to_vec();
        expected.extend_from_slice(&[0, 0, 0, 3, 4, 0x11, 0x22, 0x33, 0x44]);
        expected.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        expected.extend_from_slice(&[0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8]);
        assert_eq!(p, expected);
    }

    #[test]
    fn the_same_seeds_give_the_same_bytes() {
        let server = ServerKey::generate([1; 32]);
        let a = Initiator::start(&server.public(), b"p", [7; 32], b"x")
            .unwrap()
            .1;
        let b = Initiator::start(&server.public(), b"p", [7; 32], b"x")
            .unwrap()
            .1;
        let c = Initiator::start(&server.public(), b"p", [8; 32], b"x")
            .unwrap()
            .1;
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
