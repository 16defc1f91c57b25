//! The safe `Host`: one ENet host (socket), used from one thread.
#![allow(unsafe_code)]

use std::net::SocketAddrV4;

use crate::EnetError;

/// Identifies a peer of a [`Host`] (stable while the host lives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerId(usize);

/// What [`Host::service`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A connection completed.
    Connect(PeerId),
    /// A packet arrived.
    Receive {
        /// From whom.
        peer: PeerId,
        /// On which channel.
        channel: u8,
        /// Its bytes.
        data: Vec<u8>,
    },
    /// A peer disconnected or timed out.
    Disconnect(PeerId),
}

/// What [`Host::service_with`] hands its callback: an [`Event`] whose packet bytes are
/// borrowed from ENet's packet instead of copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventRef<'a> {
    /// A connection completed.
    Connect(PeerId),
    /// A packet arrived.
    Receive {
        /// From whom.
        peer: PeerId,
        /// On which channel.
        channel: u8,
        /// Its bytes (valid during the callback only).
        data: &'a [u8],
    },
    /// A peer disconnected or timed out.
    Disconnect(PeerId),
}

impl EventRef<'_> {
    /// The owned [`Event`] (copies the packet's bytes).
    pub fn to_event(self) -> Event {
        match self {
            EventRef::Connect(p) => Event::Connect(p),
            EventRef::Receive {
                peer,
                channel,
                data,
            } => Event::Receive {
                peer,
                channel,
                data: data.to_vec(),
            },
            EventRef::Disconnect(p) => Event::Disconnect(p),
        }
    }
}

#[cfg(has_enet)]
mod imp {
    use super::*;
    use crate::ffi;
    use std::collections::HashMap;
    use std::sync::OnceLock;

    fn init() -> Result<(), EnetError> {
        static OK: OnceLock<bool> = OnceLock::new();
        // SAFETY: enet_initialize only sets up global state; OnceLock runs it exactly once.
        let ok = *OK.get_or_init(|| unsafe { ffi::enet_initialize() } == 0);
        if ok {
            Ok(())
        } else {
            Err(EnetError::Init)
        }
    }

    fn address(addr: SocketAddrV4) -> ffi::ENetAddress {
        ffi::ENetAddress {
            host: u32::from_ne_bytes(addr.ip().octets()),
            port: addr.port(),
        }
    }

    /// An ENet host.
    pub struct Host {
        raw: *mut ffi::ENetHost,
        peers: HashMap<PeerId, *mut ffi::ENetPeer>,
    }

    // SAFETY: the raw host is owned exclusively by this value and ENet keeps no thread-local
    // state; moving it to another thread (without sharing) is sound.
    unsafe impl Send for Host {}

    impl Host {
        /// Creates a host bound to `bind` (port 0: any) with room for `peers` peers and
        /// `channels` channels.
        pub fn bind(bind: SocketAddrV4, peers: usize, channels: usize) -> Result<Self, EnetError> {
            init()?;
            let a = address(bind);
            // SAFETY: `a` outlives the call; ENet copies the address.
            let raw = unsafe { ffi::enet_host_create(&a, peers, channels, 0, 0) };
            if raw.is_null() {
                return Err(EnetError::HostCreate);
            }
            Ok(Self {
                raw,
                peers: HashMap::new(),
            })
        }

        /// Starts connecting to `to`; [`Event::Connect`] follows from [`service`](Self::service).
        pub fn connect(&mut self, to: SocketAddrV4, channels: usize) -> Result<PeerId, EnetError> {
            let a = address(to);
            // SAFETY: self.raw is a live host; ENet copies the address.
            let peer = unsafe { ffi::enet_host_connect(self.raw, &a, channels, 0) };
            if peer.is_null() {
                return Err(EnetError::Connect);
            }
            let id = PeerId(peer as usize);
            self.peers.insert(id, peer);
            Ok(id)
        }

