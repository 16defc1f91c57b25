//! The Anarchy Online multiplexing reproduction (Griwodz & Halvorsen, "The Fun of using TCP
//! for an MMORPG", NOSSDAV 2006, Sec. 4.3 and Table 1).
//!
//! The paper replayed a one-hour AO trace (about 175 server-to-client TCP streams) over
//! separate connections and over one TCP connection multiplexed through a proxy near the
//! players: at 100 ms delay and 1% loss the multiplexed connection carried 38.7% fewer bytes
//! and 69.6% fewer packets. Here the same comparison runs in deterministic simulated time,
//! twice: on thinwire, with the real sans-IO endpoints and gateways, and on the lab's TCP
//! model (the paper's transport, `tcp.rs`), over the same link:
//!
//! ```text
//! direct:       game server ════════════ the server's link ═══════════ 175 players
//! multiplexed:  game server ─ server gw ═ the server's link (1 trunk) ═ edge gw ─ 175 players
//!                  (local hop, 0 ms)                                      (LAN, 0 ms)
//! TCP direct:   game server ══ one TCP connection per player ══ 175 players
//! TCP trunk:    game server ══ one TCP connection ══ proxy ─ 175 players (0 ms)
//! ```
//! - **Workload**: one stream per player drawn from the lab's published AO profile
//!   ([`GameProfile::by_key("anarchy-online")`](crate::workload::GameProfile::by_key):
//!   interarrival and payload), random phase per stream, on one ReliableOrdered channel.
//!   Of the [`AoOptions::flows`] streams (the trace's 175 connections), [`AoOptions::active`]
//!   are active at once on average (63: Table 1's 184 k data packets in 1855 s at 1.58
//!   packets/s per stream): each stream sends during one session of `active / flows` of the
//!   run at a random place in it (`ledger.rs`). The thinwire workload starts after a warm-up
//!   in which every player connects and logs in (a first upstream message naming its
//!   flow); the warm-up is not counted. The TCP connections are open from the start.
//! - **The server's link**: [`AoOptions::delay`] one way in each direction (the lab reads the
//!   paper's "100 ms delay" as one way, RTT 200 ms), Bernoulli loss at each of
//!   [`AoOptions::losses`] in both directions, no jitter, no bandwidth limit. Every datagram
//!   offered to it is counted, data and acks, lost ones too, as UDP payload and as IP bytes
//!   (+28 B).
//! - **Latency**: per message, from the game server's send to the player's delivery; the
//!   multiplexed mode includes the trunk's hold of up to [`AoOptions::period`].
//!
//! - **Retransmission delay** (Fig. 4, TCP modes): [`RtxDelay`], from the sender's
//!   per-packet retransmission counters.
//!
//! Entry points: [`run_ao`] runs the four modes at every loss rate into an [`AoReport`];
//! [`ao_report_html`] renders it next to the published table.

mod figures;
mod gateways;
mod html;
mod ledger;
mod net;
mod nodes;
mod results;
mod run;
mod tcp;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use thinwire_netmodel::LinkConfig;

use serde::Serialize;

pub use figures::{calibrations, figures};
pub use html::ao_report_html;
pub use results::{
    AoLossRun, AoModeResult, ByteBreakdown, DirCount, PublishedTable1, RtxDelay, Savings,
    TrunkSummary, WanCount, PUBLISHED_TABLE1,
};

/// The paper's run: Table 1's separate connections took 1855 s.
pub const AO_PAPER_DURATION: Duration = Duration::from_secs(1855);

/// The default run length of [`AoOptions`]: shorter than the paper's ([`AO_PAPER_DURATION`] takes
/// about 80 s of CPU in release, four loss rates by four modes), long enough for stable
/// savings.
pub const AO_DEFAULT_DURATION: Duration = Duration::from_secs(600);

