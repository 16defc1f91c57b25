//! Stateless reset tokens: how a server that lost a connection (it restarted) tells the client
//! so, in a way nobody else can forge.
//!
//! The server gives the client the token of its connection id inside the encrypted Accept. A
//! Reset naming that id is believed only if it carries the same token. The token is
//! `HMAC-SHA256(reset_key, "thinwire reset" || cid_len || cid)[..16]` with a reset key
//! `SHA-256("thinwire stateless reset key" || static secret)` derived from the server's
//! static secret, so a restarted server (same key) can compute it without any state,
//! as in QUIC (RFC 9000 §10.3).
//!
//! A short-header packet that does not authenticate is answered the same way whether its
//! connection id is live or unknown: a Reset of the same size. For a live id it carries a
//! *decoy* token (the same HMAC under a random per-endpoint key): as deterministic per id as
//! the real one and indistinguishable from it without the keys, so the answers reveal nothing
//! about which ids are live, and a live connection's real token is never sent to anyone.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::keys::ServerKey;
use crate::wire::ConnectionId;

/// Length of a reset token.
pub(crate) const RESET_TOKEN_LEN: usize = 16;

/// The keys behind an endpoint's reset tokens.
#[derive(Clone)]
pub(crate) struct ResetKeys {
    real: [u8; 32],
    decoy: [u8; 32],
}

impl std::fmt::Debug for ResetKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResetKeys(..)")
    }
}

fn derive(key: &[u8; 32], cid: &ConnectionId) -> [u8; RESET_TOKEN_LEN] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length works");
    m.update(b"thinwire reset");
    m.update(&[cid.len() as u8]);
    m.update(cid.as_bytes());
    let full = m.finalize().into_bytes();
    let mut out = [0u8; RESET_TOKEN_LEN];
    out.copy_from_slice(&full[..RESET_TOKEN_LEN]);
    out
}

impl ResetKeys {
    /// A server's keys: the real one from its static secret (stable across restarts), the
    /// decoy one from `random`. An endpoint without a server key only needs the decoy.
    pub(crate) fn new(server: Option<&ServerKey>, random: [u8; 32]) -> Self {
        let real = match server {
            Some(k) => {
                let mut h = Sha256::new();
                h.update(b"thinwire stateless reset key");
                h.update(k.secret_bytes());
                h.finalize().into()
            }
            None => random,
        };
        Self {
            real,
            decoy: Sha256::digest(random).into(),
        }
    }

    /// The token of a connection id this endpoint issued.
    pub(crate) fn token(&self, cid: &ConnectionId) -> [u8; RESET_TOKEN_LEN] {
        derive(&self.real, cid)
    }

    /// The decoy for a live connection id.
    pub(crate) fn decoy(&self, cid: &ConnectionId) -> [u8; RESET_TOKEN_LEN] {
        derive(&self.decoy, cid)
    }
}

/// Constant-time comparison of two tokens.
pub(crate) fn tokens_equal(a: &[u8; RESET_TOKEN_LEN], b: &[u8; RESET_TOKEN_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_survive_a_restart_and_decoys_differ() {
        let key = ServerKey::generate([1; 32]);
        let cid = ConnectionId::new(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let before = ResetKeys::new(Some(&key), [2; 32]);
        let after = ResetKeys::new(Some(&key), [3; 32]);
        assert_eq!(
            before.token(&cid),
            after.token(&cid),
            "same key, same token"
        );
        assert_ne!(before.decoy(&cid), before.token(&cid));
        assert_eq!(
            before.decoy(&cid),
            before.decoy(&cid),
            "decoys are per id, not per reply"
        );
        let other = ResetKeys::new(Some(&ServerKey::generate([4; 32])), [2; 32]);
        assert_ne!(other.token(&cid), before.token(&cid));
        let cid2 = ConnectionId::new(&[1, 2, 3, 4, 5, 6, 7, 9]).unwrap();
        assert_ne!(before.token(&cid), before.token(&cid2));
        assert!(tokens_equal(&before.token(&cid), &after.token(&cid)));
        assert!(!tokens_equal(&before.token(&cid), &before.decoy(&cid)));
    }
}
