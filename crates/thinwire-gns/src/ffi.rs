//! The few GameNetworkingSockets declarations the wrapper uses, written by hand against the
//! headers of ValveSoftware/GameNetworkingSockets (`include/steam/steamnetworkingtypes.h`,
//! `isteamnetworkingsockets.h`, `steamnetworkingsockets_flat.h`, `steamnetworkingsockets.h`),
//! and the library's loading: every function is looked up by name when the library is first
//! used, and one process-wide interface is initialised.
//!
//! Layouts: on Linux the headers define `VALVE_CALLBACK_PACK_SMALL`, so the callback and status
//! structs are `#pragma pack(4)`; `SteamNetworkingIPAddr` and `SteamNetworkingIdentity` are
//! `pack(1)`; `SteamNetworkingMessage_t` is outside every pack region (natural alignment). The
//! sizes and the offsets read are checked at compile time below.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::{offset_of, size_of};
use std::path::Path;

use libloading::Library;

/// `HSteamNetConnection`, `HSteamListenSocket`, `HSteamNetPollGroup` (0: invalid).
pub(crate) type Handle = u32;

/// `k_nSteamNetworkingSend_Reliable` (without it: unreliable).
pub(crate) const SEND_RELIABLE: c_int = 8;
/// `k_EResultOK`.
pub(crate) const RESULT_OK: c_int = 1;
/// `k_EResultNoConnection`: the connection has ended (its status change is on its way).
pub(crate) const RESULT_NO_CONNECTION: c_int = 3;
/// `k_EResultLimitExceeded`: the connection's send buffer is full.
pub(crate) const RESULT_LIMIT_EXCEEDED: c_int = 25;

/// `ESteamNetworkingConnectionState` values handled.
pub(crate) const STATE_CONNECTING: i32 = 1;
pub(crate) const STATE_CONNECTED: i32 = 3;
pub(crate) const STATE_CLOSED_BY_PEER: i32 = 4;
pub(crate) const STATE_PROBLEM_DETECTED_LOCALLY: i32 = 5;

/// `ESteamNetworkingConfigValue` values set.
const CONFIG_SEND_RATE_MIN: i32 = 10;
const CONFIG_SEND_RATE_MAX: i32 = 11;
pub(crate) const CONFIG_CONNECTION_USER_DATA: i32 = 40;
/// `k_ESteamNetworkingConfig_Int64`.
pub(crate) const CONFIG_TYPE_INT64: i32 = 2;

/// The highest send rate GNS accepts (`DEFINE_CONNECTON_DEFAULT_CONFIGVAL( int32,
/// SendRateMax, 256*1024, 1024, 0x10000000 )`, bytes per second).
pub(crate) const MAX_SEND_RATE: i32 = 0x1000_0000;

/// `SteamNetworkingIPAddr`: an IPv6 address (IPv4 mapped as `::ffff:a.b.c.d`) and a port in
/// host byte order.
#[repr(C, packed)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IpAddr {
    pub(crate) ipv6: [u8; 16],
    pub(crate) port: u16,
}

/// `SteamNetworkingConfigValue_t`: an option passed when a socket or connection is created.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConfigValue {
    pub(crate) value: i32,
    pub(crate) data_type: i32,
    /// The union of the value's types; only `m_int64` is used.
    pub(crate) int64: i64,
}

/// `SteamNetworkingIdentity` (opaque here: `m_eType`, `m_cbSize`, a 128-byte union).
type Identity = [u8; 136];

/// `SteamNetConnectionInfo_t` (pack 4).
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub(crate) struct ConnectionInfo {
    identity_remote: Identity,
    pub(crate) user_data: i64,
    pub(crate) listen_socket: Handle,
    pub(crate) addr_remote: IpAddr,
    pad1: u16,
    pop_remote: u32,
    pop_relay: u32,
    pub(crate) state: i32,
    end_reason: c_int,
    end_debug: [c_char; 128],
    description: [c_char; 128],
    flags: c_int,
    reserved: [u32; 63],
}

/// `SteamNetConnectionStatusChangedCallback_t` (pack 4).
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub(crate) struct StatusChanged {
    pub(crate) conn: Handle,
    pub(crate) info: ConnectionInfo,
    pub(crate) old_state: i32,
}

