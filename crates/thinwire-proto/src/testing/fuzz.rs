//! A fuzzer's drive of a connected client and server ([`drive`]): the input bytes choose API
//! calls on both sides, time steps, and hostile datagrams (mutated copies of real ones, raw
//! bytes, from the peer's address or another), and after every step the invariants are checked.
//! The fuzz target `endpoint` calls it; a unit test replays its committed corpus in CI.
//!
//! Invariants (a violation panics, which is what a fuzzer looks for):
//! - nothing panics inside the endpoints;
//! - no connection holds more reassembly state than its receive budget plus one datagram of
//!   frames, and its sent-packet ledger stays within [`MAX_SENT_TRACKED`];
//! - whatever was forged: reliable-ordered data arrives in order, exactly once;
//!   reliable-unordered data exactly once; unreliable data at most once and only what the
//!   client sent; sequenced data never goes backwards; and once the network settles every
//!   reliable message has arrived (unless the connection ended). Packets are authenticated, so
//!   forged and mutated datagrams (from the client's address, from a stranger's, with the live
//!   connection id or not) must change none of this.

use std::collections::BTreeSet;
use std::sync::LazyLock;
use std::time::Duration;

use bytes::Bytes;
use thinwire_netmodel::LinkConfig;

pub(crate) mod packet;
pub use packet::packet;

use super::{Pair, Side};
use crate::{ChannelKind, ConnectionHandle, PolicyCache, SendMode, TransportConfig};

/// The receive budget the drive configures (small, so a fuzzer reaches it quickly).
pub const RECV_BUDGET: usize = 256 * 1024;
/// Reassembly bytes a connection may hold past its budget: one datagram full of frames.
const BUDGET_SLACK: usize = 64 * 1024;
/// Sent packets a connection may remember: the congestion window's ceiling plus the lost
/// packets of a few RTOs.
pub const MAX_SENT_TRACKED: usize = 12_000;

/// Reads the fuzzer's bytes as small integers; exhausted input reads as `None`.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes([self.u8()?, self.u8()?]))
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
}

/// What the client sent that the server must (or may) deliver, per channel: message ids.
#[derive(Default)]
struct Ledger {
    sent: [Vec<u64>; 5],
    /// Channels whose sends go as deadline messages (set_channel_deadline): not counted in
    /// `sent`, since deadline delivery keeps no class order and may give up.
    deadline: [bool; 6],
    forged: bool,
    next_id: u64,
}

/// What one run did, for tests that check the drive itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The run connected (when it did not, nothing else happened).
    pub connected: bool,
    /// Something forged reached the server (delivery is checked all the same).
    pub forged: bool,
    /// Reliable messages the server delivered.
    pub delivered: usize,
}

/// Every input of a committed fuzz corpus (a directory, one input per file), sorted by file
/// name, for the tests that replay it. Panics if the directory is missing or empty.
pub fn corpus(dir: &str) -> Vec<Vec<u8>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("the corpus {dir} is committed: {e}"))
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {dir}");
    files
        .iter()
        .map(|f| std::fs::read(f).expect("read input"))
        .collect()
}

/// Runs one input. Panics when an invariant breaks.
pub fn drive(input: &[u8]) -> Outcome {
    let mut r = Input(input);
    let seed = u64::from(r.u8().unwrap_or(0));
    let delay = Duration::from_millis(u64::from(r.u8().unwrap_or(10) % 60) + 1);
    let transport = TransportConfig {
        recv_buffer: RECV_BUDGET,
        ..TransportConfig::default()
    };
    // One policy cache for every run: a deadline send's first table costs more than a run.
    static POLICIES: LazyLock<PolicyCache> = LazyLock::new(PolicyCache::default);
    let mut pair = Pair::builder(seed)
        .link(LinkConfig::default().with_delay(delay))
        .transport(transport)
        .policy_cache(POLICIES.clone())
        .build();
    let Some((c, s)) = pair.connect(&ChannelKind::ALL) else {
        return Outcome::default();
    };
    pair.client_mut().set_log_sent(true);
    let mut ledger = Ledger::default();
    while let Some(op) = r.u8() {
        step(&mut pair, (c, s), op, &mut r, &mut ledger);
        check_memory(&pair, c, s);
    }
    settle(&mut pair, (c, s));
    check_memory(&pair, c, s);
    let delivered = check_delivery(&mut pair, s, &ledger);
    Outcome {
        connected: true,
        forged: ledger.forged,
        delivered,
    }
}

