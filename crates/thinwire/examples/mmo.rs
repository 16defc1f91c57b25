//! A small MMO zone on loopback with the async API: one server and four bots for about five
//! seconds, then each bot prints what arrived. The server's end loses 5% of its datagrams each
//! way and adds 30 ms each way (fault injection on the server's end only: it covers every
//! connection, and no bot's end adds more).
//!
//! Channels, fixed when connecting (the guide, `docs/GUIDE.md`, explains each choice):
//! - 0 `POSITIONS`, LatestReliable: each bot's position, keyed by its entity id; the server
//!   sends the newest position of every other entity five times a second. An old position is
//!   never resent, and the last one (where an entity stopped) always arrives.
//! - 1 `COMBAT`, ReliableUnordered: attacks, relayed to their target. None may be lost, none
//!   should wait behind another one that was.
//! - 2 `CHAT`, ReliableOrdered: chat and trades, in order (the server relays chat to everyone).
//! - 3 `WORLD`, with a deadline default on the server's side: every world event (a boss spawns,
//!   the zone closes) reaches every player within 500 ms, as soon as it can be rebuilt
//!   (deadline messages skip the channel's order). The first deadline send of a process solves the policy for its target (50-300 ms in a release build on a busy
//!   2-core machine, about 500 ms in a debug one), so the first bot's message may come late.
//!
//! Run it with `cargo run -p thinwire --example mmo`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use thinwire::{
    ChannelKind, Config, Connection, DeadlineOptions, Endpoint, FaultConfig, PublicKey, SendMode,
};
use tokio::time::sleep;

const POSITIONS: u8 = 0;
const COMBAT: u8 = 1;
const CHAT: u8 = 2;
const WORLD: u8 = 3;
const CHANNELS: [ChannelKind; 4] = [
    ChannelKind::LatestReliable,    // POSITIONS
    ChannelKind::ReliableUnordered, // COMBAT
    ChannelKind::ReliableOrdered,   // CHAT
    ChannelKind::ReliableOrdered,   // WORLD
];
const BOTS: u64 = 4;
const STEPS: u16 = 15; // steps a bot walks, one every 200 ms, before it stops

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The server's zone: the newest position of every entity, and each entity's connection.
#[derive(Default)]
struct Zone {
    positions: HashMap<u64, Bytes>,
    players: HashMap<u64, Connection>,
}

#[tokio::main]
async fn main() -> Res<()> {
    let faults = FaultConfig::new()
        .drop_rate(0.05)
        .delay(Duration::from_millis(30))
        .seed(7);
    let server = Endpoint::bind("127.0.0.1:0".parse()?, Config::server().with_faults(faults))?;
    let addr = server.local_addr();
    let key = server.public_key().ok_or("not a server")?;
    let zone = Arc::new(Mutex::new(Zone::default()));
    tokio::spawn(fan_out(zone.clone()));
    let server_for_accept = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = server_for_accept.accept().await {
            tokio::spawn(serve(conn, zone.clone()));
        }
    });
    let bots: Vec<_> = (1..=BOTS)
        .map(|id| tokio::spawn(bot(id, addr, key)))
        .collect();
    for b in bots {
        b.await??;
    }
    server.close(0, b"zone closed");
    server.wait_idle().await;
    Ok(())
}

/// One player's connection on the server.
async fn serve(conn: Connection, zone: Arc<Mutex<Zone>>) -> Res<()> {
    // every plain send on WORLD is now a deadline message: within 500 ms, 999 times in 1000
    let world = DeadlineOptions::new(Duration::from_millis(500), 0.999);
    conn.set_channel_deadline(WORLD, Some(world))?;
    conn.send(WORLD, &b"a world boss spawns in 10 s"[..], SendMode::Plain)?;
    while let Ok(msg) = conn.recv().await {
        let mut zone = zone.lock().expect("zone lock");
        match (msg.channel, msg.key) {
            (POSITIONS, Some(entity)) => {
                zone.positions.insert(entity, msg.data);
                zone.players.insert(entity, conn.clone());
            }
            (COMBAT, _) => {
                // an attack names its target entity: relay it there
                let target = msg.data.first().map(|t| u64::from(*t));
                if let Some(to) = target.and_then(|t| zone.players.get(&t)) {
                    let _ = to.send(COMBAT, msg.data.clone(), SendMode::Plain);
                }
            }
            (CHAT, _) => {
                for player in zone.players.values() {
                    let _ = player.send(CHAT, msg.data.clone(), SendMode::Plain);
                }
            }
            _ => {}
        }
    }
    let mut zone = zone.lock().expect("zone lock");
    zone.players.retain(|_, c| c.handle() != conn.handle());
    Ok(())
}

