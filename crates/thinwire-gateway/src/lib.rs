//! # thinwire-gateway
//!
//! Many players' thin flows carried as one trunk: one encrypted, congestion-controlled thinwire
//! connection between a gateway near the players and one near the game server.
//!
//! Two modes share the trunk:
//! - [`trunk`]: the **edge gateway** for thinwire clients. Players connect to a nearby
//!   [`trunk::EdgeGateway`] as they would to the server; each becomes a *flow* on the trunk, and
//!   the [`trunk::ServerGateway`] near the game server opens an ordinary thinwire connection to
//!   the server for each flow, with the player's channels. Ordering domains stay per player.
//! - [`tcm`]: **TCM** (tunneling, compressing, multiplexing) for unmodified games: native IP/UDP
//!   (and IP/TCP) packets have their headers compressed against per-flow contexts, are gathered
//!   per period T into one bundle, tunneled, and restored bit-exactly on the far side.
//!
//! Both are sans-IO, like `thinwire-proto`: datagrams and `now` go in, datagrams, events and the
//! next timeout come out. The `runtime` feature (default) adds the gateway processes behind
//! `thinwire gateway`; the `fuzzing` feature opens `fuzz`, the fuzz targets' bodies.
//! `docs/GATEWAY.md` specifies the trunk framing and the compression byte by byte.
#![forbid(unsafe_code)]

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
pub mod tcm;
pub mod trunk;

#[cfg(feature = "runtime")]
pub mod run;
