//! [`TcpConfig`] and the named variants of the TCP model ([`TcpVariant`]).
//!
//! | variant | name | what |
//! |---|---|---|
//! | [`TcpVariant::Generic`] | `tcp-model` | NewReno, RFC 6298 timer with a 200 ms floor on the RTO, delayed ACK every second segment or 200 ms, initial window 10 |
//! | [`TcpVariant::Linux`] | `tcp-model-linux` | NewReno as Linux 2.6 runs it: RTO = SRTT + max(4·RTTVAR, 200 ms), Linux's receiver (40 ms delayed-ACK timer, immediate ACKs after an idle gap), retransmission collapsing, SACK-style duplicate ACKs, Linux's window rules (growth only when cwnd-limited, ssthresh = cwnd/2, restart after idle), initial window 3 |
//! | [`TcpVariant::LinuxTs`] | `tcp-model-linux-ts` | `tcp-model-linux` with RFC 1323 timestamps, on by default in Linux 2.6 (`tcp_timestamps`): 12 more header bytes, and a timeout that an echoed timestamp shows spurious stops resending what it marked lost (`tcp_try_undo_loss`) |
//! | [`TcpVariant::Linux2623`] | `tcp-model-linux-2.6.23` | Linux 2.6.23's defaults: `tcp-model-linux` with CUBIC ([`Congestion::Cubic`]: β = 819/1024, cubic growth, fast convergence), slow start by one segment per ACK, DSACK reports and the undo of reductions whose retransmissions were all spurious, window growth also when less than a third of the window is free (TSO/GSO), congestion-window validation (RFC 2861) |
//! | [`TcpVariant::Thin`] | `tcp-model-thin` | `tcp-model-linux-2.6.23` plus the thin-stream modifications of Petlund et al. (NetGames 2008): linear timeouts and fast retransmit after 1 dupACK while fewer than 4 packets are in flight, and redundant data bundling |
//! | [`TcpVariant::LinearRto`] | `tcp-model-linear-rto` | `tcp-model-linux-ts` with the modified RTO of Griwodz & Halvorsen (NOSSDAV 2006): RTO = SRTT + min(SRTT/2, RTTVAR) with no backoff while fewer than 3 packets are in flight |
//! | [`TcpVariant::Windows`] | `tcp-model-windows` | `tcp-model` with the timers of a 2010 Windows stack (Vista / 7 / Server 2008): RTO floor 300 ms, initial RTO 3 s, initial window 2 (see [`TcpConfig::windows_2010`]) |

use std::time::Duration;

/// How the retransmission timeout is computed from the RTT estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtoStyle {
    /// RFC 6298: `max(SRTT + 4·RTTVAR, min_rto)`.
    Rfc6298,
    /// Linux 2.6 (`__tcp_set_rto`): `SRTT + max(4·RTTVAR, min_rto)`, i.e. the
    /// 200 ms minimum applies to the deviation term, so the RTO never falls
    /// below SRTT + 200 ms.
    Linux,
}

/// When the receiver acknowledges data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckStyle {
    /// Every second segment, or when [`TcpConfig::delayed_ack`] expires.
    EverySecond,
    /// Linux 2.6: when more than 536 bytes (`TCP_MIN_RCVMSS`) are unacknowledged
    /// (small game segments practically never reach it), or when the
    /// delayed-ACK timer expires ([`TcpConfig::delayed_ack`]: 40 ms,
    /// `TCP_ATO_MIN`, where Linux's adaptive timer settles for a stream of small
    /// segments); immediately ("quickack") when data arrives after an idle
    /// gap longer than the receiver's own RTO.
    Linux,
}

/// The congestion-control algorithm (with [`TcpConfig::linux_cwnd`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Congestion {
    /// Reno: ssthresh = [`TcpConfig::loss_beta_pct`] of the window, +1
    /// segment per window of ACKs in congestion avoidance.
    Reno,
    /// CUBIC as in Linux 2.6.19 to 2.6.24 (`tcp_cubic.c` v2.1, the default
    /// from 2.6.19 on): β = 819/1024, window growth on the cubic curve
    /// through the window before the loss, fast convergence, TCP
    /// friendliness; slow start adds one segment per ACK (`tcp_abc` off).
    Cubic,
}

/// Linux's initial receive-MSS estimate (`TCP_MIN_RCVMSS`, 536 bytes): more
/// unacknowledged data than this makes a Linux receiver acknowledge at once.
pub(crate) const LINUX_RCV_MSS: u64 = 536;

