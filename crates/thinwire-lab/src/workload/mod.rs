//! Application workloads: what the game sends, when, and how big.
//!
//! A workload is instantiated per run into [`Source`]s (one per client and
//! direction, each with its own seeded RNG so that every protocol sees exactly
//! the same application traffic) plus an optional server [`Fanout`] rule that
//! relays some client messages to the other clients of the same zone when the
//! server receives them.

mod dist;
mod messaging;
mod mmorpg;
mod mmorpg_actions;
mod pcap;
mod profiles;
mod replay;

use std::time::Duration;

pub use dist::Clamped;
pub use messaging::MessagingWorkload;
pub use mmorpg::MmorpgWorkload;
pub use mmorpg_actions::ActionMmorpgWorkload;
pub use pcap::{load_pcap, PcapOptions};
pub use profiles::{GameProfile, ProfileWorkload, PROFILES};
pub use replay::{load_trace_csv, parse_trace_csv, semantics_for, ReplayWorkload, TraceRow};

/// Direction of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

impl Direction {
    /// `"up"` or `"down"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

/// Delivery semantics a message class needs from the application's point of
/// view; transports map them to channels (see `protocol::Mapping`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semantics {
    /// Every message matters and must be seen in order (e.g. chat).
    Ordered,
    /// Every message matters, order does not (e.g. attacks).
    Unordered,
    /// Only the newest value per key matters (e.g. positions). A message is
    /// considered delivered when it or a newer message with the same key
    /// reaches the receiver.
    Latest,
    /// Only the newest value per key matters to the application, as with
    /// [`Semantics::Latest`], but every message is accounted on its own: one
    /// that never arrives is lost even when a newer one does (how Wu et al.,
    /// MTAP 2009, count moves; a transport may still send it unreliably or
    /// supersede it).
    Newest,
}

/// Index of a class in [`WorkloadInstance::classes`].
pub type ClassId = u16;

/// A message class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassSpec {
    /// Name used in the results (e.g. `"move"`).
    pub name: String,
    /// What the application needs.
    pub semantics: Semantics,
}

/// Default target success rate of deadline messages: 99.9 % arrive in time.
pub const DEFAULT_DEADLINE_TARGET: f64 = 0.999;

/// One application message to send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MessageSpec {
    /// Class.
    pub class: ClassId,
    /// Payload size in bytes.
    pub size: u32,
    /// Deadline relative to the send time, if any.
    pub deadline: Option<Duration>,
    /// Wanted probability of meeting `deadline` (in `(0, 1)`, default
    /// [`DEFAULT_DEADLINE_TARGET`]); transports with deadline delivery size
    /// their redundancy for it, the others ignore it. Meaningless without a
    /// deadline.
    pub target: f64,
    /// Key for [`Semantics::Latest`] classes (e.g. an entity id).
    pub key: u64,
}

/// One application send call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AppEvent {
    /// Time since the start of the run.
    pub at: Duration,
    /// The client whose flow carries the message.
    pub client: u32,
    /// Direction.
    pub dir: Direction,
    /// The message.
    pub msg: MessageSpec,
}

/// A generator of application events in non-decreasing time order.
pub trait Source: Send {
    /// The next event, or `None` when the source is exhausted.
    fn next_event(&mut self) -> Option<AppEvent>;
}

/// Server relay rule: messages of `classes` received by the server from a
/// client are re-sent to every other client of the same zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fanout {
    /// Clients per zone (client `i` is in zone `i / zone_size`).
    pub zone_size: u32,
    /// Classes that are relayed.
    pub classes: Vec<ClassId>,
}

impl Fanout {
    /// Other clients in the zone of `client`, among `clients` clients.
    pub fn peers(&self, client: u32, clients: u32) -> impl Iterator<Item = u32> {
        let size = self.zone_size.max(1);
        let start = client / size * size;
        let end = (start + size).min(clients);
        (start..end).filter(move |&c| c != client)
    }
}

/// A game server's reactions to client messages: called by the simulator
/// once per client message, when the server receives it (its first delivery),
/// with the messages the server sends in answer.
pub trait Reactor: Send {
    /// The server received `msg` from client `from` at `at` (since the start
    /// of the run), among `clients` clients; pushes the server's messages
    /// (direction [`Direction::Down`], sent at `at`) onto `out`.
    fn react(
        &mut self,
        at: Duration,
        from: u32,
        msg: &MessageSpec,
        clients: u32,
        out: &mut Vec<AppEvent>,
    );
}

/// A workload instantiated for one run.
pub struct WorkloadInstance {
    /// Classes, indexed by [`ClassId`].
    pub classes: Vec<ClassSpec>,
    /// Sources of application events.
    pub sources: Vec<Box<dyn Source>>,
    /// Optional relay rule.
    pub fanout: Option<Fanout>,
    /// Optional server reactions (answers and notifications).
    pub reactor: Option<Box<dyn Reactor>>,
}

impl std::fmt::Debug for WorkloadInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadInstance")
            .field("classes", &self.classes)
            .field("sources", &self.sources.len())
            .field("fanout", &self.fanout)
            .field("reactor", &self.reactor.is_some())
            .finish()
    }
}

