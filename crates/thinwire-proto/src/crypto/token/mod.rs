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

use chacha20poly1305::aead::{AeadInOut, KeyInit};
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
        let body = sealed.as_mut_slice().into();
        let tag = cipher(key)
            .encrypt_inout_detached(&XNonce::from(nonce), aad.as_slice(), body)
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
        .decrypt_inout_detached(
            &XNonce::from(*view.nonce),
            aad.as_slice(),
            plaintext.into(),
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
mod tests;
