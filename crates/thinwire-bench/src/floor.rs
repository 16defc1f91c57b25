//! The kernel's floor under the bench's round trips: bare UDP on loopback, no protocol. Two
//! threads echo one [`FLOOR_DATAGRAM`]-byte datagram back and forth, waiting as the stacks'
//! hosts wait (`poll` when the socket is empty, then read until it is empty again), so what a
//! transport adds to a round trip is what it measures above this. Run by the example
//! `udp_floor` (`cargo run --release -p thinwire-bench --example udp_floor`).

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};

use crate::rtt::{histogram, GIVE_UP};
use crate::sys::{allowed_cpus, pin_thread};

/// Bytes per datagram: thinwire's encrypted datagram carrying one 24-byte message.
pub const FLOOR_DATAGRAM: usize = 57;
/// Warm-up and measured time (the bench's defaults).
const WARMUP: Duration = Duration::from_millis(300);
const MEASURE: Duration = Duration::from_secs(3);

/// One run's round trips.
#[derive(Debug, Clone, Copy)]
pub struct FloorSample {
    /// Median round trip, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
}

/// Runs 3 s of bare round trips (after 0.3 s of warm-up) and returns their p50 and p99.
/// `one_core`: both threads on the first CPU this process may use (as `taskset -c` would);
/// otherwise they run where the system puts them, as the bench's round trips do. The calling
/// thread gets its CPUs back afterwards.
pub fn udp_round_trip(one_core: bool) -> Result<FloorSample, String> {
    let all = allowed_cpus();
    let cpu = match (one_core, all.first()) {
        (false, _) => None,
        (true, Some(&c)) => Some(c),
        (true, None) => return Err("cannot tell which CPUs this process may use".into()),
    };
    let bind = || -> Result<UdpSocket, String> {
        let s = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
        s.set_nonblocking(true).map_err(|e| e.to_string())?;
        Ok(s)
    };
    let (client, echo) = (bind()?, bind()?);
    let to = echo.local_addr().map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        thread::spawn(move || {
            if let Some(c) = cpu {
                pin_thread(&[c]);
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
        pin_thread(&[c]);
    }
    let result = measure(&client, to);
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    if cpu.is_some() {
        pin_thread(&all);
    }
    result
}

/// The client's side: one datagram, then read (waiting while the socket is empty) until the
/// echo comes or [`GIVE_UP`] passes; round trips started after the warm-up are counted.
fn measure(client: &UdpSocket, to: std::net::SocketAddr) -> Result<FloorSample, String> {
    let mut hist = histogram()?;
    let mut buf = [0u8; 2048];
    let measure_from = Instant::now() + WARMUP;
    let end = measure_from + MEASURE;
    while Instant::now() < end {
        let t0 = Instant::now();
        client
            .send_to(&[7u8; FLOOR_DATAGRAM], to)
            .map_err(|e| format!("send: {e}"))?;
        let give_up = t0 + GIVE_UP;
        loop {
            if client.recv_from(&mut buf).is_ok() {
                if t0 >= measure_from {
                    let _ = hist.record((t0.elapsed().as_nanos() as u64).max(1));
                }
                break;
            }
            let now = Instant::now();
            if now >= give_up {
                break;
            }
            wait(client, give_up - now);
        }
    }
    if hist.is_empty() {
        return Err("no round trip completed".into());
    }
    let us = |q| hist.value_at_quantile(q) as f64 / 1000.0;
    Ok(FloorSample {
        p50_us: us(0.5),
        p99_us: us(0.99),
    })
}

/// Waits until `s` is readable or `timeout` passes (as `thinwire::Host` waits).
fn wait(s: &UdpSocket, timeout: Duration) {
    let ts = Timespec {
        tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    let _ = poll(&mut [PollFd::new(s, PollFlags::IN)], Some(&ts));
}