/// `SteamNetConnectionRealTimeStatus_t` (pack 4).
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub(crate) struct RealTimeStatus {
    state: i32,
    ping: c_int,
    quality: [f32; 2],
    rates: [f32; 4],
    send_rate: c_int,
    pub(crate) pending_unreliable: c_int,
    pub(crate) pending_reliable: c_int,
    sent_unacked_reliable: c_int,
    queue_time: i64,
    max_jitter: i32,
    reserved: [u32; 15],
}

/// `SteamNetworkingMessage_t` (natural alignment).
#[repr(C)]
pub(crate) struct Message {
    pub(crate) data: *mut c_void,
    pub(crate) size: c_int,
    pub(crate) conn: Handle,
    identity_peer: Identity,
    conn_user_data: i64,
    time_received: i64,
    message_number: i64,
    free_data: Option<unsafe extern "C" fn(*mut Message)>,
    release: Option<unsafe extern "C" fn(*mut Message)>,
    channel: c_int,
    /// For received messages only the reliable bit is meaningful.
    pub(crate) flags: c_int,
    user_data: i64,
    lane: u16,
    pad: u16,
}

const _: () = {
    assert!(size_of::<IpAddr>() == 18);
    assert!(size_of::<ConfigValue>() == 16);
    assert!(size_of::<ConnectionInfo>() == 696);
    assert!(offset_of!(ConnectionInfo, user_data) == 136);
    assert!(offset_of!(ConnectionInfo, listen_socket) == 144);
    assert!(offset_of!(ConnectionInfo, addr_remote) == 148);
    assert!(offset_of!(ConnectionInfo, state) == 176);
    assert!(size_of::<StatusChanged>() == 704);
    assert!(offset_of!(StatusChanged, old_state) == 700);
    assert!(size_of::<RealTimeStatus>() == 120);
    assert!(offset_of!(RealTimeStatus, pending_unreliable) == 36);
    assert!(offset_of!(RealTimeStatus, queue_time) == 48);
    assert!(size_of::<Message>() == 216);
    assert!(offset_of!(Message, conn_user_data) == 152);
    assert!(offset_of!(Message, flags) == 196);
    assert!(offset_of!(Message, lane) == 208);
};

/// The status-changed callback's type (`FnSteamNetConnectionStatusChanged`).
pub(crate) type StatusCallback = extern "C" fn(*mut StatusChanged);

type Iface = *mut c_void;

/// The functions used, looked up in the loaded library. `iface` arguments are the
/// `ISteamNetworkingSockets` / `ISteamNetworkingUtils` pointers of [`Gns`].
pub(crate) struct Api {
    pub(crate) create_listen:
        unsafe extern "C" fn(Iface, *const IpAddr, c_int, *const ConfigValue) -> Handle,
    pub(crate) connect:
        unsafe extern "C" fn(Iface, *const IpAddr, c_int, *const ConfigValue) -> Handle,
    pub(crate) accept: unsafe extern "C" fn(Iface, Handle) -> c_int,
    pub(crate) close_connection:
        unsafe extern "C" fn(Iface, Handle, c_int, *const c_char, bool) -> bool,
    pub(crate) close_listen: unsafe extern "C" fn(Iface, Handle) -> bool,
    pub(crate) send:
        unsafe extern "C" fn(Iface, Handle, *const c_void, u32, c_int, *mut i64) -> c_int,
    pub(crate) flush: unsafe extern "C" fn(Iface, Handle) -> c_int,
    pub(crate) info: unsafe extern "C" fn(Iface, Handle, *mut ConnectionInfo) -> bool,
    pub(crate) status:
        unsafe extern "C" fn(Iface, Handle, *mut RealTimeStatus, c_int, *mut c_void) -> c_int,
    pub(crate) create_poll_group: unsafe extern "C" fn(Iface) -> Handle,
    pub(crate) destroy_poll_group: unsafe extern "C" fn(Iface, Handle) -> bool,
    pub(crate) set_poll_group: unsafe extern "C" fn(Iface, Handle, Handle) -> bool,
    pub(crate) receive: unsafe extern "C" fn(Iface, Handle, *mut *mut Message, c_int) -> c_int,
    pub(crate) run_callbacks: unsafe extern "C" fn(Iface),
    pub(crate) release: unsafe extern "C" fn(*mut Message),
}

/// The loaded library and its one initialised interface (GNS is process-global:
/// `GameNetworkingSockets_Init` once per process).
pub(crate) struct Gns {
    pub(crate) api: Api,
    /// `ISteamNetworkingSockets*`: every call takes it first.
    pub(crate) sockets: Iface,
    /// Kept loaded for the life of the process (the service thread runs its code).
    _lib: Library,
}

