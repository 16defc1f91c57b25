//! The safe `Host`: a listen socket (servers) or none (clients), the host's connections and
//! its poll group; and the routing of GNS's one global status callback to the host that owns
//! a connection.
#![allow(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::ffi::c_int;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::ffi::{self, ConfigValue, Gns, Handle, IpAddr, Message, StatusChanged};
use crate::{gns, GnsError};

/// Identifies a connection (GNS's `HSteamNetConnection`, unique in the process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId(u32);

/// What [`Host::poll`] hands its callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventRef<'a> {
    /// A connection is up (ours completed, or a peer's was accepted and completed).
    Connected(ConnId),
    /// A message arrived.
    Message {
        /// The connection.
        conn: ConnId,
        /// Whether it was sent reliably.
        reliable: bool,
        /// Its bytes (valid during the callback only).
        data: &'a [u8],
    },
    /// A connection was closed by the peer or timed out.
    Disconnected(ConnId),
}

/// A status change noted by the callback for its host.
#[derive(Debug, Clone, Copy)]
struct Change {
    conn: Handle,
    state: i32,
}

/// Which host owns what, and the changes waiting for each host.
#[derive(Default)]
struct Routes {
    /// Listen socket → host id.
    listen: HashMap<Handle, i64>,
    /// Host id → changes not yet seen by its `poll`.
    queues: HashMap<i64, Vec<Change>>,
}

fn routes() -> MutexGuard<'static, Routes> {
    static ROUTES: LazyLock<Mutex<Routes>> = LazyLock::new(Mutex::default);
    ROUTES.lock().unwrap_or_else(|e| e.into_inner())
}

/// GNS's status-changed callback (runs inside `RunCallbacks`, on whichever thread called it):
/// queues the change for the host that owns the connection. Never panics across the C
/// boundary.
pub(crate) extern "C" fn on_status(cb: *mut StatusChanged) {
    if cb.is_null() {
        return;
    }
    // SAFETY: GNS passes a valid callback struct for the duration of the call; it is read
    // unaligned-safe (the struct is packed).
    let cb = unsafe { std::ptr::read_unaligned(cb) };
    let (listen, user) = (cb.info.listen_socket, cb.info.user_data);
    let mut r = routes();
    let owner = if listen != 0 {
        r.listen.get(&listen).copied()
    } else {
        Some(user)
    };
    if let Some(q) = owner.and_then(|o| r.queues.get_mut(&o)) {
        q.push(Change {
            conn: cb.conn,
            state: cb.info.state,
        });
    }
}

/// Messages taken from the poll group per receive call.
const BATCH: usize = 256;
/// Receive calls per poll at most (then the rest waits for the next poll).
const BATCHES: usize = 64;

/// A GNS host: a listen socket (servers) or none (clients; every connection GNS opens has a
/// socket of its own), its connections and its poll group. Used from one thread; hosts in
/// different threads share the process's one GNS.
pub struct Host {
    gns: &'static Gns,
    /// The route id (also every client connection's user data).
    id: i64,
    /// Servers: the listen socket and its address.
    listen: Option<(Handle, SocketAddrV4)>,
    group: Handle,
    /// Connections and whether each is up.
    conns: HashMap<Handle, bool>,
    /// Connections sent on since the last flush.
    unflushed: HashSet<Handle>,
    batch: Vec<*mut Message>,
}

// SAFETY: the raw message pointers in `batch` are only scratch space between a receive and
// the release in the same `poll`; every GNS call is thread-safe.
unsafe impl Send for Host {}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("id", &self.id)
            .field("listen", &self.listen)
            .field("connections", &self.conns.len())
            .finish_non_exhaustive()
    }
}

fn ip_addr(a: SocketAddrV4) -> IpAddr {
    let mut ipv6 = [0u8; 16];
    ipv6[10] = 0xff;
    ipv6[11] = 0xff;
    ipv6[12..].copy_from_slice(&a.ip().octets());
    IpAddr {
        ipv6,
        port: a.port(),
    }
}

fn v4(a: IpAddr) -> Option<SocketAddrV4> {
    let ip = a.ipv6;
    let mapped = ip[..10].iter().all(|&b| b == 0) && ip[10] == 0xff && ip[11] == 0xff;
    mapped.then(|| {
        let o: [u8; 4] = [ip[12], ip[13], ip[14], ip[15]];
        SocketAddrV4::new(Ipv4Addr::from(o), a.port)
    })
}

impl Host {
    fn new(listen: Option<(Handle, SocketAddrV4)>) -> Result<Self, GnsError> {
        static NEXT: AtomicI64 = AtomicI64::new(1);
        let gns = gns()?;
        // SAFETY: a plain call on the initialised interface.
        let group = unsafe { (gns.api.create_poll_group)(gns.sockets) };
        if group == 0 {
            if let Some((s, _)) = listen {
                // SAFETY: the listen socket was created above and is closed once.
                unsafe { (gns.api.close_listen)(gns.sockets, s) };
            }
            return Err(GnsError::PollGroup);
        }
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut r = routes();
        r.queues.insert(id, Vec::new());
        if let Some((s, _)) = listen {
            r.listen.insert(s, id);
        }
        Ok(Self {
            gns,
            id,
            listen,
            group,
            conns: HashMap::new(),
            unflushed: HashSet::new(),
            batch: vec![std::ptr::null_mut(); BATCH],
        })
    }

