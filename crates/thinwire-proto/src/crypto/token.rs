//! Connect tokens: the matchmaking backend's permission for one client to join one game server.
//!
//! The backend and the game server share a 32-byte secret, the [`TokenKey`]. When the backend
//! matches a player it mints a [`ConnectToken`] and hands its bytes ([`ConnectToken::encode`]) to
//! the client over HTTPS. The client reads the public fields ([`ConnectToken::decode`]): the
//! server's static public key, which it uses to authenticate the server, the server's addresses and
//! the expiry. It cannot read the sealed [`TokenClaims`]. In its (already encrypted) handshake the
//! client sends the token's private part ([`ConnectToken::private_part`]); the server opens it with
//! the shared key and refuses the client, before allocating anything for it, if the seal fails,
//! the token has expired, or the token was minted for another server.
//!
//! The seal is XChaCha20-Poly1305 under the shared key with a random 24-byte nonce chosen by the
//! minter. Its associated data covers the server's static public key and every public byte of the
//! private part before the nonce, so neither the expiry nor the address list can be changed, and a
//! token minted for one server is refused by another (different key: [`TokenError::BadSeal`];
//! different addresses: [`TokenError::NotForThisServer`]).
//!
//! Tokens are bearer credentials until they expire: whoever holds one can use it. Keep lifetimes
//! short (tens of seconds).
//!
//! # Wire layout
//!
//! All integers are big-endian. Lengths are checked against their bounds before anything is
//! allocated, and no trailing bytes are allowed anywhere.
//!
//! ## Token (backend → client)
//!
//! | Offset | Size          | Field         | Notes                                               |
//! |--------|---------------|---------------|-----------------------------------------------------|
//! | 0      | 4             | `magic`       | ASCII `TWT1`                                        |
//! | 4      | 32            | `server_key`  | the server's static public key                      |
//! | 36     | 2             | `private_len` | u16, 68..=469, exactly the bytes that follow        |
//! | 38     | `private_len` | `private`     | the private part, below                             |
//!
//! A whole token is 106..=507 bytes ([`MAX_TOKEN_LEN`]).
//!
//! ## Private part (client → server, inside the handshake)
//!
//! | Offset | Size          | Field            | Notes                                            |
//! |--------|---------------|------------------|--------------------------------------------------|
//! | 0      | 8             | `expires_unix_s` | u64, unix seconds; expired when `now >= expires_unix_s` |
//! | 8      | 1             | `addr_count`     | u8, 1..=8                                        |
//! | 9      | 7 or 19 each  | `addresses`      | `addr_count` times: `family` u8 (4 or 6), `ip` (4 or 16 bytes), `port` u16 |
//! | P      | 24            | `nonce`          | XChaCha20-Poly1305 nonce, random per token       |
//! | P + 24 | 2             | `sealed_len`     | u16, 26..=282, exactly the bytes that follow     |
//! | P + 26 | `sealed_len`  | `sealed`         | ciphertext of the claims, then the 16-byte Poly1305 tag |
//!
//! `P` is the length of the public header: `9 + 7 × (IPv4 addresses) + 19 × (IPv6 addresses)`.
//! A private part is 68..=469 bytes ([`MAX_PRIVATE_PART_LEN`]). IPv6 flow labels and scope ids are
//! not carried (they read back as 0).
//!
//! ## Sealed claims
//!
//! `sealed = XChaCha20-Poly1305(key, nonce, plaintext, associated data)` with
//!
//! | Offset | Size            | Field           | Notes          |
//! |--------|-----------------|-----------------|----------------|
//! | 0      | 8               | `client_id`     | u64            |
//! | 8      | 2               | `user_data_len` | u16, 0..=256   |
//! | 10     | `user_data_len` | `user_data`     | opaque to thinwire |
//!
//! and associated data = ASCII `thinwire token v1` (17 bytes, no terminator) ‖ `server_key`
//! (32 bytes) ‖ bytes `0..P` of the private part (expiry, address count and addresses).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{Key, Tag, XChaCha20Poly1305, XNonce};
use thiserror::Error;

/// Largest `user_data` a token can carry, in bytes.
pub const MAX_USER_DATA: usize = 256;

/// Most server addresses a token can list.
pub const MAX_TOKEN_ADDRESSES: usize = 8;

/// Largest private part ([`ConnectToken::private_part`]), in bytes: 8 server addresses, all IPv6,
/// and [`MAX_USER_DATA`] bytes of user data.
pub(crate) const MAX_PRIVATE_PART_LEN: usize = MAX_PUBLIC_LEN + NONCE_LEN + 2 + MAX_SEALED_LEN;

/// Largest encoded token ([`ConnectToken::encode`]), in bytes.
pub(crate) const MAX_TOKEN_LEN: usize = TOKEN_HEADER_LEN + MAX_PRIVATE_PART_LEN;

const MAGIC: [u8; 4] = *b"TWT1";
const AAD_LABEL: &[u8] = b"thinwire token v1";
const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
/// `client_id` and `user_data_len`.
const CLAIMS_HEADER_LEN: usize = 8 + 2;
const MAX_PLAINTEXT_LEN: usize = CLAIMS_HEADER_LEN + MAX_USER_DATA;
const MIN_SEALED_LEN: usize = CLAIMS_HEADER_LEN + TAG_LEN;
const MAX_SEALED_LEN: usize = MAX_PLAINTEXT_LEN + TAG_LEN;
const V4_ADDR_LEN: usize = 1 + 4 + 2;
const V6_ADDR_LEN: usize = 1 + 16 + 2;
/// Expiry, address count and addresses: the bytes before the nonce.
const MAX_PUBLIC_LEN: usize = 8 + 1 + MAX_TOKEN_ADDRESSES * V6_ADDR_LEN;
const MIN_PRIVATE_PART_LEN: usize = 8 + 1 + V4_ADDR_LEN + NONCE_LEN + 2 + MIN_SEALED_LEN;
/// `magic`, `server_key`, `private_len`.
const TOKEN_HEADER_LEN: usize = MAGIC.len() + KEY_LEN + 2;
const MAX_AAD_LEN: usize = AAD_LABEL.len() + KEY_LEN + MAX_PUBLIC_LEN;

