//! Connect tokens from C: minting one (what a matchmaking backend or a test does) and the
//! buffer sizes a caller needs. Connecting with a token and reading its claims on the server
//! are host calls (`thinwire_connect_with_token`, `thinwire_connection_token_claims`).

use thinwire::{ConnectToken, TokenClaims, TokenKey};

use crate::error::boundary;
use crate::host::{bytes, parse_address};
use crate::types::thinwire_status;

/// The longest encoded connect token, in bytes: a buffer this large holds any token
/// (`thinwire_token_mint` writes at most 374, for an IPv6 address and the largest user data).
pub const THINWIRE_TOKEN_MAX_LEN: usize = 507;

/// The most user data a connect token carries, in bytes: a buffer this large holds any
/// token's user data (`thinwire_connection_token_claims`).
pub const THINWIRE_TOKEN_MAX_USER_DATA: usize = 256;

// The C constants are the Rust API's bounds.
const _: () = assert!(THINWIRE_TOKEN_MAX_USER_DATA == thinwire::proto::MAX_USER_DATA);

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

/// Mints a connect token, as a matchmaking backend does, and writes its bytes into `out`,
/// whose capacity the caller passes in `*inout_len`; `*inout_len` is set to the token's
/// length (`THINWIRE_TOKEN_MAX_LEN` bytes always fit). The client passes the bytes to
/// `thinwire_connect_with_token`.
///
/// - `key`: the 32-byte secret shared with the servers (their `thinwire_config.token_key`).
/// - `client_id`, `user_data[0..user_data_len]`: the claims, sealed in the token (the client
///   cannot read them) and handed to the server application by
///   `thinwire_connection_token_claims`; at most `THINWIRE_TOKEN_MAX_USER_DATA` bytes of user
///   data (`user_data` may be null when `user_data_len` is 0).
/// - `server_key`: the server's 32-byte static public key (`thinwire_host_public_key`); the
///   client authenticates the server by it, and only that server accepts the token.
/// - `server_address`: where the client connects, e.g. `"203.0.113.5:7777"` or
///   `"[2001:db8::5]:7777"`.
/// - `expires_unix_s`: unix time (seconds) from which the server refuses the token. Tokens
///   are bearer credentials until then: keep lifetimes short (tens of seconds).
/// - `nonce`: 24 fresh bytes from a cryptographic random source, never reused with the same
///   `key` (a fixed nonce is for tests only).
///
/// `THINWIRE_STATUS_INVALID_ARGUMENT` for more than `THINWIRE_TOKEN_MAX_USER_DATA` bytes of
/// user data or an unparsable address; `THINWIRE_STATUS_BUFFER_TOO_SMALL` when the token does
/// not fit `out` (then `*inout_len` is set to the length needed and nothing else is written;
/// `out` may be null with `*inout_len` 0 to ask for the length). Any thread.
///
/// # Safety
/// `key`, `server_key` are null or point to 32 readable bytes; `nonce` is null or points to
/// 24 readable bytes; `user_data` is null (only with `user_data_len` 0) or points to
/// `user_data_len` readable bytes; `server_address` is null or NUL-terminated; `inout_len` is
/// null or readable and writable; `out` is null (only with `*inout_len` 0) or points to
/// `*inout_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn thinwire_token_mint(
    key: *const u8,
    client_id: u64,
    user_data: *const u8,
    user_data_len: usize,
    server_key: *const u8,
    server_address: *const std::ffi::c_char,
    expires_unix_s: u64,
    nonce: *const u8,
    out: *mut u8,
    inout_len: *mut usize,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let key = TokenKey::new(unsafe { array::<32>(key) }?);
        // SAFETY: contract of this function.
        let server_key = unsafe { array::<32>(server_key) }?;
        // SAFETY: contract of this function.
        let nonce = unsafe { array::<24>(nonce) }?;
        // SAFETY: contract of this function.
        let user_data = unsafe { bytes(user_data, user_data_len) }?;
        // SAFETY: contract of this function.
        let address = unsafe { parse_address(server_address) }?;
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
            client_id,
            user_data: user_data.to_vec(),
        };
        let token =
            ConnectToken::mint(&key, &claims, server_key, &[address], expires_unix_s, nonce)
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
            // SAFETY: every pointer points to what the function reads or writes.
            unsafe {
                thinwire_token_mint(
                    key.as_ptr(),
                    42,
                    data.as_ptr(),
                    data_len,
                    server_key.as_ptr(),
                    address.as_ptr(),
                    1_000,
                    nonce.as_ptr(),
                    out,
                    len,
                )
            }
        };
        let mut len = 0;
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
}
