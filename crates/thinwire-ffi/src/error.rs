//! Status codes from Rust errors, their descriptions, and the boundary that no panic crosses.

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use thinwire::proto::{ConnectError, SendError};
use thinwire::BindError;

use crate::types::thinwire_status;

impl From<SendError> for thinwire_status {
    fn from(e: SendError) -> Self {
        match e {
            SendError::UnknownConnection => Self::UnknownConnection,
            SendError::ConnectionClosed => Self::ConnectionClosed,
            SendError::UnknownChannel(_) => Self::UnknownChannel,
            SendError::WrongChannelKind { .. } => Self::WrongChannelKind,
            SendError::MessageTooLarge { .. } => Self::MessageTooLarge,
            SendError::KeyOutOfRange(_) => Self::KeyOutOfRange,
            SendError::InvalidDeadline => Self::InvalidDeadline,
            SendError::InvalidRepairTarget => Self::InvalidArgument,
            SendError::BufferFull => Self::BufferFull,
        }
    }
}

impl From<ConnectError> for thinwire_status {
    fn from(e: ConnectError) -> Self {
        match e {
            ConnectError::ChannelCount(_) | ConnectError::TokenWithoutAddress => {
                Self::InvalidArgument
            }
            ConnectError::NoConnectionId => Self::NoConnectionId,
        }
    }
}

impl From<BindError> for thinwire_status {
    fn from(e: BindError) -> Self {
        match e {
            BindError::Io(_) => Self::Io,
            _ => Self::Config,
        }
    }
}

impl From<std::io::Error> for thinwire_status {
    fn from(_: std::io::Error) -> Self {
        Self::Io
    }
}

/// A static, NUL-terminated English description of a `thinwire_status` value (any integer is
/// accepted: an unknown one gets "unknown status code"). Never null; the string lives for the
/// whole program and must not be freed. Any thread.
#[no_mangle]
pub extern "C" fn thinwire_error_string(status: i32) -> *const c_char {
    let s: &'static [u8] = match status {
        0 => b"ok\0",
        1 => b"a required pointer was null\0",
        2 => b"an argument is out of range or unparsable\0",
        3 => b"the host is closed\0",
        4 => b"no such connection\0",
        5 => b"no such channel on this connection\0",
        6 => b"the call does not fit the channel's class\0",
        7 => b"the message is too large for the channel's class\0",
        8 => b"the connection's send buffer is full\0",
        9 => b"the connection is closing or closed\0",
        10 => b"invalid deadline options (deadline 0 or target outside (0, 1))\0",
        11 => b"latest-value key above 2^62 - 1\0",
        12 => b"the configuration was refused\0",
        13 => b"a socket call failed\0",
        14 => b"no connection id was free\0",
        15 => b"internal error (a panic was caught at the C boundary)\0",
        16 => b"the call needs a server host\0",
        17 => b"the connect token does not decode\0",
        18 => b"the connection came without a connect token\0",
        19 => b"the output buffer is too small (the length needed was written back)\0",
        _ => b"unknown status code\0",
    };
    s.as_ptr().cast()
}

/// Runs the body of an exported function: its error becomes a status, and a panic becomes
/// `THINWIRE_STATUS_PANIC` instead of unwinding into C (which is undefined behaviour).
pub(crate) fn boundary(body: impl FnOnce() -> Result<(), thinwire_status>) -> thinwire_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => thinwire_status::Ok,
        Ok(Err(status)) => status,
        Err(_) => thinwire_status::Panic,
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    #[test]
    fn every_status_has_its_own_description() {
        let texts: Vec<&str> = (0..=19)
            .map(|c| {
                // SAFETY: thinwire_error_string returns static NUL-terminated strings.
                unsafe { CStr::from_ptr(thinwire_error_string(c)) }
                    .to_str()
                    .expect("utf-8")
            })
            .collect();
        let mut unique = texts.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), texts.len());
        assert!(!texts.contains(&"unknown status code"));
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(thinwire_error_string(-1)) };
        assert_eq!(unknown.to_str(), Ok("unknown status code"));
    }

    #[test]
    fn a_panic_becomes_a_status() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let status = boundary(|| panic!("bug"));
        std::panic::set_hook(prev);
        assert_eq!(status, thinwire_status::Panic);
        assert_eq!(
            boundary(|| Err(thinwire_status::BufferFull)),
            thinwire_status::BufferFull
        );
        assert_eq!(boundary(|| Ok(())), thinwire_status::Ok);
    }
}
