//! Configuration of endpoints, servers and the transport behaviour of their connections.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::crypto::{CipherSuite, ServerKey, TokenKey, MIN_KEY_UPDATE_PACKETS};
use crate::error::ConfigError;
use crate::policy::repair::RepairTarget;
use crate::policy::PolicyCache;

/// Transport behaviour of every connection of an endpoint: thin-stream recovery, acks, timers.
///
/// The defaults are the thin-stream configuration. [`TransportConfig::tcp_like`] turns every
/// thin-stream mechanism off, for comparisons.
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Largest UDP payload sent (bytes). Default 1200, which passes every IPv6 path.
    pub max_datagram_size: usize,
    /// Largest message accepted on a reliable channel (fragmented as needed). Default 1 MiB.
    pub max_message_size: usize,
    /// RTT assumed before the first sample. Default 250 ms.
    pub initial_rtt: Duration,
    /// Lower bound of the retransmission timeout. Default 5 ms (no 200 ms / 1 s floor).
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout after backoff. Default 3 s, well below the
    /// idle timeout, so a backed-off connection still probes before it is given up.
    pub max_rto: Duration,
    /// Clock granularity used in the RTO variance term. Default 1 ms.
    pub timer_granularity: Duration,
    /// A connection is thin while fewer than this many packets are in flight. Default 4.
    pub thin_threshold: usize,
    /// Thin-stream mode: linear timeouts, loss after one indication, tight RTO. Default on.
    pub thin_streams: bool,
    /// The thin-stream reordering window as a fraction of the SRTT, `1 / divisor`: while thin,
    /// a packet is declared lost at the first acknowledgement of a later packet once it has been
    /// out for one RTT plus this window. Default 16 (6 ms at a 100 ms RTT).
    pub thin_reorder_divisor: u32,
    /// Redundant data bundling: while thin, unacknowledged reliable data rides again in new
    /// packets. Default on.
    pub bundling: bool,
    /// Most bytes of old data bundled into one packet. Default: the datagram size.
    pub bundle_budget: usize,
    /// Most redundant copies of one piece of data that bundling sends. Default 1: a message
    /// rides again in the next packet only, so bundling at most doubles the payload bytes even
    /// when messages are sent many times per round trip (more copies load a congested
    /// bottleneck more than they help, as RDB's evaluations found).
    pub bundle_max_copies: u8,
    /// The implicit target of every reliable channel while the connection is thin: messages
    /// should arrive within the one-way delay plus `rtts` round trips with probability
    /// `target`, and the repair policy ([`crate::policy::repair`]) sends as many copies per
    /// retransmission (or first transmission) as that needs at the measured loss rates.
    /// Default: 1.5 RTTs at 99.9%, at most 3 copies a stage. `None`: plain retransmission.
    /// [`Endpoint::set_channel_repair`](crate::Endpoint::set_channel_repair) sets it per
    /// channel.
    pub repair: Option<RepairTarget>,
    /// Acknowledgement redundancy: an ACK frame rides in the next two outgoing packets after
    /// one with news (so one lost ACK does not cause a spurious retransmission when data goes
    /// back), and an ACK-only packet is sent twice when the packet it acknowledges is worth
    /// more than the ACK at the measured loss rate (see `docs/PROTOCOL.md` section 8).
    /// Default on.
    pub ack_redundancy: bool,
    /// Longest an ACK is held when no rule asks for an immediate one, announced to the peer in
    /// the handshake. Default 5 ms, at most [`MAX_ACK_DELAY`] (10 s). It is also the yardstick
    /// for the peer's: a peer announcing a longer one is taken to hold its ACKs (see
    /// `immediate_ack`).
    pub max_ack_delay: Duration,
    /// Acknowledge at once every packet that completes a message (not only out-of-order
    /// packets and every second packet). Default on. While a stream is thin its timeout
    /// allows the ACK delay the peer has been reporting; it allows the peer's announced
    /// `max_ack_delay` instead when this is off (this end then expects its peer to hold ACKs
    /// too) or when the peer announced a longer delay than this end's `max_ack_delay`
    /// ([`with_tick_acks`](Self::with_tick_acks)).
    pub immediate_ack: bool,
    /// Paired acknowledgements, for a connection that sends many packets per round trip at a
    /// steady pace (a gateway trunk): a packet whose number is even and that arrives in order
    /// waits up to `max_ack_delay` for its odd successor, whose ACK covers both; an odd packet,
    /// a packet that opens a gap, a duplicate and a deadline shard are acknowledged at once.
    /// The sender, with the same setting, allows its even packets the peer's `max_ack_delay`
    /// before their timeout, and its odd ones none. Halves the ACK-only packets of a one-way
    /// stream. Both ends of a connection must agree (it is not negotiated). Default off.
    pub ack_pairs: bool,
    /// Most ranges of received packet numbers remembered (for duplicate detection and ACKs).
    /// Default 32.
    pub max_ack_ranges: usize,
    /// Most ranges reported in one ACK frame, newest first. Default 4, like TCP's SACK blocks:
    /// older ranges were reported already, and repeating them in every ACK of a one-way stream
    /// would make each ACK several times larger.
    pub ack_frame_ranges: usize,
    /// Initial congestion window (packets). Default 10.
    pub initial_window: u32,
    /// Smallest congestion window (packets); thin streams are never held below it. Default 4.
    pub min_window: u32,
    /// Largest congestion window (packets). Default 10 000.
    pub max_window: u32,
    /// A PING is sent when no packet at all was sent for this long and nothing is in flight.
    /// Default 2 s: any packet (an ACK too) refreshes NAT bindings and the peer's idle timer, so
    /// only a connection silent both ways pings, well inside the idle timeout.
    pub keepalive_interval: Duration,
    /// The connection is given up when nothing is received for this long. Default 10 s.
    pub idle_timeout: Duration,
    /// Interval between handshake retransmissions. Default 250 ms.
    pub handshake_retry: Duration,
    /// The handshake is given up after this long. Default 5 s.
    pub handshake_timeout: Duration,
    /// How long a graceful close may wait for outstanding reliable data. Default 5 s.
    pub close_timeout: Duration,
    /// Most payload bytes queued for sending per connection and not yet acknowledged. Default
    /// 2 MiB: a largest message (`max_message_size`) and as much again queued behind it; at
    /// 60 messages of 300 bytes a second, two minutes of data the peer has not acknowledged.
    /// A peer that never acknowledges makes its connection hold this much at most, less while
    /// the endpoint's [`MemoryBudget`] is tight (sends above the connection's fair share are
    /// then refused).
    pub send_buffer: usize,
    /// Most bytes held for ordering and reassembly per connection (payloads plus a fixed
    /// overhead per held message and fragment). Default 1 MiB, sized for games: a game
    /// stream of 60 messages of 300 bytes a second fills it only after a minute of
    /// head-of-line blocking, and one largest message still reassembles (its next-in-order
    /// parts are always let in). The endpoint's [`MemoryBudget`] may allow less while memory
    /// is tight.
    pub recv_buffer: usize,
    /// Most messages under reassembly at once per connection (so per channel too); a packet
    /// that would start more is dropped unacknowledged, like one that would overflow
    /// `recv_buffer`. Default 1024.
    pub max_partial_messages: usize,
    /// Packets sealed under one key before the sender moves to the next generation (a key
    /// update, signalled by the key phase bit); at least [`MIN_KEY_UPDATE_PACKETS`], since a
    /// receiver takes a peer's key update only after a quarter of that many packets of the
    /// current key (or a second). Default 2^22: half of AES-GCM's
    /// confidentiality limit of 2^23 packets per key (RFC 9001 §6.6), about 19 hours of one
    /// connection at 60 packets a second.
    pub key_update_packets: u64,
    /// Most keys remembered on the receive side per connection, shared evenly by its
    /// latest-value channels (each keeps `max_latest_keys / n`). Default 16 384, about
    /// 800 KB when full; a channel that has seen more keys forgets the one with the oldest
    /// value (and refuses older values of keys it does not know, so none goes backwards).
    pub max_latest_keys: usize,
    /// Data shard size of deadline messages (bytes). Default 512: a 2 KB message travels as
    /// four data shards.
    pub deadline_shard_size: usize,
    /// Deliver deadline messages that complete after their deadline (flagged late); when off
    /// they are dropped. Default on.
    pub deliver_late: bool,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            max_datagram_size: 1200,
            max_message_size: 1 << 20,
            initial_rtt: Duration::from_millis(250),
            min_rto: Duration::from_millis(5),
            max_rto: Duration::from_secs(3),
            timer_granularity: Duration::from_millis(1),
            thin_threshold: 4,
            thin_streams: true,
            thin_reorder_divisor: 16,
            bundling: true,
            bundle_budget: 1200,
            bundle_max_copies: 1,
            repair: Some(RepairTarget::default()),
            ack_redundancy: true,
            max_ack_delay: Duration::from_millis(5),
            immediate_ack: true,
            ack_pairs: false,
            max_ack_ranges: 32,
            ack_frame_ranges: 4,
            initial_window: 10,
            min_window: 4,
            max_window: 10_000,
            keepalive_interval: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(10),
            handshake_retry: Duration::from_millis(250),
            handshake_timeout: Duration::from_secs(5),
            close_timeout: Duration::from_secs(5),
            send_buffer: 2 << 20,
            recv_buffer: 1 << 20,
            max_partial_messages: 1024,
            key_update_packets: 1 << 22,
            max_latest_keys: 16_384,
            deadline_shard_size: 512,
            deliver_late: true,
        }
    }
}

