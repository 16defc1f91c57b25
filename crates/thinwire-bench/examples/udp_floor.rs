//! The kernel's floor under the round trips of `thinwire bench`: bare UDP on loopback, with no
//! protocol at all. What a transport adds to a round trip is what it measures above this.
//!
//! ```text
//! cargo run --release -p thinwire-bench --example udp_floor -- [REPS]
//! ```
//!
//! Two threads echo one 57-byte datagram (the size of thinwire's encrypted datagram carrying
//! one 24-byte message) back and forth, 3 s after 0.3 s of warm-up, as the bench's round trips
//! do: the client sends, then reads until the answer comes, waiting in `ppoll` whenever its
//! socket is empty; the echo thread waits in `ppoll`, then reads and answers until its socket
//! is empty (so each side also makes one read that finds nothing, as thinwire's host does).
//! It prints the p50 and p99 with the two threads free to run on either core (as the bench's
//! round trips run), then with both pinned to one core, `REPS` times (3 by default).
//!
//! Linux only (`ppoll`, `sched_setaffinity`).

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("udp_floor: Linux only");
}

#[cfg(target_os = "linux")]
fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let cpus = floor::allowed_cpus();
    println!(
        "CPUs allowed: {cpus:?}; kernel {}",
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    for rep in 1..=reps {
        let show = |how: &str, r: Option<(f64, f64)>| match r {
            Some((p50, p99)) => {
                println!("[{rep}/{reps}] round trip, {how}: p50 {p50:.1} µs, p99 {p99:.1} µs")
            }
            None => println!("[{rep}/{reps}] round trip, {how}: no round trip completed"),
        };
        show("threads on any core", floor::round_trip(None, &cpus));
        if let Some(&first) = cpus.first() {
            show(
                "both threads on one core",
                floor::round_trip(Some(first), &cpus),
            );
        }
    }
}

/// The measurement (Linux only).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod floor {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    /// Bytes per datagram: thinwire's encrypted datagram carrying one 24-byte message.
    const SIZE: usize = 57;
    /// Warm-up, then the measured time.
    const WARM: Duration = Duration::from_millis(300);
    const MEASURE: Duration = Duration::from_secs(3);
    /// A round trip not answered by then counts as lost (as in the bench).
    const GIVE_UP: Duration = Duration::from_millis(200);

    /// The CPUs this process may run on (empty if it cannot tell).
    pub(crate) fn allowed_cpus() -> Vec<usize> {
        // SAFETY: a zeroed cpu_set_t is an empty set; the call writes at most its size
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    /// Lets the calling thread run on `cpus` only.
    fn pin(cpus: &[usize]) {
        // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET adds CPUs below CPU_SETSIZE
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    }

    /// Waits until `s` is readable or `timeout` passes, as the stacks' hosts wait.
    fn wait(s: &UdpSocket, timeout: Duration) {
        let mut p = libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask
        unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    }

    fn bind() -> UdpSocket {
        let s = UdpSocket::bind("127.0.0.1:0").expect("bind a loopback socket");
        s.set_nonblocking(true).expect("non-blocking");
        s
    }

    /// p50 and p99 in µs of the round trips of [`MEASURE`]; `cpu`: both threads on it (the
    /// calling thread gets `all` back afterwards). `None` if none completed.
    pub(crate) fn round_trip(cpu: Option<usize>, all: &[usize]) -> Option<(f64, f64)> {
        let (client, echo) = (bind(), bind());
        let to = echo.local_addr().expect("address");
        let stop = Arc::new(AtomicBool::new(false));
        let server = {
            let stop = stop.clone();
            thread::spawn(move || {
                if let Some(c) = cpu {
                    pin(&[c]);
                }
                let mut buf = [0u8; 2048];
                while !stop.load(Ordering::Relaxed) {
                    wait(&echo, Duration::from_millis(5));
                    while let Ok((n, from)) = echo.recv_from(&mut buf) {
                        let _ = echo.send_to(&buf[..n], from);
                    }
                }
            })
        };
        if let Some(c) = cpu {
            pin(&[c]);
        }
        let mut times = Vec::new();
        let mut buf = [0u8; 2048];
        let measure_from = Instant::now() + WARM;
        let end = measure_from + MEASURE;
        while Instant::now() < end {
            let t0 = Instant::now();
            if client.send_to(&[7u8; SIZE], to).is_err() {
                break;
            }
            let give_up = t0 + GIVE_UP;
            while Instant::now() < give_up {
                if client.recv_from(&mut buf).is_ok() {
                    if t0 >= measure_from {
                        times.push(t0.elapsed().as_nanos() as u64);
                    }
                    break;
                }
                wait(&client, give_up.saturating_duration_since(Instant::now()));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let _ = server.join();
        if cpu.is_some() {
            pin(all);
        }
        if times.is_empty() {
            return None;
        }
        times.sort_unstable();
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
        Some((at(0.5), at(0.99)))
    }
}
