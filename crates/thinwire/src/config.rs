//! Configuration of a runtime endpoint: transport behaviour, server role and key, cipher
//! suites and fault injection.

use std::sync::Arc;
use std::time::Duration;

use thinwire_netmodel::{LinkConfig, LossModel};
use thinwire_proto::{CipherSuite, MemoryBudget, ServerConfig, ServerKey, TransportConfig};

/// Configuration of an [`Endpoint`](crate::Endpoint) or a [`Host`](crate::Host).
///
/// Every connection is encrypted: a Noise NK handshake authenticates the server by its static
/// key, and every data packet is sealed with an AEAD (ChaCha20-Poly1305 or AES-256-GCM). A
/// server without a configured key ([`ServerConfig::key`] `None`) draws a fresh one at every
/// start; a real server keeps its key ([`Config::with_server_key`], e.g. with
/// [`keys::read_server_key`](crate::keys::read_server_key)) so that its clients can pin it.
///
/// ```
/// use thinwire::{Config, FaultConfig, ServerKey};
/// let client = Config::client();
/// let server = Config::server()
///     .with_server_key(ServerKey::from_secret([7; 32]))
///     .with_faults(FaultConfig::new().drop_rate(0.05));
/// assert!(server.server.is_some() && client.server.is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    /// Transport behaviour of the connections (timers, thin-stream mechanisms, limits).
    pub transport: Arc<TransportConfig>,
    /// Length of the connection ids this endpoint issues (1-8 bytes). Default 8: ids nobody
    /// can guess. A server with shorter ids binds each stateless reset token to the client's
    /// address (`docs/PROTOCOL.md` §2.7), so a client whose address changed since its
    /// handshake learns of a restart only by its idle timeout.
    pub cid_len: usize,
    /// Cipher suites accepted for the connections' packets, preferred first. Default: both
    /// encrypted suites ([`CipherSuite::default_preference`]). See
    /// [`insecure_cleartext`](Self::insecure_cleartext) for the opt-out.
    pub cipher_suites: Vec<CipherSuite>,
    /// With a server configuration the endpoint accepts incoming connections.
    pub server: Option<ServerConfig>,
    /// Fault injection on this endpoint's datagrams (testing only; `None` in production).
    pub faults: Option<FaultConfig>,
    /// Requested size of the socket's send and receive buffers in bytes (the operating system
    /// may cap it; failures are ignored). `None` keeps the system default.
    pub socket_buffer: Option<usize>,
    /// The memory the peers can make this endpoint hold, in total and per source, and how it
    /// is shared when tight (see [`MemoryBudget`]). Default 32 MiB in all, 8 MiB per source.
    pub memory: MemoryBudget,
    /// The low-latency mode of [`Host::service`](crate::Host::service): before it blocks in
    /// `poll(2)`, it keeps reading the socket for up to this long, spinning on the core, so
    /// that a datagram arriving in that time is handled without the scheduler's wake-up
    /// latency (tens of microseconds). It costs a busy core while it waits. Zero (the
    /// default) turns it off. The async runtime does not use it.
    pub busy_poll: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self::client()
    }
}

impl Config {
    /// An endpoint that only opens connections.
    pub fn client() -> Self {
        Self {
            transport: Arc::new(TransportConfig::default()),
            cid_len: 8,
            cipher_suites: CipherSuite::default_preference(),
            server: None,
            faults: None,
            socket_buffer: Some(1 << 20),
            memory: MemoryBudget::default(),
            busy_poll: Duration::ZERO,
        }
    }

    /// An endpoint that accepts connections (and may open some too).
    pub fn server() -> Self {
        Self {
            server: Some(ServerConfig::default()),
            ..Self::client()
        }
    }

    /// Replaces the transport configuration.
    pub fn with_transport(mut self, transport: TransportConfig) -> Self {
        self.transport = Arc::new(transport);
        self
    }

    /// Replaces the server configuration (and makes the endpoint a server).
    pub fn with_server(mut self, server: ServerConfig) -> Self {
        self.server = Some(server);
        self
    }

    /// Makes the endpoint a server (with the default server configuration if it was not one)
    /// holding the static key pair `key`; its clients connect with `key.public()`.
    pub fn with_server_key(mut self, key: ServerKey) -> Self {
        self.server.get_or_insert_with(ServerConfig::default).key = Some(key);
        self
    }