    /// A server listening on `addr`. Port 0 picks a free port (GNS itself needs a port: one
    /// the system hands a probe socket is taken, retried if another process takes it first).
    pub fn listen(addr: SocketAddrV4) -> Result<Self, GnsError> {
        let gns = gns()?;
        for _ in 0..8 {
            let at = if addr.port() == 0 {
                let probe = UdpSocket::bind(addr).map_err(|_| GnsError::Listen(addr))?;
                match probe.local_addr() {
                    Ok(std::net::SocketAddr::V4(a)) => a,
                    _ => return Err(GnsError::Listen(addr)),
                }
            } else {
                addr
            };
            let ip = ip_addr(at);
            // SAFETY: `ip` is a valid address for the call; no options.
            let s = unsafe { (gns.api.create_listen)(gns.sockets, &ip, 0, std::ptr::null()) };
            if s != 0 {
                return Self::new(Some((s, at)));
            }
            if addr.port() != 0 {
                break;
            }
        }
        Err(GnsError::Listen(addr))
    }

    /// A client host (no socket of its own until it connects).
    pub fn client() -> Result<Self, GnsError> {
        Self::new(None)
    }

    /// A server's listening address.
    pub fn local_addr(&self) -> Option<SocketAddrV4> {
        self.listen.map(|(_, a)| a)
    }

    /// Starts a connection to `to`; [`EventRef::Connected`] follows from [`poll`](Self::poll).
    pub fn connect(&mut self, to: SocketAddrV4) -> Result<ConnId, GnsError> {
        let ip = ip_addr(to);
        // the user data routes the connection's status changes to this host
        let opt = ConfigValue {
            value: ffi::CONFIG_CONNECTION_USER_DATA,
            data_type: ffi::CONFIG_TYPE_INT64,
            int64: self.id,
        };
        let api = &self.gns.api;
        // SAFETY: `ip` and the one option live through the call.
        let c = unsafe { (api.connect)(self.gns.sockets, &ip, 1, &opt) };
        if c == 0 {
            return Err(GnsError::Connect(to));
        }
        // SAFETY: `c` is a live connection of ours, `group` our poll group.
        unsafe { (api.set_poll_group)(self.gns.sockets, c, self.group) };
        self.conns.insert(c, false);
        Ok(ConnId(c))
    }

    /// The peer address of a connection.
    pub fn remote(&self, conn: ConnId) -> Option<SocketAddrV4> {
        if !self.conns.contains_key(&conn.0) {
            return None;
        }
        let mut info = std::mem::MaybeUninit::<ffi::ConnectionInfo>::zeroed();
        // SAFETY: GNS fills the struct it is given when it returns true.
        let ok = unsafe { (self.gns.api.info)(self.gns.sockets, conn.0, info.as_mut_ptr()) };
        // SAFETY: zeroed is a valid value of this plain-data struct, filled when `ok`.
        ok.then(|| unsafe { info.assume_init() })
            .and_then(|i| v4(i.addr_remote))
    }

    /// Runs GNS's callbacks and hands this host's status changes and received messages to
    /// `f`, without waiting; returns how many events it handed.
    pub fn poll(&mut self, mut f: impl FnMut(EventRef<'_>)) -> usize {
        let (api, s) = (&self.gns.api, self.gns.sockets);
        // SAFETY: a plain call; the callback it may run only takes the routes' lock.
        unsafe { (api.run_callbacks)(s) };
        let changes = std::mem::take(routes().queues.get_mut(&self.id).unwrap_or(&mut Vec::new()));
        let mut n = 0;
        for c in changes {
            if let Some(e) = self.change(c) {
                f(e);
                n += 1;
            }
        }
        for _ in 0..BATCHES {
            // SAFETY: `batch` holds BATCH pointers for GNS to fill.
            let got =
                unsafe { (api.receive)(s, self.group, self.batch.as_mut_ptr(), BATCH as c_int) };
            let got = usize::try_from(got).unwrap_or(0).min(BATCH);
            for &m in &self.batch[..got] {
                // SAFETY: GNS handed us `m`, valid until released; its data is `size` bytes.
                let (conn, reliable, data) = unsafe {
                    let msg = &*m;
                    let len = usize::try_from(msg.size).unwrap_or(0);
                    let data = if len == 0 || msg.data.is_null() {
                        &[][..]
                    } else {
                        std::slice::from_raw_parts(msg.data.cast::<u8>(), len)
                    };
                    (msg.conn, msg.flags & ffi::SEND_RELIABLE != 0, data)
                };
                f(EventRef::Message {
                    conn: ConnId(conn),
                    reliable,
                    data,
                });
                // SAFETY: released once, after its last use.
                unsafe { (api.release)(m) };
            }
            n += got;
            if got < BATCH {
                break;
            }
        }
        n
    }

    /// Acts on a status change of one of this host's connections.
    fn change(&mut self, c: Change) -> Option<EventRef<'static>> {
        let (api, s) = (&self.gns.api, self.gns.sockets);
        match c.state {
            ffi::STATE_CONNECTING if self.listen.is_some() && !self.conns.contains_key(&c.conn) => {
                // SAFETY: plain calls on a connection GNS just reported.
                let ok = unsafe { (api.accept)(s, c.conn) } == ffi::RESULT_OK
                    && unsafe { (api.set_poll_group)(s, c.conn, self.group) };
                if ok {
                    self.conns.insert(c.conn, false);
                } else {
                    // SAFETY: as above.
                    unsafe { (api.close_connection)(s, c.conn, 0, std::ptr::null(), false) };
                }
                None
            }
            ffi::STATE_CONNECTED => match self.conns.get_mut(&c.conn) {
                Some(up) if !*up => {
                    *up = true;
                    Some(EventRef::Connected(ConnId(c.conn)))
                }
                _ => None,
            },
            ffi::STATE_CLOSED_BY_PEER | ffi::STATE_PROBLEM_DETECTED_LOCALLY => {
                // SAFETY: the connection is released once (it is no longer ours after this).
                unsafe { (api.close_connection)(s, c.conn, 0, std::ptr::null(), false) };
                self.unflushed.remove(&c.conn);
                self.conns
                    .remove(&c.conn)
                    .map(|_| EventRef::Disconnected(ConnId(c.conn)))
            }
            _ => None,
        }
    }

