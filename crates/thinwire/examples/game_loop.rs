//! The blocking `Host` in a plain game loop: a 30 Hz server and a 60 Hz client on loopback,
//! no async runtime. The client moves its avatar every frame (LatestReliable, keyed by entity)
//! and fires now and then (ReliableUnordered); the server applies the moves and sends the world
//! state back every tick (UnreliableSequenced snapshots).
//!
//! ```text
//! cargo run -p thinwire --example game_loop -- 5     # run for 5 seconds
//! ```

use std::thread;
use std::time::{Duration, Instant};

use thinwire::{ChannelKind, Config, Host, HostEvent, SendMode};

/// 0: moves, 1: shots, 2: snapshots.
const CHANNELS: [ChannelKind; 3] = [
    ChannelKind::LatestReliable,
    ChannelKind::ReliableUnordered,
    ChannelKind::UnreliableSequenced,
];

fn server(
    mut host: Host,
    run_for: Duration,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let tick = Duration::from_secs(1) / 30;
    let end = Instant::now() + run_for + Duration::from_secs(1);
    let mut players = Vec::new();
    let (mut x, mut y, mut shots) = (0i32, 0i32, 0u32);
    let mut next_tick = Instant::now();
    while Instant::now() < end {
        // handle the network until the next tick is due
        while let Some(event) = host.service(next_tick.saturating_duration_since(Instant::now()))? {
            match event {
                HostEvent::Connected { conn, remote, .. } => {
                    println!("server: player {conn} from {remote}");
                    players.push(conn);
                }
                HostEvent::Message { message, .. }
                    if message.channel == 0 && message.data.len() >= 8 =>
                {
                    x = i32::from_be_bytes(message.data[..4].try_into()?);
                    y = i32::from_be_bytes(message.data[4..8].try_into()?);
                }
                HostEvent::Message { message, .. } if message.channel == 1 => shots += 1,
                HostEvent::Message { .. } => {}
                HostEvent::Disconnected { conn, reason } => {
                    println!("server: player {conn} left ({reason}); saw {shots} shots, last position ({x}, {y})");
                    players.retain(|p| *p != conn);
                }
            }
        }
        // tick: send the world state to everyone
        let mut snapshot = Vec::with_capacity(12);
        snapshot.extend_from_slice(&x.to_be_bytes());
        snapshot.extend_from_slice(&y.to_be_bytes());
        snapshot.extend_from_slice(&shots.to_be_bytes());
        for p in &players {
            let _ = host.send(*p, 2, snapshot.clone(), SendMode::Plain);
        }
        host.flush()?;
        next_tick += tick;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let run_for = Duration::from_secs(seconds);
    let server_host = Host::bind("127.0.0.1:0".parse()?, Config::server())?;
    let addr = server_host.local_addr();
    let key = server_host.public_key().ok_or("a server has a key")?;
    let server_thread = thread::spawn(move || server(server_host, run_for));

    let mut host = Host::bind("127.0.0.1:0".parse()?, Config::client())?;
    let conn = host.connect(addr, key, &CHANNELS)?;
    let frame = Duration::from_secs(1) / 60;
    let start = Instant::now();
    let (mut frames, mut snapshots, mut connected) = (0u64, 0u64, false);
    let mut next_frame = Instant::now();
    while start.elapsed() < run_for {
        while let Some(event) =
            host.service(next_frame.saturating_duration_since(Instant::now()))?
        {
            match event {
                HostEvent::Connected { .. } => connected = true,
                HostEvent::Message { message, .. } if message.channel == 2 => snapshots += 1,
                HostEvent::Message { .. } => {}
                HostEvent::Disconnected { reason, .. } => return Err(reason.into()),
            }
        }
        // one frame of game logic: walk in a circle, fire every half second
        let t = start.elapsed().as_secs_f64();
        let mut pos = Vec::with_capacity(8);
        pos.extend_from_slice(&((t.cos() * 100.0) as i32).to_be_bytes());
        pos.extend_from_slice(&((t.sin() * 100.0) as i32).to_be_bytes());
        host.send(conn, 0, pos, SendMode::Latest { key: 1 })?;
        if frames % 30 == 0 {
            host.send(conn, 1, &b"fire"[..], SendMode::Plain)?;
        }
        host.flush()?;
        frames += 1;
        next_frame += frame;
    }
    let stats = host.connection_stats(conn);
    host.close(conn, 0, b"quit");
    while host.connection_count() > 0 {
        host.service(Duration::from_millis(10))?;
    }
    println!(
        "client: connected {connected}, {frames} frames, {snapshots} snapshots received, srtt {:?}, wake-ups {}",
        stats.map(|s| s.path.srtt),
        host.stats().io.wakeups
    );
    server_thread
        .join()
        .map_err(|_| "server thread panicked")??;
    Ok(())
}
