//! thinwire-emu: the real-kernel emulator behind
//! `thinwire lab run SCENARIO --emulate`.
//!
//! Real stacks ([`RealPeer`]: kernel TCP, KCP, QUIC, ENet, GameNetworkingSockets, thinwire over UDP)
//! run as threads of this process, each host in its own network namespace
//! with a TUN device; one relay thread carries every IP packet between the
//! devices through the simulator's link model ([`thinwire_netmodel::Link`])
//! in real time:
//!
//! ```text
//!  host a (netns)              this process                  host b (netns)
//!  peer: Book::sent(id)                                      peer: Book::delivered(id)
//!  socket -> kernel -> tw0 --> reader -> relay: Link(a->b) --> tw0 -> kernel -> socket
//!                                (delay, loss, bandwidth, queues; real time)
//! ```
//!
//! Call order: [`run_and_write`] (the command) calls [`run_emulated`], which
//! for every sweep point and peer starts an [`EmuNet`], runs the peer's hosts
//! in it ([`EmuNet::spawn_in`]) and records the stamps as lab results. The
//! namespaces go when the [`EmuNet`] is dropped or the process is
//! interrupted. Without root or `/dev/net/tun` it fails at once
//! ([`EmuError::NotRoot`], [`EmuError::NoTun`]).
//!
//! How the emulator works, what it measures and its limits: `docs/EMULATOR.md`.
#![forbid(unsafe_code)]

mod lab;
mod net;
mod peers;
mod run;

pub use lab::{run_and_write, LabRunOptions};
pub use net::{check_capabilities, host_addr, spawn_in_netns, EmuNet, NetSpec, RelayStats};
pub use peers::RealPeer;
pub use run::{default_peers, run_emulated, EmuOptions, EmuRun, FailedPeer, PeerCounters};

/// Errors of the emulator.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The process is not root.
    #[error("the emulator needs root (network namespaces and TUN devices); run as root")]
    NotRoot,
    /// `/dev/net/tun` cannot be opened or a TUN device cannot be created.
    #[error("the emulator needs TUN devices: {0}")]
    NoTun(String),
    /// Setting up the emulated network failed.
    #[error("emulator setup: {0}")]
    Setup(String),
    /// The scenario uses something the emulator does not support.
    #[error("not supported by the emulator: {0}")]
    Unsupported(String),
    /// A peer failed.
    #[error("peer {peer}: {msg}")]
    Peer {
        /// Peer label.
        peer: String,
        /// What went wrong.
        msg: String,
    },
    /// No real peer of that name for the scenario (the caller's choice).
    #[error("no real peer {name:?} for scenario {scenario}; it has: {}", .available.join(", "))]
    UnknownPeer {
        /// The name asked for.
        name: String,
        /// Scenario name.
        scenario: String,
        /// The names of the scenario's real peers.
        available: Vec<String>,
    },
    /// The simulator run beside the emulator, or writing the outputs, failed.
    #[error(transparent)]
    Lab(#[from] thinwire_lab::LabError),
    /// I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