impl WorkloadInstance {
    /// An empty instance.
    pub fn new() -> Self {
        WorkloadInstance {
            classes: Vec::new(),
            sources: Vec::new(),
            fanout: None,
            reactor: None,
        }
    }

    /// The id of class `name`, adding it if new.
    pub fn class(&mut self, name: &str, semantics: Semantics) -> ClassId {
        if let Some(i) = self.classes.iter().position(|c| c.name == name) {
            return i as ClassId;
        }
        self.classes.push(ClassSpec {
            name: name.to_owned(),
            semantics,
        });
        (self.classes.len() - 1) as ClassId
    }
}

impl Default for WorkloadInstance {
    fn default() -> Self {
        Self::new()
    }
}

/// Parameters shared by all workload kinds when instantiating.
#[derive(Debug, Clone, Copy)]
pub struct InstanceParams {
    /// Number of clients.
    pub clients: u32,
    /// Application traffic stops at this time.
    pub duration: Duration,
    /// Workload seed (independent of the protocol).
    pub seed: u64,
}

/// A configured workload.
#[derive(Debug, Clone)]
pub enum WorkloadSpec {
    /// A published game profile.
    Profile(ProfileWorkload),
    /// The MMORPG session model.
    Mmorpg(MmorpgWorkload),
    /// The action-driven MMORPG model of Wu et al. (server answers each action).
    MmorpgActions(ActionMmorpgWorkload),
    /// Concurrent messaging with deadlines.
    Messaging(MessagingWorkload),
    /// Replay of a CSV trace or a pcap import.
    Replay(ReplayWorkload),
}

impl WorkloadSpec {
    /// Adds this workload's classes and sources to `inst`.
    pub fn instantiate(&self, inst: &mut WorkloadInstance, p: &InstanceParams, index: u64) {
        let seed = crate::seed::derive(p.seed, crate::seed::WORKLOAD, index);
        let p = InstanceParams { seed, ..*p };
        match self {
            WorkloadSpec::Profile(w) => w.instantiate(inst, &p),
            WorkloadSpec::Mmorpg(w) => w.instantiate(inst, &p),
            WorkloadSpec::MmorpgActions(w) => w.instantiate(inst, &p),
            WorkloadSpec::Messaging(w) => w.instantiate(inst, &p),
            WorkloadSpec::Replay(w) => w.instantiate(inst, &p),
        }
    }

    /// A one-line description for reports.
    pub fn describe(&self) -> String {
        match self {
            WorkloadSpec::Profile(w) => w.describe(),
            WorkloadSpec::Mmorpg(w) => w.describe(),
            WorkloadSpec::MmorpgActions(w) => w.describe(),
            WorkloadSpec::Messaging(w) => w.describe(),
            WorkloadSpec::Replay(w) => w.describe(),
        }
    }
}

/// Instantiates several workloads into one instance.
pub fn instantiate_all(specs: &[WorkloadSpec], p: &InstanceParams) -> WorkloadInstance {
    let mut inst = WorkloadInstance::new();
    for (i, w) in specs.iter().enumerate() {
        w.instantiate(&mut inst, p, i as u64);
    }
    inst
}

pub(crate) fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v.max(0.0) / 1000.0)
}

/// Rounds a sampled size to a whole number of bytes, at least one.
pub(crate) fn bytes(v: f64) -> u32 {
    v.round().clamp(1.0, 1_000_000.0) as u32
}

/// Mean application load of a workload per direction: (packets per second,
/// mean packet size on the wire), assuming one message per packet with
/// `header_bytes` of headers; server relays (fan-out) included.
pub fn mean_load(specs: &[WorkloadSpec], p: &InstanceParams, header_bytes: u32) -> [(f64, u32); 2] {
    let mut inst = instantiate_all(specs, p);
    let mut pkts = [0f64; 2];
    let mut bytes = [0f64; 2];
    let relay_classes: Vec<ClassId> = inst
        .fanout
        .as_ref()
        .map(|f| f.classes.clone())
        .unwrap_or_default();
    for src in &mut inst.sources {
        while let Some(e) = src.next_event() {
            let d = match e.dir {
                Direction::Up => 0,
                Direction::Down => 1,
            };
            let wire = f64::from(e.msg.size + header_bytes);
            pkts[d] += 1.0;
            bytes[d] += wire;
            if e.dir == Direction::Up && relay_classes.contains(&e.msg.class) {
                if let Some(f) = &inst.fanout {
                    let peers = f.peers(e.client, p.clients).count() as f64;
                    pkts[1] += peers;
                    bytes[1] += peers * wire;
                }
            }
        }
    }
    let secs = p.duration.as_secs_f64().max(1e-9);
    let one = |d: usize| {
        let size = if pkts[d] > 0.0 {
            (bytes[d] / pkts[d]).round() as u32
        } else {
            0
        };
        (pkts[d] / secs, size)
    };
    [one(0), one(1)]
}