/// Parameters of the TCP model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpConfig {
    /// Maximum segment size (payload bytes per segment).
    pub mss: u32,
    /// IPv4 + TCP header bytes per packet.
    pub header_bytes: u32,
    /// Length prefix per message in the stream.
    pub prefix_bytes: u32,
    /// Initial retransmission timeout.
    pub initial_rto: Duration,
    /// Lower bound of the retransmission timeout ([`RtoStyle::Rfc6298`]) or of
    /// its deviation term ([`RtoStyle::Linux`]).
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout.
    pub max_rto: Duration,
    /// Delayed-acknowledgement timeout.
    pub delayed_ack: Duration,
    /// Duplicate acknowledgements that trigger fast retransmit.
    pub dupack_threshold: u32,
    /// Initial congestion window in segments.
    pub initial_cwnd: u32,
    /// RTO formula.
    pub rto_style: RtoStyle,
    /// Receiver acknowledgement policy.
    pub ack_style: AckStyle,
    /// Any acknowledgement that repeats `snd_una` while the receiver holds
    /// out-of-order data counts as a duplicate, data-carrying ones included
    /// (what SACK blocks tell a Linux sender); otherwise only pure
    /// acknowledgements count (RFC 5681).
    pub sack_dupacks: bool,
    /// Linux's window rules: the window grows only when the flight fills it
    /// (`tcp_is_cwnd_limited`), a loss sets ssthresh to half the window (Reno's
    /// `max(cwnd/2, 2)`, not half the flight), and new data after more than
    /// one RTO of silence restarts from at most the initial window
    /// (`tcp_cwnd_restart`).
    pub linux_cwnd: bool,
    /// With `linux_cwnd` and [`Congestion::Reno`]: ssthresh after a loss as
    /// a percentage of the window (50: Reno's halving, RFC 5681, the
    /// congestion control of the 2.6.11 / 2.6.15 kernels Griwodz & Halvorsen
    /// name; [`Congestion::Cubic`] has its own β).
    pub loss_beta_pct: u32,
    /// Congestion control (only with `linux_cwnd`; otherwise Reno).
    pub congestion: Congestion,
    /// With `linux_cwnd`: the sender can segment in the network card
    /// (TSO/GSO), and Linux 2.6.23's `tcp_is_cwnd_limited` then also counts
    /// the window as used when less than a third of it
    /// (`tcp_tso_win_divisor` = 3) is left free.
    pub gso_cwnd_limited: bool,
    /// With `linux_cwnd`: congestion-window validation (RFC 2861) as Linux
    /// 2.6.23's `tcp_cwnd_validate` runs it after sending new data: when the
    /// flight has stayed below the window for an RTO, the window falls
    /// halfway to the most it used (at least the initial window) and
    /// ssthresh keeps 3/4 of the old window (`tcp_cwnd_application_limited`,
    /// outside recovery).
    pub cwnd_validation: bool,
    /// The receiver reports duplicate data in a DSACK block (RFC 2883), and
    /// the sender undoes a window reduction when DSACKs show that every
    /// retransmission of the episode was unnecessary (Linux's
    /// `tcp_try_undo_dsack`; `tcp_dsack` is on by default).
    pub dsack_undo: bool,
    /// Linux's `tcp_retrans_collapse`: a retransmitted segment shorter than
    /// half an MSS absorbs the next segment if both fit in one MSS (once per
    /// retransmission, as in 2.6.15).
    pub retrans_collapse: bool,
    /// Petlund et al.: no exponential backoff while fewer than
    /// 4 packets are in flight.
    pub thin_linear_timeouts: bool,
    /// Petlund et al.: fast retransmit after one duplicate acknowledgement
    /// while fewer than 4 packets are in flight.
    pub thin_dupack: bool,
    /// Petlund et al.: redundant data bundling: each new packet also carries
    /// as much unacknowledged earlier data as fits in one MSS.
    pub rdb: bool,
    /// Griwodz & Halvorsen: while fewer than 3 packets
    /// are in flight, RTO = SRTT + min(SRTT/2, deviation term) and no backoff.
    pub linear_rto: bool,
    /// RFC 1323 timestamps (`tcp_timestamps`, on by default in Linux 2.6):
    /// every segment carries the sender's clock and echoes the peer's (12
    /// more header bytes). After a timeout, an acknowledgement whose echo
    /// predates the first retransmission shows that the original data got
    /// through, and the sender stops resending what the timeout marked lost
    /// (Linux's `tcp_try_undo_loss` with `tcp_packet_delayed`). The RTT is
    /// still sampled by Karn's rule.
    pub timestamps: bool,
}

/// Bytes the timestamp option adds to every segment (10, padded to 12).
pub(crate) const TIMESTAMP_BYTES: u32 = 12;

/// "Thin" in Petlund et al.: fewer packets in flight than this (the number a
/// fast retransmit needs: the original and three duplicates).
pub(crate) const THIN_PACKETS: usize = 4;

/// Griwodz & Halvorsen's modified RTO applies while `packets_out` is below this.
pub(crate) const LINEAR_RTO_PACKETS: usize = 3;

impl Default for TcpConfig {
    fn default() -> Self {
        TcpVariant::Generic.config()
    }
}

