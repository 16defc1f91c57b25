//! The gateway processes behind `thinwire gateway`: the sans-IO gateways of [`crate::trunk`]
//! (and [`crate::tcm`]) driven by real UDP sockets, TUN devices and the clock.
//!
//! One task per gateway loops, as the runtime's driver does: send what the machine wants
//! sent, hand it its events, then wait for the first of a datagram on either socket, a packet
//! from the TUN device (TCM), the machine's next timeout, or the stop signal.
//!
//! ```text
//!  players / game server          gateway process                    trunk peer
//!  local socket ──► handle_datagram(Local) ─┐                ┌─ handle_datagram(Trunk) ◄── trunk socket
//!                                           ▼                ▼
//!                                   EdgeGateway / ServerGateway (sans-IO)
//!  local socket ◄── poll_transmit → (Local, ..)   (Trunk, ..) → trunk socket
//! ```

mod credential;
pub(crate) mod drive;
mod keys;
pub mod metrics;
mod process;
mod tcm;

pub use credential::{
    expires_in, fresh_nonce, load_credential, load_or_create_operator_key, load_token_key,
    save_credential, CredentialFileError,
};
pub use drive::Report;
pub use keys::load_or_create_key;
pub use metrics::{Metrics, MetricsServer};
pub use process::{EdgeProcess, RunError, Runner, ServerProcess, Stop};
pub use tcm::{
    tun_mtu, Cidr, TcmLocalProcess, TcmProcessStats, TcmRemoteProcess, TcmReport, TcmRunError,
    TcmRunner, TunCounters, TunSpec,
};
pub use thinwire::keys::KeyFileError;
