//! TCM: tunneling, compressing and multiplexing native game packets (Saldaña et al.,
//! "Influencia del buffer del router en la multiplexión de juegos online").
//!
//! ```text
//!  game packets (TUN)                                              game packets (TUN)
//!  ──push(now, pkt)──▶ Multiplexer ──Bundle──▶ trunk ──▶ Demultiplexer ──out(pkt)──▶
//!                        │  compress (per-flow contexts)       restore bit-exactly
//!                        │  gather per period T, ≤ mtu
//!                        └──Native (alone in its period)──────────────────────────▶
//! ```
//!
//! Call order on the local side: [`Multiplexer::push`] for each packet, and
//! [`Multiplexer::handle_timeout`] at [`Multiplexer::poll_timeout`] (the end of the period);
//! after either, drain [`Multiplexer::poll_output`]. On the remote side, hand each bundle the
//! trunk delivers to [`Demultiplexer::handle_bundle`].
//!
//! Headers are compressed against per-flow contexts (IPHC/ROHC-like; [`compress`](self) rules
//! in `compress.rs`): a steady IPv4/UDP flow costs 6 bytes per packet (length, type, context,
//! IPv4 id low byte, UDP checksum) instead of the native 28. The UDP/TCP checksum is sent
//! verbatim: that keeps the restoration bit-exact whatever the sender put there (a zero UDP
//! checksum included), and, when it verifies, lets the far side check its reconstruction for
//! free; otherwise a CRC-8 of the header is added. The IPv4 header checksum is recomputed,
//! which is why only packets whose header checksum is right are compressed. Restoration is
//! all-or-nothing: a record whose context is missing or whose check fails is dropped and
//! counted, never delivered wrong. `docs/GATEWAY.md` §3 gives every byte.
//!
//! [`bwr`] holds the paper's bandwidth-relation formula.

pub mod bundle;
pub mod bwr;
mod compress;
mod config;
mod context;
mod decompress;
mod demux;
mod error;
mod mux;
mod stats;
#[cfg(test)]
mod tests;

pub use config::{BufferPolicy, TcmConfig};
pub use demux::Demultiplexer;
pub use error::TcmError;
pub use mux::{Multiplexer, Output};
pub use stats::TcmStats;
