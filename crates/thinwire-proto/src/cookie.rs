//! Stateless handshake cookies: `issued_at (8 bytes) || HMAC-SHA256(key, fields)[..16]`.
//!
//! The MAC binds the cookie to the client's address, connection id, instance and nonce, so it
//! cannot be replayed from another address or for another handshake, and the timestamp bounds its
//! lifetime. The server keeps no state between its Challenge and the client's Connect.

use std::net::SocketAddr;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::wire::ConnectionId;

/// Cookie length on the wire.
pub(crate) const COOKIE_LEN: usize = 24;

/// The fields a cookie is bound to.
pub(crate) struct CookieInput<'a> {
    pub(crate) addr: SocketAddr,
    pub(crate) cid: &'a ConnectionId,
    pub(crate) instance: u64,
    pub(crate) nonce: u64,
}

fn mac(key: &[u8; 32], input: &CookieInput<'_>, issued_ms: u64) -> [u8; 16] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length works");
    match input.addr {
        SocketAddr::V4(a) => {
            m.update(&[4]);
            m.update(&a.ip().octets());
        }
        SocketAddr::V6(a) => {
            m.update(&[6]);
            m.update(&a.ip().octets());
        }
    }
    m.update(&input.addr.port().to_be_bytes());
    m.update(&[input.cid.len() as u8]);
    m.update(input.cid.as_bytes());
    m.update(&input.instance.to_be_bytes());
    m.update(&input.nonce.to_be_bytes());
    m.update(&issued_ms.to_be_bytes());
    let full = m.finalize().into_bytes();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// Makes a cookie issued at `issued_ms` (milliseconds since the endpoint's epoch).
pub(crate) fn mint(key: &[u8; 32], input: &CookieInput<'_>, issued_ms: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(COOKIE_LEN);
    out.extend_from_slice(&issued_ms.to_be_bytes());
    out.extend_from_slice(&mac(key, input, issued_ms));
    out
}

/// Why a cookie was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CookieError {
    Malformed,
    BadMac,
    Expired,
}

/// Checks a cookie at `now_ms` against a lifetime.
pub(crate) fn verify(
    key: &[u8; 32],
    input: &CookieInput<'_>,
    cookie: &[u8],
    now_ms: u64,
    lifetime_ms: u64,
) -> Result<(), CookieError> {
    if cookie.len() != COOKIE_LEN {
        return Err(CookieError::Malformed);
    }
    let issued = u64::from_be_bytes(cookie[..8].try_into().expect("8 bytes"));
    let expected = mac(key, input, issued);
    // constant-time comparison
    let diff = expected
        .iter()
        .zip(&cookie[8..])
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if diff != 0 {
        return Err(CookieError::BadMac);
    }
    if issued > now_ms || now_ms - issued > lifetime_ms {
        return Err(CookieError::Expired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_bound_to_address_and_time() {
        let key = [7u8; 32];
        let cid = ConnectionId::new(&[1, 2]).unwrap();
        let a: SocketAddr = "127.0.0.1:1000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:1001".parse().unwrap();
        let inp = |addr| CookieInput {
            addr,
            cid: &cid,
            instance: 1,
            nonce: 2,
        };
        let c = mint(&key, &inp(a), 1000);
        assert_eq!(c.len(), COOKIE_LEN);
        assert_eq!(verify(&key, &inp(a), &c, 2000, 5000), Ok(()));
        assert_eq!(
            verify(&key, &inp(b), &c, 2000, 5000),
            Err(CookieError::BadMac)
        );
        assert_eq!(
            verify(&key, &inp(a), &c, 7000, 5000),
            Err(CookieError::Expired)
        );
        assert_eq!(
            verify(&[8u8; 32], &inp(a), &c, 2000, 5000),
            Err(CookieError::BadMac)
        );
        let mut forged = c.clone();
        forged[0] ^= 1; // moving the timestamp breaks the MAC
        assert_eq!(
            verify(&key, &inp(a), &forged, 2000, 5000),
            Err(CookieError::BadMac)
        );
    }
}
