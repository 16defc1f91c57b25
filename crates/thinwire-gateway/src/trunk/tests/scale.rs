//! Scale: 8 edges × 500 players (4000 flows) through one server gateway to one
//! unmodified game server, in simulated time, with game-like traffic both ways and loss on
//! every trunk: every reliable message is delivered exactly once and in its flow's order,
//! no unreliable one twice, nothing is refused or closed, and memory stays bounded under the
//! defaults (the game server sees all 4000 connections from the server gateway's one
//! address).
//!
//! 4000 players cost one pass over them per event in [`Harness::step`], so the run moves in
//! 2 ms steps ([`Harness::advance`]). It takes 10-20 s in release; in a debug build it
//! is ignored (minutes).

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thinwire_netmodel::LinkConfig;
use thinwire_proto::{ChannelKind, ConnectionHandle, Event, MemoryBudget, Message};

use crate::trunk::testing::Harness;

const EDGES: usize = 8;
const PER_EDGE: usize = 500;
const PLAYERS: usize = EDGES * PER_EDGE;
/// Player channels: game state both ways, and position updates that may be lost.
const KINDS: [ChannelKind; 2] = [ChannelKind::ReliableOrdered, ChannelKind::Unreliable];
const RELIABLE: u8 = 0;
const UNRELIABLE: u8 = 1;
const SIZE: usize = 100;
const STEP: Duration = Duration::from_millis(2);
/// How long every player sends, once connected.
const TRAFFIC: Duration = Duration::from_secs(6);
/// The longest the last messages may take (retransmissions over a 1%-lossy trunk).
const DRAIN: Duration = Duration::from_secs(5);

/// `[player u32][n u32][channel u8]`, padded to [`SIZE`].
fn payload(player: usize, n: u32, channel: u8) -> Vec<u8> {
    let mut v = vec![0u8; SIZE];
    v[..4].copy_from_slice(&(player as u32).to_le_bytes());
    v[4..8].copy_from_slice(&n.to_le_bytes());
    v[8] = channel;
    v
}

fn parse(m: &Message) -> (usize, u32) {
    let d = &m.data;
    assert_eq!(d.len(), SIZE, "payload size");
    assert_eq!(d[8], m.channel, "arrived on the channel it was sent on");
    let player = u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as usize;
    (player, u32::from_le_bytes([d[4], d[5], d[6], d[7]]))
}

/// One direction of one flow: what was sent and what arrived.
#[derive(Debug, Default)]
struct Dir {
    next: Option<Instant>,
    reliable_sent: u32,
    reliable_got: u32,
    unreliable_sent: u32,
    unreliable_seen: Vec<bool>,
}

impl Dir {
    /// Sends when due: a reliable message, and every other time an unreliable one; the next
    /// send 100-500 ms later. Returns the messages to send as (channel, n).
    fn due(&mut self, now: Instant, rng: &mut ChaCha8Rng) -> Vec<(u8, u32)> {
        let next = *self.next.get_or_insert(now);
        if now < next {
            return Vec::new();
        }
        self.next = Some(now + Duration::from_millis(rng.random_range(100..=500)));
        let mut out = vec![(RELIABLE, self.reliable_sent)];
        self.reliable_sent += 1;
        if rng.random_bool(0.5) {
            out.push((UNRELIABLE, self.unreliable_sent));
            self.unreliable_sent += 1;
        }
        out
    }

    /// Checks one arrival: reliable in order with no gap or repeat, unreliable at most once.
    fn arrived(&mut self, channel: u8, n: u32, what: &str) {
        if channel == RELIABLE {
            assert_eq!(
                n, self.reliable_got,
                "{what}: reliable out of order or repeated"
            );
            self.reliable_got += 1;
        } else {
            let i = n as usize;
            if self.unreliable_seen.len() <= i {
                self.unreliable_seen.resize(i + 1, false);
            }
            assert!(!self.unreliable_seen[i], "{what}: unreliable {n} twice");
            self.unreliable_seen[i] = true;
        }
    }

