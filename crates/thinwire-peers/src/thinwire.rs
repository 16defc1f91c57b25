//! thinwire through its blocking [`Host`]: one socket, the calling thread drives it with
//! `service` / `send` / `flush`, the same shape as ENet's host. The caller builds the
//! [`Config`] (the bench lifts the per-source limits of its loopback server; the emulator
//! maps a lab configuration); the channels are the spec's classes as they are.
//!
//! Which of thinwire's send calls a message takes is decided once ([`send_with`]), for the
//! blocking host here and for an async [`Connection`] ([`send_on_connection`], the emulator's
//! gateway peer): deadline delivery when the message carries deadline options (one too large
//! for deadline shards goes as an ordinary message), the newest value for its key on a
//! latest-value channel, a plain send otherwise.
//!
//! Every send hands thinwire a copy of the message in a buffer of its own, as ENet's packets,
//! KCP's segments and GNS's messages are copies, and as a game that builds each message pays
//! for one: sharing the caller's buffer (a `Bytes` clone, no allocation) would leave out of
//! thinwire's CPU per message an allocation the other stacks make.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use thinwire::proto::SendError;
use thinwire::{
    ChannelKind, Config, Connection, ConnectionHandle, ConnectionStats, Host, HostEvent, PublicKey,
    SendMode,
};

use crate::{tag_of, v4, Event, HostSpec, Outgoing, PeerHost, ServerInfo};

/// Most queued events handed out by one `service` call.
const DRAIN: usize = 4096;

/// A thinwire host.
#[derive(Debug)]
pub struct ThinwireHost {
    host: Host,
    channels: Vec<ChannelKind>,
}

fn push(ev: HostEvent, out: &mut Vec<Event<ConnectionHandle>>) {
    out.push(match ev {
        HostEvent::Connected { conn, .. } => Event::Connected(conn),
        HostEvent::Message { conn, message } => Event::Message {
            conn,
            channel: message.channel,
            len: message.data.len(),
            tag: tag_of(&message.data),
        },
        HostEvent::Disconnected { conn, .. } => Event::Disconnected(conn),
    });
}

impl PeerHost for ThinwireHost {
    type Conn = ConnectionHandle;
    /// A server's config (with its key) for a server, a client's for a client.
    type Settings = Config;

    fn open(spec: &HostSpec, config: &Config) -> Result<Self, String> {
        let host = Host::bind(SocketAddr::V4(spec.bind), config.clone())
            .map_err(|e| format!("thinwire bind: {e}"))?;
        Ok(Self {
            host,
            channels: spec.channels.clone(),
        })
    }

