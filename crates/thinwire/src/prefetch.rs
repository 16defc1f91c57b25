//! The prefetcher the runtime gives its core ([`thinwire_proto::prefetch`]): the CPU's
//! prefetch instruction over each cache line of what the core names. The only `unsafe` here
//! is that instruction, which hints and can neither read, write nor fault.
#![allow(unsafe_code)]

use thinwire_proto::Prefetcher;

/// This CPU's prefetcher, where the runtime has one (x86-64); `None` elsewhere.
pub(crate) const PREFETCHER: Option<Prefetcher> = if cfg!(target_arch = "x86_64") {
    Some(lines)
} else {
    None
};

/// Asks for each 64-byte line of the `len` bytes at `p` to be brought into every cache level.
fn lines(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in thinwire_proto::prefetch::cache_lines(p, len) {
        // SAFETY: PREFETCHT0 is a hint: it reads nothing architecturally, writes nothing and
        // never faults, whatever the address (the core names live memory anyway)
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}
