//! The fuzz targets' bodies (`fuzz/fuzz_targets/{tcm,trunk}.rs` call these), so that the
//! tests can replay the committed corpora (`fuzz/corpus/{tcm,trunk}`) through exactly what the
//! fuzzer ran. Each panics when its invariant breaks, which is what a fuzzer looks for.

use crate::tcm::{Demultiplexer, TcmConfig};
use crate::trunk::Frame;

/// Arbitrary bytes into a TCM demultiplexer: it must never panic, and never hand out an empty
/// packet. The first byte picks how many context slots the demultiplexer has; the rest is
/// split into bundles at 0xff bytes.
pub fn tcm(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let config = TcmConfig {
        max_contexts: usize::from(first) + 1,
        ..TcmConfig::default()
    };
    let mut demux = Demultiplexer::new(&config).expect("valid config");
    for bundle in rest.split(|&b| b == 0xff) {
        let _ = demux.handle_bundle(bundle, &mut |p| assert!(!p.is_empty()));
    }
}

/// Arbitrary bytes as a trunk frame: whatever parses re-emits to bytes that parse to the same
/// frame; a Batch's entries are Data frames on their own, as many as it counts.
pub fn trunk(data: &[u8]) {
    if let Ok(frame) = Frame::parse(data) {
        let bytes = frame.to_vec();
        assert_eq!(Frame::parse(&bytes), Ok(frame.clone()));
        if let Frame::Batch(b) = frame {
            assert_eq!(b.entries().count(), b.count());
            for (entry, d) in b.entries() {
                assert_eq!(Frame::parse(entry), Ok(Frame::Data(d)));
            }
        }
    }
}

#[cfg(test)]
mod tests;
