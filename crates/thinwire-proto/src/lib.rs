//! thinwire-proto: the sans-IO core of thinwire (work in progress).
#![forbid(unsafe_code)]

pub mod netmodel;
pub mod wire;
