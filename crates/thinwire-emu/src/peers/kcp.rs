//! KCP (the `kcp` crate, the original protocol) over UDP as a real peer: one
//! KCP session per client, conversation id = client index + 1; `fast` is
//! `nodelay(true, 10, 2, true)`, otherwise KCP's defaults.

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::book::{payload, slot, Book, Plan};
use crate::net::host_addr;

const KCP_PORT: u16 = 7200;

/// KCP's output: datagrams to one peer address.
struct KcpOut {
    sock: Arc<UdpSocket>,
    to: SocketAddr,
}

impl Write for KcpOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Losses on the wire are the link model's business; a full socket
        // buffer is treated the same way.
        let _ = self.sock.send_to(buf, self.to);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One host's KCP sessions over `sock`: on the server one per client, on
/// client `c` the one to the server.
fn kcp_sessions(
    fast: bool,
    client: Option<u32>,
    plan: &Plan,
    sock: &Arc<UdpSocket>,
) -> Vec<kcp::Kcp<KcpOut>> {
    let peers: Vec<u32> = match client {
        None => (0..plan.clients).collect(),
        Some(c) => vec![c],
    };
    peers
        .iter()
        .map(|&c| {
            let to = match client {
                None => SocketAddr::from((host_addr(c as usize + 1), KCP_PORT)),
                Some(_) => SocketAddr::from((host_addr(0), KCP_PORT)),
            };
            let mut k = kcp::Kcp::new(
                c + 1,
                KcpOut {
                    sock: sock.clone(),
                    to,
                },
            );
            if fast {
                k.set_nodelay(true, 10, 2, true);
            }
            k
        })
        .collect()
}

/// Runs one KCP host of the emulation (the server when `client` is `None`)
/// until the plan ends. Returns the payload bytes the application handed to KCP.
pub(crate) fn kcp_host(
    fast: bool,
    client: Option<u32>,
    plan: &Plan,
    book: &Arc<Book>,
) -> Result<u64, String> {
    let e = |e: std::io::Error| e.to_string();
    let me = match client {
        None => SocketAddr::from((host_addr(0), KCP_PORT)),
        Some(c) => SocketAddr::from((host_addr(c as usize + 1), KCP_PORT)),
    };
    let sock = Arc::new(UdpSocket::bind(me).map_err(e)?);
    sock.set_read_timeout(Some(Duration::from_millis(1)))
        .map_err(e)?;
    let mut kcps = kcp_sessions(fast, client, plan, &sock);
    let ids = plan.ids_of(client);
    let mut next = 0;
    let mut sent = 0;
    let mut buf = vec![0u8; 65_536];
    let mut msg = vec![0u8; 65_536];
    let end = book.t0 + plan.end;
    let start = Instant::now();
    while Instant::now() < end {
        let now = Instant::now();
        while next < ids.len() && book.t0 + plan.events[ids[next]].at <= now {
            let id = ids[next];
            let ev = &plan.events[id];
            book.sent(id);
            kcps[slot(client, ev)]
                .send(&payload(id, ev.msg.size))
                .map_err(|e| e.to_string())?;
            sent += u64::from(ev.msg.size);
            next += 1;
        }
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            if n >= 4 {
                let conv = kcp::get_conv(&buf[..n]);
                let k = if client.is_some() {
                    0
                } else {
                    conv.wrapping_sub(1) as usize
                };
                if let Some(k) = kcps.get_mut(k) {
                    let _ = k.input(&buf[..n]);
                    while let Ok(m) = k.recv(&mut msg) {
                        book.delivered(&msg[..m]);
                    }
                }
            }
        }
        let ms = start.elapsed().as_millis() as u32;
        for k in &mut kcps {
            let _ = k.update(ms);
        }
    }
    Ok(sent)
}
