//! The demultiplexer (remote side): bundles in, native packets out.

use super::bundle::Records;
use super::config::TcmConfig;
use super::decompress::{Decompressor, Restored};
use super::error::TcmError;
use super::stats::TcmStats;

/// The remote TCM side. Hostile input never panics; memory is bounded by `max_contexts`
/// templates and one scratch packet.
#[derive(Debug)]
pub struct Demultiplexer {
    dec: Decompressor,
    scratch: Vec<u8>,
    stats: TcmStats,
}

impl Demultiplexer {
    /// A demultiplexer; `config.max_contexts` must match the multiplexer's.
    pub fn new(config: &TcmConfig) -> Result<Demultiplexer, TcmError> {
        config.validate()?;
        Ok(Demultiplexer {
            dec: Decompressor::new(config.max_contexts),
            scratch: Vec::with_capacity(2048),
            stats: TcmStats::default(),
        })
    }

    /// Counters so far.
    pub fn stats(&self) -> &TcmStats {
        &self.stats
    }

    /// Restores the packets of `bundle`, handing each to `out` in order; returns how many.
    ///
    /// Records that cannot be restored exactly are skipped and counted. A framing error stops
    /// the bundle (the packets before it have been handed out) and is returned.
    pub fn handle_bundle(
        &mut self,
        bundle: &[u8],
        out: &mut dyn FnMut(&[u8]),
    ) -> Result<usize, TcmError> {
        self.stats.bundles_in += 1;
        let records = Records::new(bundle).inspect_err(|_| self.stats.malformed_bundles += 1)?;
        let mut n = 0;
        for body in records {
            let body = body.inspect_err(|_| self.stats.malformed_bundles += 1)?;
            let counter = match body[0] {
                0x80 => &mut self.stats.full_records,
                0x81 => &mut self.stats.uncompressed_records,
                _ => &mut self.stats.compressed_records,
            };
            *counter += 1;
            match self.dec.restore(body, &mut self.scratch) {
                Restored::Packet => {
                    out(&self.scratch);
                    n += 1;
                    self.stats.restored += 1;
                }
                Restored::ContextLoss => self.stats.context_losses += 1,
                Restored::CheckFailed => self.stats.check_failures += 1,
                Restored::Malformed => self.stats.malformed_records += 1,
            }
        }
        Ok(n)
    }
}
