//! What the bench reads from the system: the machine it runs on, a thread's CPU time, the
//! process's resident set and its heap in use.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The machine a run was measured on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    /// Logical CPUs available to the process.
    pub cores: usize,
    /// CPU model name (`/proc/cpuinfo`), empty when unknown.
    pub cpu_model: String,
    /// Load averages over 1, 5 and 15 minutes when the run started.
    pub load_average_start: [f64; 3],
    /// Load averages when the run ended.
    pub load_average_end: [f64; 3],
    /// Kernel name and release (`/proc/sys/kernel/ostype`, `osrelease`).
    pub kernel: String,
    /// Total memory in MiB.
    pub memory_mib: u64,
    /// ENet's version, when linked.
    pub enet: Option<String>,
    /// GameNetworkingSockets, when loaded: the library and the source commit it was built
    /// from (absent from results written before GNS was a peer).
    #[serde(default)]
    pub gns: Option<String>,
}

impl Machine {
    /// Reads the machine's description now (the end load average is filled in later).
    pub(crate) fn read() -> Self {
        let load = load_average();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default();
        let kernel = format!(
            "{} {}",
            read("/proc/sys/kernel/ostype").trim(),
            read("/proc/sys/kernel/osrelease").trim()
        );
        let memory_mib = status_kib("/proc/meminfo", "MemTotal:") / 1024;
        Self {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            load_average_start: load,
            load_average_end: load,
            kernel: kernel.trim().to_owned(),
            memory_mib,
            enet: thinwire_enet::available().then(|| "1.3 (system libenet)".to_owned()),
            gns: thinwire_gns::available()
                .then(thinwire_gns::describe)
                .flatten(),
        }
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The 1, 5 and 15 minute load averages (zeros when unknown).
pub(crate) fn load_average() -> [f64; 3] {
    let text = read("/proc/loadavg");
    let mut it = text
        .split_whitespace()
        .map(|v| v.parse::<f64>().unwrap_or(0.0));
    [(); 3].map(|_| it.next().unwrap_or(0.0))
}

/// A `Key:   123 kB` line of a `/proc` status file, in KiB (0 when missing).
fn status_kib(path: &str, key: &str) -> u64 {
    read(path)
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The process's resident set in bytes (`VmRSS`, KiB resolution).
pub(crate) fn rss_bytes() -> u64 {
    status_kib("/proc/self/status", "VmRSS:") * 1024
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`).
pub(crate) fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// Bytes of heap in use: every `malloc` (Rust's allocator and ENet's C code both use glibc's)
/// still held in glibc's main arena, and every `mmap`ed chunk. Exact to the chunk, unlike the
/// resident set, which moves by pages and keeps what was freed. Small chunks of a thread that
/// glibc gave an arena of its own (GNS's socket thread) are not seen: `mallinfo2` reports the
/// main arena only.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn heap_in_use() -> Option<u64> {
    // SAFETY: mallinfo2 (glibc 2.33+) takes no arguments, only reads the allocator's
    // statistics under its locks, and returns a plain struct by value.
    let info = unsafe { libc::mallinfo2() };
    Some((info.uordblks + info.hblkhd) as u64)
}

/// The heap in use once it has stopped moving: read every 50 ms until two readings 250 ms
/// apart agree, for at most 5 s (then the last reading). A peer's background thread may
/// still be freeing what an earlier measurement left (GNS closes connections gracefully);
/// the measurement must not start while it does.
pub(crate) fn settled_heap() -> Option<u64> {
    let step = std::time::Duration::from_millis(50);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut last = heap_in_use()?;
    let mut same = 0;
    while same < 5 && std::time::Instant::now() < deadline {
        std::thread::sleep(step);
        let now = heap_in_use()?;
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    Some(last)
}

/// Gives the pages of freed heap memory back to the system (glibc's `malloc_trim(0)`), so
/// that a resident-set reading taken next counts only memory in use, and what is allocated
/// afterwards shows as growth instead of reusing pages an earlier measurement left resident.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn release_free_heap() {
    // SAFETY: malloc_trim takes a plain integer and only returns free pages of glibc's arenas
    // to the kernel (madvise) under the allocator's locks; no pointer in use is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Nothing to give back where the allocator is not glibc's.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn release_free_heap() {}

/// Heap accounting needs glibc; elsewhere only the resident set is measured.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn heap_in_use() -> Option<u64> {
    None
}

/// The CPUs the calling thread may run on (`sched_getaffinity`), lowest first; empty when
/// unknown.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    use rustix::thread::{sched_getaffinity, CpuSet};
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => Vec::new(),
    }
}

/// Restricts the calling thread (and the threads it starts afterwards) to `cpus` (as
/// `taskset` does); false when the set is empty or the system refused.
pub(crate) fn pin_thread(cpus: &[usize]) -> bool {
    use rustix::thread::{sched_setaffinity, CpuSet};
    let mut set = CpuSet::new();
    for &c in cpus.iter().filter(|&&c| c < CpuSet::MAX_CPU) {
        set.set(c);
    }
    set.count() > 0 && sched_setaffinity(None, &set).is_ok()
}
