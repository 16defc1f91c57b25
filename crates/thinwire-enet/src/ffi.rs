//! Hand-written declarations of the parts of `enet/enet.h` (1.3.17) this crate uses.
#![allow(unsafe_code, non_camel_case_types, missing_docs, unreachable_pub)]

use std::os::raw::{c_int, c_void};

/// `ENetAddress`: `host` in network byte order, `port` in host byte order.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ENetAddress {
    pub host: u32,
    pub port: u16,
}

/// `ENetPacket` (only `data` and `dataLength` are read).
#[repr(C)]
pub struct ENetPacket {
    pub reference_count: usize,
    pub flags: u32,
    pub data: *mut u8,
    pub data_length: usize,
    pub free_callback: Option<unsafe extern "C" fn(*mut ENetPacket)>,
    pub user_data: *mut c_void,
}

/// `ENetHost`, opaque but for its first two fields (see [`ENetHostHead`]).
#[repr(C)]
pub struct ENetHost {
    _private: [u8; 0],
}

/// The first fields of `ENetHost`, read through a cast pointer: `address` is the bound
/// address (`enet_host_create` stores the port the system picked).
#[repr(C)]
pub struct ENetHostHead {
    pub socket: c_int,
    pub address: ENetAddress,
}

/// `ENetPeer`, opaque but for its first fields (see [`ENetPeerHead`]).
#[repr(C)]
pub struct ENetPeer {
    _private: [u8; 0],
}

/// `ENetListNode` (and `ENetList`, whose only field is its sentinel node).
#[repr(C)]
pub struct ENetListNode {
    pub next: *mut ENetListNode,
    pub previous: *mut ENetListNode,
}

/// `ENetPeer` of 1.3.17 up to `outgoingCommands`, read through a cast pointer; the fields
/// not named here are padded by their size (`enet.h` lines 290-338).
#[repr(C)]
pub struct ENetPeerHead {
    pub dispatch_list: ENetListNode,
    pub host: *mut ENetHost,
    pub outgoing_peer_id: u16,
    pub incoming_peer_id: u16,
    pub connect_id: u32,
    pub outgoing_session_id: u8,
    pub incoming_session_id: u8,
    pub address: ENetAddress,
    pub data: *mut c_void,
    pub state: u32,
    pub channels: *mut c_void,
    pub channel_count: usize,
    /// `incomingBandwidth` through `mtu`: 33 `enet_uint32` counters.
    pub counters: [u32; 33],
    pub window_size: u32,
    pub reliable_data_in_transit: u32,
    pub outgoing_reliable_sequence_number: u16,
    pub acknowledgements: ENetListNode,
    pub sent_reliable_commands: ENetListNode,
    pub sent_unreliable_commands: ENetListNode,
    pub outgoing_commands: ENetListNode,
}

// The offsets `gcc` gives for ENet 1.3.17's `enet.h` on 64-bit Linux (x86_64, aarch64).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(std::mem::offset_of!(ENetHostHead, address) == 4);
    assert!(std::mem::offset_of!(ENetPeerHead, address) == 36);
    assert!(std::mem::offset_of!(ENetPeerHead, state) == 56);
    assert!(std::mem::offset_of!(ENetPeerHead, window_size) == 212);
    assert!(std::mem::offset_of!(ENetPeerHead, reliable_data_in_transit) == 216);
    assert!(std::mem::offset_of!(ENetPeerHead, outgoing_commands) == 272);
};

pub const ENET_EVENT_TYPE_NONE: u32 = 0;
pub const ENET_EVENT_TYPE_CONNECT: u32 = 1;
pub const ENET_EVENT_TYPE_DISCONNECT: u32 = 2;
pub const ENET_EVENT_TYPE_RECEIVE: u32 = 3;

pub const ENET_PACKET_FLAG_RELIABLE: u32 = 1 << 0;
pub const ENET_PACKET_FLAG_UNSEQUENCED: u32 = 1 << 1;

/// `ENetEvent`.
#[repr(C)]
pub struct ENetEvent {
    pub kind: u32,
    pub peer: *mut ENetPeer,
    pub channel_id: u8,
    pub data: u32,
    pub packet: *mut ENetPacket,
}

extern "C" {
    pub fn enet_initialize() -> c_int;
    pub fn enet_host_create(
        address: *const ENetAddress,
        peer_count: usize,
        channel_limit: usize,
        incoming_bandwidth: u32,
        outgoing_bandwidth: u32,
    ) -> *mut ENetHost;
    pub fn enet_host_destroy(host: *mut ENetHost);
    pub fn enet_host_connect(
        host: *mut ENetHost,
        address: *const ENetAddress,
        channel_count: usize,
        data: u32,
    ) -> *mut ENetPeer;
    pub fn enet_host_service(host: *mut ENetHost, event: *mut ENetEvent, timeout: u32) -> c_int;
    pub fn enet_host_flush(host: *mut ENetHost);
    pub fn enet_packet_create(data: *const c_void, length: usize, flags: u32) -> *mut ENetPacket;
    pub fn enet_packet_destroy(packet: *mut ENetPacket);
    pub fn enet_peer_send(peer: *mut ENetPeer, channel_id: u8, packet: *mut ENetPacket) -> c_int;
}