        /// Queues `data` to `peer` on `channel`: reliable (ordered per channel) or unsequenced.
        pub fn send(
            &mut self,
            peer: PeerId,
            channel: u8,
            data: &[u8],
            reliable: bool,
        ) -> Result<(), EnetError> {
            let p = *self.peers.get(&peer).ok_or(EnetError::Send)?;
            let flags = if reliable {
                ffi::ENET_PACKET_FLAG_RELIABLE
            } else {
                ffi::ENET_PACKET_FLAG_UNSEQUENCED
            };
            // SAFETY: data is valid for data.len() bytes; ENet copies it into the new packet.
            let packet =
                unsafe { ffi::enet_packet_create(data.as_ptr().cast(), data.len(), flags) };
            if packet.is_null() {
                return Err(EnetError::Send);
            }
            // SAFETY: p is a peer of this live host; on success ENet owns the packet, on
            // failure we still own it and destroy it.
            let r = unsafe { ffi::enet_peer_send(p, channel, packet) };
            if r != 0 {
                // SAFETY: the packet was not queued, so it is still ours.
                unsafe { ffi::enet_packet_destroy(packet) };
                return Err(EnetError::Send);
            }
            Ok(())
        }

        /// Sends queued packets and waits up to `timeout_ms` for one event.
        pub fn service(&mut self, timeout_ms: u32) -> Result<Option<Event>, EnetError> {
            self.service_with(timeout_ms, |e| e.to_event())
        }

        /// [`service`](Self::service) without copying a received packet: `f` sees the event
        /// with the packet's bytes borrowed, and its result is returned.
        pub fn service_with<R>(
            &mut self,
            timeout_ms: u32,
            f: impl FnOnce(EventRef<'_>) -> R,
        ) -> Result<Option<R>, EnetError> {
            let mut ev = ffi::ENetEvent {
                kind: ffi::ENET_EVENT_TYPE_NONE,
                peer: std::ptr::null_mut(),
                channel_id: 0,
                data: 0,
                packet: std::ptr::null_mut(),
            };
            // SAFETY: self.raw is live; ev is a valid out-pointer for the call.
            let r = unsafe { ffi::enet_host_service(self.raw, &mut ev, timeout_ms) };
            if r < 0 {
                return Err(EnetError::Service);
            }
            if r == 0 {
                return Ok(None);
            }
            let id = PeerId(ev.peer as usize);
            Ok(match ev.kind {
                ffi::ENET_EVENT_TYPE_CONNECT => {
                    self.peers.insert(id, ev.peer);
                    Some(f(EventRef::Connect(id)))
                }
                ffi::ENET_EVENT_TYPE_DISCONNECT => Some(f(EventRef::Disconnect(id))),
                ffi::ENET_EVENT_TYPE_RECEIVE => {
                    // SAFETY: for a receive event ENet hands us a live packet whose data
                    // points to data_length bytes; `f` sees them borrowed, and then we
                    // destroy the packet, as the ENet documentation requires.
                    let out = unsafe {
                        let p = &*ev.packet;
                        let bytes = std::slice::from_raw_parts(p.data, p.data_length);
                        let out = f(EventRef::Receive {
                            peer: id,
                            channel: ev.channel_id,
                            data: bytes,
                        });
                        ffi::enet_packet_destroy(ev.packet);
                        out
                    };
                    Some(out)
                }
                _ => None,
            })
        }

        /// The address the host is bound to (with the port the system picked for port 0).
        pub fn local_addr(&self) -> SocketAddrV4 {
            // SAFETY: self.raw is a live host whose first fields are `ENetHostHead`'s (the
            // layout is checked at compile time in ffi.rs); nothing else runs on it now.
            let a = unsafe {
                std::ptr::addr_of!((*self.raw.cast::<ffi::ENetHostHead>()).address).read()
            };
            SocketAddrV4::new(std::net::Ipv4Addr::from(a.host.to_ne_bytes()), a.port)
        }

        /// The address of `peer` (`None` for an unknown peer).
        pub fn peer_address(&self, peer: PeerId) -> Option<SocketAddrV4> {
            let &p = self.peers.get(&peer)?;
            // SAFETY: p is a peer of this live host (ENet keeps peers in one array for the
            // host's life), whose first fields are `ENetPeerHead`'s (checked in ffi.rs);
            // single-threaded: ENet is not running while we read.
            let a = unsafe { std::ptr::addr_of!((*p.cast::<ffi::ENetPeerHead>()).address).read() };
            Some(SocketAddrV4::new(
                std::net::Ipv4Addr::from(a.host.to_ne_bytes()),
                a.port,
            ))
        }

        /// Whether ENet holds packets for `peer` that the last flush could not put on the
        /// wire (its reliable window is full): a sender that must not queue without bound
        /// waits until this is false. False for an unknown peer.
        pub fn backlogged(&self, peer: PeerId) -> bool {
            let Some(&p) = self.peers.get(&peer) else {
                return false;
            };
            // SAFETY: p is a peer of this live host (ENet keeps peers in one array for the
            // host's life), whose first fields are `ENetPeerHead`'s (checked in ffi.rs); the
            // list's sentinel points to itself when the list is empty. Single-threaded: ENet
            // is not running while we read.
            unsafe {
                let list =
                    std::ptr::addr_of_mut!((*p.cast::<ffi::ENetPeerHead>()).outgoing_commands);
                (*list).next != list
            }
        }

        /// Sends everything queued now.
        pub fn flush(&mut self) {
            // SAFETY: self.raw is live.
            unsafe { ffi::enet_host_flush(self.raw) }
        }
    }