/// The longest ACK delay an endpoint may announce; a peer caps what it allows for at this
/// (a hostile peer cannot stall the other's retransmission timer beyond it).
pub const MAX_ACK_DELAY: Duration = Duration::from_secs(10);

impl TransportConfig {
    /// TCP-like recovery for comparison: exponential backoff, a 200 ms RTO floor, three
    /// indications before a fast retransmit, no bundling, no repair copies, no ACK
    /// redundancy, delayed acks of up to 40 ms.
    pub fn tcp_like() -> Self {
        Self {
            thin_streams: false,
            bundling: false,
            repair: None,
            ack_redundancy: false,
            min_rto: Duration::from_millis(200),
            max_ack_delay: Duration::from_millis(40),
            immediate_ack: false,
            ..Self::default()
        }
    }

    /// ACKs that ride the game loop's own datagrams, for an endpoint that sends on each of its
    /// connections once per `period` (a server's tick, a client's input rate): a message is
    /// not acknowledged at once when it completes but with the next datagram going back, which
    /// a ticking peer sends within a period, or by an ACK-only packet after
    /// `max_ack_delay` = 1.5 `period` (the half period leaves room for the tick's own work and
    /// a late tick). A 30 Hz exchange then takes two datagrams per tick instead of four, and
    /// a server's work per client and tick shrinks with them. Two packets unacknowledged are
    /// still acknowledged at once, so an ACK rides only while the other end sends at most one
    /// packet between two of this end's (60 Hz inputs to a 30 Hz server still get ACK-only
    /// packets, one per two inputs).
    ///
    /// What it costs: the peer, which learns the longer ACK delay in the handshake, allows up
    /// to that much more before a retransmission timeout. A loss that a later packet reveals
    /// (a gap) is still acknowledged at once and repaired after one indication, as are
    /// out-of-order and duplicate packets; what is slower is the timeout path (the last
    /// packet before a pause), and the repair policy, whose stages are spaced by the timeout,
    /// plans its copies against the longer one. Each end may set it alone (at any period above
    /// 3.3 ms against a peer on the defaults, whose `max_ack_delay` is 5 ms): a thin stream's
    /// timeout allows the peer's announced maximum, rather than the delay the peer has been
    /// reporting (which, from a ticking peer, follows the phase of the two ends' sending),
    /// whenever this end holds its own ACKs or the peer announced a longer delay than this
    /// end's. Sets `immediate_ack` off and `max_ack_delay`; `docs/GUIDE.md` has an example.
    pub fn with_tick_acks(mut self, period: Duration) -> Self {
        self.immediate_ack = false;
        self.max_ack_delay = period + period / 2;
        self
    }

