//! QUIC (`quinn`, rustls with `ring`, a self-signed certificate) as a real
//! peer: one unidirectional stream per reliable class, datagrams for classes
//! that allow loss (latest-value classes); keepalive 2 s.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::book::{client_slot, merge_counters, runtime, slot, Book, HostReport, Plan};
use crate::net::host_addr;
use thinwire_peers::tagged;

const QUIC_PORT: u16 = 7400;

/// A self-signed certificate (DER) and its PKCS#8 key, shared by the QUIC
/// server (which presents it) and the clients (which trust it alone).
#[derive(Debug)]
pub(crate) struct QuicCert {
    cert: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

impl QuicCert {
    pub(crate) fn generate() -> Result<Self, String> {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .map_err(|e| e.to_string())?;
        Ok(QuicCert {
            cert: ck.cert.der().clone(),
            key: ck.key_pair.serialize_der(),
        })
    }
}

fn quic_transport() -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.keep_alive_interval(Some(Duration::from_secs(2)));
    Arc::new(t)
}

/// Sends on one QUIC connection: one unidirectional stream per class (opened
/// with the class's first message, frames `[len u32 LE][data]`), written by
/// its own task so that a blocked stream holds up only its class; classes
/// that allow loss (latest-value classes) go as datagrams, or on their
/// stream when a message is too large for one datagram.
struct QuicSender {
    conn: quinn::Connection,
    streams: Vec<tokio::sync::mpsc::UnboundedSender<bytes::Bytes>>,
}

impl QuicSender {
    fn new(conn: quinn::Connection, classes: usize) -> Self {
        let streams = (0..classes)
            .map(|_| {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<bytes::Bytes>();
                let conn = conn.clone();
                tokio::spawn(async move {
                    let mut s: Option<quinn::SendStream> = None;
                    while let Some(d) = rx.recv().await {
                        if s.is_none() {
                            s = conn.open_uni().await.ok();
                        }
                        let Some(st) = s.as_mut() else { return };
                        let mut frame = Vec::with_capacity(d.len() + 4);
                        frame.extend_from_slice(&(d.len() as u32).to_le_bytes());
                        frame.extend_from_slice(&d);
                        if st.write_all(&frame).await.is_err() {
                            return;
                        }
                    }
                });
                tx
            })
            .collect();
        QuicSender { conn, streams }
    }

    fn send(&self, class: usize, lossy: bool, data: bytes::Bytes) {
        if lossy
            && self
                .conn
                .max_datagram_size()
                .is_some_and(|m| data.len() <= m)
        {
            // Refused (connection gone): the message is lost.
            let _ = self.conn.send_datagram(data);
            return;
        }
        if let Some(tx) = self.streams.get(class) {
            let _ = tx.send(data);
        }
    }
}

/// Delivers everything `conn` receives: datagrams and every unidirectional stream.
fn quic_receive(conn: quinn::Connection, book: Arc<Book>) {
    let (c2, b2) = (conn.clone(), book.clone());
    tokio::spawn(async move {
        while let Ok(d) = c2.read_datagram().await {
            b2.delivered(&d);
        }
    });
    tokio::spawn(async move {
        while let Ok(mut s) = conn.accept_uni().await {
            let book = book.clone();
            tokio::spawn(async move {
                let mut len = [0u8; 4];
                let mut buf = Vec::new();
                while s.read_exact(&mut len).await.is_ok() {
                    buf.resize(u32::from_le_bytes(len) as usize, 0);
                    if s.read_exact(&mut buf).await.is_err() {
                        break;
                    }
                    book.delivered(&buf);
                }
            });
        }
    });
}

/// One host's endpoint and senders: on the server one slot per client, on a
/// client the one connection to the server.
type Conns = (quinn::Endpoint, Vec<Option<QuicSender>>);

/// The server: presents `cert`, accepts one connection per client.
async fn accept(cert: &QuicCert, plan: &Plan, book: &Arc<Book>) -> Result<Conns, String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let server = SocketAddr::from((host_addr(0), QUIC_PORT));
    let mut conns: Vec<Option<QuicSender>> = Vec::new();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key.clone());
    let mut cfg = quinn::ServerConfig::with_single_cert(vec![cert.cert.clone()], key.into())
        .map_err(|e| s(&e))?;
    cfg.transport_config(quic_transport());
    let ep = quinn::Endpoint::server(cfg, server).map_err(|e| s(&e))?;
    conns.resize_with(plan.clients as usize, || None);
    for _ in 0..plan.clients {
        let inc = ep.accept().await.ok_or("endpoint closed")?;
        let c = inc.await.map_err(|e| s(&e))?;
        quic_receive(c.clone(), book.clone());
        if let Some(slot) = client_slot(c.remote_address()).and_then(|i| conns.get_mut(i)) {
            *slot = Some(QuicSender::new(c, plan.classes.len()));
        }
    }
    Ok((ep, conns))
}

/// Client `c`: trusts `cert` alone and connects to the server.
async fn connect(cert: &QuicCert, c: u32, plan: &Plan, book: &Arc<Book>) -> Result<Conns, String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let server = SocketAddr::from((host_addr(0), QUIC_PORT));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.clone()).map_err(|e| s(&e))?;
    let mut cfg =
        quinn::ClientConfig::with_root_certificates(Arc::new(roots)).map_err(|e| s(&e))?;
    cfg.transport_config(quic_transport());
    let ep = quinn::Endpoint::client(SocketAddr::from((host_addr(c as usize + 1), 0)))
        .map_err(|e| s(&e))?;
    let conn = ep
        .connect_with(cfg, server, "localhost")
        .map_err(|e| s(&e))?
        .await
        .map_err(|e| s(&e))?;
    quic_receive(conn.clone(), book.clone());
    Ok((ep, vec![Some(QuicSender::new(conn, plan.classes.len()))]))
}

/// Runs one QUIC host of the emulation (the server when `client` is `None`)
/// until the plan ends. Returns the payload bytes the application handed
/// over and quinn's datagrams sent and packets and bytes lost.
pub(crate) fn quic_host(
    cert: &QuicCert,
    client: Option<u32>,
    plan: &Arc<Plan>,
    book: &Arc<Book>,
) -> Result<HostReport, String> {
    let rt = runtime()?;
    let lossy: Vec<bool> = plan
        .classes
        .iter()
        .map(|c| c.semantics == thinwire_lab::workload::Semantics::Latest)
        .collect();
    let (plan, book) = (plan.clone(), book.clone());
    rt.block_on(async move {
        let (ep, conns) = match client {
            None => accept(cert, &plan, &book).await?,
            Some(c) => connect(cert, c, &plan, &book).await?,
        };
        let mut sent = 0;
        for id in plan.ids_of(client) {
            let ev = plan.events[id];
            tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + ev.at)).await;
            let Some(Some(c)) = conns.get(slot(client, &ev)) else {
                continue;
            };
            let class = usize::from(ev.msg.class);
            book.sent(id);
            c.send(
                class,
                lossy.get(class).copied().unwrap_or(false),
                tagged(ev.msg.size as usize, id as u64),
            );
            sent += u64::from(ev.msg.size);
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(book.t0 + plan.end)).await;
        let mut report = HostReport::sent(sent);
        for c in conns.iter().flatten() {
            let st = c.conn.stats();
            merge_counters(
                &mut report.counters,
                &[
                    ("udp_datagrams_sent", st.udp_tx.datagrams),
                    ("lost_packets", st.path.lost_packets),
                    ("lost_bytes", st.path.lost_bytes),
                ],
            );
        }
        ep.close(0u32.into(), b"done");
        Ok(report)
    })
}