// The documented bounds, and every length fits its u16 field.
const _: () = assert!(MIN_PRIVATE_PART_LEN == 68);
const _: () = assert!(MAX_PRIVATE_PART_LEN == 469);
const _: () = assert!(MAX_TOKEN_LEN == 507);
const _: () = assert!(MIN_SEALED_LEN == 26 && MAX_SEALED_LEN == 282);
const _: () = assert!(MAX_TOKEN_LEN <= u16::MAX as usize);
const _: () = assert!(MAX_TOKEN_ADDRESSES <= u8::MAX as usize);

/// The 32-byte secret shared by the matchmaking backend and the game server.
///
/// Its `Debug` output never shows the key.
#[derive(Clone)]
pub struct TokenKey([u8; KEY_LEN]);

impl TokenKey {
    /// Wraps 32 secret bytes (draw them from a cryptographic RNG, once, and give them to the
    /// backend and the servers).
    pub fn new(bytes: [u8; KEY_LEN]) -> Self {
        Self(bytes)
    }

    /// The secret bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

/// What the backend says about the client, sealed in the token and delivered to the server
/// application once the token is opened. The client cannot read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenClaims {
    /// The backend's id for the client (an account or session id).
    pub client_id: u64,
    /// Opaque data for the server application, at most [`MAX_USER_DATA`] bytes.
    pub user_data: Vec<u8>,
}

/// A connect token as the backend hands it to the client.
///
/// The backend makes one with [`ConnectToken::mint`] and sends [`ConnectToken::encode`]; the
/// client reads it back with [`ConnectToken::decode`], connects to one of
/// [`ConnectToken::addresses`], authenticates the server with [`ConnectToken::server_key`] and
/// sends [`ConnectToken::private_part`] in its handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectToken {
    server_key: [u8; KEY_LEN],
    private: Vec<u8>,
    addresses: Vec<SocketAddr>,
    expires_unix_s: u64,
}

impl ConnectToken {
    /// Mints a token for `claims`, valid at the server whose static public key is `server_key`
    /// and reachable at `addresses` (1 to [`MAX_TOKEN_ADDRESSES`]), until unix time
    /// `expires_unix_s` (exclusive).
    ///
    /// `nonce` must be 24 fresh random bytes from a cryptographic RNG; never reuse one with the
    /// same key. IPv6 flow labels and scope ids are dropped (the wire does not carry them).
    ///
    /// # Errors
    /// [`TokenError::TooLarge`] if `user_data` exceeds [`MAX_USER_DATA`] bytes;
    /// [`TokenError::BadAddressCount`] if `addresses` is empty or longer than
    /// [`MAX_TOKEN_ADDRESSES`].
    pub fn mint(
        key: &TokenKey,
        claims: &TokenClaims,
        server_key: [u8; KEY_LEN],
        addresses: &[SocketAddr],
        expires_unix_s: u64,
        nonce: [u8; NONCE_LEN],
    ) -> Result<Self, TokenError> {
        if claims.user_data.len() > MAX_USER_DATA {
            return Err(TokenError::TooLarge);
        }
        if addresses.is_empty() || addresses.len() > MAX_TOKEN_ADDRESSES {
            return Err(TokenError::BadAddressCount);
        }
        let addresses: Vec<SocketAddr> = addresses.iter().copied().map(normalize).collect();

        let mut private = Vec::with_capacity(MAX_PRIVATE_PART_LEN);
        private.extend_from_slice(&expires_unix_s.to_be_bytes());
        private.push(u8::try_from(addresses.len()).expect("checked: at most MAX_TOKEN_ADDRESSES"));
        for addr in &addresses {
            put_addr(&mut private, addr);
        }
        let aad = Aad::new(&server_key, &private)?;

        let mut sealed = Vec::with_capacity(MAX_SEALED_LEN);
        sealed.extend_from_slice(&claims.client_id.to_be_bytes());
        let user_data_len =
            u16::try_from(claims.user_data.len()).expect("checked: at most MAX_USER_DATA");
        sealed.extend_from_slice(&user_data_len.to_be_bytes());
        sealed.extend_from_slice(&claims.user_data);
        let tag = cipher(key)
            .encrypt_in_place_detached(&XNonce::from(nonce), aad.as_slice(), &mut sealed)
            .expect("checked: the plaintext is at most MAX_PLAINTEXT_LEN bytes, far below the AEAD limit");
        sealed.extend_from_slice(&tag);

        private.extend_from_slice(&nonce);
        let sealed_len = u16::try_from(sealed.len()).expect("checked: at most MAX_SEALED_LEN");
        private.extend_from_slice(&sealed_len.to_be_bytes());
        private.extend_from_slice(&sealed);

        Ok(Self {
            server_key,
            private,
            addresses,
            expires_unix_s,
        })
    }

