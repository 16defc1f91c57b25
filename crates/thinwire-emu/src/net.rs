//! Network namespaces, TUN devices and the relay that joins them.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sched::{setns, CloneFlags};
use thinwire_netmodel::{Link, LinkConfig, LinkStats};

use super::EmuError;

/// Largest packet the relay reads from a TUN device.
const MTU: usize = 1500;
/// Address the shutdown poke is sent to (routed into the TUN device, never a host).
const POKE_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 255, 254);

/// Namespaces alive in this process, removed by the Ctrl-C handler.
fn registry() -> &'static Mutex<HashSet<String>> {
    static REG: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    REG.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Installs (once) a SIGINT/SIGTERM handler that deletes every namespace
/// of this process's emulations and exits with status 130. If the program
/// already has its own handler, the `Drop` guards still clean up on unwinding.
fn install_signal_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::try_set_handler(|| {
            let names: Vec<String> = registry()
                .lock()
                .map(|r| r.iter().cloned().collect())
                .unwrap_or_default();
            for n in names {
                let _ = Command::new("ip").args(["netns", "del", &n]).status();
            }
            eprintln!("thinwire emu: interrupted, emulated network removed");
            std::process::exit(130);
        });
    });
}

fn run_ip(args: &[&str]) -> Result<(), EmuError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| EmuError::Setup(format!("cannot run `ip`: {e}")))?;
    if !out.status.success() {
        return Err(EmuError::Setup(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Checks, without creating anything, that this process can emulate:
/// root, `/dev/net/tun`, and the `ip` tool.
pub fn check_capabilities() -> Result<(), EmuError> {
    if !nix::unistd::geteuid().is_root() {
        return Err(EmuError::NotRoot);
    }
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
    {
        return Err(EmuError::NoTun(e.to_string()));
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err(EmuError::Setup(
            "the `ip` tool (iproute2) is missing".into(),
        )),
    }
}

/// Counters of the relay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Packets read from the TUN devices.
    pub packets_in: u64,
    /// Packets written to the TUN devices.
    pub packets_out: u64,
    /// Packets addressed outside the emulated hosts (dropped).
    pub unroutable: u64,
    /// Per directed host pair `(src, dst)`, the link model's counters.
    pub links: Vec<((usize, usize), LinkStats)>,
}

/// How to build an emulated network.
pub struct NetSpec {
    /// Number of hosts (host 0 is conventionally the server).
    pub hosts: usize,
    /// Link configuration of each directed host pair `(src, dst)`.
    pub link: Box<dyn Fn(usize, usize) -> LinkConfig + Send>,
    /// Seed of the link models (each pair derives its own).
    pub seed: u64,
}

impl std::fmt::Debug for NetSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetSpec")
            .field("hosts", &self.hosts)
            .field("seed", &self.seed)
            .finish()
    }
}

/// Removes the namespaces it names on drop (also on panic unwinding).
#[derive(Debug)]
struct NsGuard {
    names: Vec<String>,
}

impl Drop for NsGuard {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
            if let Ok(mut r) = registry().lock() {
                r.remove(n);
            }
        }
    }
}

/// Runs `f` on a new thread that has joined the network namespace `ns`
/// (a name under `/run/netns`). Sockets created there belong to it.
pub fn spawn_in_netns<T, F>(ns: &str, f: F) -> std::io::Result<JoinHandle<Result<T, EmuError>>>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, EmuError> + Send + 'static,
{
    let path = format!("/run/netns/{ns}");
    std::thread::Builder::new()
        .name(format!("emu-{ns}"))
        .spawn(move || {
            let file = File::open(&path)
                .map_err(|e| EmuError::Setup(format!("cannot open {path}: {e}")))?;
            setns(&file, CloneFlags::CLONE_NEWNET)
                .map_err(|e| EmuError::Setup(format!("setns {path}: {e}")))?;
            drop(file);
            f()
        })
}

/// A running emulated network: one namespace and TUN device per host, and
/// the relay threads. Dropping it stops the relay and removes everything.
pub struct EmuNet {
    prefix: String,
    names: Vec<String>,
    stop: Arc<AtomicBool>,
    readers: Vec<JoinHandle<()>>,
    relay: Option<JoinHandle<RelayStats>>,
    pokers: Vec<UdpSocket>,
    packets_in: Arc<AtomicU64>,
    // Declared last: namespaces go after the threads have stopped.
    _guard: NsGuard,
}

impl std::fmt::Debug for EmuNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmuNet")
            .field("names", &self.names)
            .finish()
    }
}

/// The address of host `i` inside the emulated network (10.77.0.0/16).
pub fn host_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, (i / 250) as u8, (i % 250 + 1) as u8)
}

