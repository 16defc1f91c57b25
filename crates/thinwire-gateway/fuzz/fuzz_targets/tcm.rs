//! Arbitrary bytes into a TCM demultiplexer: it must never panic (`thinwire_gateway::fuzz::tcm`;
//! the tests replay `corpus/tcm` through the same function).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| thinwire_gateway::fuzz::tcm(data));
