//! Relay throughput benchmark (ignored by default; needs root and TUN):
//! `cargo test --release -p thinwire-emu --test emu_bench -- --ignored --nocapture`

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use thinwire_emu::{check_capabilities, host_addr, EmuNet, NetSpec};
use thinwire_netmodel::LinkConfig;

#[test]
#[ignore = "benchmark; needs root"]
fn relay_packets_per_second() {
    if let Err(e) = check_capabilities() {
        println!("skipped: {e}");
        return;
    }
    let net = EmuNet::start(NetSpec {
        hosts: 3,
        link: Box::new(|_, _| LinkConfig::default().with_delay(Duration::from_millis(1))),
        seed: 1,
    })
    .unwrap();
    let secs = 3;
    let target = SocketAddr::from((host_addr(0), 9000));
    let sink = net
        .spawn_in(0, move || {
            let s = UdpSocket::bind(target)?;
            s.set_read_timeout(Some(Duration::from_millis(300)))?;
            let mut n = 0u64;
            let mut buf = [0u8; 128];
            while s.recv_from(&mut buf).is_ok() {
                n += 1;
            }
            Ok(n)
        })
        .unwrap();
    let senders: Vec<_> = (1..3)
        .map(|h| {
            net.spawn_in(h, move || {
                let s = UdpSocket::bind("0.0.0.0:0")?;
                let end = Instant::now() + Duration::from_secs(secs);
                let mut n = 0u64;
                while Instant::now() < end {
                    for _ in 0..64 {
                        if s.send_to(&[0u8; 64], target).is_ok() {
                            n += 1;
                        }
                    }
                }
                Ok(n)
            })
            .unwrap()
        })
        .collect();
    let t0 = Instant::now();
    let sent: u64 = senders
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .sum();
    let in_window = net.packets_in();
    let elapsed = t0.elapsed().as_secs_f64();
    let received = sink.join().unwrap().unwrap();
    let stats = net.shutdown();
    println!(
        "relay: {:.0} packets/s in ({} in {elapsed:.2} s), {} out; senders offered {sent}, sink received {received}",
        in_window as f64 / elapsed,
        in_window,
        stats.packets_out
    );
}
