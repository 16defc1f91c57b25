//! Kernel TCP as a real peer: one connection per client, messages framed by
//! a 4-byte length, `TCP_NODELAY` and CUBIC, optionally
//! `TCP_THIN_LINEAR_TIMEOUTS`; the namespace's kernel counters at the end.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::book::{slot, Book, HostReport, Plan};
use crate::net::host_addr;
use thinwire_peers::tagged;

const TCP_PORT: u16 = 7100;

/// Kernel TCP counters of the calling thread's network namespace
/// (`/proc/thread-self/net/snmp` and `netstat`): segments sent and
/// retransmitted, tail loss probes, retransmission timeouts, fast
/// retransmits and spurious timeouts. Each emulated host has its own
/// namespace, so these are that host's alone.
fn kernel_tcp_counters() -> Vec<(&'static str, u64)> {
    const WANTED: [(&str, &str, &str); 6] = [
        ("snmp", "Tcp", "OutSegs"),
        ("snmp", "Tcp", "RetransSegs"),
        ("netstat", "TcpExt", "TCPLossProbes"),
        ("netstat", "TcpExt", "TCPTimeouts"),
        ("netstat", "TcpExt", "TCPFastRetrans"),
        ("netstat", "TcpExt", "TCPSpuriousRTOs"),
    ];
    let mut out = Vec::new();
    for (file, table, name) in WANTED {
        let text =
            std::fs::read_to_string(format!("/proc/thread-self/net/{file}")).unwrap_or_default();
        if let Some(v) = proc_net_value(&text, table, name) {
            out.push((name, v));
        }
    }
    out
}

/// One value of a `/proc/net/snmp`-style file: a header line `Table: names...`
/// followed by a line `Table: values...`.
fn proc_net_value(text: &str, table: &str, name: &str) -> Option<u64> {
    let prefix = format!("{table}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    let (head, vals) = (lines.next()?, lines.next()?);
    let i = head.split_whitespace().position(|n| n == name)?;
    vals.split_whitespace().nth(i)?.parse().ok()
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

fn tcp_setup(s: &TcpStream, thin: bool) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    // CUBIC, Linux's built-in default, whatever the host's sysctl says: a
    // namespace inherits the host's choice (BBR on the machine this was
    // measured on, which paces, and with which a 2 KB message's median
    // latency was 50 ms higher: docs/results/emulator.md). Where the kernel
    // lacks CUBIC the namespace's default stays.
    let _ = socket2::SockRef::from(s).set_tcp_congestion(b"cubic");
    if thin {
        // TCP_THIN_LINEAR_TIMEOUTS (option 16 on Linux).
        socket2::SockRef::from(s).set_thin_linear_timeouts(true)?;
    }
    Ok(())
}

fn tcp_reader(mut s: TcpStream, book: Arc<Book>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut len = [0u8; 4];
        let mut buf = Vec::new();
        while s.read_exact(&mut len).is_ok() {
            buf.resize(u32::from_le_bytes(len) as usize, 0);
            if s.read_exact(&mut buf).is_err() {
                break;
            }
            book.delivered(&buf);
        }
    })
}

fn tcp_write(s: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(data.len() + 4);
    frame.extend_from_slice(&(data.len() as u32).to_le_bytes());
    frame.extend_from_slice(data);
    s.write_all(&frame)
}

/// One host's connections (on the server one slot per client, on a client
/// the one to the server) and the threads reading them.
type Streams = (Vec<Option<TcpStream>>, Vec<JoinHandle<()>>);

