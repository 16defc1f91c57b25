//! Parses arbitrary bytes as a trunk frame; whatever parses must re-emit to bytes that parse
//! to the same frame.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinwire_gateway::trunk::Frame;

fuzz_target!(|data: &[u8]| {
    if let Ok(frame) = Frame::parse(data) {
        let bytes = frame.to_vec();
        assert_eq!(Frame::parse(&bytes), Ok(frame));
    }
});
