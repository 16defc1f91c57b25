//! Fuzz target: every wire decoder on arbitrary datagrams (packets, frames, the handshake
//! payloads, connect tokens), and a decode → encode → decode round trip of whatever decodes
//! (`thinwire_proto::testing::fuzz::packet`).
//!
//! Run with `cargo +nightly fuzz run packet` from `crates/thinwire-proto`. CI replays the
//! corpus (`corpus/packet`) through the same function in `cargo test`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| thinwire_proto::testing::fuzz::packet(data));
