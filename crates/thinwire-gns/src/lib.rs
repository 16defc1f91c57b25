//! # thinwire-gns
//!
//! A minimal safe wrapper over Valve's GameNetworkingSockets (GNS, the open-source build of
//! Steam's networking library), enough for `thinwire bench` to drive GNS as a real peer:
//! listen on an address, connect by IP, send reliable or unreliable messages, flush, and
//! poll a host's connection changes and messages.
//!
//! ```text
//!  Host::listen / Host::client ──▶ one poll group per host, connections per host
//!            │                       (GameNetworkingSockets_Init once per process)
//!  send(conn, bytes, reliable) ──▶ SendMessageToConnection (Nagle on) ─┐
//!  flush()                     ──▶ FlushMessagesOnConnection ──────────┴─▶ GNS's service thread
//!  poll(f)                     ──▶ RunCallbacks (status changes, routed to their host),
//!                                  ReceiveMessagesOnPollGroup ──▶ f(EventRef)
//! ```
//!
//! **Loading.** The library is opened at run time (`dlopen` through `libloading`), not
//! linked, so the workspace builds and its tests run without it: from the path in
//! `THINWIRE_GNS_LIB` ([`LIB_ENV`]) if set, else from `libGameNetworkingSockets.so` in
//! [`default_dir`] (`${XDG_CACHE_HOME:-$HOME/.cache}/thinwire/gns`), where
//! `tools/build-gns.sh SRC_DIR` puts the library it builds. [`available`] says whether it
//! loaded, [`unavailable_reason`] why not.
//!
//! **Process-global.** GNS allows one `GameNetworkingSockets_Init` per process, and its
//! connection-status callback is one global function. The first use loads and initialises
//! the library once (without an identity: unauthenticated, and encrypted, GNS's default);
//! every [`Host`] then owns its listen socket (servers), its connections and its poll group,
//! and a status change is routed to the host that owns the connection (by listen socket, or
//! by the connection's user data, which a client host sets to its id), whichever thread ran
//! `RunCallbacks`. Hosts may live in different threads.
//!
//! **Settings.** The send-rate limits (`k_ESteamNetworkingConfig_SendRateMin`/`Max`, 256 KiB/s
//! by default) are raised to the highest GNS accepts (256 MiB/s, which it clamps to 100 MiB/s),
//! so that a measurement sees the stack and not its pacing. GNS's open-source build estimates
//! no bandwidth (its send rate stays where the limits put it), so every connection sends at up
//! to that rate whatever the receiver takes; [`SEND_RATE_ENV`] sets another rate for both
//! limits, read once when the library is initialised. Encryption stays on (AES-GCM after an X25519 key
//! exchange). Everything else is GNS's default: Nagle on (5 ms), so that
//! [`send`](Host::send) queues and [`flush`](Host::flush) puts what was queued on the wire,
//! as ENet's `enet_peer_send` and `enet_host_flush` do; a 512 KiB send buffer per connection.
//!
//! The FFI declarations are written by hand against the headers of GNS at commit e707b3a,
//! their sizes and offsets checked at compile time; all `unsafe` lives in `ffi.rs` and
//! `host.rs`.

mod ffi;
mod host;

use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::sync::OnceLock;

pub use host::{ConnId, EventRef, Host};

/// The environment variable naming the library to load (a path to
/// `libGameNetworkingSockets.so`).
pub const LIB_ENV: &str = "THINWIRE_GNS_LIB";

/// The environment variable that sets GNS's send rate, in bytes per second (both of its
/// limits; 1024 to 268,435,456; unset or unparsable: the highest).
pub const SEND_RATE_ENV: &str = "THINWIRE_GNS_SEND_RATE";

/// The send rate both of GNS's limits are set to ([`SEND_RATE_ENV`], else the highest).
fn send_rate() -> i32 {
    std::env::var(SEND_RATE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
        .map_or(ffi::MAX_SEND_RATE, |r| r.clamp(1024, ffi::MAX_SEND_RATE))
}

/// The library's file name.
pub const LIB_NAME: &str = "libGameNetworkingSockets.so";

/// Where `tools/build-gns.sh` puts the library when no `THINWIRE_GNS_LIB` is set:
/// `${XDG_CACHE_HOME:-$HOME/.cache}/thinwire/gns` (`None` without either variable).
pub fn default_dir() -> Option<PathBuf> {
    let nonempty = |v: &str| std::env::var_os(v).filter(|s| !s.is_empty());
    let cache = nonempty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("thinwire").join("gns"))
}

/// The library that is (or would be) loaded: `THINWIRE_GNS_LIB`, else [`LIB_NAME`] in
/// [`default_dir`].
pub fn library_path() -> Option<PathBuf> {
    match std::env::var_os(LIB_ENV).filter(|s| !s.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => default_dir().map(|d| d.join(LIB_NAME)),
    }
}

/// The library loaded (or to load) and the commit it was built from, as
/// `tools/build-gns.sh` records it in a file `COMMIT` beside the library:
/// `/path/libGameNetworkingSockets.so (commit e707b3a…)`.
pub fn describe() -> Option<String> {
    let path = library_path()?;
    let commit = path
        .parent()
        .and_then(|d| std::fs::read_to_string(d.join("COMMIT")).ok())
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".into());
    Some(format!("{} (commit {commit})", path.display()))
}

/// The loaded, initialised library, or why there is none (decided once per process).
fn gns() -> Result<&'static ffi::Gns, GnsError> {
    static GNS: OnceLock<Result<ffi::Gns, String>> = OnceLock::new();
    GNS.get_or_init(|| {
        let path = library_path().ok_or_else(|| format!("{LIB_ENV} and HOME are unset"))?;
        if !path.exists() {
            return Err(format!(
                "no {} (build it with tools/build-gns.sh SRC_DIR, or set {LIB_ENV})",
                path.display()
            ));
        }
        ffi::Gns::load(&path, host::on_status)
    })
    .as_ref()
    .map_err(|e| GnsError::Unavailable(e.clone()))
}

/// Whether GameNetworkingSockets is loaded and initialised (the first call loads it).
pub fn available() -> bool {
    gns().is_ok()
}

/// Why GameNetworkingSockets cannot be used, if it cannot (the first call loads it).
pub fn unavailable_reason() -> Option<String> {
    gns().err().map(|e| e.to_string())
}

/// A GameNetworkingSockets call failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum GnsError {
    /// The library could not be loaded or initialised (the reason follows).
    #[error("GameNetworkingSockets is not available: {0}")]
    Unavailable(String),
    /// `CreateListenSocketIP` failed (address in use).
    #[error("GNS could not listen on {0}")]
    Listen(SocketAddrV4),
    /// `ConnectByIPAddress` failed.
    #[error("GNS could not start a connection to {0}")]
    Connect(SocketAddrV4),
    /// `CreatePollGroup` failed.
    #[error("GNS could not create a poll group")]
    PollGroup,
    /// `SendMessageToConnection` failed with this `EResult` (not a full send buffer).
    #[error("GNS could not send (EResult {0})")]
    Send(i32),
    /// The connection is not one of this host's.
    #[error("no such GNS connection")]
    NoConnection,
}
