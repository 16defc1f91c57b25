//! The action-driven MMORPG workload of Wu, Chen, Chen, Huang, Lei, "On the
//! challenge and design of transport protocols for MMORPGs" (MTAP 2009,
//! Sec. 5.2): players join one after another, then send actions (move,
//! attack, talk); the server answers every action to its sender and notifies
//! the players concerned. Everything the paper leaves open is a field here,
//! with the value chosen by default and why.
//!
//! Per player (client `i`):
//! * joins at `T_i = U_0 + ... + U_i`, `U_k` uniform on `join_gap` (the paper:
//!   interarrival uniform on [0, 1] s), by sending a `login` message;
//! * after joining, sends actions as a Poisson process of its own rate, drawn
//!   once per player from a log-normal with mean `rate_mean` and log-sd
//!   `rate_sigma`, clamped to `rate_range` (see [`ActionMmorpgWorkload`]);
//! * each action is move / attack / talk by `mix`, with a client payload of
//!   `client_sizes.0` bytes with probability `client_sizes.2`, else
//!   `client_sizes.1` bytes.
//!
//! The server ([`Reactor`]), on receiving from player `p`:
//! * `login`: `p` joins its zone (fixed for the run, drawn uniformly among
//!   `zones`); one `state` message per player already in that zone goes to
//!   `p`, and one `state` message about `p` to each of them;
//! * `move`: a `move-reply` to `p` and a `move-notify` to every other joined
//!   player of `p`'s zone;
//! * `attack`: an `attack-reply` to `p` (the paper names no target for
//!   attacks: they are taken to hit non-player monsters);
//! * `talk`: a `talk-reply` to `p` and a `talk-notify` to `p`'s chat
//!   partner (another player, drawn per message among the joined ones).
//!
//! Server payload sizes are normal with mean `server_size` (ShenZhou Online's
//! mean server payload, 114 bytes; Wu et al. Sec. 3.1) and sd
//! `server_size_sd`, clamped to `[20, 4 * mean]`. Client classes are `move`,
//! `attack`, `talk` (and `login`; with `last_move_reliable`, also
//! `move-last`: the last move of a series, reliable, answered as a move); every server class has its own name so that
//! "client traffic" is exactly `move`, `attack`, `talk`. Moves and their
//! server echoes are [`Semantics::Newest`] (keyed by the moving avatar: a
//! superseded move that never arrives is lost, not late), attacks and states
//! unordered, talk ordered.

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

use super::{
    bytes, AppEvent, ClassId, Direction, InstanceParams, MessageSpec, Reactor, Semantics, Source,
    WorkloadInstance, DEFAULT_DEADLINE_TARGET,
};
use crate::seed;

/// Seed tags of this workload's streams.
const TAG_JOIN: u64 = 0x4d41_4a4e;
const TAG_PLAYER: u64 = 0x4d41_504c;
const TAG_ZONE: u64 = 0x4d41_5a4e;
const TAG_SERVER: u64 = 0x4d41_5356;

/// Parameters of the action-driven MMORPG workload.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionMmorpgWorkload {
    /// Mean action rate per player (actions/s). Angel's Love: 4,080 messages
    /// in 4 h 37 min per player on average, 0.245/s.
    pub rate_mean: f64,
    /// Log-scale standard deviation of the per-player rate. 0.75 makes the
    /// expected busiest of the trace's ~1,800 players (the 1 - 1/1,800
    /// quantile) 2.12/s, the busiest player's rate in the trace.
    pub rate_sigma: f64,
    /// Clamp of the per-player rate: the trace's quietest (201 messages in
    /// 1 h, 0.056/s) and busiest (2.12/s) players.
    pub rate_range: (f64, f64),
    /// Proportions of move, attack and talk (Angel's Love: 84/12/4 %).
    pub mix: [f64; 3],
    /// Client payload sizes `(a, b, p)`: `a` bytes with probability `p`,
    /// else `b` bytes. ShenZhou Online's two dominant client payloads, 23 and
    /// 27 bytes, in their 36:52 proportion.
    pub client_sizes: (u32, u32, f64),
    /// Mean server payload in bytes.
    pub server_size: f64,
    /// Standard deviation of the server payload in bytes.
    pub server_size_sd: f64,
    /// Number of zones; each player stays in one, drawn uniformly.
    pub zones: u32,
    /// Interarrival of joining players, uniform on this range (seconds).
    pub join_gap: (f64, f64),
    /// The last move of a series is a class of its own, `move-last`, that
    /// must arrive (Wu et al. Sec. 4.1: "the last message in a series of
    /// move updates must be delivered to the server"); a series of moves
    /// ends where the player's next action is not a move, or where the
    /// player sends nothing more before the end of the run.
    pub last_move_reliable: bool,
}

