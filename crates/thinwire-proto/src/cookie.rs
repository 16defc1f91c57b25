//! Stateless handshake cookies: `issued_at (8 bytes) || HMAC-SHA256(key, fields)[..16]`.
//!
//! The MAC binds the cookie to the client's address, connection id, instance and nonce, so it
//! cannot be replayed from another address or for another handshake, and the timestamp bounds its
//! lifetime. The server keeps no state between its Challenge and the client's Connect.
//!
//! A cookie pays for one Noise message-1 read ([`SpentCookies`]): once the server has read the
//! message of a Connect, a Connect with the same cookie gets no second read, whatever message
//! it carries. The filter holds only cookies that were read, so its size is bounded by the
//! endpoint's read budget times the cookie lifetime.

use std::net::SocketAddr;

use hmac::{Hmac, Mac};
use rustc_hash::FxHashMap;
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

/// The identity of a verified cookie in [`SpentCookies`]: the first 8 bytes of its MAC, which
/// the server's key makes unique per address, id, instance, nonce and issue time (two cookies
/// of a lifetime share one with a chance of about 2^-64 per pair, and nobody can aim at it).
pub(crate) fn id(cookie: &[u8]) -> u64 {
    u64::from_be_bytes(cookie[8..16].try_into().expect("8 bytes"))
}

/// What became of a cookie's Noise read: refused with a reason code, or dropped (0).
pub(crate) type Spent = u8;

/// Cookies already spent on a Noise message-1 read, each with what became of it, kept for at
/// least one cookie lifetime (after which the cookie has expired anyway) in two generations
/// of one lifetime each. Each generation holds at most `cap` cookies, where `cap` is the most
/// reads the endpoint's budget allows in one lifetime, so the filter never refuses a read the
/// budget allowed. Keys are MACs under the server's secret, which nobody can choose, so a fast
/// unkeyed hash spreads them.
#[derive(Debug)]
pub(crate) struct SpentCookies {
    current: FxHashMap<u64, Spent>,
    previous: FxHashMap<u64, Spent>,
    /// Start of the current generation, ms since the endpoint's epoch.
    since_ms: u64,
    lifetime_ms: u64,
    cap: usize,
}

impl SpentCookies {
    /// A filter for cookies living `lifetime_ms`, at most `cap` reads per lifetime.
    pub(crate) fn new(lifetime_ms: u64, cap: usize) -> Self {
        Self {
            current: FxHashMap::default(),
            previous: FxHashMap::default(),
            since_ms: 0,
            lifetime_ms: lifetime_ms.max(1),
            cap,
        }
    }

    /// What became of the cookie `id` if it was read already.
    pub(crate) fn get(&self, id: u64) -> Option<Spent> {
        self.current
            .get(&id)
            .or_else(|| self.previous.get(&id))
            .copied()
    }

    /// Marks cookie `id` as read at `now_ms`; false (read nothing) if the generation is full,
    /// which the read budget never allows.
    pub(crate) fn spend(&mut self, now_ms: u64, id: u64) -> bool {
        if now_ms >= self.since_ms + self.lifetime_ms {
            self.previous = std::mem::take(&mut self.current);
            if now_ms >= self.since_ms + 2 * self.lifetime_ms {
                self.previous.clear();
            }
            self.since_ms = now_ms;
        }
        if self.current.len() >= self.cap {
            return false;
        }
        self.current.insert(id, 0);
        true
    }

    /// Remembers the refusal of cookie `id`'s read, to repeat it without reading again.
    pub(crate) fn set_refusal(&mut self, id: u64, code: u8) {
        if let Some(s) = self.current.get_mut(&id) {
            *s = code;
        }
    }

    /// Bytes held (tests of the memory bound): every slot of both tables, with its control
    /// byte.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        let slot = std::mem::size_of::<(u64, Spent)>() + 1;
        (self.current.capacity() + self.previous.capacity()) * slot
    }
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

    #[test]
    fn a_cookie_is_read_once_and_the_filter_stays_bounded() {
        let mut f = SpentCookies::new(5000, 100);
        assert!(f.spend(0, 1));
        assert_eq!(f.get(1), Some(0));
        f.set_refusal(1, 3);
        assert_eq!(f.get(1), Some(3));
        assert!((2..101).all(|i| f.spend(10, i)));
        assert!(!f.spend(20, 999), "full: nothing more is read");
        assert_eq!(f.get(999), None);
        // one lifetime on: the old ones are still known, new ones fit
        assert!(f.spend(5000, 1000));
        assert_eq!(f.get(1), Some(3));
        // two lifetimes on: the first generation is forgotten (those cookies expired)
        assert!(f.spend(10_000, 2000));
        assert_eq!(f.get(1), None);
        assert_eq!(f.get(1000), Some(0));
        // two tables of at most 100 entries (and at most twice that many slots)
        assert!(f.held_bytes() <= 2 * (2 * 100) * 17, "{}", f.held_bytes());
    }
}
