//! Running a scenario in the emulator.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::peers::{run_peer, Book, Plan};
use super::{EmuError, EmuNet, NetSpec, RealPeer};
use thinwire_lab::metrics::{
    Engine, MessageRecord, ProtocolInfo, Recorder, Results, RunKey, Samples, WireCounters,
};
use thinwire_lab::protocol::ProtocolSpec;
use thinwire_lab::scenario::Scenario;
use thinwire_lab::workload::{instantiate_all, InstanceParams, Semantics};
use thinwire_netmodel::{LinkConfig, LinkStats};
use thinwire_proto::ConnectionCounters;

/// Options of an emulated run.
#[derive(Debug, Clone, Default)]
pub struct EmuOptions {
    /// Peers to run; `None`: [`default_peers`] of the scenario.
    pub peers: Option<Vec<RealPeer>>,
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Overrides the scenario's duration.
    pub duration: Option<Duration>,
    /// Run the peers one after another instead of side by side.
    ///
    /// By default every peer of a sweep point runs at the same time, each in
    /// its own emulated network (its own namespaces, TUN devices and relay
    /// thread), so a run takes the scenario's duration once instead of once
    /// per peer. Game workloads are a few hundred packets per second per
    /// peer, far below what the relays sustain, so the peers do not perturb
    /// each other measurably; `serial` is there to check that claim (see
    /// `docs/EMULATOR.md`).
    pub serial: bool,
}

/// The outcome of an emulated run.
#[derive(Debug, Clone)]
pub struct EmuRun {
    /// The results (`engine: "emu"`, every run `"model": false`).
    pub results: Results,
    /// Latency samples for the report.
    pub samples: Samples,
    /// The stacks' own counters, one entry per peer run, in the order of the runs.
    pub counters: Vec<PeerCounters>,
    /// The peer runs that failed (an error or a time-out of that stack), each with its error:
    /// they have no rows in [`results`](Self::results), and the other peers' runs went on.
    pub failed: Vec<FailedPeer>,
}

/// A peer run that failed, in place of its results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedPeer {
    /// The peer's run (peer name and sweep point), as its rows would have been.
    pub peer: RunKey,
    /// What went wrong.
    pub error: String,
}

/// The counters a real stack keeps about itself, summed over the hosts of one
/// peer run: for kernel TCP the namespaces' `OutSegs`, `RetransSegs`,
/// `TCPLossProbes`, `TCPTimeouts`, `TCPFastRetrans`, `TCPSpuriousRTOs`, and
/// `sockets_cubic`, the sockets that ran CUBIC; for
/// QUIC quinn's datagrams sent and lost packets and bytes; for the thinwire
/// gateway pair the gateways' counters. thinwire reports its connections'
/// [`ConnectionCounters`] instead, typed. KCP and ENet report none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCounters {
    /// The peer's run (peer name and sweep point), as in the results.
    pub peer: RunKey,
    /// `(name, value)` in the stack's own naming.
    pub counters: Vec<(String, u64)>,
    /// thinwire's connection counters, summed over the hosts' connections
    /// (thinwire peers only).
    pub thinwire: Option<ConnectionCounters>,
}

impl PeerCounters {
    /// `name value, name value, ...` (thinwire's counters under the core's
    /// names, `part.counter`), or `None` without counters.
    pub fn summary(&self) -> Option<String> {
        let mut named: Vec<String> = self
            .counters
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if let Some(t) = &self.thinwire {
            t.for_each(|k, v| named.push(format!("{k} {v}")));
        }
        (!named.is_empty()).then(|| named.join(", "))
    }
}

