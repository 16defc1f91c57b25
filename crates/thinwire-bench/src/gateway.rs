//! The gateway's cost per message: players → edge → trunk → server gateway → game server,
//! all five sans-IO endpoints in this one thread, datagrams handed over in memory (no
//! sockets, no loss), the clock simulated. Every call into the [`EdgeGateway`] and the
//! [`ServerGateway`] is timed, so each gateway's own CPU per message is isolated from the
//! players' and the game server's work:
//!
//! ```text
//!  players ──► [edge: handle_datagram / handle_timeout / poll_transmit / poll_event] ──►
//!              [server gateway: the same] ──► game server          (acks flow back the same way)
//! ```
//!
//! A round is `ROUND` of simulated time: every player sends one message, then every event
//! due in the round runs (timers, the period-T hold, acknowledgements). What a gateway's
//! calls took in real time, summed over the measured rounds, gives its messages per second
//! per core: the messages the game server received over that time. Socket system calls are
//! not included (each gateway would add a `recvmmsg`/`sendmmsg` share on a real host).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use thinwire_gateway::trunk::{
    mint_trunk_credential, CredentialSpec, EdgeConfig, EdgeGateway, ServerGateway,
    ServerGatewayConfig, Side, TrunkCredential, TrunkOptions, TrunkPeer,
};
use thinwire_proto::{
    ChannelKind, ConnectionHandle, Endpoint, EndpointConfig, Event, PublicKey, SendMode,
    ServerConfig, TokenKey, TransportConfig,
};

use crate::host::Protocol;
use crate::results::{Row, Section};
use crate::runner::{cells, Ctx, Metric};

mod loopback;

/// Simulated time per round: each player sends one message per round (50 Hz).
const ROUND: Duration = Duration::from_millis(20);
/// Bytes per message (a movement update).
const SIZE: usize = 40;

const GAME: SocketAddr = addr(1, 4433);
const SERVER_LOCAL: SocketAddr = addr(2, 5000);
const SERVER_TRUNK: SocketAddr = addr(3, 4500);
const EDGE_TRUNK: SocketAddr = addr(4, 4501);
const EDGE_PLAYERS: SocketAddr = addr(5, 4433);

const fn addr(host: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, host)), port)
}

/// The simulated wall clock (unix time) the server gateway checks the edge's credential by.
const UNIX: Duration = Duration::from_secs(1_800_000_000);

/// The operator key of the benchmarked deployment: the server gateway admits peer 1, the
/// edge, whose credential is minted with it.
fn admission() -> (TokenKey, Vec<TrunkPeer>) {
    (TokenKey::new([0x0b; 32]), vec![TrunkPeer::new(1, "edge")])
}

/// The edge's (peer 1's) trunk credential for the server gateway at `at` with trunk key
/// `key`, valid until `expires_unix_s`.
fn edge_credential(
    (at, key): (SocketAddr, &PublicKey),
    expires_unix_s: u64,
    nonce: [u8; 24],
) -> Result<TrunkCredential, String> {
    let spec = CredentialSpec {
        peer_id: 1,
        name: "edge",
        server_gateway_key: key,
        addresses: &[at],
        expires_unix_s,
    };
    mint_trunk_credential(&admission().0, &spec, nonce).map_err(|e| e.to_string())
}

fn player_addr(i: usize) -> SocketAddr {
    let ip = Ipv4Addr::new(10, 3, (i / 250) as u8, (i % 250 + 1) as u8);
    SocketAddr::new(IpAddr::V4(ip), 40_000)
}

/// Real time spent in one gateway's calls.
#[derive(Debug, Default, Clone, Copy)]
struct Meter(Duration);

impl Meter {
    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let out = f();
        self.0 += t0.elapsed();
        out
    }
}

/// Datagrams in flight between the nodes (delivered at once, in order).
#[derive(Default)]
struct Wires {
    to_edge: Vec<(Side, SocketAddr, Vec<u8>)>,
    to_server: Vec<(Side, SocketAddr, Vec<u8>)>,
    to_game: Vec<Vec<u8>>,
    to_players: Vec<(SocketAddr, Vec<u8>)>,
}

/// The five endpoints and their wires.
struct Rig {
    now: Instant,
    players: Vec<(Endpoint, ConnectionHandle)>,
    edge: EdgeGateway,
    server: ServerGateway,
    game: Endpoint,
    wires: Wires,
    edge_cpu: Meter,
    server_cpu: Meter,
    /// Messages the game server received.
    delivered: u64,
    /// Relayed connections the game server accepted.
    connected: usize,
    buf: Vec<u8>,
}