    fn unreliable_got(&self) -> usize {
        self.unreliable_seen.iter().filter(|&&s| s).count()
    }
}

#[derive(Debug, Default)]
struct Flow {
    connected: bool,
    game_conn: Option<ConnectionHandle>,
    up: Dir,
    down: Dir,
}

/// The run's state besides the harness.
struct Scale {
    flows: Vec<Flow>,
    by_conn: std::collections::HashMap<ConnectionHandle, usize>,
    game_connected: usize,
    rng: ChaCha8Rng,
    max_memory: [u64; 3],
}

impl Scale {
    /// Players' events: connections, and what the game sent them.
    fn player_events(&mut self, h: &mut Harness) {
        for (i, f) in self.flows.iter_mut().enumerate().take(h.players.len()) {
            while let Some((_, e)) = h.players[i].events.pop_front() {
                match e {
                    Event::Connected { .. } => f.connected = true,
                    Event::Message(m) => {
                        let (p, n) = parse(&m);
                        assert_eq!(p, i, "player {i} got player {p}'s message");
                        f.down.arrived(m.channel, n, "down");
                    }
                    other => panic!("player {i}: {other:?}"),
                }
            }
        }
    }

    /// The game server's events: its connections, learned from their first message, and
    /// what the players sent.
    fn game_events(&mut self, h: &mut Harness) {
        while let Some((_, conn, e)) = h.game_events.pop_front() {
            match e {
                Event::Connected { .. } => self.game_connected += 1,
                Event::Message(m) => {
                    let (p, n) = parse(&m);
                    let known = *self.by_conn.entry(conn).or_insert(p);
                    assert_eq!(known, p, "one game connection carries two players");
                    let f = &mut self.flows[p];
                    assert!(f.game_conn.is_none_or(|c| c == conn), "two connections");
                    f.game_conn = Some(conn);
                    f.up.arrived(m.channel, n, "up");
                }
                other => panic!("game server: {other:?}"),
            }
        }
    }

    /// Every connected player's and the game's sends that are due.
    fn send(&mut self, h: &mut Harness) {
        let now = h.time;
        for (i, f) in self.flows.iter_mut().enumerate() {
            if f.connected {
                for (ch, n) in f.up.due(now, &mut self.rng) {
                    h.player_send(i, ch, &payload(i, n, ch));
                }
            }
            if let Some(conn) = f.game_conn {
                h.players[i].game_conn = Some(conn);
                for (ch, n) in f.down.due(now, &mut self.rng) {
                    h.game_send(i, ch, None, &payload(i, n, ch));
                }
            }
        }
    }

    fn step(&mut self, h: &mut Harness, sending: bool) {
        self.player_events(h);
        self.game_events(h);
        if sending {
            self.send(h);
        }
        h.advance(STEP);
        let held = [
            h.game.stats().memory_held,
            h.server_gw.upstream().stats().memory_held,
            h.server_gw.trunk().stats().memory_held,
        ];
        for (m, v) in self.max_memory.iter_mut().zip(held) {
            *m = (*m).max(v);
        }
    }

    fn all_delivered(&self) -> bool {
        self.flows.iter().all(|f| {
            f.up.reliable_got == f.up.reliable_sent && f.down.reliable_got == f.down.reliable_sent
        })
    }
}

