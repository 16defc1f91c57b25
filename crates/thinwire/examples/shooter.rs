//! A small shooter on loopback with the blocking `Host`: a 30 Hz server and three clients (one
//! thread each) play one 3-second round, then print what arrived. Every client's end loses 2%
//! of its datagrams each way and adds 20 ms each way (fault injection on the client's end only,
//! so each datagram is dropped at most once).
//!
//! Channels, fixed when connecting (the guide, `docs/GUIDE.md`, explains each choice):
//! - 0 `INPUT`, UnreliableSequenced: the client's input every frame; a lost one is replaced by
//!   the next, 33 ms later, and an old one must never undo a newer one.
//! - 1 `SNAPSHOT`, UnreliableSequenced: the server's world state every tick, for the same reasons.
//! - 2 `EVENTS`, ReliableUnordered: shots (client to server), hits (server to client). None may
//!   be lost, none should wait behind another one that was.
//! - 3 `MATCH`, ReliableOrdered: chat and match flow, in order; the round's start and result are
//!   deadline messages (every player has them within 300 ms), which skip the channel's order.
//!
//! The first deadline send of a process solves the policy for its target (50-300 ms in a
//! release build on a busy 2-core machine, about 500 ms in a debug one): one start may be late.
//!
//! Run it with `cargo run -p thinwire --example shooter`.

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use thinwire::{
    ChannelKind, Config, ConnectionHandle, DeadlineOptions, FaultConfig, Host, HostEvent,
    PublicKey, SendMode,
};

const INPUT: u8 = 0;
const SNAPSHOT: u8 = 1;
const EVENTS: u8 = 2;
const MATCH: u8 = 3;
const CHANNELS: [ChannelKind; 4] = [
    ChannelKind::UnreliableSequenced, // INPUT
    ChannelKind::UnreliableSequenced, // SNAPSHOT
    ChannelKind::ReliableUnordered,   // EVENTS
    ChannelKind::ReliableOrdered,     // MATCH
];
const PLAYERS: usize = 3;
const TICK: Duration = Duration::from_millis(33);
const ROUND: Duration = Duration::from_secs(3);

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() -> Res<()> {
    let server = Host::bind("127.0.0.1:0".parse()?, Config::server())?;
    let addr = server.local_addr();
    let key = server.public_key().ok_or("not a server")?;
    let clients: Vec<_> = (1..=PLAYERS as u64)
        .map(|id| thread::spawn(move || client(id, addr, key)))
        .collect();
    run_server(server)?;
    for c in clients {
        c.join().map_err(|_| "a client panicked")??;
    }
    Ok(())
}

fn run_server(mut host: Host) -> Res<()> {
    // start and result of a round must reach every player within 300 ms, 999 times in 1000
    let on_time = SendMode::Deadline(DeadlineOptions::new(Duration::from_millis(300), 0.999));
    // each player: connection and position (x, y)
    let mut players: Vec<(ConnectionHandle, [u8; 4])> = Vec::new();
    let (mut tick, mut shots, mut round_end) = (0u32, 0u32, None);
    let mut next = Instant::now();
    loop {
        while let Some(event) = host.service(next.saturating_duration_since(Instant::now()))? {
            match event {
                HostEvent::Connected { conn, .. } => players.push((conn, [0; 4])),
                HostEvent::Message { conn, message } => {
                    let Some(me) = players.iter().position(|p| p.0 == conn) else {
                        continue;
                    };
                    if message.channel == INPUT && message.data.len() >= 4 {
                        players[me].1.copy_from_slice(&message.data[..4]);
                    } else if message.channel == EVENTS {
                        // every other shot hits the next player
                        shots += 1;
                        if shots % 2 == 0 {
                            let victim = players[(me + 1) % players.len()].0;
                            host.send(conn, EVENTS, &b"hit"[..], SendMode::Plain)?;
                            host.send(victim, EVENTS, &b"hit by"[..], SendMode::Plain)?;
                        }
                    }
                }
                HostEvent::Disconnected { conn, .. } => players.retain(|p| p.0 != conn),
            }
        }
        if round_end.is_none() && players.len() == PLAYERS {
            round_end = Some(Instant::now() + ROUND);
            for (conn, _) in &players {
                host.send(*conn, MATCH, &b"round 1: go"[..], on_time)?;
            }
        }
        // the world state, every tick, to everyone: tick number, then every position
        tick += 1;
        let mut snapshot = tick.to_be_bytes().to_vec();
        snapshot.extend(players.iter().flat_map(|p| p.1));
        for (conn, _) in &players {
            host.send(*conn, SNAPSHOT, snapshot.clone(), SendMode::Plain)?;
        }
        if round_end.is_some_and(|end| Instant::now() >= end) {
            break;
        }
        host.flush()?;
        next += TICK;
    }
    for (conn, _) in &players {
        host.send(*conn, MATCH, &b"round over: blue wins"[..], on_time)?;
    }
    // let the result and the last hits arrive, then end the match
    let linger = Instant::now() + Duration::from_millis(500);
    while Instant::now() < linger {
        host.service(linger.saturating_duration_since(Instant::now()))?;
    }
    for (conn, _) in &players {
        host.close(*conn, 0, b"match over");
    }
    while host.connection_count() > 0 {
        host.service(Duration::from_millis(10))?;
    }
    println!("server: {tick} ticks, {shots} shots");
    Ok(())
}