/// The real peers for a scenario: kernel TCP (plain and thin) when it lists
/// `tcp-model`, thinwire in each of its thinwire configurations, and KCP in
/// its default and fast modes and QUIC (`quic-streams`) always; ENet and GameNetworkingSockets
/// (reliable, and unreliable for latest-value classes) where they are built.
pub fn default_peers(scenario: &Scenario) -> Vec<RealPeer> {
    let mut v = vec![
        RealPeer::Tcp { thin: false },
        RealPeer::Tcp { thin: true },
        RealPeer::Kcp { fast: false },
        RealPeer::Kcp { fast: true },
        RealPeer::QuicStreams,
    ];
    if thinwire_enet::available() {
        v.push(RealPeer::Enet { unsequenced: false });
        v.push(RealPeer::Enet { unsequenced: true });
    }
    if thinwire_gns::available() {
        v.push(RealPeer::Gns { unreliable: false });
        v.push(RealPeer::Gns { unreliable: true });
    }
    for p in &scenario.protocols {
        if let ProtocolSpec::Thinwire(t) = p {
            for peer in [RealPeer::Thinwire(*t), RealPeer::Gateway(*t)] {
                if !v.contains(&peer) {
                    v.push(peer);
                }
            }
        }
    }
    v
}

/// Runs `scenario` in the emulator: for every sweep point and every peer, a
/// fresh emulated network (server plus one host per client) with the
/// scenario's access links, driven by the scenario's workloads.
///
/// Wire bytes are IP packet bytes offered to the emulated links (headers
/// included). Payload bytes sent (hence redundancy): thinwire's own counter
/// (`PayloadStats::total`, retransmissions and parity
/// included, summed over connections); for TCP, KCP and QUIC the bytes the
/// application wrote, so their redundancy reads 0 (their retransmissions are
/// not counted; the wire bytes show them). Not supported: bottlenecks with cross traffic and server
/// fan-out (they return [`EmuError::Unsupported`]).
///
/// A peer run that fails (its stack errs or times out) is listed in [`EmuRun::failed`] with its
/// error and the run goes on with the other peers; only when every peer run fails is the first
/// error returned.
pub fn run_emulated(scenario: &Scenario, opts: &EmuOptions) -> Result<EmuRun, EmuError> {
    super::check_capabilities()?;
    let mut scn = scenario.clone();
    if let Some(s) = opts.seed {
        scn.seed = s;
    }
    if let Some(d) = opts.duration {
        scn.duration = d;
    }
    if scn.bottleneck.is_some() {
        return Err(EmuError::Unsupported("bottleneck links".into()));
    }
    let peers = opts.peers.clone().unwrap_or_else(|| default_peers(&scn));
    let mut rec = Recorder::new();
    let mut counters = Vec::new();
    let mut failures = Failures::default();
    for point in scn.points() {
        let setup = scn
            .setup(&point)
            .map_err(|e| EmuError::Setup(e.to_string()))?;
        let label = point.label(&scn.sweep);
        let plan = Arc::new(plan_of(&scn, setup.clients)?);
        let (up, down) = (&setup.access_up, &setup.access_down);
        let one = |peer: &RealPeer| run_one(peer, up, down, &plan, scn.seed);
        let outcomes: Vec<Result<PeerOutcome, EmuError>> = if opts.serial {
            peers.iter().map(one).collect()
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = peers.iter().map(|peer| s.spawn(|| one(peer))).collect();
                handles
                    .into_iter()
                    .zip(&peers)
                    .map(|(h, peer)| {
                        h.join().unwrap_or_else(|_| {
                            Err(EmuError::Peer {
                                peer: peer.name(),
                                msg: "panicked".into(),
                            })
                        })
                    })
                    .collect()
            })
        };
        for (peer, outcome) in peers.iter().zip(outcomes) {
            let key = RunKey::at(peer.name(), &label);
            let Some(outcome) = failures.take(&key, outcome) else {
                continue;
            };
            rec.set_protocol_info(ProtocolInfo {
                key: key.clone(),
                model: false,
            });
            record(&mut rec, &key, &plan, &outcome.book);
            rec.add_wire(&key, outcome.wire);
            counters.push(PeerCounters {
                peer: key,
                counters: outcome
                    .counters
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
                thinwire: outcome.thinwire,
            });
        }
    }
    let failed = failures.finish()?;
    let (results, samples) = rec.finish(&scn.name, Engine::Emu, scn.seed);
    Ok(EmuRun {
        results,
        samples,
        counters,
        failed,
    })
}

