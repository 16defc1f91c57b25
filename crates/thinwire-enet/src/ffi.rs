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

/// Opaque `ENetHost`.
#[repr(C)]
pub struct ENetHost {
    _private: [u8; 0],
}

/// Opaque `ENetPeer`.
#[repr(C)]
pub struct ENetPeer {
    _private: [u8; 0],
}

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