/// The index of the emulated host with address `a` (the inverse of [`host_addr`]).
pub(super) fn host_index(a: [u8; 4]) -> Option<usize> {
    if a[0] != 10 || a[1] != 77 || a[3] == 0 || a[3] > 250 {
        return None;
    }
    Some(usize::from(a[2]) * 250 + usize::from(a[3]) - 1)
}

type Packet = (usize, Vec<u8>);

/// In the new namespace `ns` of host `i`: the TUN device `tw0` with the
/// host's address, up, and a UDP socket to poke the device on shutdown.
fn host_device(ns: &str, i: usize) -> Result<(tun::Device, UdpSocket), EmuError> {
    let dev = "tw0".to_string();
    let dev2 = dev.clone();
    let device = spawn_in_netns(ns, move || {
        let mut cfg = tun::Configuration::default();
        cfg.tun_name(&dev2);
        cfg.platform_config(|p| {
            p.ensure_root_privileges(false);
        });
        tun::Device::new(&cfg).map_err(|e| EmuError::NoTun(e.to_string()))
    })
    .map_err(EmuError::Io)?
    .join()
    .map_err(|_| EmuError::Setup("TUN thread panicked".into()))??;
    let addr = format!("{}/16", host_addr(i));
    run_ip(&["-n", ns, "addr", "add", &addr, "dev", &dev])?;
    run_ip(&["-n", ns, "link", "set", "dev", &dev, "up", "mtu", "1500"])?;
    run_ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
    let poker = spawn_in_netns(ns, || UdpSocket::bind("0.0.0.0:0").map_err(EmuError::Io))
        .map_err(EmuError::Io)?
        .join()
        .map_err(|_| EmuError::Setup("socket thread panicked".into()))??;
    Ok((device, poker))
}

impl EmuNet {
    /// Creates the namespaces, TUN devices and relay. Fails at once (no
    /// hang) without root or TUN.
    pub fn start(spec: NetSpec) -> Result<EmuNet, EmuError> {
        check_capabilities()?;
        if spec.hosts == 0 || spec.hosts > 250 * 200 {
            return Err(EmuError::Setup(format!("bad host count {}", spec.hosts)));
        }
        for a in 0..spec.hosts {
            for b in 0..spec.hosts {
                if a != b {
                    (spec.link)(a, b)
                        .validate()
                        .map_err(|e| EmuError::Setup(format!("link {a}->{b}: {e}")))?;
                }
            }
        }
        install_signal_handler();
        static RUN: AtomicU64 = AtomicU64::new(0);
        let pid = std::process::id();
        let run = RUN.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("twemu-{pid}-{run}-");
        let names: Vec<String> = (0..spec.hosts).map(|i| format!("{prefix}{i}")).collect();
        let mut guard = NsGuard { names: Vec::new() };
        let mut devices = Vec::with_capacity(spec.hosts);
        let mut pokers = Vec::with_capacity(spec.hosts);
        for (i, ns) in names.iter().enumerate() {
            if let Ok(mut r) = registry().lock() {
                r.insert(ns.clone());
            }
            run_ip(&["netns", "add", ns])?;
            guard.names.push(ns.clone());
            let (device, poker) = host_device(ns, i)?;
            pokers.push(poker);
            devices.push(device);
        }

        let stop = Arc::new(AtomicBool::new(false));
        let packets_in = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::sync_channel::<Packet>(65_536);
        let mut writers = Vec::with_capacity(devices.len());
        let mut readers = Vec::with_capacity(devices.len());
        for (i, d) in devices.into_iter().enumerate() {
            let (mut reader, writer) = d.split();
            writers.push(writer);
            let tx = tx.clone();
            let stop = stop.clone();
            let count = packets_in.clone();
            let h = std::thread::Builder::new()
                .name(format!("emu-tun-{i}"))
                .spawn(move || {
                    let mut buf = [0u8; MTU + 64];
                    while !stop.load(Ordering::Relaxed) {
                        match reader.read(&mut buf) {
                            Ok(n) if n >= 20 => {
                                count.fetch_add(1, Ordering::Relaxed);
                                if tx.send((i, buf[..n].to_vec())).is_err() {
                                    break;
                                }
                            }
                            Ok(_) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(_) => break,
                        }
                    }
                })
                .map_err(EmuError::Io)?;
            readers.push(h);
        }
        drop(tx);
        let hosts = spec.hosts;
        let mut links: Vec<Option<Link<Vec<u8>>>> = Vec::with_capacity(hosts * hosts);
        for a in 0..hosts {
            for b in 0..hosts {
                links.push((a != b).then(|| {
                    Link::new(
                        (spec.link)(a, b),
                        thinwire_lab::seed::pair(spec.seed, a as u64, b as u64),
                    )
                }));
            }
        }
        let relay = std::thread::Builder::new()
            .name("emu-relay".into())
            .spawn(move || relay_loop(rx, writers, links, hosts))
            .map_err(EmuError::Io)?;
        Ok(EmuNet {
            prefix,
            names,
            stop,
            readers,
            relay: Some(relay),
            pokers,
            packets_in,
            _guard: guard,
        })
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.names.len()
    }