    /// Largest payload of one message frame: what fits a datagram after the largest header and
    /// frame overhead, with room left for an ACK frame. Messages up to this size travel whole.
    pub fn max_unfragmented(&self) -> usize {
        self.max_datagram_size.saturating_sub(FRAME_HEADROOM)
    }

    /// Checks the values are usable.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_ack_delay > MAX_ACK_DELAY {
            return Err(ConfigError::AckDelay(self.max_ack_delay));
        }
        if self.max_datagram_size < 256 || self.max_datagram_size > 65_527 {
            return Err(ConfigError::DatagramSize(self.max_datagram_size));
        }
        if self.min_rto > self.max_rto || self.min_rto.is_zero() {
            return Err(ConfigError::RtoBounds);
        }
        if self.keepalive_interval >= self.idle_timeout {
            return Err(ConfigError::KeepaliveNotBelowIdle);
        }
        if self.repair.is_some_and(|r| !r.is_valid()) {
            return Err(ConfigError::Repair);
        }
        if self.thin_reorder_divisor == 0
            || self.max_ack_ranges == 0
            || self.ack_frame_ranges == 0
            || self.min_window == 0
        {
            return Err(ConfigError::Zero);
        }
        if self.key_update_packets < MIN_KEY_UPDATE_PACKETS {
            return Err(ConfigError::KeyUpdatePackets(self.key_update_packets));
        }
        let frags = self
            .max_message_size
            .div_ceil(self.max_unfragmented().max(1));
        if frags > 1024 {
            return Err(ConfigError::MessageSize(self.max_message_size));
        }
        Ok(())
    }
}

