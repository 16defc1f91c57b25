//! The one send call, `thinwire_send_with`, and its options: the delivery mode (plain, the
//! newest value of a key, a deadline) travels as a `thinwire_send_options`, as ENet's one
//! `enet_peer_send` takes its flags. The three send functions of earlier releases remain for
//! one release as deprecated wrappers, under their old names so that programs linked against
//! them keep working.

use std::time::Duration;

use thinwire::proto::{ConnectionHandle, DeadlineOptions, SendMode};

use crate::error::boundary;
use crate::host::{bytes, host_mut, thinwire_host};
use crate::types::thinwire_status;

/// What a deadline send asks for.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct thinwire_deadline {
    /// The deadline, from the send call (milliseconds, above 0).
    pub deadline_ms: u32,
    /// The share of messages that must arrive in time, strictly between 0 and 1 (e.g. 0.999).
    pub target: f64,
}

impl From<thinwire_deadline> for DeadlineOptions {
    fn from(d: thinwire_deadline) -> Self {
        DeadlineOptions::new(Duration::from_millis(d.deadline_ms.into()), d.target)
    }
}

/// How `thinwire_send_with` delivers a message (the `mode` of `thinwire_send_options`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum thinwire_send_mode {
    /// As the channel's class says (any class but latest-value).
    Plain = 0,
    /// The newest value for `latest_key`, on a latest-value channel only: an older value for
    /// the same key that the peer has not acknowledged is superseded.
    Latest = 1,
    /// A deadline message, on a channel of any class: erasure-coded shards sent in stages so
    /// that it arrives within `deadline.deadline_ms` with probability `deadline.target`. The
    /// receiver's event has `has_deadline` set.
    Deadline = 2,
}

/// How a message is delivered: the last argument of `thinwire_send_with`. Zeroed (`{0}`) it is
/// plain; a mode ignores the fields of the others.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct thinwire_send_options {
    /// A `thinwire_send_mode` value (any other is refused with
    /// `THINWIRE_STATUS_INVALID_ARGUMENT`).
    pub mode: u32,
    /// `THINWIRE_SEND_MODE_LATEST`: the key whose newest value this is (below 2^62).
    pub latest_key: u64,
    /// `THINWIRE_SEND_MODE_DEADLINE`: the deadline and the target.
    pub deadline: thinwire_deadline,
}

impl thinwire_send_options {
    /// The Rust mode; `None` for a `mode` outside `thinwire_send_mode` (C does not stop a
    /// caller from passing one, and a Rust enum must never hold it).
    fn mode(&self) -> Option<SendMode> {
        Some(match self.mode {
            0 => SendMode::Plain,
            1 => SendMode::Latest {
                key: self.latest_key,
            },
            2 => SendMode::Deadline(self.deadline.into()),
            _ => return None,
        })
    }
}

/// Queues a message of `len` bytes on `channel`, delivered as `opts` says (null: plain, as the
/// channel's class says); it leaves with the next `thinwire_flush` or `thinwire_host_service`.
/// The bytes are copied. A mode the channel's class does not take (a latest-value key on
/// another class, a plain send on a latest-value channel) is refused with
/// `THINWIRE_STATUS_WRONG_CHANNEL_KIND`.
///
/// # Safety
/// `host` is null or a live host; `data` is null (only with `len` 0) or points to `len` bytes;
/// `opts` is null or points to a `thinwire_send_options`.
#[no_mangle]
pub unsafe extern "C" fn thinwire_send_with(
    host: *mut thinwire_host,
    conn: u64,
    channel: u8,
    data: *const u8,
    len: usize,
    opts: *const thinwire_send_options,
) -> thinwire_status {
    let mode = || {
        // SAFETY: `opts` is null or points to a thinwire_send_options.
        match unsafe { opts.as_ref() } {
            Some(o) => o.mode().ok_or(thinwire_status::InvalidArgument),
            None => Ok(SendMode::Plain),
        }
    };
    // SAFETY: contract of this function.
    boundary(|| unsafe { send(host, (conn, channel), (data, len), mode) })
}

