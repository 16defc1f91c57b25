//! Connections by the connection id this endpoint issued them, the id every short-header
//! packet and the client's handshake packets after the first carry.
//!
//! Memory: one 16-byte entry per connection (17 bytes with hashbrown's control byte), where a
//! map keyed by [`ConnectionId`] itself takes 24 (its 9 bytes pad to 16 beside the 8-byte
//! handle). Every id this endpoint issues has its configured length
//! ([`EndpointConfig::cid_len`](crate::EndpointConfig)), so the id's bytes, zero-padded, are
//! the key, and an id of any other length names no connection. The ids are ours and random, so
//! a fast unkeyed hash spreads them well (an attacker chooses only the ids it looks up, never
//! those stored).

use rustc_hash::FxHashMap;

use super::ConnectionHandle;
use crate::wire::ConnectionId;

/// See the module documentation.
#[derive(Debug)]
pub(super) struct CidIndex {
    /// The length of every id stored.
    len: usize,
    map: FxHashMap<u64, ConnectionHandle>,
}

impl CidIndex {
    /// An empty index of ids `len` bytes long.
    pub(super) fn new(len: usize) -> Self {
        Self {
            len,
            map: FxHashMap::default(),
        }
    }

    /// `cid`'s key, if it has the length of the ids stored.
    fn key(&self, cid: &ConnectionId) -> Option<u64> {
        let bytes = cid.as_bytes();
        if bytes.len() != self.len {
            return None;
        }
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        Some(u64::from_le_bytes(b))
    }

    /// The connection `cid` names.
    pub(super) fn get(&self, cid: &ConnectionId) -> Option<ConnectionHandle> {
        self.map.get(&self.key(cid)?).copied()
    }

    /// Whether `cid` names a connection.
    pub(super) fn contains(&self, cid: &ConnectionId) -> bool {
        self.get(cid).is_some()
    }

    /// `cid` names `h` from now on.
    ///
    /// # Panics
    ///
    /// If `cid` does not have the index's length: the endpoint issues every id at that length.
    pub(super) fn insert(&mut self, cid: ConnectionId, h: ConnectionHandle) {
        let key = self.key(&cid).expect("an id this endpoint issued");
        self.map.insert(key, h);
    }

    /// `cid` names nothing any more.
    pub(super) fn remove(&mut self, cid: &ConnectionId) {
        if let Some(key) = self.key(cid) {
            self.map.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An id is found by itself only: not by an id of another length whose bytes are the
    /// same with zeros added or taken away, and not once removed.
    #[test]
    fn ids_of_another_length_name_nothing() {
        let id = |b: &[u8]| ConnectionId::new(b).expect("valid");
        let mut index = CidIndex::new(4);
        index.insert(id(&[1, 2, 0, 0]), ConnectionHandle(7));
        assert_eq!(index.get(&id(&[1, 2, 0, 0])), Some(ConnectionHandle(7)));
        assert_eq!(index.get(&id(&[1, 2])), None);
        assert_eq!(index.get(&id(&[1, 2, 0])), None);
        assert_eq!(index.get(&id(&[1, 2, 0, 0, 0])), None);
        assert!(!index.contains(&id(&[1, 2, 0, 1])));
        index.remove(&id(&[1, 2]));
        assert!(
            index.contains(&id(&[1, 2, 0, 0])),
            "a shorter id removed it"
        );
        index.remove(&id(&[1, 2, 0, 0]));
        assert!(!index.contains(&id(&[1, 2, 0, 0])));
    }
}