/// Bytes of a datagram reserved for headers, frame overhead and a piggybacked ACK:
/// short header (13 at most) + full message framing (27 at most) + an ACK of a few ranges,
/// + the AEAD tag (16).
pub(crate) const FRAME_HEADROOM: usize = 116;

/// Configuration of an endpoint (one UDP socket's worth of connections).
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Transport behaviour of this endpoint's connections.
    pub transport: Arc<TransportConfig>,
    /// Length of the connection ids this endpoint issues (1-8 bytes). Default 8: random ids
    /// nobody can guess or enumerate. Shorter ids save bytes in every packet sent to this
    /// endpoint, but anyone can enumerate them, so a server with ids under 8 bytes binds each
    /// stateless reset token to the client's address (`docs/PROTOCOL.md` §2.7): weaker against
    /// an attacker that reads the client's traffic, and a client whose address changed since
    /// its handshake learns of a restart only by its idle timeout.
    pub cid_len: usize,
    /// Seed of the endpoint's random numbers (connection ids, nonces, cookie key, handshake
    /// ephemeral keys, and the server key when none is configured). A runtime seeds it from the
    /// operating system; tests and simulations fix it.
    pub rng_seed: [u8; 32],
    /// Cipher suites this endpoint accepts for its connections' packets, preferred first.
    /// Default [`CipherSuite::default_preference`]: both encrypted suites.
    /// [`CipherSuite::InsecureCleartext`] is used only if both ends list it.
    pub cipher_suites: Vec<CipherSuite>,
    /// Where the connections' deadline and repair policies are looked up. A fresh cache by
    /// default; pass a clone of one cache to several endpoints to solve each policy once.
    pub policy_cache: PolicyCache,
    /// The memory its peers can make the endpoint hold, in total and per source, and how it
    /// is shared when tight. Default [`MemoryBudget::default`], for servers and clients
    /// alike.
    pub memory: MemoryBudget,
}

