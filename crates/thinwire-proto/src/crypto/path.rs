//! The data of PATH_CHALLENGE frames: bytes that nobody but this endpoint can predict, so that
//! only someone who receives a challenge at the address it went to can echo it (path
//! validation, `docs/PROTOCOL.md` 3.8).
//!
//! The data is `HMAC-SHA256(path_key, "thinwire path challenge" || our connection id ||
//! instance || nonce || counter)[..8]`, with a path key `SHA-256("thinwire path challenge key"
//! || endpoint secret)` that the endpoint derives once from its own random secret. The peer
//! holds both packet keys of the connection, so a challenge made from them is one it could
//! compute, answer from its own address, and so move the connection onto a victim's address
//! by sending one packet with the victim's address as its source: hence a key only this
//! endpoint holds. The connection id, the handshake's instance and nonce (random for every
//! connection) and the connection's challenge counter make every challenge of every
//! connection different. One 32-byte key per endpoint: no connection keeps a secret of its
//! own for this.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::wire::{ConnectionId, PATH_DATA_LEN};

/// An endpoint's key for its connections' PATH_CHALLENGE data.
#[derive(Clone)]
pub(crate) struct PathKey([u8; 32]);

impl std::fmt::Debug for PathKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PathKey(..)")
    }
}

impl PathKey {
    /// The key derived from an endpoint's random `secret`.
    pub(crate) fn derive(secret: &[u8; 32]) -> Self {
        let mut h = Sha256::new();
        h.update(b"thinwire path challenge key");
        h.update(secret);
        PathKey(h.finalize().into())
    }

    /// The data of the `n`th challenge of the connection with our id `cid` and handshake
    /// identity `(instance, nonce)`.
    pub(crate) fn challenge(
        &self,
        cid: ConnectionId,
        (instance, nonce): (u64, u64),
        n: u64,
    ) -> [u8; PATH_DATA_LEN] {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("any key length works");
        m.update(b"thinwire path challenge");
        m.update(&[cid.len() as u8]);
        m.update(cid.as_bytes());
        m.update(&instance.to_be_bytes());
        m.update(&nonce.to_be_bytes());
        m.update(&n.to_be_bytes());
        let mut data = [0u8; PATH_DATA_LEN];
        data.copy_from_slice(&m.finalize().into_bytes()[..PATH_DATA_LEN]);
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A challenge depends on the endpoint's secret (so no one without it, the connection's
    /// peer included, can compute it), on the connection and on the counter; the same inputs
    /// give the same data.
    #[test]
    fn challenges_differ_by_secret_connection_and_counter() {
        let cid = |b: u8| ConnectionId::new(&[b; 8]).expect("valid");
        let (a, b) = (PathKey::derive(&[1; 32]), PathKey::derive(&[2; 32]));
        let id = (7, 9);
        let base = a.challenge(cid(1), id, 1);
        assert_eq!(base, a.challenge(cid(1), id, 1));
        assert_ne!(
            base,
            b.challenge(cid(1), id, 1),
            "another endpoint's secret"
        );
        assert_ne!(base, a.challenge(cid(2), id, 1), "another connection id");
        assert_ne!(base, a.challenge(cid(1), (7, 10), 1), "another handshake");
        assert_ne!(base, a.challenge(cid(1), id, 2), "the next challenge");
    }
}