    /// The namespace name of host `i`.
    pub fn netns(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// The prefix of every namespace name of this network (`twemu-PID-N-`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Packets read by the relay so far.
    pub fn packets_in(&self) -> u64 {
        self.packets_in.load(Ordering::Relaxed)
    }

    /// Runs `f` on a thread inside host `i`'s namespace.
    pub fn spawn_in<T, F>(
        &self,
        i: usize,
        f: F,
    ) -> Result<JoinHandle<Result<T, EmuError>>, EmuError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, EmuError> + Send + 'static,
    {
        spawn_in_netns(&self.names[i], f).map_err(EmuError::Io)
    }

    fn stop_threads(&mut self) -> RelayStats {
        self.stop.store(true, Ordering::Relaxed);
        // Wake every blocked TUN reader with one packet routed into its device.
        for p in &self.pokers {
            let _ = p.send_to(&[0], SocketAddr::from((POKE_ADDR, 9)));
        }
        for h in self.readers.drain(..) {
            let _ = h.join();
        }
        self.relay
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// Stops the relay and removes the namespaces and devices; returns the
    /// relay's counters.
    pub fn shutdown(mut self) -> RelayStats {
        self.stop_threads()
        // `guard` is dropped with `self`, deleting the namespaces.
    }
}

impl Drop for EmuNet {
    fn drop(&mut self) {
        if self.relay.is_some() {
            self.stop_threads();
        }
    }
}

fn relay_loop(
    rx: mpsc::Receiver<Packet>,
    mut writers: Vec<tun::Writer>,
    mut links: Vec<Option<Link<Vec<u8>>>>,
    hosts: usize,
) -> RelayStats {
    let mut stats = RelayStats::default();
    let mut next_due: Option<Instant> = None;
    // Indices of the links holding packets: only these need polling (most of
    // the hosts² links, e.g. client to client, never carry any).
    let mut busy: Vec<usize> = Vec::new();
    loop {
        let now = Instant::now();
        if next_due.is_some_and(|t| t <= now) {
            next_due = None;
            busy.retain(|&idx| {
                let Some(l) = links[idx].as_mut() else {
                    return false;
                };
                while let Some(p) = l.poll_deliver(now) {
                    if writers[idx % hosts].write(&p).is_ok() {
                        stats.packets_out += 1;
                    }
                }
                let next = l.next_delivery();
                if let Some(t) = next {
                    next_due = Some(next_due.map_or(t, |n| n.min(t)));
                }
                next.is_some()
            });
        }
        let timeout = match next_due {
            Some(t) => t.saturating_duration_since(Instant::now()),
            None => Duration::from_millis(50),
        };
        let first = if timeout.is_zero() {
            match rx.try_recv() {
                Ok(p) => Some(p),
                Err(mpsc::TryRecvError::Empty) => None,
                Err(mpsc::TryRecvError::Disconnected) => break,
            }
        } else {
            match rx.recv_timeout(timeout) {
                Ok(p) => Some(p),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        };
        // On stop this keeps draining until the readers (being joined) hang up.
        let Some(first) = first else {
            continue;
        };
        let now = Instant::now();
        let mut handle = |(src, pkt): Packet| {
            stats.packets_in += 1;
            let dst = match etherparse::Ipv4HeaderSlice::from_slice(&pkt) {
                Ok(h) => host_index(h.destination()),
                Err(_) => None,
            };
            match dst {
                Some(dst) if dst < hosts && dst != src => {
                    let size = pkt.len();
                    let idx = src * hosts + dst;
                    if let Some(l) = links[idx].as_mut() {
                        let was_idle = l.next_delivery().is_none();
                        if let thinwire_netmodel::SendOutcome::Scheduled(t) = l.send(now, pkt, size)
                        {
                            next_due = Some(next_due.map_or(t, |n| n.min(t)));
                        }
                        if was_idle && l.next_delivery().is_some() {
                            busy.push(idx);
                        }
                    }
                }
                _ => stats.unroutable += 1,
            }
        };
        handle(first);
        for _ in 0..1024 {
            match rx.try_recv() {
                Ok(p) => handle(p),
                Err(_) => break,
            }
        }
    }
    stats.links = links
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.as_ref().map(|l| ((i / hosts, i % hosts), *l.stats())))
        .collect();
    stats
}