    /// **Turns packet encryption off.** Data packets then travel in cleartext with no
    /// authentication: anyone on the path can read them, forge messages, close or hijack the
    /// connection. The handshake still authenticates the server, but nothing protects what
    /// follows it. Only for trusted networks and measurements; both ends must opt out (a
    /// connection between an end that did and one that did not is refused with
    /// [`RefuseReason::NoCommonCipherSuite`](thinwire_proto::RefuseReason::NoCommonCipherSuite)).
    pub fn insecure_cleartext(mut self) -> Self {
        self.cipher_suites = vec![CipherSuite::InsecureCleartext];
        self
    }

    /// Turns on [`Host`](crate::Host)'s low-latency mode: `service` spins on the socket for up
    /// to `spin` before it blocks (see [`busy_poll`](Self::busy_poll)).
    pub fn with_busy_poll(mut self, spin: Duration) -> Self {
        self.busy_poll = spin;
        self
    }

    /// ACKs on the tick: this host sends on each of its connections once per `period`, so its
    /// ACKs wait up to 1.5 periods to ride the next datagram instead of going alone
    /// ([`TransportConfig::with_tick_acks`], applied to the transport set so far).
    pub fn with_tick_acks(mut self, period: Duration) -> Self {
        self.transport = Arc::new((*self.transport).clone().with_tick_acks(period));
        self
    }

    /// Turns on fault injection, on this end's datagrams both ways: set it on one end of a
    /// connection only (see [`FaultConfig`]).
    pub fn with_faults(mut self, faults: FaultConfig) -> Self {
        self.faults = Some(faults);
        self
    }
}

/// Fault injection for one endpoint, like the "fake lag" settings of game networking
/// libraries: drop, delay, jitter and duplicate this endpoint's datagrams to test a game under
/// a bad network on a good one.
///
/// Set it on one end of a connection only (the client's, or the server's for all its
/// clients): it already acts on both directions of that end's traffic, so the same faults on
/// both ends apply twice (`drop_rate(0.02)` on each end loses about 4% each way, and the
/// delay adds up too).
///
/// Each direction is a [`thinwire_netmodel::Link`] (the same model the lab's simulator
/// uses) with its own seeded random generator, so a seed reproduces the same decisions for the
/// same sequence of datagrams. The builder methods apply to both directions; set
/// [`outbound`](Self::outbound) and [`inbound`](Self::inbound) directly for anything else
/// (bursty Gilbert-Elliott loss, bandwidth limits, corruption, reordering).
///
/// ```
/// use std::time::Duration;
/// use thinwire::FaultConfig;
/// let faults = FaultConfig::new()
///     .drop_rate(0.2)
///     .delay(Duration::from_millis(40))
///     .jitter(Duration::from_millis(10))
///     .duplicate(0.01)
///     .seed(7);
/// assert_eq!(faults.outbound.delay, Duration::from_millis(40));
/// ```
#[derive(Debug, Clone, Default)]
pub struct FaultConfig {
    /// Applied to every datagram this endpoint sends, before it reaches the socket.
    pub outbound: LinkConfig,
    /// Applied to every datagram this endpoint receives, before the protocol sees it.
    pub inbound: LinkConfig,
    /// Seed of the fault generator; `None` draws one from the operating system.
    pub seed: Option<u64>,
}

impl FaultConfig {
    /// No faults yet (a perfect link both ways).
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops each datagram independently with probability `p`, in each direction.
    pub fn drop_rate(mut self, p: f64) -> Self {
        self.outbound.loss = LossModel::Bernoulli { p };
        self.inbound.loss = LossModel::Bernoulli { p };
        self
    }

    /// Adds a fixed one-way delay in each direction (the round trip grows by twice `d`).
    pub fn delay(mut self, d: Duration) -> Self {
        self.outbound.delay = d;
        self.inbound.delay = d;
        self
    }

    /// Adds uniform jitter of up to `±j` around the delay, in each direction, without reordering.
    pub fn jitter(mut self, j: Duration) -> Self {
        self.outbound.jitter = j;
        self.inbound.jitter = j;
        self
    }

    /// Duplicates each datagram with probability `p`, in each direction.
    pub fn duplicate(mut self, p: f64) -> Self {
        self.outbound.duplicate = p;
        self.inbound.duplicate = p;
        self
    }

    /// Fixes the seed of the fault generator.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Only outbound faults: inbound datagrams pass untouched.
    pub fn outbound_only(mut self) -> Self {
        self.inbound = LinkConfig::default();
        self
    }
}
