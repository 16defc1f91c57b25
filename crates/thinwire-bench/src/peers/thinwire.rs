//! thinwire through its blocking [`thinwire::Host`]: one socket, the calling thread drives
//! it with `service` / `send` / `flush`, the same shape as ENet's host. Channel 0 is
//! `ReliableOrdered` (like ENet's reliable packets and KCP), channel 1 `Unreliable`.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use bytes::Bytes;
use thinwire::proto::SendError;
use thinwire::{
    ChannelKind, Config, ConnectionHandle, Host, HostEvent, PublicKey, SendMode, ServerConfig,
};

use crate::host::{tag_of, BenchHost, Ev, HostOptions, ServerInfo};

/// The channels of every bench connection.
const CHANNELS: [ChannelKind; 2] = [ChannelKind::ReliableOrdered, ChannelKind::Unreliable];

/// Most queued events handed out by one `service` call.
const DRAIN: usize = 4096;

/// A thinwire host.
pub(crate) struct TwHost {
    host: Host,
}

fn config(server: Option<usize>, opts: HostOptions) -> Config {
    let config = match server {
        // Every client of the bench comes from 127.0.0.1, which a server counts as one
        // source: the per-source limits meant for the Internet are lifted, and the
        // connection limit fits the run.
        Some(capacity) => Config::server().with_server(ServerConfig {
            max_connections: capacity.max(16),
            max_connections_per_source: usize::MAX,
            handshakes_per_second_per_source: 1_000_000,
            stateless_replies_per_second: 1_000_000,
            max_stateless_queue: 65_536,
            ..ServerConfig::default()
        }),
        None => Config::client(),
    };
    if opts.cleartext {
        config.insecure_cleartext()
    } else {
        config
    }
}

fn bind(config: Config) -> Result<TwHost, String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let host = Host::bind(addr, config).map_err(|e| format!("thinwire bind: {e}"))?;
    Ok(TwHost { host })
}

impl TwHost {
    fn push(ev: HostEvent, out: &mut Vec<Ev<ConnectionHandle>>) {
        out.push(match ev {
            HostEvent::Connected { conn, .. } => Ev::Connected(conn),
            HostEvent::Message { conn, message } => Ev::Message {
                conn,
                reliable: message.channel == 0,
                len: message.data.len(),
                tag: tag_of(&message.data),
            },
            HostEvent::Disconnected { conn, .. } => Ev::Disconnected(conn),
        });
    }
}

impl BenchHost for TwHost {
    type Conn = ConnectionHandle;

    fn server(capacity: usize, opts: HostOptions) -> Result<Self, String> {
        bind(config(Some(capacity), opts))
    }

    fn client(_capacity: usize, opts: HostOptions) -> Result<Self, String> {
        bind(config(None, opts))
    }

    fn info(&self) -> ServerInfo {
        let addr = match self.host.local_addr() {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(a) => SocketAddrV4::new(Ipv4Addr::LOCALHOST, a.port()),
        };
        ServerInfo {
            addr,
            key: self.host.public_key().map(|k| k.to_string()),
        }
    }

    fn connect(&mut self, to: &ServerInfo) -> Result<ConnectionHandle, String> {
        let key: PublicKey = to
            .key
            .as_deref()
            .ok_or("a thinwire server has a key")?
            .parse()
            .map_err(|e| format!("server key: {e}"))?;
        self.host
            .connect(SocketAddr::V4(to.addr), key, &CHANNELS)
            .map_err(|e| format!("thinwire connect: {e}"))
    }

    fn service(
        &mut self,
        timeout: Duration,
        out: &mut Vec<Ev<ConnectionHandle>>,
    ) -> Result<(), String> {
        let e = |e: std::io::Error| format!("thinwire service: {e}");
        if let Some(ev) = self.host.service(timeout).map_err(e)? {
            Self::push(ev, out);
            // hand out what is already queued, without more I/O
            for _ in 0..DRAIN {
                if self.host.pending_events() == 0 {
                    break;
                }
                match self.host.service(Duration::ZERO).map_err(e)? {
                    Some(ev) => Self::push(ev, out),
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn send(
        &mut self,
        conn: ConnectionHandle,
        reliable: bool,
        data: &Bytes,
    ) -> Result<bool, String> {
        match self
            .host
            .send(conn, u8::from(!reliable), data.clone(), SendMode::Plain)
        {
            Ok(()) => Ok(true),
            Err(SendError::BufferFull) => Ok(false),
            Err(e) => Err(format!("thinwire send: {e}")),
        }
    }

    fn backlogged(&self, _conn: ConnectionHandle) -> bool {
        // thinwire says so itself: `send` refuses with BufferFull (its send window)
        false
    }

    fn flush(&mut self) {
        let _ = self.host.flush();
    }
}