/// The peer runs that failed so far, and whether any succeeded.
#[derive(Debug, Default)]
struct Failures {
    failed: Vec<FailedPeer>,
    first: Option<EmuError>,
    succeeded: usize,
}

impl Failures {
    /// The outcome of `key`'s run, or `None` (the failure noted) when it failed.
    fn take<T>(&mut self, key: &RunKey, outcome: Result<T, EmuError>) -> Option<T> {
        match outcome {
            Ok(o) => {
                self.succeeded += 1;
                Some(o)
            }
            Err(e) => {
                tracing::warn!(peer = %key, error = %e, "emulated peer failed; the others go on");
                self.failed.push(FailedPeer {
                    peer: key.clone(),
                    error: e.to_string(),
                });
                self.first.get_or_insert(e);
                None
            }
        }
    }

    /// The failed runs; the first error when no run succeeded (then the emulator or the
    /// machine failed, and there is no result to show).
    fn finish(self) -> Result<Vec<FailedPeer>, EmuError> {
        match (self.succeeded, self.first) {
            (0, Some(e)) => Err(e),
            _ => Ok(self.failed),
        }
    }
}

/// The messages of one sweep point with `clients` clients: the scenario's
/// workloads instantiated with its seed, in time order.
fn plan_of(scn: &Scenario, clients: u32) -> Result<Plan, EmuError> {
    let mut inst = instantiate_all(
        &scn.workloads,
        &InstanceParams {
            clients,
            duration: scn.duration,
            seed: scn.seed,
        },
    );
    if inst.fanout.is_some() {
        return Err(EmuError::Unsupported("server fan-out".into()));
    }
    let mut events = Vec::new();
    for s in &mut inst.sources {
        while let Some(e) = s.next_event() {
            events.push(e);
        }
    }
    events.sort_by_key(|e| e.at);
    Ok(Plan {
        events,
        classes: inst.classes.clone(),
        clients,
        gateway_edges: scn.gateway_edges.min(clients.max(1)),
        end: scn.duration + scn.drain,
    })
}

/// Runs `peer` once in a fresh emulated network: host 0 the server, host
/// `c + 1` client `c`, with client `c`'s access links `up[c]` and `down[c]`
/// (the first entry when there is none for `c`).
fn run_one(
    peer: &RealPeer,
    up: &[LinkConfig],
    down: &[LinkConfig],
    plan: &Arc<Plan>,
    seed: u64,
) -> Result<PeerOutcome, EmuError> {
    let (up, down) = (up.to_vec(), down.to_vec());
    let pick =
        |v: &[LinkConfig], c: usize| v.get(c).or_else(|| v.first()).cloned().unwrap_or_default();
    let net = EmuNet::start(NetSpec {
        hosts: peer.hosts(plan),
        link: Box::new(move |a, b| {
            if a == 0 {
                pick(&down, b - 1)
            } else {
                pick(&up, a - 1)
            }
        }),
        seed,
    })?;
    // Connections are set up during the first second (2 ms more per client: a server reads
    // 1000 handshakes a second by default); the workload starts at t0.
    let setup = Duration::from_millis(1500 + 2 * u64::from(plan.clients));
    let book = Arc::new(Book::new(Instant::now() + setup, plan.events.len()));
    let result = run_peer(peer, &net, plan, &book);
    let stats = net.shutdown();
    let report = result?;
    let mut links = LinkStats::default();
    for (_, l) in &stats.links {
        links += *l;
    }
    Ok(PeerOutcome {
        book,
        wire: WireCounters {
            bytes: links.bytes,
            packets: links.sent,
            payload_bytes_sent: report.payload_bytes_sent,
        },
        counters: report.counters,
        thinwire: report.thinwire,
    })
}

