//! ENet 1.3 (Debian's libenet) through `thinwire-enet`: channel 0 carries reliable packets
//! (ordered per channel), channel 1 unsequenced ones. Unlimited bandwidth, so the reliable
//! window is ENet's largest (64 KiB in transit).

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

use bytes::Bytes;
use thinwire_enet::{EventRef, Host, PeerId};

use crate::host::{tag_of, BenchHost, Ev, HostOptions, ServerInfo, ENET_MAX_PEERS};

/// Channels of every bench connection: reliable, unsequenced.
const CHANNELS: usize = 2;

/// Most queued events handed out by one `service` call.
const DRAIN: usize = 4096;

/// An ENet host.
pub(crate) struct EnetHost {
    host: Host,
}

fn bind(capacity: usize) -> Result<EnetHost, String> {
    let peers = capacity.clamp(1, ENET_MAX_PEERS);
    let host = Host::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), peers, CHANNELS)
        .map_err(|e| format!("ENet: {e}"))?;
    Ok(EnetHost { host })
}

fn convert(e: EventRef<'_>) -> Ev<PeerId> {
    match e {
        EventRef::Connect(p) => Ev::Connected(p),
        EventRef::Receive {
            peer,
            channel,
            data,
        } => Ev::Message {
            conn: peer,
            reliable: channel == 0,
            len: data.len(),
            tag: tag_of(data),
        },
        EventRef::Disconnect(p) => Ev::Disconnected(p),
    }
}

impl BenchHost for EnetHost {
    type Conn = PeerId;

    /// `capacity` is the host's preallocated peer slots (`enet_host_create`'s `peerCount`).
    fn server(capacity: usize, _opts: HostOptions) -> Result<Self, String> {
        bind(capacity)
    }

    fn client(capacity: usize, _opts: HostOptions) -> Result<Self, String> {
        bind(capacity)
    }

    fn info(&self) -> ServerInfo {
        ServerInfo {
            addr: self.host.local_addr(),
            key: None,
        }
    }

    fn connect(&mut self, to: &ServerInfo) -> Result<PeerId, String> {
        self.host
            .connect(to.addr, CHANNELS)
            .map_err(|e| format!("ENet connect: {e}"))
    }

    fn service(&mut self, timeout: Duration, out: &mut Vec<Ev<PeerId>>) -> Result<(), String> {
        let e = |e: thinwire_enet::EnetError| format!("ENet service: {e}");
        // ENet waits in whole milliseconds: a shorter wait rounds up, zero polls
        let ms = if timeout.is_zero() {
            0
        } else {
            timeout.as_millis().clamp(1, u128::from(u32::MAX)) as u32
        };
        if let Some(ev) = self.host.service_with(ms, convert).map_err(e)? {
            out.push(ev);
            // events ENet already holds return at once, without waiting
            for _ in 0..DRAIN {
                match self.host.service_with(0, convert).map_err(e)? {
                    Some(ev) => out.push(ev),
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn send(&mut self, conn: PeerId, reliable: bool, data: &Bytes) -> Result<bool, String> {
        self.host
            .send(conn, u8::from(!reliable), data, reliable)
            .map(|()| true)
            .map_err(|e| format!("ENet send: {e}"))
    }

    fn backlogged(&self, conn: PeerId) -> bool {
        self.host.backlogged(conn)
    }

    fn flush(&mut self) {
        self.host.flush();
    }
}
