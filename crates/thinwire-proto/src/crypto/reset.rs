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
//! An id shorter than 8 bytes could be probed in full (2^32 ids of 4 bytes) to collect every
//! token, so its token is bound to the client's address as well: `|| address` follows the id
//! in the HMAC ([`encode_address`]). Probing from one's own address then yields the tokens of
//! that address only, and a probe sent from a victim's address is answered to the victim.
//! 8-byte ids keep the token without address.
//!
//! A short-header packet that does not authenticate is answered the same way whether its
//! connection id is live or unknown: a Reset of the same size. For a live id it carries a
//! *decoy* token (the same HMAC under a random per-endpoint key): as deterministic per id as
//! the real one and indistinguishable from it without the keys, so the answers reveal nothing
//! about which ids are live, and a live connection's real token is never sent to anyone.

use std::net::{IpAddr, SocketAddr};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::keys::ServerKey;
use crate::wire::{ConnectionId, MAX_CID_LEN};

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

/// The fixed encoding of a peer address in a short id's token: family `04` and the 4 bytes of
/// an IPv4 address (an IPv4-mapped IPv6 address counts as IPv4), or `06` and the 16 bytes of
/// an IPv6 one; then the port, big-endian. 7 or 19 bytes, written into `out`; returns the
/// length.
fn encode_address(addr: &SocketAddr, out: &mut [u8; 19]) -> usize {
    let ip_len = match addr.ip().to_canonical() {
        IpAddr::V4(ip) => {
            out[0] = 4;
            out[1..5].copy_from_slice(&ip.octets());
            4
        }
        IpAddr::V6(ip) => {
            out[0] = 6;
            out[1..17].copy_from_slice(&ip.octets());
            16
        }
    };
    out[1 + ip_len..3 + ip_len].copy_from_slice(&addr.port().to_be_bytes());
    3 + ip_len
}

/// The token of `cid` under `key`; bound to `peer` for an id shorter than 8 bytes.
fn derive(key: &[u8; 32], cid: &ConnectionId, peer: &SocketAddr) -> [u8; RESET_TOKEN_LEN] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length works");
    m.update(b"thinwire reset");
    m.update(&[cid.len() as u8]);
    m.update(cid.as_bytes());
    if cid.len() < MAX_CID_LEN {
        let mut addr = [0u8; 19];
        let len = encode_address(peer, &mut addr);
        m.update(&addr[..len]);
    }
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

    /// The token of a connection id this endpoint issued, for the client at `peer` (the
    /// address only counts for an id shorter than 8 bytes).
    pub(crate) fn token(&self, cid: &ConnectionId, peer: &SocketAddr) -> [u8; RESET_TOKEN_LEN] {
        derive(&self.real, cid, peer)
    }

    /// The decoy for a live connection id, answered to `peer` (bound to it like a token).
    pub(crate) fn decoy(&self, cid: &ConnectionId, peer: &SocketAddr) -> [u8; RESET_TOKEN_LEN] {
        derive(&self.decoy, cid, peer)
    }
}

/// Constant-time comparison of two tokens.
pub(crate) fn tokens_equal(a: &[u8; RESET_TOKEN_LEN], b: &[u8; RESET_TOKEN_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("address")
    }

    #[test]
    fn tokens_survive_a_restart_and_decoys_differ() {
        let key = ServerKey::generate([1; 32]);
        let cid = ConnectionId::new(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let a = addr("198.51.100.7:5000");
        let before = ResetKeys::new(Some(&key), [2; 32]);
        let after = ResetKeys::new(Some(&key), [3; 32]);
        assert_eq!(
            before.token(&cid, &a),
            after.token(&cid, &a),
            "same key, same token"
        );
        assert_ne!(before.decoy(&cid, &a), before.token(&cid, &a));
        assert_eq!(
            before.decoy(&cid, &a),
            before.decoy(&cid, &a),
            "decoys are per id, not per reply"
        );
        let other = ResetKeys::new(Some(&ServerKey::generate([4; 32])), [2; 32]);
        assert_ne!(other.token(&cid, &a), before.token(&cid, &a));
        let cid2 = ConnectionId::new(&[1, 2, 3, 4, 5, 6, 7, 9]).unwrap();
        assert_ne!(before.token(&cid, &a), before.token(&cid2, &a));
        assert!(tokens_equal(
            &before.token(&cid, &a),
            &after.token(&cid, &a)
        ));
        assert!(!tokens_equal(
            &before.token(&cid, &a),
            &before.decoy(&cid, &a)
        ));
    }

    /// An 8-byte id's token (and decoy) is the same from every address, and the one of
    /// PROTOCOL.md 2.7 without address; a shorter id's differs by address (IP or port), and
    /// an IPv4-mapped IPv6 address counts as the IPv4 one.
    #[test]
    fn short_id_tokens_are_bound_to_the_address() {
        let keys = ResetKeys::new(Some(&ServerKey::generate([1; 32])), [2; 32]);
        let a = addr("198.51.100.7:5000");
        let others = [
            addr("198.51.100.8:5000"),
            addr("198.51.100.7:5001"),
            addr("[2001:db8::7]:5000"),
        ];
        let long = ConnectionId::new(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        for b in others {
            assert_eq!(keys.token(&long, &a), keys.token(&long, &b));
            assert_eq!(keys.decoy(&long, &a), keys.decoy(&long, &b));
        }
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&keys.real).unwrap();
        m.update(b"thinwire reset\x08\x01\x02\x03\x04\x05\x06\x07\x08");
        assert_eq!(keys.token(&long, &a)[..], m.finalize().into_bytes()[..16]);
        for len in 1..MAX_CID_LEN {
            let short = ConnectionId::new(&[9; 8][..len]).unwrap();
            for b in others {
                assert_ne!(keys.token(&short, &a), keys.token(&short, &b), "{b}");
                assert_ne!(keys.decoy(&short, &a), keys.decoy(&short, &b), "{b}");
            }
            let mapped = addr("[::ffff:198.51.100.7]:5000");
            assert_eq!(keys.token(&short, &a), keys.token(&short, &mapped));
        }
        // the encoding: family, address, port
        let short = ConnectionId::new(&[0xab, 0xcd, 0xef, 0x01]).unwrap();
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&keys.real).unwrap();
        m.update(b"thinwire reset\x04\xab\xcd\xef\x01\x04\xc6\x33\x64\x07\x13\x88");
        assert_eq!(keys.token(&short, &a)[..], m.finalize().into_bytes()[..16]);
        let v6 = addr("[2001:db8::7]:443");
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&keys.real).unwrap();
        m.update(b"thinwire reset\x04\xab\xcd\xef\x01\x06");
        m.update(
            &"2001:db8::7"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        m.update(&443u16.to_be_bytes());
        assert_eq!(keys.token(&short, &v6)[..], m.finalize().into_bytes()[..16]);
    }
}
