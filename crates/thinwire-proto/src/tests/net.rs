//! A small network of one server and several client endpoints, each with its own address, in
//! simulated time: datagrams are delivered at once, time advances in 10 ms steps. For the
//! tests that need more than the two endpoints of `testing::Pair` (many sources, many
//! connections).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::{
    ChannelKind, ConnectionHandle, DisconnectReason, Endpoint, EndpointConfig, Event, ServerConfig,
};

/// One server, several clients.
pub(super) struct Net {
    pub(super) now: Instant,
    pub(super) server: Endpoint,
    pub(super) server_addr: SocketAddr,
    pub(super) clients: Vec<(SocketAddr, Endpoint)>,
    /// Each client's events, in order.
    pub(super) events: Vec<Vec<(ConnectionHandle, Event)>>,
    /// The server's events, in order.
    pub(super) server_events: Vec<(ConnectionHandle, Event)>,
}

/// Everything `ep` wants to send now, with destinations.
pub(super) fn drain(ep: &mut Endpoint, now: Instant) -> Vec<(SocketAddr, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while let Some(t) = ep.poll_transmit(now, &mut buf) {
        out.push((t.destination, buf[..t.size].to_vec()));
    }
    out
}

impl Net {
    /// Endpoints with default configurations (seeded) and the server configuration `server`.
    pub(super) fn new(server: ServerConfig, clients: &[SocketAddr]) -> Self {
        let config = EndpointConfig::new([7; 32]);
        Self::with_configs((config.clone(), server), config, clients)
    }

    /// The server with `server` (its endpoint configuration and server configuration), each
    /// client with `client` (its seed changed per client).
    pub(super) fn with_configs(
        server: (EndpointConfig, ServerConfig),
        client: EndpointConfig,
        clients: &[SocketAddr],
    ) -> Self {
        let now = Instant::now();
        let server = Endpoint::new(server.0, Some(server.1), now).expect("server");
        let clients: Vec<(SocketAddr, Endpoint)> = clients
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let mut config = client.clone();
                config.rng_seed[0] = config.rng_seed[0].wrapping_add(1 + i as u8);
                config.rng_seed[1] = config.rng_seed[1].wrapping_add((i >> 8) as u8);
                let ep = Endpoint::new(config, None, now).expect("client");
                (*a, ep)
            })
            .collect();
        Self {
            now,
            server,
            server_addr: "192.0.2.1:4433".parse().expect("address"),
            events: vec![Vec::new(); clients.len()],
            server_events: Vec::new(),
            clients,
        }
    }

    /// Moves datagrams until nothing is sent, then advances time by 10 ms, up to `total`.
    pub(super) fn run(&mut self, total: Duration) {
        let end = self.now + total;
        while self.now < end {
            self.deliver();
            self.advance(Duration::from_millis(10));
            self.collect_events();
        }
    }

    /// Advances time by `d`, runs every endpoint's timers, then moves datagrams
    /// ([`exchange`](Self::exchange)), leaving the events with the endpoints.
    pub(super) fn step(&mut self, d: Duration) {
        self.advance(d);
        self.exchange();
    }

    /// Advances time by `d` and runs every endpoint's timers.
    fn advance(&mut self, d: Duration) {
        self.now += d;
        self.server.handle_timeout(self.now);
        for (_, ep) in &mut self.clients {
            ep.handle_timeout(self.now);
        }
    }

    /// Moves datagrams at the current time until nothing more is sent (20 rounds at most),
    /// then collects the events.
    pub(super) fn deliver(&mut self) {
        self.exchange();
        self.collect_events();
    }

    /// Moves datagrams at the current time until nothing more is sent (20 rounds at most),
    /// leaving the events with the endpoints.
    pub(super) fn exchange(&mut self) {
        for _ in 0..20 {
            let mut moved = false;
            for (addr, ep) in &mut self.clients {
                for (to, d) in drain(ep, self.now) {
                    if to == self.server_addr {
                        self.server.handle_datagram(self.now, *addr, &d);
                        moved = true;
                    }
                }
            }
            for (to, d) in drain(&mut self.server, self.now) {
                if let Some((_, ep)) = self.clients.iter_mut().find(|(a, _)| *a == to) {
                    ep.handle_datagram(self.now, self.server_addr, &d);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
    }

    fn collect_events(&mut self) {
        for (i, (_, ep)) in self.clients.iter_mut().enumerate() {
            while let Some(e) = ep.poll_event() {
                self.events[i].push(e);
            }
        }
        while let Some(e) = self.server.poll_event() {
            self.server_events.push(e);
        }
    }

    /// Client `client` opens a connection with one reliable-ordered channel.
    pub(super) fn connect(&mut self, client: usize) -> ConnectionHandle {
        self.connect_with(client, &[ChannelKind::ReliableOrdered])
    }

    /// Client `client` opens a connection with `channels`.
    pub(super) fn connect_with(
        &mut self,
        client: usize,
        channels: &[ChannelKind],
    ) -> ConnectionHandle {
        let key = self.server.public_key().expect("server");
        let (now, to) = (self.now, self.server_addr);
        self.clients[client]
            .1
            .connect(now, to, &key, channels)
            .expect("connect")
    }

    /// The outcome of connection `h` of client `client`: `Ok` once connected, `Err` once
    /// disconnected.
    pub(super) fn outcome(
        &self,
        client: usize,
        h: ConnectionHandle,
    ) -> Option<Result<(), DisconnectReason>> {
        let mut out = None;
        for (conn, e) in &self.events[client] {
            if *conn == h {
                match e {
                    Event::Connected { .. } => out = Some(Ok(())),
                    Event::Disconnected { reason } => out = Some(Err(reason.clone())),
                    Event::Message(_) => {}
                }
            }
        }
        out
    }
}