    /// The token's bytes, as the backend sends them to the client (106 to 507 bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(TOKEN_HEADER_LEN + self.private.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.server_key);
        let private_len = u16::try_from(self.private.len())
            .expect("checked by mint and decode: at most MAX_PRIVATE_PART_LEN");
        out.extend_from_slice(&private_len.to_be_bytes());
        out.extend_from_slice(&self.private);
        out
    }

    /// Reads a token's bytes (client side). Safe on hostile input: every length is checked
    /// before anything is allocated, and the private part's layout is checked (its seal cannot
    /// be, without the key).
    ///
    /// # Errors
    /// [`TokenError::TooLarge`] if the input or a length field exceeds its bound;
    /// [`TokenError::BadAddressCount`] if the address count is not 1..=8;
    /// [`TokenError::Malformed`] otherwise (wrong magic, truncated, trailing bytes, unknown
    /// address family).
    pub fn decode(bytes: &[u8]) -> Result<Self, TokenError> {
        if bytes.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLarge);
        }
        let mut r = Reader::new(bytes);
        if *r.chunk::<4>()? != MAGIC {
            return Err(TokenError::Malformed);
        }
        let server_key = *r.chunk::<KEY_LEN>()?;
        let private_len = usize::from(r.u16()?);
        if private_len > MAX_PRIVATE_PART_LEN {
            return Err(TokenError::TooLarge);
        }
        let private = r.rest();
        if private.len() != private_len {
            return Err(TokenError::Malformed);
        }
        let view = PrivateView::parse(private)?;
        Ok(Self {
            server_key,
            private: private.to_vec(),
            addresses: view.addresses().to_vec(),
            expires_unix_s: view.expires_unix_s,
        })
    }

    /// The server's static public key: the client must check that the server it reaches proves
    /// this key in the handshake.
    pub fn server_key(&self) -> [u8; KEY_LEN] {
        self.server_key
    }

    /// The server's addresses, in the backend's order of preference (1 to
    /// [`MAX_TOKEN_ADDRESSES`]).
    pub fn addresses(&self) -> &[SocketAddr] {
        &self.addresses
    }

    /// Unix time (seconds) from which the server refuses the token.
    pub fn expires_unix_s(&self) -> u64 {
        self.expires_unix_s
    }

    /// The private part, which the client sends in its handshake (68 to 469 bytes).
    pub fn private_part(&self) -> &[u8] {
        &self.private
    }
}

/// Why a connect token was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TokenError {
    /// The bytes do not follow the token layout: wrong magic, truncated, trailing bytes, an
    /// unknown address family, or inconsistent lengths.
    #[error("malformed connect token")]
    Malformed,
    /// A length exceeds its bound: the token, the private part, or the user data (at most
    /// [`MAX_USER_DATA`] bytes).
    #[error("connect token or user data too large")]
    TooLarge,
    /// A token lists 1 to [`MAX_TOKEN_ADDRESSES`] server addresses.
    #[error("connect token must list 1 to 8 server addresses")]
    BadAddressCount,
    /// The token has expired (`now_unix_s >= expires_unix_s`).
    #[error("connect token expired")]
    Expired,
    /// None of the token's addresses is one of this server's public addresses.
    #[error("connect token is for another server")]
    NotForThisServer,
    /// The seal does not open: the token was forged or altered, minted with another key, or
    /// minted for another server's static key.
    #[error("connect token seal does not open")]
    BadSeal,
}

/// What the server learns from a valid private part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenedToken {
    /// The backend's claims about the client.
    pub(crate) claims: TokenClaims,
    /// Unix time (seconds) from which the token is refused.
    pub(crate) expires_unix_s: u64,
    /// The server addresses the token was minted for.
    pub(crate) addresses: Vec<SocketAddr>,
}

/// Checks and opens a private part (server side). Nothing is allocated unless the token is valid.
///
/// `server_key` is the server's own static public key (the token must have been minted for it),
/// `now_unix_s` the current unix time, and `public_addresses` the server's own public addresses
/// if configured: when non-empty, one of the token's addresses must equal one of them (IP and
/// port; an IPv4-mapped IPv6 address equals its IPv4 address), else [`TokenError::NotForThisServer`].
///
/// The seal is checked before the expiry and the addresses, so [`TokenError::Expired`] and
/// [`TokenError::NotForThisServer`] speak of genuine tokens only.
pub(crate) fn open(
    key: &TokenKey,
    private: &[u8],
    server_key: &[u8; KEY_LEN],
    now_unix_s: u64,
    public_addresses: &[SocketAddr],
) -> Result<OpenedToken, TokenError> {
    let view = PrivateView::parse(private)?;
    let aad = Aad::new(server_key, view.public)?;
    let (ciphertext, tag) = view
        .sealed
        .split_last_chunk::<TAG_LEN>()
        .ok_or(TokenError::Malformed)?;
    let mut buf = [0u8; MAX_PLAINTEXT_LEN];
    let plaintext = buf
        .get_mut(..ciphertext.len())
        .ok_or(TokenError::TooLarge)?;
    plaintext.copy_from_slice(ciphertext);
    cipher(key)
        .decrypt_in_place_detached(
            &XNonce::from(*view.nonce),
            aad.as_slice(),
            plaintext,
            &Tag::from(*tag),
        )
        .map_err(|_| TokenError::BadSeal)?;

    let mut r = Reader::new(plaintext);
    let client_id = r.u64()?;
    let user_data_len = usize::from(r.u16()?);
    let user_data = r.rest();
    if user_data_len > MAX_USER_DATA || user_data.len() != user_data_len {
        return Err(TokenError::Malformed);
    }
    if now_unix_s >= view.expires_unix_s {
        return Err(TokenError::Expired);
    }
    let addresses = view.addresses();
    if !public_addresses.is_empty()
        && !addresses
            .iter()
            .any(|a| public_addresses.iter().any(|p| same_endpoint(a, p)))
    {
        return Err(TokenError::NotForThisServer);
    }
    Ok(OpenedToken {
        claims: TokenClaims {
            client_id,
            user_data: user_data.to_vec(),
        },
        expires_unix_s: view.expires_unix_s,
        addresses: addresses.to_vec(),
    })
}

