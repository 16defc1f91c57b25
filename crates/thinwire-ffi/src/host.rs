//! The exported host functions: create, connect with a server key, service, flush,
//! disconnect, statistics, received messages, close and destroy; and the pointer checks every
//! module of the C API shares. Each exported function checks its pointers, runs inside
//! [`boundary`], and returns a status. The key functions are in `keys.rs`; connecting with a
//! connect token, its claims and minting are in `token.rs`; sending is in `send.rs`.

use std::ffi::{c_char, CStr};
use std::net::SocketAddr;
use std::time::Duration;

use thinwire::proto::ConnectionHandle;
use thinwire::{
    ChannelKind, Config, FaultConfig, Host, HostEvent, PublicKey, ServerKey, TokenKey, TokenPolicy,
};

use crate::error::boundary;
use crate::types::{
    channel_kind, thinwire_config, thinwire_connection_stats, thinwire_disconnect_reason,
    thinwire_event, thinwire_event_type, thinwire_message, thinwire_status,
};

/// A thinwire host (opaque): one UDP socket and its connections, driven by
/// `thinwire_host_service`. Not thread-safe: use it from one thread at a time (it may move
/// between threads).
#[derive(Debug)]
pub struct thinwire_host {
    /// `None` once closed.
    host: Option<Host>,
}

impl thinwire_host {
    /// The host, or `THINWIRE_STATUS_HOST_CLOSED` once closed.
    pub(crate) fn open(&mut self) -> Result<&mut Host, thinwire_status> {
        self.host.as_mut().ok_or(thinwire_status::HostClosed)
    }
}

/// The host behind a caller's pointer.
///
/// # Safety
/// `host` is null or was returned by `thinwire_host_create` and not destroyed.
pub(crate) unsafe fn host_mut<'a>(
    host: *mut thinwire_host,
) -> Result<&'a mut thinwire_host, thinwire_status> {
    // SAFETY: the caller guarantees a live host or null; null is refused.
    unsafe { host.as_mut() }.ok_or(thinwire_status::NullPointer)
}

/// A UTF-8 socket address ("127.0.0.1:7777", "[::1]:0") from a C string.
///
/// # Safety
/// `s` is null or a NUL-terminated string.
pub(crate) unsafe fn parse_address(s: *const c_char) -> Result<SocketAddr, thinwire_status> {
    if s.is_null() {
        return Err(thinwire_status::NullPointer);
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let text = unsafe { CStr::from_ptr(s) }.to_str();
    text.ok()
        .and_then(|t| t.parse().ok())
        .ok_or(thinwire_status::InvalidArgument)
}

/// `len` bytes at `data` (which may be null when `len` is 0).
///
/// # Safety
/// `data` is null or points to `len` readable bytes.
pub(crate) unsafe fn bytes<'a>(data: *const u8, len: usize) -> Result<&'a [u8], thinwire_status> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(thinwire_status::NullPointer);
    }
    // SAFETY: non-null and `len` readable bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// Writes `value` through a caller's out-pointer.
///
/// # Safety
/// `out` is null or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) -> Result<(), thinwire_status> {
    if out.is_null() {
        return Err(thinwire_status::NullPointer);
    }
    // SAFETY: non-null and writable by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// The defaults: a client (`server` false) or a server accepting up to 1024 connections (64
/// per source, 32 Connects a second per source) with a fresh key pair, encrypted, no
/// connect tokens required, no fault injection, ACKs at once. Any thread.
#[no_mangle]
pub extern "C" fn thinwire_config_default(server: bool) -> thinwire_config {
    let defaults = thinwire::ServerConfig::default();
    thinwire_config {
        server,
        max_connections: 1024,
        max_connections_per_source: u32::try_from(defaults.max_connections_per_source)
            .unwrap_or(u32::MAX),
        handshakes_per_second_per_source: defaults.handshakes_per_second_per_source,
        server_secret_key: [0; 32],
        has_server_secret_key: false,
        insecure_cleartext: false,
        fault_drop_rate: 0.0,
        fault_delay_ms: 0,
        fault_jitter_ms: 0,
        fault_seed: 0,
        token_key: [0; 32],
        has_token_key: false,
        tick_ack_period_us: 0,
    }
}