/// Runs until the network settles: nothing on either link, and each side has every reliable
/// message it sent acknowledged and nothing in flight (a connection that ended counts as
/// settled); at most 30 simulated seconds. Stopping there rather than at 30 seconds keeps a run
/// short and checks the same: once settled, everything reliable has been received.
fn settle(pair: &mut Pair, (c, s): (ConnectionHandle, ConnectionHandle)) {
    fn quiet(side: &Side, h: ConnectionHandle) -> bool {
        side.outbound().next_delivery().is_none()
            && side.endpoint().connection_stats(h).is_none_or(|st| {
                st.path.in_flight == 0
                    && st
                        .channels
                        .iter()
                        .all(|ch| !ch.kind.is_reliable() || ch.send_queue_messages == 0)
            })
    }
    pair.run_while(Duration::from_secs(30), |p| {
        quiet(p.client(), c) && quiet(p.server(), s)
    });
}

fn step(
    pair: &mut Pair,
    (c, s): (ConnectionHandle, ConnectionHandle),
    op: u8,
    r: &mut Input<'_>,
    ledger: &mut Ledger,
) {
    match op % 12 {
        0 | 1 => {
            let channel = r.u8().unwrap_or(0) % 5;
            let len = usize::from(r.u16().unwrap_or(8) % 3000).max(8);
            let id = ledger.next_id;
            ledger.next_id += 1;
            let mut data = vec![0u8; len];
            data[..8].copy_from_slice(&id.to_le_bytes());
            let data = Bytes::from(data);
            let now = pair.now();
            let ep = pair.client_mut().endpoint_mut();
            let mode = if ChannelKind::ALL[usize::from(channel)] == ChannelKind::LatestReliable {
                SendMode::Latest { key: u64::from(op) }
            } else {
                SendMode::Plain
            };
            let ok = ep.send(now, c, channel, data, mode).is_ok();
            if ok && !ledger.deadline[usize::from(channel)] {
                ledger.sent[usize::from(channel)].push(id);
            }
        }
        2 => {
            let len = usize::from(r_len(r));
            let data = Bytes::from(r.take(len).to_vec());
            let now = pair.now();
            let _ = pair
                .server_mut()
                .endpoint_mut()
                .send(now, s, 0, data, SendMode::Plain);
        }
        3 | 4 => pair.run_for(Duration::from_millis(u64::from(r.u8().unwrap_or(1)) * 4)),
        5 => mutated_copy(pair, r, ledger),
        6 => raw_datagram(pair, r, ledger),
        7 => forged_with_live_id(pair, c, r, ledger),
        9 => api_call(pair, (c, s), r, ledger),
        10 => {
            // the server restarts (same static key): the client must learn it from a Reset
            if r.u8().unwrap_or(0) == 0x5a {
                pair.restart_server(u64::from(op));
            }
        }
        _ => {
            let opts = crate::DeadlineOptions::new(Duration::from_millis(200), 0.99);
            let len = usize::from(r_len(r)).max(1);
            let now = pair.now();
            let _ = pair.client_mut().endpoint_mut().send(
                now,
                c,
                4,
                Bytes::from(vec![7u8; len]),
                SendMode::Deadline(opts),
            );
        }
    }
}

/// A real client datagram, mutated, from the client's address.
fn mutated_copy(pair: &mut Pair, r: &mut Input<'_>, ledger: &mut Ledger) {
    let Some(pick) = r.u16() else { return };
    if pair.client().sent_log().is_empty() {
        return;
    }
    let i = usize::from(pick) % pair.client().sent_log().len();
    let mut d = pair.client().sent_log()[i].1.clone();
    for _ in 0..r.u8().unwrap_or(1) % 4 + 1 {
        let (Some(pos), Some(x)) = (r.u16(), r.u8()) else {
            break;
        };
        if !d.is_empty() {
            let at = usize::from(pos) % d.len();
            d[at] ^= x;
        }
    }
    ledger.forged = true;
    let from = pair.client().addr();
    hinted_handle(pair, from, &d);
}

/// A prefetcher that only checks what it is named: never nothing, never more than a page.
fn check_hint(_: *const u8, len: usize) {
    assert!(len > 0 && len <= 4096, "a hint of {len} bytes");
}

/// The server handles `d` from `from`, hinted first at every prefetch stage (hints from the
/// first connection on, to [`check_hint`]): a datagram is parsed for its hints as a runtime
/// does before handling it, and the hints change nothing.
fn hinted_handle(pair: &mut Pair, from: std::net::SocketAddr, d: &[u8]) {
    let now = pair.now();
    let ep = pair.server_mut().endpoint_mut();
    ep.set_prefetcher(Some(check_hint), 0);
    for stage in 0..crate::PREFETCH_STAGES {
        ep.prefetch_datagram(d, stage);
    }
    ep.handle_datagram(now, from, d);
}

/// Raw bytes, from the client's address or a stranger's.
fn raw_datagram(pair: &mut Pair, r: &mut Input<'_>, ledger: &mut Ledger) {
    let stranger = r.u8().unwrap_or(0) % 2 == 1;
    let len = usize::from(r_len(r));
    let d = r.take(len).to_vec();
    let from = if stranger {
        "192.0.2.7:9999".parse().expect("address")
    } else {
        pair.client().addr()
    };
    ledger.forged = true;
    hinted_handle(pair, from, &d);
}