/// What one peer's run leaves behind.
struct PeerOutcome {
    book: Arc<Book>,
    wire: WireCounters,
    counters: Vec<(&'static str, u64)>,
    thinwire: Option<ConnectionCounters>,
}

fn record(rec: &mut Recorder, key: &RunKey, plan: &Plan, book: &Book) {
    let n = plan.events.len();
    let mut delivered: Vec<Option<u64>> = (0..n)
        .map(|i| match book.delivered[i].load(Ordering::Relaxed) {
            0 => None,
            v => Some(v - 1),
        })
        .collect();
    // Latest-value classes: a message counts as delivered when it or a newer
    // message of the same flow and key arrived.
    let mut newest: HashMap<(u32, bool, u16, u64), u64> = HashMap::new();
    for i in (0..n).rev() {
        let e = &plan.events[i];
        if plan.classes[usize::from(e.msg.class)].semantics != Semantics::Latest {
            continue;
        }
        let k = (
            e.client,
            e.dir == thinwire_lab::workload::Direction::Up,
            e.msg.class,
            e.msg.key,
        );
        let later = newest.get(&k).copied();
        let d = match (delivered[i], later) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        delivered[i] = d;
        if let Some(d) = d {
            newest.insert(k, d);
        }
    }
    for (i, e) in plan.events.iter().enumerate() {
        let sent = match book.sent[i].load(Ordering::Relaxed) {
            0 => e.at.as_micros() as u64,
            v => v - 1,
        };
        rec.record(MessageRecord {
            key: key.clone(),
            class: plan.classes[usize::from(e.msg.class)].name.clone(),
            sent_at_us: sent,
            delivered_at_us: delivered[i].map(|d| d.max(sent)),
            payload_bytes: e.msg.size,
            deadline_us: e.msg.deadline.map(|d| d.as_micros() as u64),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_thinwire_counters_as_the_core_does() {
        let mut t = ConnectionCounters::default();
        t.recovery.rto_expirations = 3;
        t.udp.packets_sent = 9;
        let c = PeerCounters {
            peer: "thinwire".into(),
            counters: vec![("OutSegs".into(), 1)],
            thinwire: Some(t),
        };
        let s = c.summary().expect("summary");
        assert!(s.starts_with("OutSegs 1, udp.packets_sent 9, "), "{s}");
        assert!(s.contains(", recovery.rto_expirations 3, "), "{s}");
        assert_eq!(s.matches(", ").count(), ConnectionCounters::NAMES.len());
        let none = PeerCounters {
            thinwire: None,
            counters: Vec::new(),
            ..c
        };
        assert_eq!(none.summary(), None);
    }

    fn timed_out(peer: &str) -> Result<(), EmuError> {
        Err(EmuError::Peer {
            peer: peer.into(),
            msg: "timed out".into(),
        })
    }

    #[test]
    fn a_failed_peer_is_listed_and_the_others_go_on() {
        let mut f = Failures::default();
        let (quic, tcp) = (RunKey::new("quic-streams"), RunKey::new("tcp-nodelay"));
        assert_eq!(f.take(&quic, timed_out("quic-streams")), None);
        assert_eq!(f.take(&tcp, Ok(())), Some(()));
        let failed = f.finish().expect("one peer ran");
        assert_eq!(
            failed,
            vec![FailedPeer {
                peer: quic,
                error: "peer quic-streams: timed out".into(),
            }]
        );
    }

    #[test]
    fn every_peer_failing_is_an_error() {
        let mut f = Failures::default();
        assert_eq!(f.take(&RunKey::new("kcp"), timed_out("kcp")), None);
        assert_eq!(f.take(&RunKey::new("enet"), timed_out("enet")), None);
        let err = f.finish().expect_err("nothing ran");
        assert_eq!(err.to_string(), "peer kcp: timed out");
    }

    #[test]
    fn no_failure_lists_nothing() {
        let mut f = Failures::default();
        assert_eq!(f.take(&RunKey::new("kcp"), Ok(1)), Some(1));
        assert_eq!(f.finish().expect("ran"), vec![]);
    }
}
