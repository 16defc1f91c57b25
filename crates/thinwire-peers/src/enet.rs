//! ENet 1.3 (Debian's libenet) through `thinwire-enet`, in one configuration: one ENet
//! channel per channel of the spec, with the packet flag its class asks for. Reliable
//! classes (ordered or not) and latest-value ones go as reliable packets (ordered per
//! channel: ENet has neither unordered reliable delivery nor latest-value), unreliable ones
//! (sequenced or not) as unsequenced packets. Unlimited bandwidth, so the reliable window is
//! ENet's largest (64 KiB in transit).

use std::net::SocketAddr;
use std::time::Duration;

use thinwire_enet::{EventRef, Host, PeerId};

use crate::{
    is_reliable, reliable_channel, tag_of, Event, HostSpec, Outgoing, PeerHost, ServerInfo,
};

/// Most peers one ENet 1.3 host can hold (`ENET_PROTOCOL_MAXIMUM_PEER_ID`).
pub const ENET_MAX_PEERS: usize = 0xFFF;

/// Most queued events handed out by one `service` call.
const DRAIN: usize = 4096;

/// An ENet host.
pub struct EnetHost {
    host: Host,
    /// Per channel: whether its packets are reliable (else unsequenced).
    reliable: Vec<bool>,
}

impl std::fmt::Debug for EnetHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnetHost")
            .field("reliable", &self.reliable)
            .finish_non_exhaustive()
    }
}

fn convert(e: EventRef<'_>) -> Event<PeerId> {
    match e {
        EventRef::Connect(p) => Event::Connected(p),
        EventRef::Receive {
            peer,
            channel,
            data,
        } => Event::Message {
            conn: peer,
            channel,
            len: data.len(),
            tag: tag_of(data),
        },
        EventRef::Disconnect(p) => Event::Disconnected(p),
    }
}

impl PeerHost for EnetHost {
    type Conn = PeerId;
    type Settings = ();

    /// `spec.capacity` is the host's preallocated peer slots (`enet_host_create`'s
    /// `peerCount`, at most [`ENET_MAX_PEERS`]).
    fn open(spec: &HostSpec, _: &()) -> Result<Self, String> {
        let peers = spec.capacity.clamp(1, ENET_MAX_PEERS);
        let channels = spec.channels.len().max(1);
        let host = Host::bind(spec.bind, peers, channels).map_err(|e| format!("ENet: {e}"))?;
        Ok(Self {
            host,
            reliable: spec.channels.iter().map(|&k| is_reliable(k)).collect(),
        })
    }

    fn info(&self) -> ServerInfo {
        ServerInfo {
            addr: self.host.local_addr(),
            key: None,
        }
    }

    fn connect(&mut self, to: &ServerInfo) -> Result<PeerId, String> {
        self.host
            .connect(to.addr, self.reliable.len().max(1))
            .map_err(|e| format!("ENet connect: {e}"))
    }

    fn remote(&self, conn: PeerId) -> Option<SocketAddr> {
        self.host.peer_address(conn).map(SocketAddr::V4)
    }

    fn service(&mut self, timeout: Duration, out: &mut Vec<Event<PeerId>>) -> Result<(), String> {
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

    fn send(&mut self, conn: PeerId, channel: u8, msg: Outgoing<'_>) -> Result<bool, String> {
        let reliable = reliable_channel(&self.reliable, channel, "ENet")?;
        self.host
            .send(conn, channel, msg.data, reliable)
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