/// What [`run_ao`] runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AoOptions {
    /// Seed of the workload, the links and the endpoints (the same for both modes).
    pub seed: u64,
    /// Simulated time the workload runs, after the warm-up. Default [`AO_DEFAULT_DURATION`].
    pub duration: Duration,
    /// Streams (players). Default 175, the trace's connection count.
    pub flows: usize,
    /// Streams active at once on average (each in one session of `active / flows` of the
    /// run; `flows` or more: all streams always). Default 63, Table 1's rate.
    pub active: usize,
    /// Bernoulli loss rates of the server's link (each direction). Default 1%, 2%, 3%, 5%.
    pub losses: Vec<f64>,
    /// One-way delay of the server's link in each direction. Default 100 ms.
    pub delay: Duration,
    /// The trunk's hold period T. Default 10 ms.
    pub period: Duration,
    /// Paired ACKs on the trunk (`TrunkOptions::paired_acks`). Default off.
    pub paired_acks: bool,
}

impl Default for AoOptions {
    fn default() -> Self {
        AoOptions {
            seed: 1,
            duration: AO_DEFAULT_DURATION,
            flows: 175,
            active: 63,
            losses: vec![0.01, 0.02, 0.03, 0.05],
            delay: Duration::from_millis(100),
            period: Duration::from_millis(10),
            paired_acks: false,
        }
    }
}

impl AoOptions {
    /// The server's link in each direction at `loss`.
    fn wan(&self, loss: f64) -> LinkConfig {
        LinkConfig::default()
            .with_delay(self.delay)
            .with_bernoulli_loss(loss)
    }

    /// The streams' sessions of a run whose workload starts at `start`.
    fn sessions(&self, start: Instant) -> ledger::Sessions {
        ledger::Sessions {
            start,
            duration: self.duration,
            active: self.active,
        }
    }
}

/// The outcome of [`run_ao`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AoReport {
    /// What was run.
    pub options: AoOptions,
    /// The published Table 1 (100 ms, 1% loss, TCP).
    pub published: PublishedTable1,
    /// Both modes at each loss rate, in the order of [`AoOptions::losses`].
    pub runs: Vec<AoLossRun>,
    /// Mean time a message waited in the trunk's period-T hold (multiplexed mode, first
    /// loss rate), ms.
    pub hold_mean_ms: f64,
    /// How the setup differs from the paper's, in words.
    pub notes: Vec<String>,
}

/// Runs the four modes at every loss rate of `opts`.
pub fn run_ao(opts: &AoOptions) -> AoReport {
    let runs: Vec<AoLossRun> = opts
        .losses
        .iter()
        .map(|&loss| {
            let direct = run::run_mode(opts, loss, run::Mode::Direct);
            let multiplexed = run::run_mode(opts, loss, run::Mode::Multiplexed);
            let tcp_direct = tcp::run_tcp(opts, loss, tcp::TcpMode::Direct);
            let tcp_trunk = tcp::run_tcp(opts, loss, tcp::TcpMode::Trunk);
            AoLossRun {
                loss,
                savings: Savings::of(&direct.wan, &multiplexed.wan),
                tcp_savings: Savings::of(&tcp_direct.wan, &tcp_trunk.wan),
                direct,
                multiplexed,
                tcp_direct,
                tcp_trunk,
            }
        })
        .collect();
    AoReport {
        options: opts.clone(),
        published: PUBLISHED_TABLE1,
        hold_mean_ms: runs
            .first()
            .and_then(|r| r.multiplexed.trunk)
            .map_or(0.0, |t| t.hold_mean_ms),
        notes: notes(opts, &runs),
        runs,
    }
}