impl Default for ActionMmorpgWorkload {
    fn default() -> Self {
        ActionMmorpgWorkload {
            rate_mean: 0.245,
            rate_sigma: 0.75,
            rate_range: (0.056, 2.12),
            mix: [0.84, 0.12, 0.04],
            client_sizes: (23, 27, 36.0 / 88.0),
            server_size: 114.0,
            server_size_sd: 40.0,
            zones: 10,
            join_gap: (0.0, 1.0),
            last_move_reliable: false,
        }
    }
}

/// The class ids of one instance.
#[derive(Debug, Clone, Copy)]
struct Classes {
    login: ClassId,
    actions: [ClassId; 3],
    /// The last move of a series, when it has a class of its own.
    last_move: Option<ClassId>,
    replies: [ClassId; 3],
    move_notify: ClassId,
    talk_notify: ClassId,
    state: ClassId,
}

impl ActionMmorpgWorkload {
    /// A player's action rate (actions/s), drawn once per player.
    fn player_rate(&self, rng: &mut ChaCha8Rng) -> f64 {
        let s = self.rate_sigma.max(0.0);
        let mu = self.rate_mean.max(1e-9).ln() - s * s / 2.0;
        let v = match LogNormal::new(mu, s) {
            Ok(d) => d.sample(rng),
            Err(_) => self.rate_mean,
        };
        v.clamp(self.rate_range.0, self.rate_range.1.max(self.rate_range.0))
    }

    pub(super) fn instantiate(&self, inst: &mut WorkloadInstance, p: &InstanceParams) {
        let c = Classes {
            login: inst.class("login", Semantics::Ordered),
            actions: [
                inst.class("move", Semantics::Newest),
                inst.class("attack", Semantics::Unordered),
                inst.class("talk", Semantics::Ordered),
            ],
            replies: [
                inst.class("move-reply", Semantics::Newest),
                inst.class("attack-reply", Semantics::Unordered),
                inst.class("talk-reply", Semantics::Ordered),
            ],
            move_notify: inst.class("move-notify", Semantics::Newest),
            talk_notify: inst.class("talk-notify", Semantics::Ordered),
            state: inst.class("state", Semantics::Unordered),
            last_move: self
                .last_move_reliable
                .then(|| inst.class("move-last", Semantics::Unordered)),
        };
        let end_ms = p.duration.as_secs_f64() * 1000.0;
        let mut join_rng = seed::rng(p.seed, TAG_JOIN, 0);
        let (lo, hi) = (self.join_gap.0.max(0.0), self.join_gap.1.max(0.0));
        let mut join_s = 0.0;
        for client in 0..p.clients {
            join_s += if hi > lo {
                join_rng.random_range(lo..hi)
            } else {
                lo
            };
            let mut rng = seed::rng(p.seed, TAG_PLAYER, u64::from(client));
            let rate = self.player_rate(&mut rng);
            inst.sources.push(Box::new(PlayerSource {
                client,
                classes: c,
                mix: self.mix,
                sizes: self.client_sizes,
                mean_gap_ms: 1000.0 / rate.max(1e-9),
                t_ms: join_s * 1000.0,
                joined: false,
                next_kind: None,
                end_ms,
                rng,
            }));
        }
        let zones = self.zones.max(1);
        let zone = (0..p.clients)
            .map(|i| (seed::derive(p.seed, TAG_ZONE, u64::from(i)) % u64::from(zones)) as u32)
            .collect();
        inst.reactor = Some(Box::new(Server {
            classes: c,
            zone,
            joined: vec![false; p.clients as usize],
            members: vec![Vec::new(); zones as usize],
            rng: seed::rng(p.seed, TAG_SERVER, 0),
            size_mean: self.server_size,
            size_sd: self.server_size_sd,
        }));
    }

    pub(super) fn describe(&self) -> String {
        let last = if self.last_move_reliable {
            "; the last move of a series (next action not a move) is `move-last`, which must arrive"
        } else {
            ""
        };
        format!(
            "MMORPG actions (Wu et al., MTAP 2009): per-player rate log-normal, mean {}/s (log-sd {}, clamped to {}-{}/s), move/attack/talk {:.0}%/{:.0}%/{:.0}%, client payloads {} or {} B; the server answers each action (mean {} B) and notifies the zone ({} zones) of moves and the chat partner of talk; players join every U[{}, {}] s and get the zone's state{}",
            self.rate_mean,
            self.rate_sigma,
            self.rate_range.0,
            self.rate_range.1,
            self.mix[0] * 100.0,
            self.mix[1] * 100.0,
            self.mix[2] * 100.0,
            self.client_sizes.0,
            self.client_sizes.1,
            self.server_size,
            self.zones,
            self.join_gap.0,
            self.join_gap.1,
            last,
        )
    }
}