/// A named configuration of the TCP model (see the module's table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TcpVariant {
    /// `tcp-model`: generic NewReno (RFC 6298 timer with a 200 ms floor).
    #[default]
    Generic,
    /// `tcp-model-linux`: NewReno as Linux 2.6.11 to 2.6.15 ran it.
    Linux,
    /// `tcp-model-linux-ts`: `tcp-model-linux` with RFC 1323 timestamps and
    /// the undo of spurious timeouts they allow.
    LinuxTs,
    /// `tcp-model-linux-2.6.23`: Linux 2.6.23's defaults (CUBIC, DSACK undo).
    Linux2623,
    /// `tcp-model-thin`: Linux 2.6.23 with Petlund et al.'s thin-stream
    /// modifications.
    Thin,
    /// `tcp-model-linear-rto`: Linux (with timestamps) with Griwodz &
    /// Halvorsen's modified RTO.
    LinearRto,
    /// `tcp-model-windows`: NewReno with a 2010 Windows stack's timers.
    Windows,
}

impl TcpVariant {
    /// Every variant.
    pub const ALL: [TcpVariant; 7] = [
        TcpVariant::Generic,
        TcpVariant::Linux,
        TcpVariant::LinuxTs,
        TcpVariant::Linux2623,
        TcpVariant::Thin,
        TcpVariant::LinearRto,
        TcpVariant::Windows,
    ];

    /// The protocol name of this variant.
    pub fn name(self) -> &'static str {
        match self {
            TcpVariant::Generic => "tcp-model",
            TcpVariant::Linux => "tcp-model-linux",
            TcpVariant::LinuxTs => "tcp-model-linux-ts",
            TcpVariant::Linux2623 => "tcp-model-linux-2.6.23",
            TcpVariant::Thin => "tcp-model-thin",
            TcpVariant::LinearRto => "tcp-model-linear-rto",
            TcpVariant::Windows => "tcp-model-windows",
        }
    }

    /// The variant called `name`.
    pub fn parse(name: &str) -> Option<TcpVariant> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The parameters of this variant.
    pub fn config(self) -> TcpConfig {
        let generic = TcpConfig {
            mss: 1448,
            header_bytes: 40,
            prefix_bytes: 2,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(120),
            delayed_ack: Duration::from_millis(200),
            dupack_threshold: 3,
            initial_cwnd: 10,
            rto_style: RtoStyle::Rfc6298,
            ack_style: AckStyle::EverySecond,
            sack_dupacks: false,
            linux_cwnd: false,
            loss_beta_pct: 50,
            congestion: Congestion::Reno,
            gso_cwnd_limited: false,
            cwnd_validation: false,
            dsack_undo: false,
            retrans_collapse: false,
            thin_linear_timeouts: false,
            thin_dupack: false,
            rdb: false,
            linear_rto: false,
            timestamps: false,
        };
        let linux = TcpConfig {
            // TCP_ATO_MIN: Linux's delayed-ACK timer for small segments.
            delayed_ack: Duration::from_millis(40),
            // RFC 3390 with a 1448-byte MSS: min(4·MSS, max(2·MSS, 4380 B)).
            initial_cwnd: 3,
            rto_style: RtoStyle::Linux,
            ack_style: AckStyle::Linux,
            sack_dupacks: true,
            linux_cwnd: true,
            retrans_collapse: true,
            ..generic
        };
        let linux_ts = TcpConfig {
            timestamps: true,
            ..linux
        };
        let linux_2_6_23 = TcpConfig {
            congestion: Congestion::Cubic,
            gso_cwnd_limited: true,
            cwnd_validation: true,
            dsack_undo: true,
            ..linux
        };
        match self {
            TcpVariant::Generic => generic,
            TcpVariant::Linux => linux,
            TcpVariant::LinuxTs => linux_ts,
            TcpVariant::Linux2623 => linux_2_6_23,
            TcpVariant::Thin => TcpConfig {
                thin_linear_timeouts: true,
                thin_dupack: true,
                rdb: true,
                ..linux_2_6_23
            },
            TcpVariant::LinearRto => TcpConfig {
                linear_rto: true,
                ..linux_ts
            },
            TcpVariant::Windows => TcpConfig::windows_2010(),
        }
    }
}

impl TcpConfig {
    /// The Windows TCP of 2010 (Vista, 7, Server 2008) on top of `tcp-model`'s: a
    /// 300 ms floor on the RTO (Windows' `MinRto`; `tcp-model` has 200 ms), a 3 s initial RTO
    /// (RFC 2988, which that stack followed) and an initial window of 2 segments (RFC 2581).
    /// The rest is `tcp-model`'s: NewReno, the RFC 6298 estimator, one retransmission timer with
    /// exponential backoff, a window of one segment after a timeout, delayed ACKs on every
    /// second segment or after 200 ms, in-order delivery.
    ///
    /// These are the stack's defaults, not facts from a paper. Zhang et al. (CoNEXT 2011,
    /// Sec. 4.3) list what slowed their host's TCP: one timer, slow start after a timeout,
    /// backoff, a conservative RTO with a minimum, no fast retransmit for small messages,
    /// delayed ACKs, in-order delivery; this model has each of them.
    pub fn windows_2010() -> TcpConfig {
        TcpConfig {
            min_rto: Duration::from_millis(300),
            initial_rto: Duration::from_secs(3),
            initial_cwnd: 2,
            ..TcpVariant::Generic.config()
        }
    }
}
