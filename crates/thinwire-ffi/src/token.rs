//! Connect tokens from C: connecting with one (a client), reading its claims (a server),
//! minting one (what a matchmaking backend or a test does), and the buffer sizes a caller
//! needs.

use std::ffi::c_char;
use std::net::SocketAddr;

use thinwire::proto::ConnectionHandle;
use thinwire::{ConnectToken, TokenClaims, TokenKey};

use crate::error::boundary;
use crate::host::{bytes, channel_kinds, host_mut, parse_address, put, thinwire_host};
use crate::types::thinwire_status;

/// The longest encoded connect token, in bytes: a buffer this large holds any token
/// (`thinwire_token_mint` writes at most 374, for an IPv6 address and the largest user data).
pub const THINWIRE_TOKEN_MAX_LEN: usize = 507;

/// The most server addresses a connect token carries (`thinwire_token_params`'s
/// `server_address_count`).
pub const THINWIRE_TOKEN_MAX_ADDRESSES: usize = 8;

/// The most user data a connect token carries, in bytes: a buffer this large holds any
/// token's user data (`thinwire_connection_token_claims`).
pub const THINWIRE_TOKEN_MAX_USER_DATA: usize = 256;

// The C constants are the Rust API's bounds.
const _: () = assert!(THINWIRE_TOKEN_MAX_USER_DATA == thinwire::proto::MAX_USER_DATA);
const _: () = assert!(THINWIRE_TOKEN_MAX_ADDRESSES == thinwire::proto::MAX_TOKEN_ADDRESSES);

/// Starts a connection with a connect token: the `token_len` bytes at `token`, as the
/// matchmaking backend handed them over (or as `thinwire_token_mint` wrote them). The
/// connection goes to the token's first server address and authenticates the server by the
/// static public key inside the token; the token's sealed claims go to the server in the
/// (encrypted) handshake. Channels and `*out_conn` are as in `thinwire_connect`, and so are
/// the events that follow; a server that refuses the token ends the connection with
/// `THINWIRE_DISCONNECT_REASON_REFUSED` and `THINWIRE_REFUSE_REASON_INVALID_TOKEN` (expired,
/// forged, minted with another key or for another server). Bytes that are not a token at all
/// give `THINWIRE_STATUS_BAD_TOKEN` (the expiry and the seal are only checked by the server).
/// The bytes are copied: the buffer is free again when the call returns.
///
/// # Safety
/// `host` is null or a live host; `token` is null or points to `token_len` readable bytes;
/// `channels` is null or points to `channel_count` values; `out_conn` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn thinwire_connect_with_token(
    host: *mut thinwire_host,
    token: *const u8,
    token_len: usize,
    channels: *const u32,
    channel_count: usize,
    out_conn: *mut u64,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let h = unsafe { host_mut(host) }?.open()?;
        if token.is_null() || out_conn.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        // SAFETY: contract of this function.
        let kinds = unsafe { channel_kinds(channels, channel_count) }?;
        // SAFETY: contract of this function.
        let raw = unsafe { bytes(token, token_len) }?;
        let token = ConnectToken::decode(raw).map_err(|_| thinwire_status::BadToken)?;
        let conn = h.connect_with_token(&token, &kinds)?;
        // SAFETY: contract of this function.
        unsafe { put(out_conn, conn.0) }
    })
}

