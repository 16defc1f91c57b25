//! Configuration of a runtime endpoint: transport behaviour, server role and fault injection.

use std::sync::Arc;
use std::time::Duration;

use thinwire_netmodel::{LinkConfig, LossModel};
use thinwire_proto::{ServerConfig, TransportConfig};

/// Configuration of an [`Endpoint`](crate::Endpoint) or a [`Host`](crate::Host).
///
/// ```
/// use thinwire::{Config, FaultConfig};
/// let client = Config::client();
/// let server = Config::server().with_faults(FaultConfig::new().drop_rate(0.05));
/// assert!(server.server.is_some() && client.server.is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    /// Transport behaviour of the connections (timers, thin-stream mechanisms, limits).
    pub transport: Arc<TransportConfig>,
    /// Length of the connection ids this endpoint issues (1-8 bytes; 2 allows 65 536
    /// connections per endpoint).
    pub cid_len: usize,
    /// With a server configuration the endpoint accepts incoming connections.
    pub server: Option<ServerConfig>,
    /// Fault injection on this endpoint's datagrams (testing only; `None` in production).
    pub faults: Option<FaultConfig>,
    /// Requested size of the socket's send and receive buffers in bytes (the operating system
    /// may cap it; failures are ignored). `None` keeps the system default.
    pub socket_buffer: Option<usize>,
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
            cid_len: 2,
            server: None,
            faults: None,
            socket_buffer: Some(1 << 20),
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

    /// Turns on fault injection.
    pub fn with_faults(mut self, faults: FaultConfig) -> Self {
        self.faults = Some(faults);
        self
    }
}

/// Fault injection for one endpoint, like the "fake lag" settings of game networking
/// libraries: drop, delay, jitter and duplicate this endpoint's datagrams to test a game under
/// a bad network on a good one.
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