fn endpoint_config(n: u64, transport: &TransportConfig, cleartext: bool) -> EndpointConfig {
    let mut seed = [7u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    let mut c = EndpointConfig::new(seed);
    c.transport = Arc::new(transport.clone());
    if cleartext {
        c = c.insecure_cleartext();
    }
    c
}

impl Rig {
    fn new(players: usize, period: Duration, cleartext: bool) -> Result<Self, String> {
        let now = Instant::now();
        let t = TransportConfig::default();
        let options = TrunkOptions {
            period,
            ..TrunkOptions::default()
        };
        let trunk_t = options.transport(&t);
        let game_server = ServerConfig {
            trusted_sources: vec![SERVER_LOCAL.ip()],
            ..ServerConfig::default()
        };
        let e = |e: &dyn std::fmt::Display| e.to_string();
        let game = Endpoint::new(endpoint_config(1, &t, cleartext), Some(game_server), now)
            .map_err(|x| e(&x))?;
        let (operator_key, peers) = admission();
        let mut server = ServerGateway::new(
            now,
            ServerGatewayConfig {
                trunk: endpoint_config(2, &trunk_t, cleartext),
                trunk_server: ServerConfig::default(),
                operator_key,
                peers,
                upstream: endpoint_config(3, &t, cleartext),
                game_server: GAME,
                game_server_key: game.public_key().ok_or("the game server has no key")?,
                upstream_tokens: None,
                options: options.clone(),
            },
        )
        .map_err(|x| e(&x))?;
        server.set_unix_time(now, UNIX);
        let trunk_key = server.trunk_public_key();
        let expires = (UNIX + Duration::from_secs(86_400)).as_secs();
        let edge = EdgeGateway::new(
            now,
            EdgeConfig {
                players: endpoint_config(4, &t, cleartext),
                players_server: ServerConfig::default(),
                trunk: endpoint_config(5, &trunk_t, cleartext),
                credential: edge_credential((SERVER_TRUNK, &trunk_key), expires, [1; 24])?,
                server_gateway: None,
                options,
            },
        )
        .map_err(|x| e(&x))?;
        let mut rig = Self {
            now,
            players: Vec::with_capacity(players),
            edge,
            server,
            game,
            wires: Wires::default(),
            edge_cpu: Meter::default(),
            server_cpu: Meter::default(),
            delivered: 0,
            connected: 0,
            buf: Vec::with_capacity(2048),
        };
        // a player turned away because the trunk is not up yet would not come back: the
        // players connect once it is
        for _ in 0..100 {
            if !rig.server.trunks().is_empty() {
                break;
            }
            rig.run(ROUND);
        }
        if rig.server.trunks().is_empty() {
            return Err("the trunk did not come up".into());
        }
        rig.run(ROUND);
        let key = rig.edge.players_public_key();
        for i in 0..players {
            let mut p = Endpoint::new(endpoint_config(100 + i as u64, &t, cleartext), None, now)
                .map_err(|x| e(&x))?;
            let conn = p
                .connect(now, EDGE_PLAYERS, &key, &[ChannelKind::ReliableOrdered])
                .map_err(|x| e(&x))?;
            rig.players.push((p, conn));
        }
        for _ in 0..500 {
            if rig.connected == players {
                break;
            }
            rig.run(ROUND);
        }
        if rig.connected < players {
            return Err(format!("{} of {players} players connected", rig.connected));
        }
        Ok(rig)
    }

    /// Moves every datagram until nothing is left to move at this instant.
    fn settle(&mut self) {
        let now = self.now;
        loop {
            for (i, (p, _)) in self.players.iter_mut().enumerate() {
                while let Some(t) = p.poll_transmit(now, &mut self.buf) {
                    let d = self.buf[..t.size].to_vec();
                    self.wires.to_edge.push((Side::Local, player_addr(i), d));
                }
                while p.poll_event().is_some() {}
            }
            while let Some(t) = self.game.poll_transmit(now, &mut self.buf) {
                let d = self.buf[..t.size].to_vec();
                self.wires.to_server.push((Side::Local, GAME, d));
            }
            while let Some((_, ev)) = self.game.poll_event() {
                match ev {
                    Event::Message(_) => self.delivered += 1,
                    Event::Connected { .. } => self.connected += 1,
                    _ => {}
                }
            }
            let (w, buf) = (&mut self.wires, &mut self.buf);
            let mut moved = w.to_edge.len() + w.to_server.len();
            let edge = &mut self.edge;
            self.edge_cpu.time(|| {
                for (side, from, d) in w.to_edge.drain(..) {
                    edge.handle_datagram(now, side, from, &d);
                }
                while let Some((side, t)) = edge.poll_transmit(now, buf) {
                    let d = buf[..t.size].to_vec();
                    match side {
                        Side::Trunk => w.to_server.push((Side::Trunk, EDGE_TRUNK, d)),
                        Side::Local => w.to_players.push((t.destination, d)),
                    }
                }
                while edge.poll_event().is_some() {}
            });
            let server = &mut self.server;
            self.server_cpu.time(|| {
                for (side, from, d) in w.to_server.drain(..) {
                    server.handle_datagram(now, side, from, &d);
                }
                while let Some((side, t)) = server.poll_transmit(now, buf) {
                    let d = buf[..t.size].to_vec();
                    match side {
                        Side::Trunk => w.to_edge.push((Side::Trunk, SERVER_TRUNK, d)),
                        Side::Local => w.to_game.push(d),
                    }
                }
                while server.poll_event().is_some() {}
            });
            moved += w.to_edge.len() + w.to_game.len() + w.to_players.len();
            for d in w.to_game.drain(..) {
                self.game.handle_datagram(now, SERVER_LOCAL, &d);
            }
            for (to, d) in w.to_players.drain(..) {
                if let Some((p, _)) = self.players.get_mut(player_index(to)) {
                    p.handle_datagram(now, EDGE_PLAYERS, &d);
                }
            }
            if moved == 0 {
                break;
            }
        }
    }

    /// The next timer of any node (the gateways' `poll_timeout` timed too: a process
    /// calls it every turn of its loop).
    fn next_timer(&mut self) -> Option<Instant> {
        let edge = self.edge_cpu.time(|| self.edge.poll_timeout());
        let server = self.server_cpu.time(|| self.server.poll_timeout());
        let players = self.players.iter_mut().map(|(p, _)| p.poll_timeout());
        [self.game.poll_timeout(), edge, server]
            .into_iter()
            .chain(players)
            .flatten()
            .min()
    }

    /// Runs every event for `d` of simulated time.
    fn run(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            self.settle();
            match self.next_timer() {
                Some(t) if t <= end => self.now = self.now.max(t),
                _ => break,
            }
            let now = self.now;
            for (p, _) in &mut self.players {
                if p.poll_timeout().is_some_and(|t| t <= now) {
                    p.handle_timeout(now);
                }
            }
            if self.game.poll_timeout().is_some_and(|t| t <= now) {
                self.game.handle_timeout(now);
            }
            let edge = &mut self.edge;
            self.edge_cpu.time(|| {
                if edge.poll_timeout().is_some_and(|t| t <= now) {
                    edge.handle_timeout(now);
                }
            });
            let server = &mut self.server;
            self.server_cpu.time(|| {
                if server.poll_timeout().is_some_and(|t| t <= now) {
                    server.handle_timeout(now);
                }
            });
        }
        self.now = end;
    }

    /// One round: every player sends a message, then the round's events run.
    fn round(&mut self, payload: &Bytes) -> Result<(), String> {
        let now = self.now;
        for (p, conn) in &mut self.players {
            p.send(now, *conn, 0, payload.clone(), SendMode::Plain)
                .map_err(|e| format!("player send: {e}"))?;
        }
        self.run(ROUND);
        Ok(())
    }
}