    /// Queues a message (GNS's Nagle holds it until [`flush`](Self::flush) or 5 ms).
    /// `Ok(false)`: the connection's send buffer is full (`k_EResultLimitExceeded`), or the
    /// connection has just ended (`k_EResultNoConnection`: the peer closed it, and
    /// [`EventRef::Disconnected`] follows from the next [`poll`](Self::poll)), as ENet
    /// drops a packet for a peer that is going away.
    pub fn send(&mut self, conn: ConnId, data: &[u8], reliable: bool) -> Result<bool, GnsError> {
        if !self.conns.contains_key(&conn.0) {
            return Err(GnsError::NoConnection);
        }
        let flags = if reliable { ffi::SEND_RELIABLE } else { 0 };
        let len = u32::try_from(data.len()).map_err(|_| GnsError::Send(0))?;
        // SAFETY: GNS copies `len` bytes from `data` before returning.
        let r = unsafe {
            (self.gns.api.send)(
                self.gns.sockets,
                conn.0,
                data.as_ptr().cast(),
                len,
                flags,
                std::ptr::null_mut(),
            )
        };
        match r {
            ffi::RESULT_OK => {
                self.unflushed.insert(conn.0);
                Ok(true)
            }
            ffi::RESULT_LIMIT_EXCEEDED | ffi::RESULT_NO_CONNECTION => Ok(false),
            e => Err(GnsError::Send(e)),
        }
    }

    /// Bytes queued on a connection and not yet sent (GNS's real-time status).
    pub fn pending(&self, conn: ConnId) -> usize {
        let mut st = std::mem::MaybeUninit::<ffi::RealTimeStatus>::zeroed();
        // SAFETY: GNS fills the struct; no lanes asked for.
        let r = unsafe {
            (self.gns.api.status)(
                self.gns.sockets,
                conn.0,
                st.as_mut_ptr(),
                0,
                std::ptr::null_mut(),
            )
        };
        if r != ffi::RESULT_OK {
            return 0;
        }
        // SAFETY: zeroed is valid for this plain-data struct, and GNS filled it.
        let st = unsafe { st.assume_init() };
        let (u, r) = (st.pending_unreliable, st.pending_reliable);
        usize::try_from(u).unwrap_or(0) + usize::try_from(r).unwrap_or(0)
    }

    /// Sends what Nagle holds on every connection sent on since the last flush.
    pub fn flush(&mut self) {
        for c in self.unflushed.drain() {
            // SAFETY: a plain call; an ended connection only returns an error code.
            unsafe { (self.gns.api.flush)(self.gns.sockets, c) };
        }
    }

    /// Connections of this host (up or still opening).
    pub fn connections(&self) -> usize {
        self.conns.len()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let (api, s) = (&self.gns.api, self.gns.sockets);
        for &c in self.conns.keys() {
            // SAFETY: each connection of ours is closed once.
            unsafe { (api.close_connection)(s, c, 0, std::ptr::null(), false) };
        }
        if let Some((l, _)) = self.listen {
            // SAFETY: closed once.
            unsafe { (api.close_listen)(s, l) };
        }
        // SAFETY: destroyed once.
        unsafe { (api.destroy_poll_group)(s, self.group) };
        let mut r = routes();
        r.queues.remove(&self.id);
        if let Some((l, _)) = self.listen {
            r.listen.remove(&l);
        }
    }
}