/// On a server: what the connect token of the incoming connection `conn` said. Writes the
/// backend's client id into `*out_client_id` and copies the user data (0 to
/// `THINWIRE_TOKEN_MAX_USER_DATA` bytes) into `out_user_data`, whose capacity the caller passes
/// in `*inout_len`; `*inout_len` is set to the user data's length. A buffer of
/// `THINWIRE_TOKEN_MAX_USER_DATA` bytes always fits.
///
/// `THINWIRE_STATUS_BUFFER_TOO_SMALL` when the user data does not fit: `*inout_len` is set to
/// the length needed and nothing else is written. `THINWIRE_STATUS_NO_CLAIMS` for a
/// connection without a token (an outgoing one, or any connection of a server without
/// `has_token_key`); `THINWIRE_STATUS_UNKNOWN_CONNECTION` for an id the host does not know.
/// The claims are there from the `THINWIRE_EVENT_TYPE_CONNECTED` event on, until the
/// connection ends.
///
/// # Safety
/// `host` is null or a live host; `out_client_id` is null or writable; `inout_len` is null or
/// readable and writable; `out_user_data` is null (only with `*inout_len` 0) or points to
/// `*inout_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn thinwire_connection_token_claims(
    host: *mut thinwire_host,
    conn: u64,
    out_client_id: *mut u64,
    out_user_data: *mut u8,
    inout_len: *mut usize,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let h = unsafe { host_mut(host) }?.open()?;
        if out_client_id.is_null() || inout_len.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        // SAFETY: `inout_len` is non-null and readable.
        let capacity = unsafe { inout_len.read() };
        if capacity > 0 && out_user_data.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        let conn = ConnectionHandle(conn);
        if h.connection_stats(conn).is_none() {
            return Err(thinwire_status::UnknownConnection);
        }
        let claims = h.token_claims(conn).ok_or(thinwire_status::NoClaims)?;
        let data = &claims.user_data;
        // SAFETY: `inout_len` is non-null and writable.
        unsafe { inout_len.write(data.len()) };
        if data.len() > capacity {
            return Err(thinwire_status::BufferTooSmall);
        }
        if !data.is_empty() {
            // SAFETY: `out_user_data` is non-null (capacity > 0) and points to `capacity`
            // writable bytes, at least `data.len()`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), out_user_data, data.len()) };
        }
        // SAFETY: `out_client_id` is non-null and writable.
        unsafe { put(out_client_id, claims.client_id) }
    })
}

/// `N` bytes from a caller's pointer.
///
/// # Safety
/// `p` is null or points to `N` readable bytes.
unsafe fn array<const N: usize>(p: *const u8) -> Result<[u8; N], thinwire_status> {
    if p.is_null() {
        return Err(thinwire_status::NullPointer);
    }
    let mut out = [0u8; N];
    // SAFETY: non-null and `N` readable bytes by the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), N) };
    Ok(out)
}

/// What a connect token says: the inputs of `thinwire_token_mint`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct thinwire_token_params {
    /// The 32-byte secret shared with the servers (their `thinwire_config.token_key`).
    pub key: *const u8,
    /// The backend's id for the client, sealed in the token (the client cannot read it) and
    /// handed to the server application by `thinwire_connection_token_claims`.
    pub client_id: u64,
    /// `user_data_len` bytes of claims, sealed and handed over like `client_id`; may be null
    /// when `user_data_len` is 0.
    pub user_data: *const u8,
    /// The length of `user_data`: at most `THINWIRE_TOKEN_MAX_USER_DATA` bytes.
    pub user_data_len: usize,
    /// The server's 32-byte static public key (`thinwire_host_public_key`): the client
    /// authenticates the server by it, and only that server accepts the token.
    pub server_key: *const u8,
    /// Where the client connects, a NUL-terminated string, e.g. `"203.0.113.5:7777"` or
    /// `"[2001:db8::5]:7777"`, when `server_address_count` is 0; null when the addresses are
    /// in `server_addresses`.
    pub server_address: *const c_char,
    /// Unix time (seconds) from which the server refuses the token. Tokens are bearer
    /// credentials until then: keep lifetimes short (tens of seconds).
    pub expires_unix_s: u64,
    /// 24 fresh bytes from a cryptographic random source, never reused with the same `key`
    /// (a fixed nonce is for tests only).
    pub nonce: *const u8,
    /// The server's addresses, `server_address_count` NUL-terminated strings like
    /// `server_address`; the client connects to the first. Used instead of `server_address`
    /// when `server_address_count` is above 0; may be null when it is 0.
    pub server_addresses: *const *const c_char,
    /// The number of strings in `server_addresses`: 0 (the one `server_address`) or 1 to
    /// `THINWIRE_TOKEN_MAX_ADDRESSES`.
    pub server_address_count: usize,
}