fn player_index(a: SocketAddr) -> usize {
    match a.ip().to_canonical() {
        IpAddr::V4(v4) => {
            let [_, _, hi, lo] = v4.octets();
            usize::from(hi) * 250 + usize::from(lo) - 1
        }
        IpAddr::V6(_) => usize::MAX,
    }
}

/// One measured run.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Messages the game server received per second of the edge's own time.
    edge_rate: f64,
    /// The same over the server gateway's own time.
    server_rate: f64,
    /// Messages per second of wall time, all five endpoints on this one core.
    all_rate: f64,
}

/// Runs a rig: warm-up rounds, then rounds until `ctx.seconds` of real time passed.
fn measure(ctx: &Ctx, period: Duration, cleartext: bool) -> Result<Sample, String> {
    let mut rig = Rig::new(ctx.gateway_players, period, cleartext)?;
    let payload = Bytes::from(vec![7u8; SIZE]);
    let warm = Instant::now();
    while warm.elapsed() < ctx.warmup {
        rig.round(&payload)?;
    }
    let (d0, e0, s0, t0) = (
        rig.delivered,
        rig.edge_cpu.0,
        rig.server_cpu.0,
        Instant::now(),
    );
    let mut rounds = 0u64;
    while t0.elapsed() < ctx.seconds {
        rig.round(&payload)?;
        rounds += 1;
    }
    let wall = t0.elapsed().as_secs_f64();
    let n = (rig.delivered - d0) as f64;
    let players = ctx.gateway_players as f64;
    let sent = rounds as f64 * players;
    // every message sent in all but the last round or two must have arrived
    if n < sent - 2.0 * players {
        return Err(format!("{n} of {sent} messages delivered"));
    }
    let per = |d: Duration| n / d.as_secs_f64().max(1e-9);
    Ok(Sample {
        edge_rate: per(rig.edge_cpu.0 - e0),
        server_rate: per(rig.server_cpu.0 - s0),
        all_rate: n / wall,
    })
}