/// The longest tick `thinwire_config.tick_ack_period_us` accepts (1 s): an ACK held longer
/// than the peer's longest timeout (3 s) would make every pause a spurious retransmission, and
/// a larger value is more likely a unit mistake than a tick.
const MAX_TICK_ACK_PERIOD_US: u32 = 1_000_000;

fn rust_config(c: &thinwire_config) -> Result<Config, thinwire_status> {
    let mut config = if c.server {
        let mut config = Config::server();
        if let Some(s) = config.server.as_mut() {
            s.max_connections = c.max_connections as usize;
            s.max_connections_per_source = c.max_connections_per_source as usize;
            s.handshakes_per_second_per_source = c.handshakes_per_second_per_source;
            if c.has_server_secret_key {
                s.key = Some(ServerKey::from_secret(c.server_secret_key));
            }
            if c.has_token_key {
                s.connect_tokens = Some(TokenPolicy {
                    key: TokenKey::new(c.token_key),
                    public_addresses: Vec::new(),
                });
            }
        }
        config
    } else if c.has_token_key {
        // a token key only means something to a server: a client with one is a mistake
        return Err(thinwire_status::InvalidArgument);
    } else {
        Config::client()
    };
    if c.insecure_cleartext {
        config = config.insecure_cleartext();
    }
    if c.tick_ack_period_us > MAX_TICK_ACK_PERIOD_US {
        return Err(thinwire_status::InvalidArgument);
    }
    if c.tick_ack_period_us != 0 {
        config = config.with_tick_acks(Duration::from_micros(c.tick_ack_period_us.into()));
    }
    if c.fault_drop_rate != 0.0 || c.fault_delay_ms != 0 || c.fault_jitter_ms != 0 {
        if !(0.0..=1.0).contains(&c.fault_drop_rate) {
            return Err(thinwire_status::InvalidArgument);
        }
        let mut faults = FaultConfig::new()
            .drop_rate(c.fault_drop_rate)
            .delay(Duration::from_millis(c.fault_delay_ms.into()))
            .jitter(Duration::from_millis(c.fault_jitter_ms.into()));
        if c.fault_seed != 0 {
            faults = faults.seed(c.fault_seed);
        }
        config = config.with_faults(faults);
    }
    Ok(config)
}

/// Creates a host bound to `bind_address` (e.g. `"0.0.0.0:7777"`, `"[::]:0"`; port 0 picks a free
/// one) with `config` (null: client defaults), and stores it in `*out`. The caller owns the
/// host and frees it with `thinwire_host_destroy`.
///
/// # Safety
/// `bind_address` is null or a NUL-terminated string; `config` is null or points to a
/// `thinwire_config`; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn thinwire_host_create(
    bind_address: *const c_char,
    config: *const thinwire_config,
    out: *mut *mut thinwire_host,
) -> thinwire_status {
    boundary(|| {
        if out.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        // SAFETY: contract of this function.
        let addr = unsafe { parse_address(bind_address) }?;
        // SAFETY: `config` is null or points to a thinwire_config.
        let c = unsafe { config.as_ref() }
            .copied()
            .unwrap_or_else(|| thinwire_config_default(false));
        let host = Host::bind(addr, rust_config(&c)?)?;
        let boxed = Box::into_raw(Box::new(thinwire_host { host: Some(host) }));
        // SAFETY: `out` is non-null and writable.
        unsafe { put(out, boxed) }
    })
}

/// Closes the host's socket at once (connections end without telling their peers; call
/// `thinwire_disconnect` and service the host first for a graceful end). Every later call on
/// it returns `THINWIRE_STATUS_HOST_CLOSED`, except `thinwire_host_destroy`. Closing twice is
/// harmless.
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn thinwire_host_close(host: *mut thinwire_host) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        unsafe { host_mut(host) }?.host = None;
        Ok(())
    })
}

/// Frees a host (closing it first if needed). Null is ignored. The pointer is invalid after.
///
/// # Safety
/// `host` is null or a host from `thinwire_host_create` not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn thinwire_host_destroy(host: *mut thinwire_host) {
    if host.is_null() {
        return;
    }
    let _ = boundary(|| {
        // SAFETY: a live host, owned by the caller and given back here exactly once.
        drop(unsafe { Box::from_raw(host) });
        Ok(())
    });
}

