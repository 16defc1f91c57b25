//! Fuzz target: a connected client and server driven by the input (API calls on both sides,
//! time steps, mutated and raw datagrams toward the server), with the invariants of
//! `thinwire_proto::testing::fuzz::drive`: no panic, memory within the receive budget and the
//! sent-ledger bound, and every class's delivery promise when nothing was forged.
//!
//! Run with `cargo +nightly fuzz run endpoint` from `crates/thinwire-proto`. CI replays the
//! corpus (`corpus/endpoint`) through the same drive in `cargo test`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    thinwire_proto::testing::fuzz::drive(data);
});