/// One player's messages: `login` at its join time, then actions.
struct PlayerSource {
    client: u32,
    classes: Classes,
    mix: [f64; 3],
    sizes: (u32, u32, f64),
    mean_gap_ms: f64,
    t_ms: f64,
    joined: bool,
    /// The kind (index into `mix`) of the next action, drawn one action
    /// ahead so that a move knows whether it ends its series.
    next_kind: Option<usize>,
    end_ms: f64,
    rng: ChaCha8Rng,
}

impl PlayerSource {
    fn exp_gap(&mut self) -> f64 {
        let u: f64 = 1.0 - self.rng.random::<f64>();
        -u.ln() * self.mean_gap_ms
    }

    /// An action kind drawn by `mix`: 0 move, 1 attack, 2 talk.
    fn kind(&mut self) -> usize {
        let total: f64 = self.mix.iter().sum();
        let u = self.rng.random::<f64>() * total;
        if u < self.mix[0] {
            0
        } else if u < self.mix[0] + self.mix[1] {
            1
        } else {
            2
        }
    }
}

impl Source for PlayerSource {
    fn next_event(&mut self) -> Option<AppEvent> {
        if self.t_ms >= self.end_ms {
            return None;
        }
        let at = super::ms(self.t_ms);
        let size = if self.rng.random::<f64>() < self.sizes.2 {
            self.sizes.0
        } else {
            self.sizes.1
        };
        let kind = if self.joined {
            Some(match self.next_kind.take() {
                Some(k) => k,
                None => self.kind(),
            })
        } else {
            self.joined = true;
            None
        };
        self.t_ms += self.exp_gap();
        if kind.is_some() && self.t_ms < self.end_ms {
            self.next_kind = Some(self.kind());
        }
        let class = match kind {
            None => self.classes.login,
            Some(0) if self.next_kind != Some(0) => {
                self.classes.last_move.unwrap_or(self.classes.actions[0])
            }
            Some(k) => self.classes.actions[k],
        };
        Some(AppEvent {
            at,
            client: self.client,
            dir: Direction::Up,
            msg: MessageSpec {
                class,
                size: size.max(1),
                deadline: None,
                target: DEFAULT_DEADLINE_TARGET,
                // One moving entity per client: its own avatar.
                key: 0,
            },
        })
    }
}

/// The game server of Wu et al.: tracks who joined which zone and answers.
struct Server {
    classes: Classes,
    zone: Vec<u32>,
    joined: Vec<bool>,
    members: Vec<Vec<u32>>,
    rng: ChaCha8Rng,
    size_mean: f64,
    size_sd: f64,
}

impl Server {
    fn size(&mut self) -> u32 {
        // Box-Muller from two uniforms keeps the draw self-contained.
        let u1: f64 = 1.0 - self.rng.random::<f64>();
        let u2: f64 = self.rng.random::<f64>();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let v = self.size_mean + self.size_sd * z;
        bytes(v.clamp(20.0, (4.0 * self.size_mean).max(20.0)))
    }

    fn push(&mut self, out: &mut Vec<AppEvent>, at: Duration, to: u32, class: ClassId, key: u64) {
        let size = self.size();
        out.push(AppEvent {
            at,
            client: to,
            dir: Direction::Down,
            msg: MessageSpec {
                class,
                size,
                deadline: None,
                target: DEFAULT_DEADLINE_TARGET,
                key,
            },
        });
    }
}

impl Reactor for Server {
    fn react(
        &mut self,
        at: Duration,
        from: u32,
        msg: &MessageSpec,
        _clients: u32,
        out: &mut Vec<AppEvent>,
    ) {
        let Some(&z) = self.zone.get(from as usize) else {
            return;
        };
        let c = self.classes;
        let me = u64::from(from);
        if msg.class == c.login {
            if std::mem::replace(&mut self.joined[from as usize], true) {
                return;
            }
            let others = self.members[z as usize].clone();
            for o in others {
                self.push(out, at, from, c.state, u64::from(o));
                self.push(out, at, o, c.state, me);
            }
            self.members[z as usize].push(from);
            return;
        }
        let kind = if c.last_move == Some(msg.class) {
            Some(0)
        } else {
            c.actions.iter().position(|&a| a == msg.class)
        };
        let Some(kind) = kind else {
            return;
        };
        self.push(out, at, from, c.replies[kind], me);
        match kind {
            0 => {
                let peers = self.members[z as usize].clone();
                for o in peers.into_iter().filter(|&o| o != from) {
                    self.push(out, at, o, c.move_notify, me);
                }
            }
            2 => {
                let n = self.joined.iter().filter(|&&j| j).count();
                if n > 1 {
                    // The k-th joined player other than `from`.
                    let k = self.rng.random_range(0..n - 1);
                    let partner = self
                        .joined
                        .iter()
                        .enumerate()
                        .filter(|&(i, &j)| j && i != from as usize)
                        .nth(k)
                        .map(|(i, _)| i as u32);
                    if let Some(p) = partner {
                        self.push(out, at, p, c.talk_notify, me);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