/// An attacker who knows the live connection id: a short header with it, any packet number,
/// then the fuzzer's bytes (frames in the clear, or anything).
fn forged_with_live_id(
    pair: &mut Pair,
    c: ConnectionHandle,
    r: &mut Input<'_>,
    ledger: &mut Ledger,
) {
    let Some(cid) = pair
        .client()
        .endpoint()
        .connection(c)
        .and_then(|conn| conn.remote_cid())
    else {
        return;
    };
    let pn = u64::from(r.u16().unwrap_or(0)) << 8;
    let mut d = Vec::new();
    crate::wire::ShortHeader::encode(&cid, pn, 4, &mut d);
    let len = usize::from(r_len(r));
    d.extend_from_slice(r.take(len));
    ledger.forged = true;
    let from = if pn & 0x100 == 0 {
        pair.client().addr()
    } else {
        "198.51.100.9:4444".parse().expect("address")
    };
    hinted_handle(pair, from, &d);
}

/// The application's other calls on either side.
fn api_call(
    pair: &mut Pair,
    (c, s): (ConnectionHandle, ConnectionHandle),
    r: &mut Input<'_>,
    ledger: &mut Ledger,
) {
    let which = r.u8().unwrap_or(0);
    let now = pair.now();
    match which % 4 {
        0 => pair
            .client_mut()
            .endpoint_mut()
            .close(now, c, u64::from(which), b"fuzz"),
        1 => pair
            .server_mut()
            .endpoint_mut()
            .close(now, s, u64::from(which), b"fuzz"),
        2 => {
            let opts = crate::DeadlineOptions::new(Duration::from_millis(300), 0.999);
            let ch = which % 6;
            let ok = pair
                .client_mut()
                .endpoint_mut()
                .set_channel_deadline(c, ch, Some(opts));
            if ok.is_ok() {
                ledger.deadline[usize::from(ch)] = true;
            }
        }
        _ => {
            let ch = which % 6;
            if pair
                .client_mut()
                .endpoint_mut()
                .set_channel_deadline(c, ch, None)
                .is_ok()
            {
                ledger.deadline[usize::from(ch)] = false;
            }
        }
    }
}

fn r_len(r: &mut Input<'_>) -> u8 {
    r.u8().unwrap_or(0)
}

fn check_memory(pair: &Pair, c: ConnectionHandle, s: ConnectionHandle) {
    for (ep, h) in [(pair.client().endpoint(), c), (pair.server().endpoint(), s)] {
        let Some(conn) = ep.connection(h) else {
            continue;
        };
        let held = conn.reassembly_held_bytes();
        assert!(
            held <= RECV_BUDGET + BUDGET_SLACK,
            "reassembly holds {held} bytes"
        );
        let tracked = conn.sent_tracked();
        assert!(
            tracked <= MAX_SENT_TRACKED,
            "{tracked} sent packets remembered"
        );
    }
}

fn check_delivery(pair: &mut Pair, s: ConnectionHandle, ledger: &Ledger) -> usize {
    let ended = pair.server().endpoint().connection(s).is_none();
    // deadline messages (set_channel_deadline) keep no class order and may give up
    let ids = |pair: &mut Pair, ch: u8| -> Vec<u64> {
        pair.server_mut()
            .take_messages(ch)
            .iter()
            .filter(|m| m.deadline.is_none())
            .map(|m| u64::from_le_bytes(m.data[..8].try_into().expect("8-byte id")))
            .collect()
    };
    let ordered = ids(pair, 0);
    assert!(
        ordered.windows(2).all(|w| w[0] < w[1]),
        "ordered channel out of order: {ordered:?}"
    );
    let unordered = ids(pair, 1);
    let unique: BTreeSet<u64> = unordered.iter().copied().collect();
    assert_eq!(
        unique.len(),
        unordered.len(),
        "unordered channel duplicated"
    );
    let unreliable = ids(pair, 2);
    let once: BTreeSet<u64> = unreliable.iter().copied().collect();
    assert_eq!(
        once.len(),
        unreliable.len(),
        "unreliable channel duplicated"
    );
    assert!(
        once.iter().all(|id| ledger.sent[2].contains(id)),
        "unreliable data never sent"
    );
    let sequenced = ids(pair, 3);
    assert!(
        sequenced.windows(2).all(|w| w[0] < w[1]),
        "sequenced channel went back"
    );
    if !ended {
        assert_eq!(ordered, ledger.sent[0], "ordered data lost");
        let sent: BTreeSet<u64> = ledger.sent[1].iter().copied().collect();
        assert_eq!(unique, sent, "unordered data lost");
    }
    ordered.len() + unique.len()
}
