//! # thinwire-enet
//!
//! A minimal safe wrapper over ENet 1.3 (the C library game developers use, from Debian's
//! `libenet-dev`), enough for the thinwire lab to drive ENet as a real peer: create a host,
//! connect, send reliable or unsequenced packets on a channel, and service events (also
//! without copying packets); read the bound port, a peer's address and whether a peer's reliable window holds
//! packets back (for senders that must not queue without bound, like `thinwire bench`).
//!
//! The FFI declarations are written by hand against `enet/enet.h` 1.3.17 (only the few
//! functions and the three structs whose fields are read, plus the leading fields of
//! `ENetHost` and `ENetPeer` up to those read, their offsets checked at compile time); all
//! `unsafe` lives in `ffi.rs` and `host.rs`, each call with its safety argument. Without the library installed the crate
//! still builds, and [`available`] returns false.

#[cfg(has_enet)]
mod ffi;
mod host;

pub use host::{Event, EventRef, Host, PeerId};

/// Whether ENet was linked (the system library was found at build time).
pub fn available() -> bool {
    cfg!(has_enet)
}

/// An ENet call failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnetError {
    /// The crate was built without the system library (install `libenet-dev` and rebuild).
    #[error("ENet is not available: install libenet-dev and rebuild")]
    Unavailable,
    /// `enet_initialize` failed.
    #[error("enet_initialize failed")]
    Init,
    /// `enet_host_create` failed (address in use, or out of memory).
    #[error("could not create the ENet host")]
    HostCreate,
    /// `enet_host_connect` failed (no free peer slot).
    #[error("could not start an ENet connection")]
    Connect,
    /// `enet_peer_send` or `enet_packet_create` failed.
    #[error("ENet could not send")]
    Send,
    /// `enet_host_service` reported an error.
    #[error("enet_host_service failed")]
    Service,
    /// Only IPv4 addresses are supported by ENet 1.3.
    #[error("ENet 1.3 supports IPv4 only")]
    NotIpv4,
}
