//! Connections by their peer: the peer's address and the connection id it chose. A Reset
//! names the connection this way (it carries the peer's id, not ours), and a repeated Connect
//! finds the connection its first copy made (`docs/PROTOCOL.md` §5.6, "Duplicate") by the
//! client's id.
//!
//! Memory: one 16-byte entry per connection (17 bytes with hashbrown's control byte), not the
//! 57 bytes a map keyed by the address and id itself would take. The key is a 64-bit hash of
//! both under a random key (SipHash, std's `RandomState`), which nobody outside can predict, so
//! an attacker cannot aim entries at one another's; a lookup is only a candidate, which the
//! endpoint checks against the connection's own address and id ([`Endpoint::by_peer`]).
//! Two peers whose keys collide (one chance in 2^64 per pair) share one entry: the later one
//! wins, and the other only loses what this index gives it (a Reset from its peer is not
//! believed, a repeated Connect is not answered: its idle timeout still ends it).

use std::collections::hash_map::{Entry, RandomState};
use std::hash::BuildHasher;
use std::net::SocketAddr;

use rustc_hash::FxHashMap;

use super::{ConnectionHandle, Endpoint};
use crate::wire::ConnectionId;

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct PeerIndex {
    /// Keys the hash of `(address, id)`.
    keys: RandomState,
    /// The keyed hashes are already uniform: FxHash only folds them into a bucket.
    map: FxHashMap<u64, ConnectionHandle>,
}

impl PeerIndex {
    fn key(&self, addr: SocketAddr, cid: ConnectionId) -> u64 {
        self.keys.hash_one((addr, cid))
    }

    /// Connection `h` is the one `(addr, cid)` names now.
    pub(super) fn insert(&mut self, addr: SocketAddr, cid: ConnectionId, h: ConnectionHandle) {
        let key = self.key(addr, cid);
        self.map.insert(key, h);
    }

    /// The connection that `(addr, cid)` may name: a candidate only (see the module
    /// documentation).
    fn candidate(&self, addr: SocketAddr, cid: ConnectionId) -> Option<ConnectionHandle> {
        self.map.get(&self.key(addr, cid)).copied()
    }

    /// Forgets that `(addr, cid)` names `h` (another connection's entry stays).
    pub(super) fn remove(&mut self, addr: SocketAddr, cid: ConnectionId, h: ConnectionHandle) {
        if let Entry::Occupied(e) = self.map.entry(self.key(addr, cid)) {
            if *e.get() == h {
                e.remove();
            }
        }
    }

    /// Entries held (tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

impl Endpoint {
    /// The connection whose peer is at `addr` and chose id `cid`, if there is one.
    pub(super) fn by_peer(&self, addr: SocketAddr, cid: ConnectionId) -> Option<ConnectionHandle> {
        let h = self.peers.candidate(addr, cid)?;
        let c = self.conns.get(h)?;
        (c.remote() == addr && c.remote_cid() == Some(cid)).then_some(h)
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};

    use crate::wire::LongPacket;
    use crate::{ChannelKind, Endpoint, EndpointConfig, Event, ServerConfig, ServerKey};

    fn drain(ep: &mut Endpoint, now: Instant) -> Vec<Vec<u8>> {
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(t) = ep.poll_transmit(now, &mut buf) {
            out.push(buf[..t.size].to_vec());
        }
        out
    }

    fn is_accept(d: &[u8]) -> bool {
        matches!(LongPacket::decode(d), Ok(LongPacket::Accept { .. }))
    }

    /// The server's Accept is lost; the client's repeated Connect finds the connection its
    /// first copy made (through the index, by the client's address and id) and draws the same
    /// Accept at once, without a second connection. Once the connection is gone, so is its
    /// entry.
    #[test]
    fn a_repeated_connect_finds_its_connection_and_a_closed_one_leaves_no_entry() {
        let now = Instant::now();
        let (client_addr, server_addr): (SocketAddr, SocketAddr) = (
            "198.51.100.10:5000".parse().expect("address"),
            "192.0.2.1:4433".parse().expect("address"),
        );
        let server_config = ServerConfig {
            key: Some(ServerKey::generate([42; 32])),
            ..ServerConfig::default()
        };
        let mut server =
            Endpoint::new(EndpointConfig::new([7; 32]), Some(server_config), now).expect("server");
        let mut client = Endpoint::new(EndpointConfig::new([9; 32]), None, now).expect("client");
        let key = server.public_key().expect("server key");
        let c = client
            .connect(now, server_addr, &key, &[ChannelKind::ReliableOrdered])
            .expect("connect");
        for d in drain(&mut client, now) {
            server.handle_datagram(now, client_addr, &d); // Hello
        }
        for d in drain(&mut server, now) {
            client.handle_datagram(now, server_addr, &d); // Challenge
        }
        let connect = drain(&mut client, now);
        assert_eq!(connect.len(), 1, "one Connect");
        server.handle_datagram(now, client_addr, &connect[0]);
        server.handle_timeout(now);
        let lost = drain(&mut server, now);
        assert!(lost.len() == 1 && is_accept(&lost[0]), "one Accept, lost");
        assert_eq!((server.connection_count(), server.peers.len()), (1, 1));

        let later = now + Duration::from_millis(300);
        server.handle_datagram(later, client_addr, &connect[0]);
        server.handle_timeout(later);
        let again = drain(&mut server, later);
        assert_eq!(again, lost, "the same Accept, at once");
        assert_eq!(server.connection_count(), 1, "no second connection");
        assert_eq!(server.stats().handshakes_attempted, 1, "no second read");

        client.handle_datagram(later, server_addr, &again[0]);
        let mut connected = false;
        while let Some((h, e)) = client.poll_event() {
            connected |= h == c && matches!(e, Event::Connected { .. });
        }
        assert!(connected);
        assert_eq!(
            client.peers.len(),
            1,
            "the client's entry: the server's address and id"
        );

        // the client closes; once both sides forgot the connection, no entry is left
        client.close(later, c, 0, &[]);
        let mut t = later;
        for _ in 0..200 {
            for d in drain(&mut client, t) {
                server.handle_datagram(t, client_addr, &d);
            }
            for d in drain(&mut server, t) {
                client.handle_datagram(t, server_addr, &d);
            }
            t += Duration::from_millis(50);
            client.handle_timeout(t);
            server.handle_timeout(t);
        }
        assert_eq!(server.connection_count() + client.connection_count(), 0);
        assert_eq!((server.peers.len(), client.peers.len()), (0, 0));
    }
}