#[test]
#[cfg_attr(debug_assertions, ignore = "4000 players: run in release (10-20 s)")]
fn eight_edges_of_500_players_through_one_server_gateway() {
    let started = std::time::Instant::now();
    let trunk = LinkConfig::default()
        .with_delay(Duration::from_millis(15))
        .with_bernoulli_loss(0.01);
    let mut h = Harness::builder(25)
        .edges(EDGES)
        .trunk_link(trunk)
        .access_link(LinkConfig::default().with_delay(Duration::from_millis(5)))
        .lan_link(LinkConfig::default().with_delay(Duration::from_micros(200)))
        .build();
    assert!(h.edges.iter().all(|e| e.trunk_up()), "every trunk admitted");
    let mut s = Scale {
        flows: (0..PLAYERS).map(|_| Flow::default()).collect(),
        by_conn: Default::default(),
        game_connected: 0,
        rng: ChaCha8Rng::seed_from_u64(25),
        max_memory: [0; 3],
    };
    // Players arrive one per millisecond, spread over the edges (the game server reads
    // 1000 handshakes a second by default), and send from the moment they are connected.
    let per_step = STEP.as_millis() as usize;
    for i in 0..PLAYERS {
        h.add_player_at(i % EDGES, &KINDS, None);
        if i % per_step == per_step - 1 {
            s.step(&mut h, true);
        }
    }
    let arrived = h.time;
    while h.time < arrived + TRAFFIC {
        s.step(&mut h, true);
    }
    let stop = h.time;
    while h.time < stop + DRAIN && !s.all_delivered() {
        s.step(&mut h, false);
    }
    s.step(&mut h, false);

    assert_eq!(
        s.game_connected, PLAYERS,
        "the game server saw every player"
    );
    assert_eq!(s.by_conn.len(), PLAYERS);
    let (mut sent, mut unreliable_sent, mut unreliable_got) = (0u64, 0usize, 0usize);
    for (i, f) in s.flows.iter().enumerate() {
        assert!(f.connected && f.game_conn.is_some(), "player {i}");
        for (d, what) in [(&f.up, "up"), (&f.down, "down")] {
            assert!(
                d.reliable_sent >= 10,
                "player {i} {what}: sent {}",
                d.reliable_sent
            );
            assert_eq!(
                d.reliable_got, d.reliable_sent,
                "player {i} {what}: delivered"
            );
            sent += u64::from(d.reliable_sent + d.unreliable_sent);
            unreliable_sent += d.unreliable_sent as usize;
            unreliable_got += d.unreliable_got();
        }
    }
    // 1% loss on each trunk direction, no retransmission: most unreliable messages arrive.
    assert!(
        unreliable_got * 100 >= unreliable_sent * 97 && unreliable_got < unreliable_sent,
        "unreliable {unreliable_got} of {unreliable_sent}"
    );
    let (e, sg) = (&h.edges, h.server_gw.stats());
    assert_eq!(sg.flows_open, PLAYERS);
    assert_eq!(h.server_gw.trunks().len(), EDGES);
    for edge in e {
        let st = edge.gw.stats();
        assert_eq!(st.flows_open, PER_EDGE);
        assert_eq!((st.flows_refused, st.flows_overflowed), (0, 0));
        assert_eq!((st.bad_frames, st.events_dropped), (0, 0));
    }
    assert_eq!((sg.flows_refused, sg.flows_overflowed), (0, 0));
    assert_eq!((sg.bad_frames, sg.events_dropped), (0, 0));
    // Memory: the game server holds every player's connection from one source (the server
    // gateway), within the default per-source budget with room to spare, and no connection
    // was closed for memory anywhere.
    let budget = MemoryBudget::default();
    let [game, upstream, trunks] = s.max_memory;
    assert!(
        game < budget.per_source as u64 / 4,
        "game server held {game} B"
    );
    assert!(
        upstream < budget.per_source as u64 / 4,
        "upstream held {upstream} B"
    );
    assert!(trunks < budget.total as u64 / 4, "trunks held {trunks} B");
    for st in [
        h.game.stats(),
        h.server_gw.upstream().stats(),
        h.server_gw.trunk().stats(),
    ] {
        assert_eq!(st.closed_over_budget, 0);
    }
    eprintln!(
        "8x500: {sent} messages ({unreliable_got}/{unreliable_sent} unreliable arrived), \
         max held: game {game} B, upstream {upstream} B, trunks {trunks} B; \
         held mean {:?} max {:?}; simulated {:?}, took {:?}",
        e[0].gw.stats().held_delay_mean(),
        e[0].gw.stats().held_delay_max,
        h.time - arrived,
        started.elapsed()
    );
}
