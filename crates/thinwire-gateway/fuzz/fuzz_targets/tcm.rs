//! Arbitrary bytes into a TCM demultiplexer: it must never panic. The first byte picks how
//! many context slots the demultiplexer has; the rest is split into bundles at 0xff bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use thinwire_gateway::tcm::{Demultiplexer, TcmConfig};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let config = TcmConfig {
        max_contexts: first as usize % 256 + 1,
        ..TcmConfig::default()
    };
    let mut demux = Demultiplexer::new(&config).expect("valid config");
    for bundle in rest.split(|&b| b == 0xff) {
        let _ = demux.handle_bundle(bundle, &mut |p| assert!(!p.is_empty()));
    }
});