/// The server addresses `p` names: the one `server_address`, or the `server_addresses`
/// array when `server_address_count` is above 0 (then `server_address` must be null).
///
/// # Safety
/// As for `thinwire_token_mint`'s `params`.
unsafe fn server_addresses(p: &thinwire_token_params) -> Result<Vec<SocketAddr>, thinwire_status> {
    if p.server_address_count == 0 {
        // SAFETY: null or NUL-terminated by the caller's contract.
        return Ok(vec![unsafe { parse_address(p.server_address) }?]);
    }
    if !p.server_address.is_null() || p.server_address_count > THINWIRE_TOKEN_MAX_ADDRESSES {
        return Err(thinwire_status::InvalidArgument);
    }
    if p.server_addresses.is_null() {
        return Err(thinwire_status::NullPointer);
    }
    // SAFETY: non-null and `server_address_count` readable pointers by the caller's contract.
    let list = unsafe { std::slice::from_raw_parts(p.server_addresses, p.server_address_count) };
    // SAFETY: each is null or NUL-terminated by the caller's contract.
    list.iter().map(|&a| unsafe { parse_address(a) }).collect()
}

/// Mints a connect token from `*params`, as a matchmaking backend does, and writes its bytes
/// into `out`, whose capacity the caller passes in `*inout_len`; `*inout_len` is set to the
/// token's length (`THINWIRE_TOKEN_MAX_LEN` bytes always fit). The client passes the bytes to
/// `thinwire_connect_with_token`. The token holds one server address (`server_address`) or
/// up to `THINWIRE_TOKEN_MAX_ADDRESSES` (`server_addresses` and `server_address_count`).
///
/// `THINWIRE_STATUS_NULL_POINTER` for a null `params`, a null pointer in it (`user_data` may
/// be null when `user_data_len` is 0; `server_address` is null exactly when
/// `server_address_count` is above 0, and `server_addresses` may be null when it is 0), a
/// null `inout_len`, or a null `out` with `*inout_len` above 0;
/// `THINWIRE_STATUS_INVALID_ARGUMENT` for more than `THINWIRE_TOKEN_MAX_USER_DATA` bytes of
/// user data, an unparsable address, more than `THINWIRE_TOKEN_MAX_ADDRESSES` addresses, or
/// both `server_address` and `server_addresses` given;
/// `THINWIRE_STATUS_BUFFER_TOO_SMALL` when the token does not fit `out` (then `*inout_len` is
/// set to the length needed and nothing else is written; `out` may be null with `*inout_len`
/// 0 to ask for the length). Any thread.
///
/// # Safety
/// `params` is null or points to a `thinwire_token_params` whose `key`, `server_key` are null
/// or point to 32 readable bytes, whose `nonce` is null or points to 24 readable bytes, whose
/// `user_data` is null (only with `user_data_len` 0) or points to `user_data_len` readable
/// bytes, whose `server_address` is null or NUL-terminated, and whose `server_addresses` is
/// null or points to `server_address_count` pointers each null or NUL-terminated (read only
/// when `server_address_count` is at most `THINWIRE_TOKEN_MAX_ADDRESSES`); `inout_len` is
/// null or readable and writable; `out` is null (only with `*inout_len` 0) or points to `*inout_len`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn thinwire_token_mint(
    params: *const thinwire_token_params,
    out: *mut u8,
    inout_len: *mut usize,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: `params` is null or points to a thinwire_token_params.
        let p = unsafe { params.as_ref() }.ok_or(thinwire_status::NullPointer)?;
        // SAFETY: contract of this function.
        let key = TokenKey::new(unsafe { array::<32>(p.key) }?);
        // SAFETY: contract of this function.
        let server_key = unsafe { array::<32>(p.server_key) }?;
        // SAFETY: contract of this function.
        let nonce = unsafe { array::<24>(p.nonce) }?;
        // SAFETY: contract of this function.
        let user_data = unsafe { bytes(p.user_data, p.user_data_len) }?;
        // SAFETY: contract of this function.
        let addresses = unsafe { server_addresses(p) }?;
        if inout_len.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        // SAFETY: `inout_len` is non-null and readable.
        let capacity = unsafe { inout_len.read() };
        if capacity > 0 && out.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        if user_data.len() > THINWIRE_TOKEN_MAX_USER_DATA {
            return Err(thinwire_status::InvalidArgument);
        }
        let claims = TokenClaims {
            client_id: p.client_id,
            user_data: user_data.to_vec(),
        };
        let token = ConnectToken::mint(
            &key,
            &claims,
            server_key,
            &addresses,
            p.expires_unix_s,
            nonce,
        )
        .map_err(|_| thinwire_status::InvalidArgument)?;
        let encoded = token.encode();
        // SAFETY: `inout_len` is non-null and writable.
        unsafe { inout_len.write(encoded.len()) };
        if encoded.len() > capacity {
            return Err(thinwire_status::BufferTooSmall);
        }
        // SAFETY: `out` is non-null (capacity > 0, since a token is never empty) and points to
        // `capacity` writable bytes, at least `encoded.len()`.
        unsafe { std::ptr::copy_nonoverlapping(encoded.as_ptr(), out, encoded.len()) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    /// The largest token the Rust API can mint (8 IPv6 addresses, the most user data) is
    /// `THINWIRE_TOKEN_MAX_LEN` bytes; one more byte does not decode.
    #[test]
    fn the_length_bounds_are_the_rust_apis() {
        let addresses: Vec<SocketAddr> = (0..thinwire::proto::MAX_TOKEN_ADDRESSES)
            .map(|i| SocketAddr::from(([0x2001, 0xdb8, 0, 0, 0, 0, 0, i as u16], 7777)))
            .collect();
        let claims = TokenClaims {
            client_id: 1,
            user_data: vec![7; THINWIRE_TOKEN_MAX_USER_DATA],
        };
        let key = TokenKey::new([1; 32]);
        let token = ConnectToken::mint(&key, &claims, [2; 32], &addresses, 10, [3; 24]).unwrap();
        let mut encoded = token.encode();
        assert_eq!(encoded.len(), THINWIRE_TOKEN_MAX_LEN);
        encoded.push(0);
        assert!(ConnectToken::decode(&encoded).is_err());
    }

    #[test]
    fn a_minted_token_decodes_and_asks_for_its_length() {
        let (key, server_key, nonce) = ([1u8; 32], [2u8; 32], [3u8; 24]);
        let address = c"[2001:db8::5]:7777";
        let data = [9u8; THINWIRE_TOKEN_MAX_USER_DATA + 1];
        let mint = |out: *mut u8, len: &mut usize, data_len: usize| {
            let params = thinwire_token_params {
                key: key.as_ptr(),
                client_id: 42,
                user_data: data.as_ptr(),
                user_data_len: data_len,
                server_key: server_key.as_ptr(),
                server_address: address.as_ptr(),
                expires_unix_s: 1_000,
                nonce: nonce.as_ptr(),
                server_addresses: std::ptr::null(),
                server_address_count: 0,
            };
            // SAFETY: every pointer points to what the function reads or writes.
            unsafe { thinwire_token_mint(&params, out, len) }
        };
        let mut len = 0;
        // SAFETY: a null `params` is refused before anything is read or written.
        let null = unsafe { thinwire_token_mint(std::ptr::null(), std::ptr::null_mut(), &mut len) };
        assert_eq!(null, thinwire_status::NullPointer);
        assert_eq!(len, 0, "nothing written");
        assert_eq!(
            mint(std::ptr::null_mut(), &mut len, THINWIRE_TOKEN_MAX_USER_DATA),
            thinwire_status::BufferTooSmall
        );
        assert_eq!(len, 374, "an IPv6 address and the most user data");
        let mut out = vec![0u8; len];
        assert_eq!(
            mint(out.as_mut_ptr(), &mut len, THINWIRE_TOKEN_MAX_USER_DATA),
            thinwire_status::Ok
        );
        let token = ConnectToken::decode(&out).unwrap();
        assert_eq!(token.server_key(), server_key);
        assert_eq!(token.expires_unix_s(), 1_000);
        assert_eq!(token.addresses(), &["[2001:db8::5]:7777".parse().unwrap()]);
        let mut len = out.len();
        assert_eq!(
            mint(out.as_mut_ptr(), &mut len, data.len()),
            thinwire_status::InvalidArgument
        );
    }

    /// A token for several addresses holds them all, in order; the single address and the
    /// list exclude each other, and the list is checked before it is read.
    #[test]
    fn a_token_holds_several_addresses() {
        let (key, server_key, nonce) = ([1u8; 32], [2u8; 32], [3u8; 24]);
        let (v4, v6) = (c"203.0.113.5:7777", c"[2001:db8::5]:7777");
        let list = [v4.as_ptr(), v6.as_ptr()];
        let mint = |single: *const c_char, many: *const *const c_char, count: usize| {
            let params = thinwire_token_params {
                key: key.as_ptr(),
                client_id: 42,
                user_data: std::ptr::null(),
                user_data_len: 0,
                server_key: server_key.as_ptr(),
                server_address: single,
                expires_unix_s: 1_000,
                nonce: nonce.as_ptr(),
                server_addresses: many,
                server_address_count: count,
            };
            let mut out = [0u8; THINWIRE_TOKEN_MAX_LEN];
            let mut len = out.len();
            // SAFETY: every pointer is null or points to what the function reads or writes,
            // `many` to at least `count` pointers when the count is at most 8.
            let status = unsafe { thinwire_token_mint(&params, out.as_mut_ptr(), &mut len) };
            (status, ConnectToken::decode(&out[..len]).ok())
        };
        let (status, token) = mint(std::ptr::null(), list.as_ptr(), 2);
        assert_eq!(status, thinwire_status::Ok);
        let expected: [SocketAddr; 2] = [
            "203.0.113.5:7777".parse().unwrap(),
            "[2001:db8::5]:7777".parse().unwrap(),
        ];
        assert_eq!(token.unwrap().addresses(), &expected);
        // only the second, through the list
        let (status, token) = mint(std::ptr::null(), list[1..].as_ptr(), 1);
        assert_eq!(status, thinwire_status::Ok);
        assert_eq!(token.unwrap().addresses(), &expected[1..]);

        let null = std::ptr::null::<c_char>();
        let with_null = [v4.as_ptr(), null];
        let bad = [c"nowhere".as_ptr()];
        let over = THINWIRE_TOKEN_MAX_ADDRESSES + 1;
        use thinwire_status::{InvalidArgument as Invalid, NullPointer};
        let refused = [
            (v4.as_ptr(), list.as_ptr(), 2, Invalid),
            (null, std::ptr::null(), 2, NullPointer),
            (null, with_null.as_ptr(), 2, NullPointer),
            (null, bad.as_ptr(), 1, Invalid),
            // not read: more than a token holds
            (null, list.as_ptr(), over, Invalid),
        ];
        for (single, many, count, expected) in refused {
            assert_eq!(mint(single, many, count).0, expected, "{count} addresses");
        }
        let eight = [v6.as_ptr(); THINWIRE_TOKEN_MAX_ADDRESSES];
        let (status, token) = mint(null, eight.as_ptr(), eight.len());
        assert_eq!(status, thinwire_status::Ok);
        assert_eq!(
            token.unwrap().addresses().len(),
            THINWIRE_TOKEN_MAX_ADDRESSES
        );
    }
}