/// The UDP port the host is bound to.
///
/// # Safety
/// `host` is null or a live host; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn thinwire_host_port(
    host: *mut thinwire_host,
    out: *mut u16,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let port = unsafe { host_mut(host) }?.open()?.local_addr().port();
        // SAFETY: contract of this function.
        unsafe { put(out, port) }
    })
}

/// The 32 bytes of a public key from a caller's pointer.
///
/// # Safety
/// `key` is null or points to 32 readable bytes.
pub(crate) unsafe fn server_key(key: *const u8) -> Result<PublicKey, thinwire_status> {
    if key.is_null() {
        return Err(thinwire_status::NullPointer);
    }
    let mut bytes = [0u8; 32];
    // SAFETY: non-null and 32 readable bytes by the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(key, bytes.as_mut_ptr(), bytes.len()) };
    Ok(PublicKey(bytes))
}

/// Starts a connection to the server at `address` whose static public key is the 32 bytes at
/// `server_key` (from `thinwire_host_public_key` on the server, shipped with the game), with
/// `channel_count` channels (1 to 64) whose classes are `channels[0..channel_count]` (values of
/// `thinwire_channel_kind`), and stores its id in `*out_conn`. A
/// `THINWIRE_EVENT_TYPE_CONNECTED` or `..._DISCONNECTED` event follows from
/// `thinwire_host_service`; messages may be queued at once. Only the holder of the key's
/// secret half can complete the handshake: with a wrong key the connection ends with
/// `THINWIRE_DISCONNECT_REASON_REFUSED` and `THINWIRE_REFUSE_REASON_UNKNOWN_SERVER_KEY`.
///
/// # Safety
/// `host` is null or a live host; `address` is null or NUL-terminated; `server_key` is null or
/// points to 32 readable bytes; `channels` is null or points to `channel_count` values;
/// `out_conn` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn thinwire_connect(
    host: *mut thinwire_host,
    address: *const c_char,
    server_key: *const u8,
    channels: *const u32,
    channel_count: usize,
    out_conn: *mut u64,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let h = unsafe { host_mut(host) }?.open()?;
        // SAFETY: contract of this function.
        let remote = unsafe { parse_address(address) }?;
        // SAFETY: contract of this function.
        let key = unsafe { self::server_key(server_key) }?;
        if out_conn.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        // SAFETY: contract of this function.
        let kinds = unsafe { channel_kinds(channels, channel_count) }?;
        let conn = h.connect(remote, key, &kinds)?;
        // SAFETY: contract of this function.
        unsafe { put(out_conn, conn.0) }
    })
}

/// The channel classes at `channels[0..count]`; a value outside `thinwire_channel_kind` is
/// refused (the count itself is checked by the connect call).
///
/// # Safety
/// `channels` is null or points to `count` values.
pub(crate) unsafe fn channel_kinds(
    channels: *const u32,
    count: usize,
) -> Result<Vec<ChannelKind>, thinwire_status> {
    if channels.is_null() {
        return Err(thinwire_status::NullPointer);
    }
    // SAFETY: non-null and `count` readable values by the caller's contract.
    let raw = unsafe { std::slice::from_raw_parts(channels, count) };
    raw.iter()
        .map(|&k| channel_kind(k))
        .collect::<Option<Vec<_>>>()
        .ok_or(thinwire_status::InvalidArgument)
}

/// Processes the network for at most `timeout_ms` milliseconds (0: only what has arrived)
/// and writes the first event into `*event` (`THINWIRE_EVENT_TYPE_NONE` when nothing
/// happened). A message event's `message` belongs to the caller until
/// `thinwire_message_free`. Call it every frame of the game loop.
///
/// # Safety
/// `host` is null or a live host; `event` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn thinwire_host_service(
    host: *mut thinwire_host,
    timeout_ms: u32,
    event: *mut thinwire_event,
) -> thinwire_status {
    boundary(|| {
        if event.is_null() {
            return Err(thinwire_status::NullPointer);
        }
        // SAFETY: contract of this function.
        let h = unsafe { host_mut(host) }?.open()?;
        let found = h.service(Duration::from_millis(timeout_ms.into()))?;
        let out = found.map_or_else(thinwire_event::none, c_event);
        // SAFETY: `event` is non-null and writable.
        unsafe { put(event, out) }
    })
}

