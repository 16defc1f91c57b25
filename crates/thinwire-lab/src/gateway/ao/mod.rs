//! The Anarchy Online multiplexing reproduction (Griwodz & Halvorsen, "The Fun of using TCP
//! for an MMORPG", NOSSDAV 2006, Sec. 4.3 and Table 1).
//!
//! The paper replayed a one-hour AO trace (about 175 server-to-client TCP streams) over
//! separate connections and over one TCP connection multiplexed through a proxy near the
//! players: at 100 ms delay and 1% loss the multiplexed connection carried 38.7% fewer bytes
//! and 69.6% fewer packets. Here the same comparison runs on thinwire, in deterministic
//! simulated time, with the real sans-IO endpoints and gateways:
//!
//! ```text
//! direct:       game server ════════════ the server's link ═══════════ 175 players
//! multiplexed:  game server ─ server gw ═ the server's link (1 trunk) ═ edge gw ─ 175 players
//!                  (local hop, 0 ms)                                      (LAN, 0 ms)
//! ```
//! - **Workload**: one stream per player drawn from the lab's published AO profile
//!   ([`GameProfile::by_key("anarchy-online")`](crate::workload::GameProfile::by_key):
//!   interarrival and payload), random phase per stream, on one ReliableOrdered channel. All
//!   [`AoOptions::flows`] streams are active for the whole run: the simpler stated setup (the
//!   paper's Table 1 suggests about 63 active at once on average, see
//!   [`AoReport::notes`]). The workload starts after a warm-up in which every player
//!   connects and logs in (a first upstream message naming its flow); the warm-up is not
//!   counted.
//! - **The server's link**: [`AoOptions::delay`] one way in each direction (the lab reads the
//!   paper's "100 ms delay" as one way, RTT 200 ms), Bernoulli loss at each of
//!   [`AoOptions::losses`] in both directions, no jitter, no bandwidth limit. Every datagram
//!   offered to it is counted, data and acks, lost ones too, as UDP payload and as IP bytes
//!   (+28 B).
//! - **Latency**: per message, from the game server's send to the player's delivery; the
//!   multiplexed mode includes the trunk's hold of up to [`AoOptions::period`].
//!
//! Entry points: [`run_ao`] runs both modes at every loss rate into an [`AoReport`];
//! [`ao_report_html`] renders it next to the published table.

mod figures;
mod gateways;
mod html;
mod ledger;
mod net;
mod nodes;
mod results;
mod run;
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde::Serialize;

pub use figures::{calibrations, figures};
pub use html::ao_report_html;
pub use results::{
    AoLossRun, AoModeResult, ByteBreakdown, DirCount, PublishedTable1, Savings, TrunkSummary,
    WanCount, PUBLISHED_TABLE1,
};

/// What [`run_ao`] runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AoOptions {
    /// Seed of the workload, the links and the endpoints (the same for both modes).
    pub seed: u64,
    /// Simulated time the workload runs, after the warm-up. Default 300 s.
    pub duration: Duration,
    /// Streams (players), all active. Default 175, the trace's connection count.
    pub flows: usize,
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
            duration: Duration::from_secs(300),
            flows: 175,
            losses: vec![0.01, 0.02, 0.03, 0.05],
            delay: Duration::from_millis(100),
            period: Duration::from_millis(10),
            paired_acks: false,
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

/// Runs both modes at every loss rate of `opts`.
pub fn run_ao(opts: &AoOptions) -> AoReport {
    let runs: Vec<AoLossRun> = opts
        .losses
        .iter()
        .map(|&loss| {
            let direct = run::run_mode(opts, loss, run::Mode::Direct);
            let multiplexed = run::run_mode(opts, loss, run::Mode::Multiplexed);
            AoLossRun {
                loss,
                savings: Savings::of(&direct.wan, &multiplexed.wan),
                direct,
                multiplexed,
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
        format!(
            "All {} streams are active for the whole run. The paper's trace had about 175 \
             connections, but its Table 1 (184 k data packets in 1855 s at about 1.58 packets/s \
             per stream) suggests only about 63 were active at once on average; fewer active \
             streams mean fewer messages to pack into each trunk packet.",
            opts.flows
        ),
        format!(
            "Delay {} ms one way in each direction (RTT {} ms): the lab reads the paper's \
             \"100 ms delay\" as one way per direction. Loss is Bernoulli, independent in both \
             directions, so acknowledgements are lost as often as data.",
            opts.delay.as_millis(),
            2 * opts.delay.as_millis()
        ),
        "The paper's numbers are TCP (New Reno + FACK) with 40 B TCP/IP headers; ours are \
         thinwire over UDP: IP bytes add 28 B per datagram, and each packet carries an AEAD \
         tag (16 B) and a short header with an 8-byte connection id. The paper does not say \
         whether Table 1 counts ACKs; ours counts every datagram both ways."
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