    impl Drop for Host {
        fn drop(&mut self) {
            // SAFETY: self.raw is live and destroyed exactly once.
            unsafe { ffi::enet_host_destroy(self.raw) }
        }
    }
}

#[cfg(not(has_enet))]
mod imp {
    use super::*;

    /// An ENet host (this build has no ENet: every constructor fails).
    pub struct Host {
        _never: std::convert::Infallible,
    }

    impl Host {
        /// Always fails: built without libenet.
        pub fn bind(
            _bind: SocketAddrV4,
            _peers: usize,
            _channels: usize,
        ) -> Result<Self, EnetError> {
            Err(EnetError::Unavailable)
        }
        /// Unreachable: no host can exist.
        pub fn connect(
            &mut self,
            _to: SocketAddrV4,
            _channels: usize,
        ) -> Result<PeerId, EnetError> {
            match self._never {}
        }
        /// Unreachable: no host can exist.
        pub fn send(
            &mut self,
            _peer: PeerId,
            _channel: u8,
            _data: &[u8],
            _reliable: bool,
        ) -> Result<(), EnetError> {
            match self._never {}
        }
        /// Unreachable: no host can exist.
        pub fn service(&mut self, _timeout_ms: u32) -> Result<Option<Event>, EnetError> {
            match self._never {}
        }
        /// Unreachable: no host can exist.
        pub fn service_with<R>(
            &mut self,
            _timeout_ms: u32,
            _f: impl FnOnce(EventRef<'_>) -> R,
        ) -> Result<Option<R>, EnetError> {
            match self._never {}
        }
        /// Unreachable: no host can exist.
        pub fn local_addr(&self) -> SocketAddrV4 {
            match self._never {}
        }
        /// Unreachable: no host can exist.
        pub fn peer_address(&self, _peer: PeerId) -> Option<SocketAddrV4> {
            match self._never {}
        }
        /// Unreachable: no host can exist.
        pub fn backlogged(&self, _peer: PeerId) -> bool {
            match self._never {}
        }
        /// Unreachable: no host can exist.
        pub fn flush(&mut self) {
            match self._never {}
        }
    }
}

pub use imp::Host;