fn cipher(key: &TokenKey) -> XChaCha20Poly1305 {
    XChaCha20Poly1305::new(&Key::from(key.0))
}

/// Drops what the wire does not carry (IPv6 flow label and scope id), and writes an
/// IPv4-mapped IPv6 address as the IPv4 address it is (the form the endpoint sees peers in).
fn normalize(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(_) => addr,
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), a.port()),
            None => SocketAddr::V6(SocketAddrV6::new(*a.ip(), a.port(), 0, 0)),
        },
    }
}

/// The same IP (an IPv4-mapped IPv6 address equals its IPv4 address) and port.
fn same_endpoint(a: &SocketAddr, b: &SocketAddr) -> bool {
    a.ip().to_canonical() == b.ip().to_canonical() && a.port() == b.port()
}

fn put_addr(out: &mut Vec<u8>, addr: &SocketAddr) {
    match addr {
        SocketAddr::V4(a) => {
            out.push(4);
            out.extend_from_slice(&a.ip().octets());
        }
        SocketAddr::V6(a) => {
            out.push(6);
            out.extend_from_slice(&a.ip().octets());
        }
    }
    out.extend_from_slice(&addr.port().to_be_bytes());
}

/// The associated data, on the stack: label ‖ server key ‖ public header of the private part.
struct Aad {
    buf: [u8; MAX_AAD_LEN],
    len: usize,
}

impl Aad {
    fn new(server_key: &[u8; KEY_LEN], public: &[u8]) -> Result<Self, TokenError> {
        let mut buf = [0u8; MAX_AAD_LEN];
        let len = AAD_LABEL.len() + KEY_LEN + public.len();
        let dst = buf.get_mut(..len).ok_or(TokenError::TooLarge)?;
        let (label, rest) = dst.split_at_mut(AAD_LABEL.len());
        let (key, header) = rest.split_at_mut(KEY_LEN);
        label.copy_from_slice(AAD_LABEL);
        key.copy_from_slice(server_key);
        header.copy_from_slice(public);
        Ok(Self { buf, len })
    }

    fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A private part whose layout has been checked, borrowed from its bytes.
struct PrivateView<'a> {
    expires_unix_s: u64,
    addresses: [SocketAddr; MAX_TOKEN_ADDRESSES],
    addr_count: usize,
    /// Bytes before the nonce (authenticated as associated data).
    public: &'a [u8],
    nonce: &'a [u8; NONCE_LEN],
    /// Ciphertext and tag.
    sealed: &'a [u8],
}

impl<'a> PrivateView<'a> {
    fn parse(private: &'a [u8]) -> Result<Self, TokenError> {
        if private.len() > MAX_PRIVATE_PART_LEN {
            return Err(TokenError::TooLarge);
        }
        let mut r = Reader::new(private);
        let expires_unix_s = r.u64()?;
        let addr_count = usize::from(r.u8()?);
        if addr_count == 0 || addr_count > MAX_TOKEN_ADDRESSES {
            return Err(TokenError::BadAddressCount);
        }
        let mut addresses = [SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)); MAX_TOKEN_ADDRESSES];
        for slot in addresses.iter_mut().take(addr_count) {
            *slot = r.addr()?;
        }
        let public = private.get(..r.consumed()).ok_or(TokenError::Malformed)?;
        let nonce = r.chunk::<NONCE_LEN>()?;
        let sealed_len = usize::from(r.u16()?);
        if sealed_len > MAX_SEALED_LEN {
            return Err(TokenError::TooLarge);
        }
        let sealed = r.rest();
        if sealed_len < MIN_SEALED_LEN || sealed.len() != sealed_len {
            return Err(TokenError::Malformed);
        }
        Ok(Self {
            expires_unix_s,
            addresses,
            addr_count,
            public,
            nonce,
            sealed,
        })
    }

    fn addresses(&self) -> &[SocketAddr] {
        &self.addresses[..self.addr_count]
    }
}