/// The memory an endpoint's peers can make it hold: what its connections buffer for
/// ordering and reassembly, the keys of latest-value channels, deadline shards, and the data
/// queued for sending that the peers have not acknowledged. Each connection is bounded by
/// [`TransportConfig::recv_buffer`] and [`TransportConfig::send_buffer`]; this bounds their
/// sum, for the whole endpoint and for the connections of one source (an IPv4 address or an
/// IPv6 /64).
///
/// **Fair shares.** A connection's fair share is the budget divided by the connections held
/// (`total / n`), and for its source `per_source / n_source`; the smaller of the two counts.
/// While the endpoint (or the source) has room, a connection may grow up to its own limits;
/// once it has none, only connections within their fair share may grow: data that would take
/// a connection above its share is refused (dropped unacknowledged, so an honest sender sends
/// it again, or [`SendError::BufferFull`](crate::SendError::BufferFull) for the application's
/// own sends). A connection that holds more than its share *of what its peer sent* for
/// `grace` while the endpoint (or its source) is over budget is closed: the application sees
/// [`PeerError::OverMemoryBudget`](crate::PeerError::OverMemoryBudget), the peer a CLOSE with
/// [`CLOSE_MEMORY_BUDGET`](crate::CLOSE_MEMORY_BUDGET). What the application queued is never a
/// reason to close (its sends are refused instead), and a connection within its fair share is
/// never closed for memory. See `docs/PROTOCOL.md` §11.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Most bytes all connections together may hold. Default 32 MiB: the fair share of
    /// 10 000 connections is then 3.3 KB each (a thin stream holds a few hundred bytes), and
    /// 32 connections that fill their buffers cannot take the server past it.
    pub total: usize,
    /// Most bytes the connections of one source may hold. Default 8 MiB, a quarter of the
    /// total: one host (or one carrier-grade NAT) cannot take all of it, while hundreds of
    /// honest players behind one address, each holding kilobytes, fit.
    pub per_source: usize,
    /// How long a connection may stay above its fair share while memory is over budget
    /// before it is closed. Default 2 s: longer than a burst of reordering, shorter than an
    /// attack needs to hurt.
    pub grace: Duration,
}

impl Default for MemoryBudget {
    fn default() -> Self {
        Self {
            total: 32 << 20,
            per_source: 8 << 20,
            grace: Duration::from_secs(2),
        }
    }
}

impl EndpointConfig {
    /// Default configuration with the given random seed.
    pub fn new(rng_seed: [u8; 32]) -> Self {
        Self {
            transport: Arc::new(TransportConfig::default()),
            cid_len: 8,
            rng_seed,
            cipher_suites: CipherSuite::default_preference(),
            policy_cache: PolicyCache::default(),
            memory: MemoryBudget::default(),
        }
    }

    /// **Turns packet encryption off**: data packets travel in cleartext with no
    /// authentication, so anyone on the path can read, forge, close or hijack a connection.
    /// For trusted networks and lab comparisons only; both ends must opt out.
    pub fn insecure_cleartext(mut self) -> Self {
        self.cipher_suites = vec![CipherSuite::InsecureCleartext];
        self
    }

    /// Checks the values are usable.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.memory.total == 0 || self.memory.per_source == 0 {
            return Err(ConfigError::MemoryBudget);
        }
        if !(1..=crate::wire::MAX_CID_LEN).contains(&self.cid_len) {
            return Err(ConfigError::CidLen(self.cid_len));
        }
        if self.cipher_suites.is_empty() || self.cipher_suites.len() > crate::wire::MAX_SUITES {
            return Err(ConfigError::CipherSuites);
        }
        self.transport.validate()
    }
}