fn notes(opts: &AoOptions, runs: &[AoLossRun]) -> Vec<String> {
    let mut notes = vec![
        sessions_note(opts),
        duration_note(opts),
        format!(
            "Delay {} ms one way in each direction (RTT {} ms): the lab reads the paper's \
             \"100 ms delay\" as one way per direction. Loss is Bernoulli, independent in both \
             directions, so acknowledgements are lost as often as data.",
            opts.delay.as_millis(),
            2 * opts.delay.as_millis()
        ),
        "The paper's numbers are TCP (New Reno + FACK). The TCP modes run the lab's TCP model \
         (tcp-model-linux: New Reno with SACK, Linux's RTO and delayed ACKs, Nagle off, 52 B \
         of IPv4 + TCP header with Linux's default timestamp option, SACK options counted) over the same link; the trunk frames each \
         message with 4 bytes (length, stream id). Thinwire runs over UDP: IP bytes add 28 B \
         per datagram, and each packet carries an AEAD tag (16 B) and a short header with an \
         8-byte connection id. The paper does not say whether Table 1 counts ACKs; ours \
         counts every packet both ways (data down, ACKs up)."
            .to_string(),
        format!(
            "The trunk holds messages toward it for up to T = {} ms and pushes them together; \
             the multiplexed latency includes that hold.",
            opts.period.as_millis()
        ),
        "The trunk's congestion control is weighted by the flows it carries \
         (Endpoint::set_congestion_weight, as MulTCP: N NewReno connections' share, no more). \
         Unweighted, one NewReno window for 175 streams backed off at every loss and could not \
         keep up: in the first version of this run the multiplexed p99.9 was 768 ms at 1% loss \
         and 54 s at 5%."
            .to_string(),
    ];
    notes.extend(runs.iter().filter_map(trunk_note));
    notes
}

fn sessions_note(opts: &AoOptions) -> String {
    if opts.active >= opts.flows {
        return format!(
            "All {} streams are active for the whole run (not the paper's setup: its trace's \
             rate, 184 k data packets in 1855 s at about 1.58 packets/s per stream, means about \
             63 active at once on average).",
            opts.flows
        );
    }
    format!(
        "{} streams, {} of them active at once on average: each stream sends during one \
         session of {:.0}% of the run, placed at random (wrapping around the end). The paper's \
         trace had about 175 connections, and its Table 1 (184 k data packets in 1855 s at \
         about 1.58 packets/s per stream) means about 63 active at once. Idle streams keep \
         their connections open.",
        opts.flows,
        opts.active,
        100.0 * opts.active as f64 / opts.flows as f64
    )
}

fn duration_note(opts: &AoOptions) -> String {
    let secs = opts.duration.as_secs_f64();
    if opts.duration >= AO_PAPER_DURATION {
        format!("{secs:.0} s of workload: the paper's run (Table 1: 1855 s separate, 1804 s multiplexed).")
    } else {
        format!(
            "{secs:.0} s of workload: not the paper's setup (Table 1's run took 1855 s); the \
             totals are shorter, the savings and delays comparable."
        )
    }
}

/// What the trunk's loss recovery did at one loss rate, when its latency lost to direct.
fn trunk_note(r: &AoLossRun) -> Option<String> {
    let t = r.multiplexed.trunk?;
    if r.multiplexed.latency_ms.mean <= r.direct.latency_ms.mean + t.hold_mean_ms + 1.0 {
        return None;
    }
    Some(format!(
        "At {}% loss the multiplexed mean latency ({:.0} ms) exceeds direct ({:.0} ms) by more \
         than the hold: every stream waits for the trunk's recovery. The trunk declared {} \
         packets lost, {} of them by retransmission timeout and {} by the thin-stream rule; {} \
         were spurious. Its congestion window ended at {} packets; the gateway's hold was \
         {:.0} ms on average, {:.0} ms at most.",
        r.loss * 100.0,
        r.multiplexed.latency_ms.mean,
        r.direct.latency_ms.mean,
        t.packets_lost,
        t.rto_expirations,
        t.thin_fast_losses,
        t.spurious_losses,
        t.cwnd_end,
        t.hold_mean_ms,
        t.hold_max_ms
    ))
}