// SAFETY: the interface pointer is only passed to GNS's API, which is thread-safe (every call
// takes the library's global lock); the function pointers are plain code addresses.
unsafe impl Send for Gns {}
// SAFETY: as above: nothing here is mutated from Rust.
unsafe impl Sync for Gns {}

/// Looks `name` up as a function of type `T`, copied out of the library.
///
/// # Safety
/// `T` must be the function's true signature.
unsafe fn sym<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
    // SAFETY: the caller vouches for the type; the copy outlives the borrow only as long as
    // the library stays loaded, which `Gns` keeps it.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| format!("{name}: {e}"))
}

impl Gns {
    /// Loads the library at `path`, initialises GNS without an identity (unauthenticated,
    /// encrypted), raises the send-rate limits to the highest GNS accepts and installs the
    /// status callback.
    pub(crate) fn load(path: &Path, on_status: StatusCallback) -> Result<Self, String> {
        // SAFETY: loading runs the library's initialisers; GNS's only start its allocator and
        // statics.
        let lib = unsafe { Library::new(path) }.map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: every signature below is the flat API's, from the headers named above.
        unsafe {
            let init: unsafe extern "C" fn(*const c_void, *mut [c_char; 1024]) -> bool =
                sym(&lib, "GameNetworkingSockets_Init")?;
            let sockets_v: unsafe extern "C" fn() -> Iface =
                sym(&lib, "SteamAPI_SteamNetworkingSockets_v009")?;
            let utils_v: unsafe extern "C" fn() -> Iface =
                sym(&lib, "SteamAPI_SteamNetworkingUtils_v003")?;
            let set_global_i32: unsafe extern "C" fn(Iface, i32, i32) -> bool = sym(
                &lib,
                "SteamAPI_ISteamNetworkingUtils_SetGlobalConfigValueInt32",
            )?;
            let set_callback: unsafe extern "C" fn(Iface, StatusCallback) -> bool = sym(
                &lib,
                "SteamAPI_ISteamNetworkingUtils_SetGlobalCallback_SteamNetConnectionStatusChanged",
            )?;
            let s = "SteamAPI_ISteamNetworkingSockets_";
            let api = Api {
                create_listen: sym(&lib, &format!("{s}CreateListenSocketIP"))?,
                connect: sym(&lib, &format!("{s}ConnectByIPAddress"))?,
                accept: sym(&lib, &format!("{s}AcceptConnection"))?,
                close_connection: sym(&lib, &format!("{s}CloseConnection"))?,
                close_listen: sym(&lib, &format!("{s}CloseListenSocket"))?,
                send: sym(&lib, &format!("{s}SendMessageToConnection"))?,
                flush: sym(&lib, &format!("{s}FlushMessagesOnConnection"))?,
                info: sym(&lib, &format!("{s}GetConnectionInfo"))?,
                status: sym(&lib, &format!("{s}GetConnectionRealTimeStatus"))?,
                create_poll_group: sym(&lib, &format!("{s}CreatePollGroup"))?,
                destroy_poll_group: sym(&lib, &format!("{s}DestroyPollGroup"))?,
                set_poll_group: sym(&lib, &format!("{s}SetConnectionPollGroup"))?,
                receive: sym(&lib, &format!("{s}ReceiveMessagesOnPollGroup"))?,
                run_callbacks: sym(&lib, &format!("{s}RunCallbacks"))?,
                release: sym(&lib, "SteamAPI_SteamNetworkingMessage_t_Release")?,
            };
            let mut err = [0 as c_char; 1024];
            if !init(std::ptr::null(), &mut err) {
                let text = CStr::from_ptr(err.as_ptr()).to_string_lossy().into_owned();
                return Err(format!("GameNetworkingSockets_Init: {text}"));
            }
            let utils = utils_v();
            let sockets = sockets_v();
            if utils.is_null() || sockets.is_null() {
                return Err("GameNetworkingSockets: no interface after init".into());
            }
            let rate = crate::send_rate();
            let ok = set_global_i32(utils, CONFIG_SEND_RATE_MIN, rate)
                && set_global_i32(utils, CONFIG_SEND_RATE_MAX, rate)
                && set_callback(utils, on_status);
            if !ok {
                return Err("GameNetworkingSockets: a global setting was refused".into());
            }
            Ok(Self {
                api,
                sockets,
                _lib: lib,
            })
        }
    }
}
