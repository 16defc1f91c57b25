//! Counters of the multiplexer and the demultiplexer.

use std::time::Duration;

/// Counters of one TCM side. The multiplexer fills the `*_in`/`*_out` and hold fields, the
/// demultiplexer the `restored`, `context_losses`, `check_failures` and `malformed_*` ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcmStats {
    /// Native packets pushed into the multiplexer.
    pub packets_in: u64,
    /// Bytes of those native packets (IP level).
    pub bytes_in: u64,
    /// Bundles emitted.
    pub bundles_out: u64,
    /// Bytes of those bundles (without the trunk's overhead).
    pub bundle_bytes_out: u64,
    /// Packets emitted native (alone in their period, or too large for a bundle).
    pub natives_out: u64,
    /// Bytes of those native packets.
    pub native_bytes_out: u64,
    /// COMPRESSED records emitted (multiplexer) or received (demultiplexer).
    pub compressed_records: u64,
    /// FULL records emitted or received.
    pub full_records: u64,
    /// UNCOMPRESSED records emitted or received.
    pub uncompressed_records: u64,
    /// Packets the multiplexer's buffer policy dropped.
    pub buffer_drops: u64,
    /// Sum of the time packets were held before going out.
    pub hold_total: Duration,
    /// Longest time a packet was held.
    pub hold_max: Duration,
    /// Bundles handed to the demultiplexer.
    pub bundles_in: u64,
    /// Packets the demultiplexer restored.
    pub restored: u64,
    /// COMPRESSED records dropped because their context (generation) was missing.
    pub context_losses: u64,
    /// COMPRESSED records dropped because the restored packet failed its checksum or CRC.
    pub check_failures: u64,
    /// Records that could not be parsed (bad type, context id out of range, short fields).
    pub malformed_records: u64,
    /// Bundles rejected as a whole or in part (bad version, truncated framing).
    pub malformed_bundles: u64,
}

impl TcmStats {
    /// Packets that left the multiplexer (in bundles or native).
    pub fn packets_out(&self) -> u64 {
        self.compressed_records + self.full_records + self.uncompressed_records + self.natives_out
    }

    /// Mean hold time of the packets that left.
    pub fn hold_mean(&self) -> Duration {
        match self.packets_out() {
            0 => Duration::ZERO,
            n => Duration::from_nanos((self.hold_total.as_nanos() / n as u128) as u64),
        }
    }

    /// Adds `o`'s counts to these (the hold maximum is the larger): the totals of several
    /// multiplexers, one per trunk peer.
    pub fn merge(&mut self, o: &TcmStats) {
        let TcmStats {
            packets_in,
            bytes_in,
            bundles_out,
            bundle_bytes_out,
            natives_out,
            native_bytes_out,
            compressed_records,
            full_records,
            uncompressed_records,
            buffer_drops,
            hold_total,
            hold_max,
            bundles_in,
            restored,
            context_losses,
            check_failures,
            malformed_records,
            malformed_bundles,
        } = *o;
        self.packets_in += packets_in;
        self.bytes_in += bytes_in;
        self.bundles_out += bundles_out;
        self.bundle_bytes_out += bundle_bytes_out;
        self.natives_out += natives_out;
        self.native_bytes_out += native_bytes_out;
        self.compressed_records += compressed_records;
        self.full_records += full_records;
        self.uncompressed_records += uncompressed_records;
        self.buffer_drops += buffer_drops;
        self.hold_total += hold_total;
        self.hold_max = self.hold_max.max(hold_max);
        self.bundles_in += bundles_in;
        self.restored += restored;
        self.context_losses += context_losses;
        self.check_failures += check_failures;
        self.malformed_records += malformed_records;
        self.malformed_bundles += malformed_bundles;
    }
}
