//! thinwire-emu: the real-kernel emulator (`thinwire lab run SCENARIO --emulate`).
//!
//! # Design
//!
//! Every host of a scenario (host 0 the server, hosts `1..=n` the clients)
//! gets its own Linux network namespace, named `twemu-<pid>-<run>-<host>`
//! so that concurrent runs never collide. Inside it a TUN device `tw0`
//! carries the host's address `10.77.x.y/16` (see [`host_addr`]); every
//! packet a host sends to another emulated host therefore leaves its kernel
//! through the TUN device. The file descriptors of all TUN devices are held
//! by this process in the root namespace: one reader thread per device
//! reads whole IP packets and hands them to a single relay thread, which
//! looks only at the IPv4 destination (parsed with `etherparse`; nothing is
//! rewritten, so no checksum changes), offers the packet to the
//! [`thinwire_netmodel::Link`] of that directed host pair — the same
//! link model the simulator uses (delay, jitter, loss processes, bandwidth,
//! queues, traces) — with real time (`Instant::now()`), and writes it into
//! the destination's TUN device when the model delivers it.
//!
//! # Peers and namespaces
//!
//! Peers are threads of this process, not child processes: a thread calls
//! `setns(2)` (through `nix`) into its host's namespace before creating any
//! socket ([`spawn_in_netns`]); sockets stay in the namespace they were
//! created in, and threads it spawns (e.g. a tokio runtime's workers)
//! inherit it.
//!
//! # Clock
//!
//! Because every host is a thread of one process, send and delivery
//! timestamps are `std::time::Instant`s (`CLOCK_MONOTONIC`) of one clock:
//! one-way latency is delivery instant minus send instant, exact up to the
//! scheduling of the two threads, with no clock synchronisation involved.
//!
//! # Cleanup
//!
//! Namespaces are deleted (which destroys their TUN devices and sockets)
//! when the [`EmuNet`] is dropped — at the end of a run, on error and on
//! panic unwinding — and a SIGINT/SIGTERM handler (installed once per
//! process with `ctrlc`) deletes the namespaces of every live emulation
//! before exiting with status 130. Without root or `/dev/net/tun`,
//! [`EmuNet::start`] fails at once with [`EmuError::NotRoot`] or
//! [`EmuError::NoTun`].

mod enet_peer;
mod net;
mod peers;
mod run;

pub use net::{check_capabilities, host_addr, spawn_in_netns, EmuNet, NetSpec, RelayStats};
pub use peers::RealPeer;
pub use run::{default_peers, run_emulated, EmuOptions, EmuRun, PeerCounters};

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
    /// I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