const METRICS: [Metric<Sample>; 3] = [
    Metric {
        key: "edge",
        label: "edge gateway, per core",
        unit: "msg/s",
        read: |s| s.edge_rate,
    },
    Metric {
        key: "server",
        label: "server gateway, per core",
        unit: "msg/s",
        read: |s| s.server_rate,
    },
    Metric {
        key: "all",
        label: "all five endpoints on one core",
        unit: "msg/s",
        read: |s| s.all_rate,
    },
];

const LOOPBACK_METRICS: [Metric<loopback::Sampled>; 2] = [
    Metric {
        key: "edge",
        label: "edge process, loopback UDP, per core, T = 10 ms, encrypted",
        unit: "msg/s",
        read: |s| s.edge,
    },
    Metric {
        key: "server",
        label: "server gateway process, loopback UDP, per core, T = 10 ms, encrypted",
        unit: "msg/s",
        read: |s| s.server,
    },
];

/// The gateway section: T = 0 and 10 ms, encrypted and cleartext.
pub(crate) fn section(ctx: &Ctx) -> Section {
    let mut rows = Vec::new();
    for period_ms in [10u64, 0] {
        for cleartext in [false, true] {
            let case = format!(
                "T = {period_ms} ms, {}",
                if cleartext { "cleartext" } else { "encrypted" }
            );
            let period = Duration::from_millis(period_ms);
            let out = ctx.interleave(
                &format!("gateway {case}"),
                |p| (p != Protocol::Thinwire).then(|| "thinwire's gateway only".to_owned()),
                |_| measure(ctx, period, cleartext),
                |s: &Sample| {
                    format!(
                        "edge {:.0}, server gateway {:.0}, all five {:.0} msg/s",
                        s.edge_rate, s.server_rate, s.all_rate
                    )
                },
            );
            let id = format!(
                "gateway/{period_ms}ms/{}",
                if cleartext { "cleartext" } else { "encrypted" }
            );
            for m in &METRICS {
                rows.push(Row::new(
                    format!("{id}/{}", m.key),
                    format!("{}, {case}", m.label),
                    m.unit,
                    None,
                    cells(&out, m.read),
                ));
            }
        }
    }
    // players x rate: 40k and 100k messages per second with 200 players (a tenth of the
    // players at a tenth of the rate in the quick run, for debug builds)
    let scale = ctx.gateway_players as f64 / 200.0;
    for hz in [200.0, 500.0] {
        let hz = hz * scale;
        let offered = (hz * ctx.gateway_players as f64).round();
        let out = ctx.interleave(
            &format!("gateway over loopback UDP, T = 10 ms, encrypted, {offered} msg/s"),
            |p| (p != Protocol::Thinwire).then(|| "thinwire's gateway only".to_owned()),
            |_| loopback::measure(ctx, Duration::from_millis(10), ctx.gateway_players, hz),
            |s: &loopback::Sampled| {
                format!("edge {:.0}, server gateway {:.0} msg/s", s.edge, s.server)
            },
        );
        for m in &LOOPBACK_METRICS {
            rows.push(Row::new(
                format!("gateway/loopback/{offered}/{}", m.key),
                format!("{}, {offered} msg/s offered", m.label),
                m.unit,
                None,
                cells(&out, m.read),
            ));
        }
    }
    Section {
        id: "gateway".into(),
        title: "Gateway messages per second per core".into(),
        method: format!(
            "{} players each send one {SIZE}-byte ReliableOrdered message every {} ms \
             of simulated time through edge → trunk → server gateway → game server; all five \
             sans-IO endpoints run in one thread, datagrams handed over in memory (no \
             sockets, no loss). Every call into each gateway (handle_datagram, \
             handle_timeout, poll_transmit, poll_event) is timed; a gateway's rate is the \
             messages the game server received over that gateway's own time ({:.1} s of \
             rounds after a {:.1} s warm-up), i.e. messages per second per gateway core \
             without the socket system calls. The last row is the whole pipeline's rate on \
             one core. T is the trunk's hold period. The last two rows run the gateway \
             processes themselves (`run::Runner`, each on its own thread with its sockets, \
             system calls included) over loopback UDP, the players (4 source addresses) and \
             the game server as thinwire hosts on two more threads, the players paced at two \
             offered loads below saturation (the cost per message falls as load rises: more \
             datagrams per wake-up): messages relayed per second of each gateway thread's CPU \
             time (CLOCK_THREAD_CPUTIME_ID), T = 10 ms, encrypted.",
            ctx.gateway_players,
            ROUND.as_millis(),
            ctx.seconds.as_secs_f64(),
            ctx.warmup.as_secs_f64()
        ),
        rows,
    }
}
