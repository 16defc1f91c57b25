//! Parses arbitrary bytes as a trunk frame; whatever parses must re-emit to bytes that parse
//! to the same frame (`thinwire_gateway::fuzz::trunk`; the tests replay `corpus/trunk` through
//! the same function).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| thinwire_gateway::fuzz::trunk(data));