/// The server: accepts one connection per client; each client first sends
/// its index (4 bytes).
fn tcp_accept(thin: bool, plan: &Plan, book: &Arc<Book>) -> std::io::Result<Streams> {
    let server = SocketAddr::from((host_addr(0), TCP_PORT));
    let mut streams: Vec<Option<TcpStream>> = Vec::new();
    let mut readers = Vec::new();
    let l = TcpListener::bind(server)?;
    streams.resize_with(plan.clients as usize, || None);
    for _ in 0..plan.clients {
        let (mut s, _) = l.accept()?;
        tcp_setup(&s, thin)?;
        let mut id = [0u8; 4];
        s.read_exact(&mut id)?;
        let c = u32::from_le_bytes(id) as usize;
        readers.push(tcp_reader(s.try_clone()?, book.clone()));
        if let Some(slot) = streams.get_mut(c) {
            *slot = Some(s);
        }
    }
    Ok((streams, readers))
}

/// Client `c`: connects to the server (retrying while it starts) and sends
/// its index.
fn tcp_connect(thin: bool, c: u32, book: &Arc<Book>) -> Result<Streams, String> {
    let server = SocketAddr::from((host_addr(0), TCP_PORT));
    let e = |e: std::io::Error| e.to_string();
    let mut s = None;
    for _ in 0..50 {
        match TcpStream::connect_timeout(&server, Duration::from_secs(2)) {
            Ok(x) => {
                s = Some(x);
                break;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let mut s = s.ok_or("cannot connect")?;
    tcp_setup(&s, thin).map_err(e)?;
    s.write_all(&c.to_le_bytes()).map_err(e)?;
    let readers = vec![tcp_reader(s.try_clone().map_err(e)?, book.clone())];
    Ok((vec![Some(s)], readers))
}

/// Runs one kernel TCP host of the emulation (the server when `client` is
/// `None`) until the plan ends.
pub(crate) fn tcp_host(
    thin: bool,
    client: Option<u32>,
    plan: &Plan,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    let e = |e: std::io::Error| e.to_string();
    let (mut streams, readers) = match client {
        None => tcp_accept(thin, plan, book).map_err(e)?,
        Some(c) => tcp_connect(thin, c, book)?,
    };
    let mut sent = 0;
    for id in plan.ids_of(client) {
        let ev = &plan.events[id];
        sleep_until(book.t0 + ev.at);
        if let Some(Some(s)) = streams.get_mut(slot(client, ev)) {
            book.sent(id);
            tcp_write(s, &tagged(ev.msg.size as usize, id as u64)).map_err(e)?;
            sent += u64::from(ev.msg.size);
        }
    }
    sleep_until(book.t0 + plan.end);
    let mut counters = kernel_tcp_counters();
    let cubic = streams
        .iter()
        .flatten()
        .filter(|s| {
            socket2::SockRef::from(*s)
                .tcp_congestion()
                .is_ok_and(|ca| ca.starts_with(b"cubic"))
        })
        .count();
    counters.push(("sockets_cubic", cubic as u64));
    for s in streams.iter().flatten() {
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    for r in readers {
        let _ = r.join();
    }
    Ok(HostReport {
        payload_bytes_sent: sent,
        counters,
        thinwire: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "\
Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 1234
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens OutSegs RetransSegs
Tcp: 1 200 120000 -1 3 4417 87
Udp: InDatagrams NoPorts
Udp: 10 0
";

    #[test]
    fn reads_proc_net_tables_by_column_name() {
        assert_eq!(proc_net_value(SNMP, "Tcp", "OutSegs"), Some(4417));
        assert_eq!(proc_net_value(SNMP, "Tcp", "RetransSegs"), Some(87));
        assert_eq!(proc_net_value(SNMP, "Ip", "InReceives"), Some(1234));
        // absent column, absent table, a negative value, truncated text
        assert_eq!(proc_net_value(SNMP, "Tcp", "TCPLossProbes"), None);
        assert_eq!(proc_net_value(SNMP, "TcpExt", "OutSegs"), None);
        assert_eq!(proc_net_value(SNMP, "Tcp", "MaxConn"), None);
        assert_eq!(proc_net_value("Tcp: OutSegs\n", "Tcp", "OutSegs"), None);
        assert_eq!(proc_net_value("", "Tcp", "OutSegs"), None);
    }
}