fn client(id: u64, server: SocketAddr, key: PublicKey) -> Res<()> {
    // faults on this end only: the server's end is clean, so the loss is 2% each way, not 4%
    let faults = FaultConfig::new()
        .drop_rate(0.02)
        .delay(Duration::from_millis(20))
        .seed(id);
    let mut host = Host::bind("127.0.0.1:0".parse()?, Config::client().with_faults(faults))?;
    let conn = host.connect(server, key, &CHANNELS)?;
    let (mut frame, mut snapshots, mut ticks, mut hits, mut hit_by) = (0u32, 0u32, None, 0, 0);
    let mut stats: Option<thinwire::ConnectionStats> = None;
    let mut next = Instant::now();
    loop {
        while let Some(event) = host.service(next.saturating_duration_since(Instant::now()))? {
            let message = match event {
                HostEvent::Message { message, .. } => message,
                HostEvent::Connected { .. } => continue,
                HostEvent::Disconnected { reason, .. } => {
                    let (first, last) = ticks.unwrap_or((0, 0));
                    println!(
                        "client {id}: {snapshots} of {} snapshots (a lost one is not resent, the \
                         next replaces it), {hits} hits, hit {hit_by} times; ended: {reason}",
                        last + 1 - first,
                    );
                    if let Some(s) = &stats {
                        let (rtt, lost) = (s.path.srtt, s.recovery.packets_lost);
                        let copies = s.recovery.repair_copies;
                        println!("client {id}: rtt {rtt:?}, {lost} lost, {copies} repair copies");
                    }
                    return Ok(());
                }
            };
            let text = String::from_utf8_lossy(&message.data);
            match message.channel {
                SNAPSHOT if message.data.len() >= 4 => {
                    let tick = u32::from_be_bytes(message.data[..4].try_into()?);
                    snapshots += 1;
                    ticks = Some((ticks.map_or(tick, |t: (u32, u32)| t.0), tick));
                }
                EVENTS if text == "hit" => hits += 1,
                EVENTS => hit_by += 1,
                MATCH => match message.deadline {
                    Some(d) => println!(
                        "client {id}: \"{text}\" after {:?} (deadline {:?}, late: {})",
                        d.age, d.deadline, d.late
                    ),
                    None => println!("client {id}: \"{text}\""),
                },
                _ => {}
            }
        }
        // one frame: walk along a line, fire every 15th frame
        frame += 1;
        let (x, y) = (
            (id as u16 * 100).to_be_bytes(),
            (frame as u16).to_be_bytes(),
        );
        let input = [x, y].concat();
        queue(&mut host, conn, INPUT, input)?;
        if frame % 15 == 0 {
            queue(&mut host, conn, EVENTS, b"fire".to_vec())?;
        }
        host.flush()?;
        stats = host.connection_stats(conn).or(stats);
        next += TICK;
    }
}

/// Queues a plain message; a closing connection is no error (`Disconnected` follows).
fn queue(host: &mut Host, conn: ConnectionHandle, channel: u8, data: Vec<u8>) -> Res<()> {
    match host.send(conn, channel, data, SendMode::Plain) {
        Err(thinwire::proto::SendError::ConnectionClosed) => Ok(()),
        other => Ok(other?),
    }
}