    fn info(&self) -> ServerInfo {
        ServerInfo {
            addr: v4(self.host.local_addr()),
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
            .connect(SocketAddr::V4(to.addr), key, &self.channels)
            .map_err(|e| format!("thinwire connect: {e}"))
    }

    fn remote(&self, conn: ConnectionHandle) -> Option<SocketAddr> {
        self.host.remote_address(conn)
    }

    fn service(
        &mut self,
        timeout: Duration,
        out: &mut Vec<Event<ConnectionHandle>>,
    ) -> Result<(), String> {
        let e = |e: std::io::Error| format!("thinwire service: {e}");
        if let Some(ev) = self.host.service(timeout).map_err(e)? {
            push(ev, out);
            // hand out what is already queued, without more I/O
            for _ in 0..DRAIN {
                if self.host.pending_events() == 0 {
                    break;
                }
                match self.host.service(Duration::ZERO).map_err(e)? {
                    Some(ev) => push(ev, out),
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn send(
        &mut self,
        conn: ConnectionHandle,
        channel: u8,
        msg: Outgoing<'_>,
    ) -> Result<bool, String> {
        let kind = self.channels.get(usize::from(channel)).copied();
        send_with(kind, &msg, |call| {
            queue_on_host(&mut self.host, conn, channel, msg.data, call)
        })
    }

    fn backlogged(&self, _conn: ConnectionHandle) -> bool {
        // thinwire says so itself: `send` refuses with BufferFull (its send window)
        false
    }

    fn flush(&mut self) {
        let _ = self.host.flush();
    }

    fn stats(&self, conn: ConnectionHandle) -> Option<ConnectionStats> {
        self.host.connection_stats(conn)
    }
}

/// [`PeerHost::send`]'s rule on an async connection whose `channel` is of class `kind`:
/// `Ok(false)` when thinwire refused the message for now (its send buffer is full).
pub fn send_on_connection(
    conn: &Connection,
    kind: Option<ChannelKind>,
    channel: u8,
    msg: Outgoing<'_>,
) -> Result<bool, String> {
    send_with(kind, &msg, |call| {
        queue_on_connection(conn, channel, msg.data, call)
    })
}

/// Sends `msg`, on a channel of class `kind`, through `queue`: with deadline delivery when it
/// carries deadline options (a message too large for deadline shards goes as an ordinary
/// one), else the newest value for its key on a latest-value channel, else plainly.
/// `Ok(false)`: the send buffer is full.
fn send_with(
    kind: Option<ChannelKind>,
    msg: &Outgoing<'_>,
    mut queue: impl FnMut(SendMode) -> Result<(), SendError>,
) -> Result<bool, String> {
    if let Some(opts) = msg.deadline {
        match queue(SendMode::Deadline(opts)) {
            Err(SendError::MessageTooLarge { .. }) => {}
            r => return verdict(r),
        }
    }
    let call = if kind == Some(ChannelKind::LatestReliable) {
        SendMode::Latest { key: msg.key }
    } else {
        SendMode::Plain
    };
    verdict(queue(call))
}

fn verdict(r: Result<(), SendError>) -> Result<bool, String> {
    match r {
        Ok(()) => Ok(true),
        Err(SendError::BufferFull) => Ok(false),
        Err(e) => Err(format!("thinwire send: {e}")),
    }
}

/// A send in `mode` on connection `conn` of a blocking host, of a copy of `data`.
fn queue_on_host(
    host: &mut Host,
    conn: ConnectionHandle,
    channel: u8,
    data: &Bytes,
    mode: SendMode,
) -> Result<(), SendError> {
    host.send(conn, channel, Bytes::copy_from_slice(data), mode)
}

/// A send in `mode` on an async connection, of a copy of `data` (a connection already gone
/// reads as closed).
fn queue_on_connection(
    conn: &Connection,
    channel: u8,
    data: &Bytes,
    mode: SendMode,
) -> Result<(), SendError> {
    conn.send(channel, Bytes::copy_from_slice(data), mode)
        .map_err(|e| match e {
            thinwire::SendError::Rejected(e) => e,
            thinwire::SendError::Closed(_) => SendError::ConnectionClosed,
        })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use thinwire::DeadlineOptions;

    /// The calls `send_with` makes for `msg` on a channel of `kind` when each call is
    /// answered by `answer`, and its verdict.
    fn calls(
        kind: ChannelKind,
        msg: &Outgoing<'_>,
        answer: impl Fn(&SendMode) -> Result<(), SendError>,
    ) -> (Vec<String>, Result<bool, String>) {
        let mut made = Vec::new();
        let verdict = send_with(Some(kind), msg, |call| {
            made.push(
                format!("{call:?}")
                    .split(['(', ' '])
                    .next()
                    .unwrap_or("")
                    .to_owned(),
            );
            answer(&call)
        });
        (made, verdict)
    }

    #[test]
    fn each_message_takes_the_call_its_channel_and_options_ask_for() {
        let data = Bytes::from_static(b"12345678");
        let plain = Outgoing::new(&data);
        let keyed = Outgoing { key: 4, ..plain };
        let deadline = Outgoing {
            deadline: Some(DeadlineOptions::new(Duration::from_millis(150), 0.99)),
            ..keyed
        };
        let ok = |_: &SendMode| Ok(());
        assert_eq!(
            calls(ChannelKind::ReliableOrdered, &plain, ok),
            (vec!["Plain".into()], Ok(true))
        );
        let (made, _) = calls(ChannelKind::LatestReliable, &keyed, ok);
        assert_eq!(made, ["Latest"]);
        let (made, _) = calls(ChannelKind::LatestReliable, &deadline, ok);
        assert_eq!(made, ["Deadline"]);
        // too large for deadline shards: an ordinary message of its channel
        let too_large = |c: &SendMode| match c {
            SendMode::Deadline(_) => Err(SendError::MessageTooLarge { size: 9, max: 8 }),
            _ => Ok(()),
        };
        let (made, verdict) = calls(ChannelKind::LatestReliable, &deadline, too_large);
        assert_eq!(
            (made, verdict),
            (vec!["Deadline".into(), "Latest".into()], Ok(true))
        );
        // a full buffer refuses for now, without a second try; other refusals are errors
        let full = |_: &SendMode| Err(SendError::BufferFull);
        let (made, verdict) = calls(ChannelKind::ReliableOrdered, &deadline, full);
        assert_eq!((made, verdict), (vec!["Deadline".into()], Ok(false)));
        let closed = |_: &SendMode| Err(SendError::ConnectionClosed);
        assert!(calls(ChannelKind::ReliableOrdered, &plain, closed)
            .1
            .is_err());
    }
}