/// Five times a second, the newest position of every entity to every other player.
async fn fan_out(zone: Arc<Mutex<Zone>>) {
    loop {
        sleep(Duration::from_millis(200)).await;
        let zone = zone.lock().expect("zone lock");
        for (me, conn) in &zone.players {
            for (entity, pos) in zone.positions.iter().filter(|(e, _)| *e != me) {
                let _ = conn.send(POSITIONS, pos.clone(), SendMode::Latest { key: *entity });
            }
        }
    }
}

/// A bot's position after `step` steps: x = 100 * id + step, y = step.
fn position(id: u64, step: u16) -> Vec<u8> {
    [(id as u16 * 100 + step).to_be_bytes(), step.to_be_bytes()].concat()
}

async fn bot(id: u64, server: SocketAddr, key: PublicKey) -> Res<()> {
    let endpoint = Endpoint::bind("127.0.0.1:0".parse()?, Config::client())?;
    let conn = endpoint.connect(server, key, &CHANNELS).await?;
    let reader = tokio::spawn(read_all(id, conn.clone()));
    for step in 1..=STEPS {
        conn.send(POSITIONS, position(id, step), SendMode::Latest { key: id })?;
        if step % 5 == 0 {
            let next_bot = (id % BOTS + 1) as u8; // the target
            conn.send(COMBAT, vec![next_bot, id as u8], SendMode::Plain)?;
        }
        if step == 3 {
            let line = format!("bot {id}: looking for group");
            conn.send(CHAT, line.into_bytes(), SendMode::Plain)?;
        }
        sleep(Duration::from_millis(200)).await;
    }
    sleep(Duration::from_millis(1500)).await; // stand still: the last positions settle
    let stats = conn.stats();
    conn.close(0, b"logout");
    let seen = reader.await?;
    let stopped = (1..=BOTS)
        .filter(|&e| e != id)
        .filter(|e| seen.last_position.get(e).map(|p| &p[..]) == Some(&position(*e, STEPS)[..]));
    println!(
        "bot {id}: {} position updates; where the other {} bots stopped: {} of them right; \
         {} attacks taken; {} chat lines",
        seen.count[POSITIONS as usize],
        BOTS - 1,
        stopped.count(),
        seen.count[COMBAT as usize],
        seen.count[CHAT as usize],
    );
    if let Some(s) = stats {
        println!(
            "bot {id}: rtt {:?}, packets lost {}, retransmitted {}, repair copies {}",
            s.path.srtt, s.recovery.packets_lost, s.frames.retransmitted, s.recovery.repair_copies
        );
    }
    Ok(())
}

/// What one bot received.
#[derive(Default)]
struct Seen {
    count: [usize; 4],
    last_position: HashMap<u64, Bytes>,
}

async fn read_all(id: u64, conn: Connection) -> Seen {
    let mut seen = Seen::default();
    // messages already received are returned before the error that says why it ended
    while let Ok(msg) = conn.recv().await {
        seen.count[usize::from(msg.channel)] += 1;
        if let Some(status) = msg.deadline {
            let text = String::from_utf8_lossy(&msg.data);
            println!(
                "bot {id}: \"{text}\" after {:?}, late: {}",
                status.age, status.late
            );
        }
        if let (POSITIONS, Some(entity)) = (msg.channel, msg.key) {
            seen.last_position.insert(entity, msg.data);
        }
    }
    seen
}