/// A bounds-checked cursor: running out of bytes is [`TokenError::Malformed`], never a panic.
struct Reader<'a> {
    rest: &'a [u8],
    consumed: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            consumed: 0,
        }
    }

    fn consumed(&self) -> usize {
        self.consumed
    }

    fn chunk<const N: usize>(&mut self) -> Result<&'a [u8; N], TokenError> {
        let (head, tail) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or(TokenError::Malformed)?;
        self.rest = tail;
        self.consumed += N;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, TokenError> {
        Ok(self.chunk::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, TokenError> {
        Ok(u16::from_be_bytes(*self.chunk()?))
    }

    fn u64(&mut self) -> Result<u64, TokenError> {
        Ok(u64::from_be_bytes(*self.chunk()?))
    }

    fn addr(&mut self) -> Result<SocketAddr, TokenError> {
        let ip = match self.u8()? {
            4 => Ipv4Addr::from(*self.chunk::<4>()?).into(),
            6 => Ipv6Addr::from(*self.chunk::<16>()?).into(),
            _ => return Err(TokenError::Malformed),
        };
        Ok(SocketAddr::new(ip, self.u16()?))
    }

    /// Everything not yet read.
    fn rest(&mut self) -> &'a [u8] {
        let rest = self.rest;
        self.consumed += rest.len();
        self.rest = &[];
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{SocketAddrV4, SocketAddrV6};

    const KEY: [u8; 32] = [0x11; 32];
    const SERVER_KEY: [u8; 32] = [0x22; 32];
    const NONCE: [u8; 24] = [0x33; 24];
    const EXPIRES: u64 = 1_700_000_030;
    const NOW: u64 = 1_700_000_000;

    fn v4(a: [u8; 4], port: u16) -> SocketAddr {
        SocketAddr::from((a, port))
    }

    fn v6(a: [u16; 8], port: u16) -> SocketAddr {
        SocketAddr::from((Ipv6Addr::from(a), port))
    }

    fn server_addrs() -> Vec<SocketAddr> {
        vec![
            v4([192, 0, 2, 1], 7777),
            v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1], 7777),
        ]
    }

    fn claims() -> TokenClaims {
        TokenClaims {
            client_id: 0xdead_beef_0bad_f00d,
            user_data: b"team=red;elo=1500".to_vec(),
        }
    }

    fn token() -> ConnectToken {
        ConnectToken::mint(
            &TokenKey::new(KEY),
            &claims(),
            SERVER_KEY,
            &server_addrs(),
            EXPIRES,
            NONCE,
        )
        .expect("valid inputs")
    }

    fn open_default(private: &[u8]) -> Result<OpenedToken, TokenError> {
        open(&TokenKey::new(KEY), private, &SERVER_KEY, NOW, &[])
    }

    #[test]
    fn round_trip_mint_encode_decode_open() {
        let minted = token();
        let decoded = ConnectToken::decode(&minted.encode()).expect("decodes");
        assert_eq!(decoded, minted);
        assert_eq!(decoded.server_key(), SERVER_KEY);
        assert_eq!(decoded.addresses(), server_addrs().as_slice());
        assert_eq!(decoded.expires_unix_s(), EXPIRES);
        let opened = open(
            &TokenKey::new(KEY),
            decoded.private_part(),
            &SERVER_KEY,
            NOW,
            &server_addrs(),
        )
        .expect("opens");
        assert_eq!(
            opened,
            OpenedToken {
                claims: claims(),
                expires_unix_s: EXPIRES,
                addresses: server_addrs(),
            }
        );
    }

    #[test]
    fn claims_are_not_readable_from_the_token() {
        let encoded = token().encode();
        let needle = claims().user_data;
        assert!(!encoded.windows(needle.len()).any(|w| w == needle));
        let id = claims().client_id.to_be_bytes();
        assert!(!encoded.windows(id.len()).any(|w| w == id));
    }

    #[test]
    fn every_bit_flip_of_the_private_part_is_refused() {
        let private = token().private_part().to_vec();
        assert!(open_default(&private).is_ok());
        for byte in 0..private.len() {
            for bit in 0..8 {
                let mut flipped = private.clone();
                flipped[byte] ^= 1 << bit;
                assert!(
                    open_default(&flipped).is_err(),
                    "flip of bit {bit} in byte {byte} was accepted"
                );
            }
        }
    }

    #[test]
    fn every_bit_flip_of_the_token_is_refused() {
        let minted = token();
        let encoded = minted.encode();
        for byte in 0..encoded.len() {
            for bit in 0..8 {
                let mut flipped = encoded.clone();
                flipped[byte] ^= 1 << bit;
                let Ok(decoded) = ConnectToken::decode(&flipped) else {
                    continue;
                };
                // Only a flip that keeps the layout decodes. In the server key, it names a key
                // the real server cannot prove, and no server holding it accepts the token; in
                // the private part, no server accepts it at all.
                assert_ne!(decoded, minted);
                let at_named_server = open(
                    &TokenKey::new(KEY),
                    decoded.private_part(),
                    &decoded.server_key(),
                    NOW,
                    &[],
                );
                assert_eq!(
                    at_named_server,
                    Err(TokenError::BadSeal),
                    "byte {byte} bit {bit}"
                );
                if byte >= TOKEN_HEADER_LEN {
                    assert!(open_default(decoded.private_part()).is_err());
                }
            }
        }
    }

    #[test]
    fn wrong_key_is_refused() {
        let private = token().private_part().to_vec();
        let other = TokenKey::new([0x12; 32]);
        assert_eq!(
            open(&other, &private, &SERVER_KEY, NOW, &[]),
            Err(TokenError::BadSeal)
        );
    }

    #[test]
    fn wrong_server_key_is_refused() {
        let private = token().private_part().to_vec();
        let mut other = SERVER_KEY;
        other[31] ^= 1;
        assert_eq!(
            open(&TokenKey::new(KEY), &private, &other, NOW, &[]),
            Err(TokenError::BadSeal)
        );
    }

    #[test]
    fn expiry_is_exclusive() {
        let private = token().private_part().to_vec();
        let key = TokenKey::new(KEY);
        assert!(open(&key, &private, &SERVER_KEY, EXPIRES - 1, &[]).is_ok());
        assert_eq!(
            open(&key, &private, &SERVER_KEY, EXPIRES, &[]),
            Err(TokenError::Expired)
        );
        assert_eq!(
            open(&key, &private, &SERVER_KEY, u64::MAX, &[]),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn forged_expiry_is_a_bad_seal_not_a_fresh_token() {
        let mut private = token().private_part().to_vec();
        private[..8].copy_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(
            open(&TokenKey::new(KEY), &private, &SERVER_KEY, EXPIRES, &[]),
            Err(TokenError::BadSeal)
        );
    }

    #[test]
    fn address_check_with_and_without_public_addresses() {
        let private = token().private_part().to_vec();
        let key = TokenKey::new(KEY);
        let check = |public: &[SocketAddr]| open(&key, &private, &SERVER_KEY, NOW, public);
        // Not configured: any server holding the key and the server key accepts.
        assert!(check(&[]).is_ok());
        // Configured: one match is enough, in either family.
        assert!(check(&[v4([192, 0, 2, 1], 7777)]).is_ok());
        assert!(check(&[v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1], 7777)]).is_ok());
        assert!(check(&[v4([198, 51, 100, 9], 1), v4([192, 0, 2, 1], 7777)]).is_ok());
        // The scope id is not part of the comparison.
        let scoped = SocketAddr::V6(SocketAddrV6::new(
            Ipv6Addr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]),
            7777,
            5,
            3,
        ));
        assert!(check(&[scoped]).is_ok());
        // The IPv4-mapped form of a listed IPv4 address is that address.
        assert!(check(&[v6([0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201], 7777)]).is_ok());
        // Other IP or other port: another server.
        for other in [v4([192, 0, 2, 2], 7777), v4([192, 0, 2, 1], 7778)] {
            assert_eq!(check(&[other]), Err(TokenError::NotForThisServer));
        }
    }

    #[test]
    fn forged_address_list_is_a_bad_seal() {
        let mut private = token().private_part().to_vec();
        // First address: family at 9, IPv4 at 10..14; point it at another host.
        private[13] = 99;
        assert_eq!(
            open(
                &TokenKey::new(KEY),
                &private,
                &SERVER_KEY,
                NOW,
                &[v4([192, 0, 2, 99], 7777)]
            ),
            Err(TokenError::BadSeal)
        );
    }

    #[test]
    fn ipv4_only_and_ipv6_only_tokens() {
        let key = TokenKey::new(KEY);
        let v4_only = [v4([203, 0, 113, 5], 1)];
        let v6_only = [v6([0xfe80, 0, 0, 0, 1, 2, 3, 4], 65535)];
        for addrs in [&v4_only[..], &v6_only[..]] {
            let t = ConnectToken::mint(&key, &claims(), SERVER_KEY, addrs, EXPIRES, NONCE)
                .expect("mints");
            let expected_len = 8 + 1 + if addrs[0].is_ipv4() { 7 } else { 19 };
            assert_eq!(
                t.private_part().len(),
                expected_len + 24 + 2 + 10 + claims().user_data.len() + 16
            );
            let d = ConnectToken::decode(&t.encode()).expect("decodes");
            assert_eq!(d.addresses(), addrs);
            let opened = open(&key, d.private_part(), &SERVER_KEY, NOW, addrs).expect("opens");
            assert_eq!(opened.addresses, addrs);
        }
    }

    #[test]
    fn ipv6_flow_label_and_scope_id_are_dropped() {
        let ip = Ipv6Addr::from([0xfe80, 0, 0, 0, 0, 0, 0, 1]);
        let scoped = SocketAddr::V6(SocketAddrV6::new(ip, 9, 77, 4));
        let t = ConnectToken::mint(
            &TokenKey::new(KEY),
            &claims(),
            SERVER_KEY,
            &[scoped],
            EXPIRES,
            NONCE,
        )
        .expect("mints");
        let plain = SocketAddr::V6(SocketAddrV6::new(ip, 9, 0, 0));
        assert_eq!(t.addresses(), [plain]);
        assert_eq!(ConnectToken::decode(&t.encode()), Ok(t));
    }

    #[test]
    fn truncation_at_every_length_is_an_error() {
        let t = token();
        let encoded = t.encode();
        for len in 0..encoded.len() {
            assert!(ConnectToken::decode(&encoded[..len]).is_err(), "len {len}");
        }
        let private = t.private_part();
        for len in 0..private.len() {
            assert!(open_default(&private[..len]).is_err(), "len {len}");
        }
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let t = token();
        let mut encoded = t.encode();
        encoded.push(0);
        assert_eq!(ConnectToken::decode(&encoded), Err(TokenError::Malformed));
        let mut private = t.private_part().to_vec();
        private.push(0);
        assert_eq!(open_default(&private), Err(TokenError::Malformed));
    }

    #[test]
    fn golden_layout() {
        let key = TokenKey::new(core::array::from_fn(|i| i as u8));
        let server_key: [u8; 32] = core::array::from_fn(|i| 0xa0 + i as u8);
        let nonce: [u8; 24] = core::array::from_fn(|i| 0x40 + i as u8);
        let claims = TokenClaims {
            client_id: 0x0102_0304_0506_0708,
            user_data: b"hi".to_vec(),
        };
        let addrs = [
            v4([192, 0, 2, 1], 0x1e61),
            v6([0x2001, 0x0db8, 0, 0, 0, 0, 0, 1], 443),
        ];
        let t = ConnectToken::mint(&key, &claims, server_key, &addrs, 0x6553_f100, nonce)
            .expect("mints");
        let enc = t.encode();

        let private_len = 8 + 1 + 7 + 19 + 24 + 2 + (10 + 2 + 16);
        assert_eq!(private_len, 89);
        assert_eq!(enc.len(), 4 + 32 + 2 + private_len);
        let mut expected: Vec<u8> = Vec::new();
        expected.extend_from_slice(b"TWT1");
        expected.extend_from_slice(&server_key);
        expected.extend_from_slice(&[0x00, 89]);
        // private part: expiry, count, addresses
        expected.extend_from_slice(&[0, 0, 0, 0, 0x65, 0x53, 0xf1, 0x00]);
        expected.push(2);
        expected.extend_from_slice(&[4, 192, 0, 2, 1, 0x1e, 0x61]);
        expected.extend_from_slice(&[6, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0]);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0x01, 0xbb]);
        expected.extend_from_slice(&nonce);
        expected.extend_from_slice(&[0x00, 28]);
        assert_eq!(&enc[..expected.len()], expected.as_slice());
        assert_eq!(&enc[38..], t.private_part());

        // The sealed claims, checked against an independent XChaCha20-Poly1305 implementation
        // (HChaCha20 + IETF ChaCha20-Poly1305) over the documented plaintext and associated data.
        let sealed = &enc[expected.len()..];
        assert_eq!(hex(sealed), GOLDEN_SEALED);

        let opened = open(&key, t.private_part(), &server_key, 0, &addrs).expect("opens");
        assert_eq!(opened.claims, claims);
    }

    /// `sealed` of the golden token, from an independent implementation.
    const GOLDEN_SEALED: &str = "d53b0674d5e67e1e8ff6efd74c26ada912014899b855984c04e75822";

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn largest_token_has_the_documented_size() {
        let addrs: Vec<SocketAddr> = (0..MAX_TOKEN_ADDRESSES as u16)
            .map(|i| v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, i], i))
            .collect();
        let claims = TokenClaims {
            client_id: u64::MAX,
            user_data: vec![0xab; MAX_USER_DATA],
        };
        let key = TokenKey::new(KEY);
        let t =
            ConnectToken::mint(&key, &claims, SERVER_KEY, &addrs, u64::MAX, NONCE).expect("mints");
        assert_eq!(t.private_part().len(), MAX_PRIVATE_PART_LEN);
        let enc = t.encode();
        assert_eq!(enc.len(), MAX_TOKEN_LEN);
        assert_eq!(ConnectToken::decode(&enc).as_ref(), Ok(&t));
        let opened = open(&key, t.private_part(), &SERVER_KEY, NOW, &addrs).expect("opens");
        assert_eq!(opened.claims, claims);
    }

    #[test]
    fn smallest_token_has_the_documented_size() {
        let key = TokenKey::new(KEY);
        let claims = TokenClaims {
            client_id: 0,
            user_data: Vec::new(),
        };
        let t = ConnectToken::mint(&key, &claims, SERVER_KEY, &[v4([0; 4], 0)], 1, NONCE)
            .expect("mints");
        assert_eq!(t.private_part().len(), MIN_PRIVATE_PART_LEN);
        assert_eq!(t.encode().len(), TOKEN_HEADER_LEN + MIN_PRIVATE_PART_LEN);
        let opened = open(&key, t.private_part(), &SERVER_KEY, 0, &[]).expect("opens");
        assert_eq!(opened.claims, claims);
    }

    #[test]
    fn mint_refuses_bad_inputs() {
        let key = TokenKey::new(KEY);
        let big = TokenClaims {
            client_id: 1,
            user_data: vec![0; MAX_USER_DATA + 1],
        };
        assert_eq!(
            ConnectToken::mint(&key, &big, SERVER_KEY, &server_addrs(), EXPIRES, NONCE),
            Err(TokenError::TooLarge)
        );
        assert_eq!(
            ConnectToken::mint(&key, &claims(), SERVER_KEY, &[], EXPIRES, NONCE),
            Err(TokenError::BadAddressCount)
        );
        let nine = vec![v4([192, 0, 2, 1], 1); MAX_TOKEN_ADDRESSES + 1];
        assert_eq!(
            ConnectToken::mint(&key, &claims(), SERVER_KEY, &nine, EXPIRES, NONCE),
            Err(TokenError::BadAddressCount)
        );
    }

    #[test]
    fn decode_refuses_bad_layouts() {
        let good = token().encode();

        let mut bad_magic = good.clone();
        bad_magic[3] = b'2';
        assert_eq!(ConnectToken::decode(&bad_magic), Err(TokenError::Malformed));

        // A hostile private_len is refused before anything is allocated for it.
        let mut huge_len = good.clone();
        huge_len[36..38].copy_from_slice(&u16::MAX.to_be_bytes());
        assert_eq!(ConnectToken::decode(&huge_len), Err(TokenError::TooLarge));

        assert_eq!(
            ConnectToken::decode(&vec![0; MAX_TOKEN_LEN + 1]),
            Err(TokenError::TooLarge)
        );

        // private_len one short of the bytes present.
        let mut short_len = good.clone();
        short_len[37] -= 1;
        assert_eq!(ConnectToken::decode(&short_len), Err(TokenError::Malformed));

        // Address count 0 and 9 (offset 38 + 8).
        for count in [0, MAX_TOKEN_ADDRESSES as u8 + 1] {
            let mut bad_count = good.clone();
            bad_count[46] = count;
            assert_eq!(
                ConnectToken::decode(&bad_count),
                Err(TokenError::BadAddressCount)
            );
        }

        // Unknown address family.
        let mut bad_family = good.clone();
        bad_family[47] = 5;
        assert_eq!(
            ConnectToken::decode(&bad_family),
            Err(TokenError::Malformed)
        );

        // sealed_len larger than the bound, and smaller than a tag plus the claims header.
        let sealed_len_at = 38 + 8 + 1 + 7 + 19 + 24;
        let mut huge_sealed = good.clone();
        huge_sealed[sealed_len_at..sealed_len_at + 2].copy_from_slice(&u16::MAX.to_be_bytes());
        assert_eq!(
            ConnectToken::decode(&huge_sealed),
            Err(TokenError::TooLarge)
        );
        let mut tiny_sealed = good;
        tiny_sealed[sealed_len_at..sealed_len_at + 2].copy_from_slice(&25u16.to_be_bytes());
        assert_eq!(
            ConnectToken::decode(&tiny_sealed),
            Err(TokenError::Malformed)
        );
    }

    #[test]
    fn open_refuses_oversized_private_part() {
        assert_eq!(
            open_default(&vec![0; MAX_PRIVATE_PART_LEN + 1]),
            Err(TokenError::TooLarge)
        );
    }

    /// Builds a private part around an arbitrary plaintext, sealed with the right key, to reach
    /// the checks behind the seal.
    fn seal_raw(plaintext: &[u8]) -> Vec<u8> {
        let mut private = Vec::new();
        private.extend_from_slice(&EXPIRES.to_be_bytes());
        private.push(1);
        put_addr(&mut private, &v4([192, 0, 2, 1], 7777));
        let aad = Aad::new(&SERVER_KEY, &private).expect("small");
        let mut sealed = plaintext.to_vec();
        let tag = cipher(&TokenKey::new(KEY))
            .encrypt_in_place_detached(&XNonce::from(NONCE), aad.as_slice(), &mut sealed)
            .expect("small");
        sealed.extend_from_slice(&tag);
        private.extend_from_slice(&NONCE);
        private.extend_from_slice(&(sealed.len() as u16).to_be_bytes());
        private.extend_from_slice(&sealed);
        private
    }

    #[test]
    fn sealed_but_inconsistent_claims_are_malformed() {
        let mut plain = 7u64.to_be_bytes().to_vec();
        plain.extend_from_slice(&3u16.to_be_bytes());
        plain.extend_from_slice(b"abc");
        assert_eq!(
            open_default(&seal_raw(&plain)).map(|o| o.claims.user_data),
            Ok(b"abc".to_vec())
        );
        // user_data_len disagrees with the bytes present.
        let mut wrong_len = plain.clone();
        wrong_len[9] = 4;
        assert_eq!(
            open_default(&seal_raw(&wrong_len)),
            Err(TokenError::Malformed)
        );
        // user_data_len above MAX_USER_DATA, and a plaintext too long for it.
        let mut too_long = 7u64.to_be_bytes().to_vec();
        too_long.extend_from_slice(&257u16.to_be_bytes());
        too_long.extend_from_slice(&[0; 257]);
        assert!(open_default(&seal_raw(&too_long)).is_err());
    }

    #[test]
    fn debug_does_not_print_the_key() {
        let shown = format!("{:?}", TokenKey::new([0xab; 32]));
        assert_eq!(shown, "TokenKey(..)");
        assert!(!shown.contains("171") && !shown.contains("ab"));
    }

    #[test]
    fn key_accessors() {
        let key = TokenKey::new([9; 32]);
        assert_eq!(key.as_bytes(), &[9; 32]);
        assert_eq!(key.clone().as_bytes(), &[9; 32]);
    }

    fn arb_addr() -> impl Strategy<Value = SocketAddr> {
        prop_oneof![
            (any::<[u8; 4]>(), any::<u16>())
                .prop_map(|(ip, port)| SocketAddr::V4(SocketAddrV4::new(ip.into(), port))),
            (any::<[u8; 16]>(), any::<u16>(), any::<u32>(), any::<u32>()).prop_map(
                |(ip, port, flow, scope)| SocketAddr::V6(SocketAddrV6::new(
                    ip.into(),
                    port,
                    flow,
                    scope
                ))
            ),
        ]
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = ConnectToken::decode(&bytes);
        }

        #[test]
        fn decode_never_panics_behind_a_valid_header(
            body in proptest::collection::vec(any::<u8>(), 0..500),
        ) {
            let mut bytes = b"TWT1".to_vec();
            bytes.extend_from_slice(&SERVER_KEY);
            bytes.extend_from_slice(&(body.len() as u16).to_be_bytes());
            bytes.extend_from_slice(&body);
            if let Ok(t) = ConnectToken::decode(&bytes) {
                prop_assert_eq!(t.encode(), bytes);
            }
        }

        #[test]
        fn open_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..600),
            now in any::<u64>(),
            public in proptest::collection::vec(arb_addr(), 0..3),
        ) {
            let r = open(&TokenKey::new(KEY), &bytes, &SERVER_KEY, now, &public);
            prop_assert!(r.is_err());
        }

        #[test]
        fn mutated_tokens_never_panic_and_never_open(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 1..4),
        ) {
            let mut private = token().private_part().to_vec();
            for (at, x) in edits {
                let i = at.index(private.len());
                private[i] ^= x;
            }
            prop_assert!(open_default(&private).is_err());
        }

        #[test]
        fn arbitrary_claims_and_addresses_round_trip(
            key in any::<[u8; 32]>(),
            server_key in any::<[u8; 32]>(),
            nonce in any::<[u8; 24]>(),
            client_id in any::<u64>(),
            user_data in proptest::collection::vec(any::<u8>(), 0..=MAX_USER_DATA),
            addrs in proptest::collection::vec(arb_addr(), 1..=MAX_TOKEN_ADDRESSES),
            expires in 1..=u64::MAX,
            pick in any::<prop::sample::Index>(),
        ) {
            let key = TokenKey::new(key);
            let claims = TokenClaims { client_id, user_data };
            let t = ConnectToken::mint(&key, &claims, server_key, &addrs, expires, nonce)
                .expect("valid inputs");
            let normalized: Vec<SocketAddr> = addrs.iter().copied().map(normalize).collect();
            prop_assert_eq!(t.addresses(), normalized.as_slice());
            let enc = t.encode();
            prop_assert!(enc.len() <= MAX_TOKEN_LEN);
            let d = ConnectToken::decode(&enc).expect("decodes");
            prop_assert_eq!(&d, &t);
            let mine = [addrs[pick.index(addrs.len())]];
            let opened = open(&key, d.private_part(), &server_key, expires - 1, &mine)
                .expect("opens");
            prop_assert_eq!(opened.claims, claims);
            prop_assert_eq!(opened.expires_unix_s, expires);
            prop_assert_eq!(opened.addresses, normalized);
            prop_assert_eq!(
                open(&key, d.private_part(), &server_key, expires, &[]).map(|_| ()),
                Err(TokenError::Expired)
            );
        }
    }
}
