//! Static public keys from C: a server host's key (what its clients connect with), and a key
//! as 64 hex digits (how servers print it and games ship it).

use std::ffi::{c_char, CStr};

use thinwire::PublicKey;

use crate::error::boundary;
use crate::host::{host_mut, server_key, thinwire_host};
use crate::types::thinwire_status;

/// Writes a server host's static public key (32 bytes) into `out`: what its clients pass to
/// `thinwire_connect`. `THINWIRE_STATUS_NOT_SERVER` for a client host.
///
/// # Safety
/// `host` is null or a live host; `out` is null or points to 32 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn thinwire_host_public_key(
    host: *mut thinwire_host,
    out: *mut u8,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let h = unsafe { host_mut(host) }?.open()?;
        if out.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        let key = h.public_key().ok_or(thinwire_status::NotServer)?;
        // SAFETY: `out` is non-null and points to 32 writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(key.0.as_ptr(), out, key.0.len()) };
        Ok(())
    })
}

/// Parses a public key written as 64 hex digits (as servers print it) into the 32 bytes at
/// `out`. `THINWIRE_STATUS_INVALID_ARGUMENT` for anything else. Any thread.
///
/// # Safety
/// `hex` is null or NUL-terminated; `out` is null or points to 32 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn thinwire_public_key_parse(
    hex: *const c_char,
    out: *mut u8,
) -> thinwire_status {
    boundary(|| {
        if hex.is_null() || out.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        // SAFETY: non-null and NUL-terminated by the caller's contract.
        let text = unsafe { CStr::from_ptr(hex) }.to_str();
        let key: PublicKey = text
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or(thinwire_status::InvalidArgument)?;
        // SAFETY: `out` is non-null and points to 32 writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(key.0.as_ptr(), out, key.0.len()) };
        Ok(())
    })
}

/// Writes the 32-byte public key at `key` as 64 lowercase hex digits and a NUL into the 65
/// bytes at `out`. Any thread.
///
/// # Safety
/// `key` is null or points to 32 readable bytes; `out` is null or points to 65 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn thinwire_public_key_format(
    key: *const u8,
    out: *mut c_char,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let key = unsafe { server_key(key) }?;
        if out.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        let mut text = key.to_string().into_bytes();
        text.push(0);
        // SAFETY: `out` is non-null and points to 65 writable bytes; `text` is 65 bytes.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr().cast(), out, text.len()) };
        Ok(())
    })
}