/// What an endpoint needs to accept incoming connections.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The server's static key pair; clients must know its public half
    /// ([`Endpoint::public_key`](crate::Endpoint::public_key)). `None` draws one from the
    /// endpoint's seed, which suits tests and throwaway servers: a real server keeps its key
    /// across restarts, so that its clients can pin it and its resets stay valid.
    pub key: Option<ServerKey>,
    /// How long a handshake cookie stays valid. Default 5 s.
    pub cookie_lifetime: Duration,
    /// Most connections held at once; a client beyond it is refused explicitly
    /// ([`RefuseReason::ServerFull`](crate::RefuseReason::ServerFull)). Default 10 000.
    /// From 7/8 of it on, new clients from the network prefixes (IPv4 /24, IPv6 /48) holding
    /// the most connections are refused first
    /// ([`RefuseReason::BusyNetwork`](crate::RefuseReason::BusyNetwork)); not with connect
    /// tokens.
    pub max_connections: usize,
    /// Most connections held at once for one source: one IPv4 address, or one IPv6 /64 (every
    /// connection with that source counts, one this endpoint opened to it too); beyond it a
    /// client is refused
    /// ([`RefuseReason::TooManyFromSource`](crate::RefuseReason::TooManyFromSource)).
    /// Default 64 (a LAN party behind one NAT fits; one host cannot fill the table). Not
    /// applied when the server requires connect tokens: each token's client id is admitted
    /// once, whatever address it comes from (a carrier-grade NAT, a load test).
    pub max_connections_per_source: usize,
    /// Sources exempt from the per-source limits (connections held and Connects per second):
    /// the address of a thinwire gateway, whose players all arrive from it. Their Connects
    /// still need a cookie; only the per-source budgets are lifted. Default empty.
    pub trusted_sources: Vec<IpAddr>,
    /// Connects processed per second per source (whose address the cookie has proven), after
    /// a burst of twice as many; beyond it they are dropped. Each costs the server a Noise
    /// message, so one host cannot keep it busy. Default 32.
    pub handshakes_per_second_per_source: u32,
    /// Stateless replies (Challenges, version negotiations, Resets) sent per second by the
    /// whole endpoint, after a burst of one second's worth; beyond it Hellos and stray packets
    /// go unanswered. Global, because before a cookie the source may be spoofed. Default
    /// 10 000.
    pub stateless_replies_per_second: u32,
    /// Most stateless replies (challenges, resets, refusals) queued at once. Default 1024.
    pub max_stateless_queue: usize,
    /// Admission by connect token: when set, a client without a valid token minted with this
    /// policy's key is refused before anything is allocated for it.
    pub connect_tokens: Option<TokenPolicy>,
    /// Noise message-1 reads (one X25519 operation each) per second for the whole endpoint,
    /// after a burst of a quarter of that; Connects beyond it wait in a queue served
    /// round-robin by source (`docs/PROTOCOL.md` §5.6). Default 1000: a failed read (random
    /// bytes, one X25519) measured 89 µs and the server side of a whole handshake 182 µs on a
    /// busy 2-core machine (`measure_handshake_cost` in `src/tests/admission.rs`), so a flood
    /// of Connects takes at most a tenth of one core, and admitted handshakes a fifth, from
    /// what established connections need; a mass reconnect of 10 000 players takes 10 s.
    /// 0 reads nothing.
    pub handshake_reads_per_second: u32,
    /// Most Connects waiting for their read at once (their cookie, source budget and capacity
    /// checks passed); beyond it a Connect from a source holding at least two fewer than the
    /// source holding the most (or from a trusted source) evicts that source's newest, and is
    /// dropped otherwise (its client resends it). Default 1024.
    pub max_pending_handshakes: usize,
    /// Most waiting Connects read per [`Endpoint::handle_timeout`](crate::Endpoint::handle_timeout)
    /// call (one turn of a runtime's loop, after the turn's datagrams), within
    /// `handshake_reads_per_second`; [`Endpoint::handle_handshakes`](crate::Endpoint::handle_handshakes)
    /// reads any other number. Default 8 (well under a millisecond of work). 0: only
    /// `handle_handshakes` reads them.
    pub handshakes_per_turn: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            key: None,
            cookie_lifetime: Duration::from_secs(5),
            max_connections: 10_000,
            max_connections_per_source: 64,
            trusted_sources: Vec::new(),
            handshakes_per_second_per_source: 32,
            stateless_replies_per_second: 10_000,
            max_stateless_queue: 1024,
            connect_tokens: None,
            handshake_reads_per_second: 1000,
            max_pending_handshakes: 1024,
            handshakes_per_turn: 8,
        }
    }
}

/// How a server checks connect tokens (see [`ConnectToken`](crate::ConnectToken)).
#[derive(Debug, Clone)]
pub struct TokenPolicy {
    /// The secret shared with the backend that mints the tokens.
    pub key: TokenKey,
    /// The server's public addresses: when not empty, a token must list one of them (a token
    /// minted for another server is refused). Empty: not checked (behind NAT the server may
    /// not know them).
    pub public_addresses: Vec<SocketAddr>,
}