/// What every exported send does: opens the host, reads the mode, copies the caller's bytes
/// and queues them.
///
/// # Safety
/// As [`host_mut`] and [`bytes`].
unsafe fn send(
    host: *mut thinwire_host,
    (conn, channel): (u64, u8),
    (data, len): (*const u8, usize),
    mode: impl FnOnce() -> Result<SendMode, thinwire_status>,
) -> Result<(), thinwire_status> {
    // SAFETY: same contract.
    let h = unsafe { host_mut(host) }?.open()?;
    let mode = mode()?;
    // SAFETY: same contract.
    let payload = unsafe { bytes(data, len) }?.to_vec();
    Ok(h.send(ConnectionHandle(conn), channel, payload, mode)?)
}

/// Deprecated (removed in the next release): `thinwire_send_with` with null options.
///
/// # Safety
/// As `thinwire_send_with`.
#[deprecated(note = "use thinwire_send_with with null options")]
#[no_mangle]
pub unsafe extern "C" fn thinwire_send(
    host: *mut thinwire_host,
    conn: u64,
    channel: u8,
    data: *const u8,
    len: usize,
) -> thinwire_status {
    let mode = || Ok(SendMode::Plain);
    // SAFETY: contract of this function.
    boundary(|| unsafe { send(host, (conn, channel), (data, len), mode) })
}

/// Deprecated (removed in the next release): `thinwire_send_with` with
/// `THINWIRE_SEND_MODE_LATEST` and `key` as `latest_key`.
///
/// # Safety
/// As `thinwire_send_with`.
#[deprecated(note = "use thinwire_send_with with THINWIRE_SEND_MODE_LATEST")]
#[no_mangle]
pub unsafe extern "C" fn thinwire_send_latest(
    host: *mut thinwire_host,
    conn: u64,
    channel: u8,
    key: u64,
    data: *const u8,
    len: usize,
) -> thinwire_status {
    let mode = || Ok(SendMode::Latest { key });
    // SAFETY: contract of this function.
    boundary(|| unsafe { send(host, (conn, channel), (data, len), mode) })
}

/// Deprecated (removed in the next release): `thinwire_send_with` with
/// `THINWIRE_SEND_MODE_DEADLINE` and `*deadline` (null is refused with
/// `THINWIRE_STATUS_NULL_POINTER`).
///
/// # Safety
/// As `thinwire_send_with`; `deadline` is null or points to a `thinwire_deadline`.
#[deprecated(note = "use thinwire_send_with with THINWIRE_SEND_MODE_DEADLINE")]
#[no_mangle]
pub unsafe extern "C" fn thinwire_send_deadline(
    host: *mut thinwire_host,
    conn: u64,
    channel: u8,
    data: *const u8,
    len: usize,
    deadline: *const thinwire_deadline,
) -> thinwire_status {
    let mode = || {
        // SAFETY: `deadline` is null or points to a thinwire_deadline.
        let d = unsafe { deadline.as_ref() }.ok_or(thinwire_status::NullPointer)?;
        Ok(SendMode::Deadline((*d).into()))
    };
    // SAFETY: contract of this function.
    boundary(|| unsafe { send(host, (conn, channel), (data, len), mode) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(mode: u32) -> thinwire_send_options {
        thinwire_send_options {
            mode,
            latest_key: 7,
            deadline: thinwire_deadline {
                deadline_ms: 500,
                target: 0.999,
            },
        }
    }

    #[test]
    fn every_c_mode_maps_to_its_rust_mode_and_the_rest_are_refused() {
        let deadline = DeadlineOptions::new(Duration::from_millis(500), 0.999);
        assert_eq!(options(0).mode(), Some(SendMode::Plain));
        assert_eq!(options(1).mode(), Some(SendMode::Latest { key: 7 }));
        assert_eq!(options(2).mode(), Some(SendMode::Deadline(deadline)));
        for raw in [3, 99, u32::MAX] {
            assert_eq!(options(raw).mode(), None);
        }
        assert_eq!(thinwire_send_mode::Deadline as u32, 2, "C values are fixed");
    }

    #[test]
    fn zeroed_options_are_a_plain_send() {
        // SAFETY: every field of thinwire_send_options is an integer or a float, for which
        // all-zero bytes are a valid value (the struct C callers write as `{0}`).
        let zeroed: thinwire_send_options = unsafe { std::mem::zeroed() };
        assert_eq!(zeroed.mode(), Some(SendMode::default()));
        assert_eq!(SendMode::default(), SendMode::Plain);
    }
}