fn c_event(e: HostEvent) -> thinwire_event {
    let mut out = thinwire_event::none();
    match e {
        HostEvent::Connected { conn, incoming, .. } => {
            out.kind = thinwire_event_type::Connected;
            out.conn = conn.0;
            out.incoming = incoming;
        }
        HostEvent::Message { conn, message } => {
            out.kind = thinwire_event_type::Message;
            out.conn = conn.0;
            out.channel = message.channel;
            if let Some(d) = message.deadline {
                out.has_deadline = true;
                out.deadline_late = d.late;
                out.deadline_age_ms = u32::try_from(d.age.as_millis()).unwrap_or(u32::MAX);
            }
            out.message = Box::into_raw(Box::new(thinwire_message { inner: message }));
        }
        HostEvent::Disconnected { conn, reason } => {
            out.kind = thinwire_event_type::Disconnected;
            out.conn = conn.0;
            (out.reason, out.close_code, out.refuse_reason) =
                thinwire_disconnect_reason::of(&reason);
        }
    }
    out
}

/// Sends everything queued now, without waiting for anything to arrive.
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn thinwire_flush(host: *mut thinwire_host) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        Ok(unsafe { host_mut(host) }?.open()?.flush()?)
    })
}

/// Closes a connection gracefully with `code`: queued reliable data is delivered first, then
/// the peer is told; a `THINWIRE_EVENT_TYPE_DISCONNECTED` event follows (keep servicing).
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn thinwire_disconnect(
    host: *mut thinwire_host,
    conn: u64,
    code: u64,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let h = unsafe { host_mut(host) }?.open()?;
        let conn = ConnectionHandle(conn);
        if h.connection_stats(conn).is_none() {
            return Err(thinwire_status::UnknownConnection);
        }
        h.close(conn, code, b"");
        Ok(())
    })
}

/// Writes a snapshot of a connection's statistics into `*out`.
///
/// # Safety
/// `host` is null or a live host; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn thinwire_connection_get_stats(
    host: *mut thinwire_host,
    conn: u64,
    out: *mut thinwire_connection_stats,
) -> thinwire_status {
    boundary(|| {
        // SAFETY: contract of this function.
        let h = unsafe { host_mut(host) }?.open()?;
        let stats = h
            .connection_stats(ConnectionHandle(conn))
            .ok_or(thinwire_status::UnknownConnection)?;
        // SAFETY: contract of this function.
        unsafe { put(out, (&stats).into()) }
    })
}

/// The bytes of a received message (valid until `thinwire_message_free`; null for null).
///
/// # Safety
/// `message` is null or a message from an event, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn thinwire_message_data(message: *const thinwire_message) -> *const u8 {
    // SAFETY: contract of this function.
    match unsafe { message.as_ref() } {
        Some(m) => m.inner.data.as_ptr(),
        None => std::ptr::null(),
    }
}

/// The length in bytes of a received message (0 for null).
///
/// # Safety
/// As `thinwire_message_data`.
#[no_mangle]
pub unsafe extern "C" fn thinwire_message_len(message: *const thinwire_message) -> usize {
    // SAFETY: contract of this function.
    unsafe { message.as_ref() }.map_or(0, |m| m.inner.data.len())
}

/// Frees a received message. Null is ignored; the pointer is invalid after. Any thread.
///
/// # Safety
/// `message` is null or a message from an event, freed only once.
#[no_mangle]
pub unsafe extern "C" fn thinwire_message_free(message: *mut thinwire_message) {
    if !message.is_null() {
        // SAFETY: the caller owns the message and gives it back once.
        drop(unsafe { Box::from_raw(message) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tick period reaches the transport; 0 leaves the immediate ACKs.
    #[test]
    fn the_tick_ack_period_sets_the_transport() {
        for server in [false, true] {
            let mut c = thinwire_config_default(server);
            let default = rust_config(&c).expect("defaults");
            assert!(default.transport.immediate_ack);
            c.tick_ack_period_us = 33_334;
            let ticked = rust_config(&c).expect("tick acks");
            assert!(!ticked.transport.immediate_ack);
            assert_eq!(
                ticked.transport.max_ack_delay,
                Duration::from_micros(50_001)
            );
            c.tick_ack_period_us = MAX_TICK_ACK_PERIOD_US + 1;
            assert_eq!(
                rust_config(&c).err(),
                Some(thinwire_status::InvalidArgument),
                "a tick over 1 s is refused"
            );
        }
    }
}
