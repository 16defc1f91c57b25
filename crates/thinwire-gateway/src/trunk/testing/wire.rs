//! One direction of one hop of the harness: a link model and an optional hook.

use std::time::Instant;

use thinwire_netmodel::{Link, LinkConfig};

/// What a [`Filter`] decides for one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to the link.
    Pass,
    /// Drop it.
    Drop,
}

/// A hook on every datagram of one direction: the time, its index on that direction (0, 1,
/// ...) and its bytes (which it may change).
pub type Filter = Box<dyn FnMut(Instant, u64, &mut Vec<u8>) -> Verdict>;

/// One direction of one hop.
pub struct Wire {
    /// The link model.
    pub link: Link<Vec<u8>>,
    /// The hook, if any.
    pub filter: Option<Filter>,
    count: u64,
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wire").field("count", &self.count).finish()
    }
}

impl Wire {
    pub(super) fn new(config: LinkConfig, seed: u64) -> Self {
        Self {
            link: Link::new(config, seed),
            filter: None,
            count: 0,
        }
    }

    pub(super) fn send(&mut self, now: Instant, mut bytes: Vec<u8>) {
        let idx = self.count;
        self.count += 1;
        if let Some(f) = self.filter.as_mut() {
            if f(now, idx, &mut bytes) == Verdict::Drop {
                return;
            }
        }
        let size = bytes.len() + 28; // IPv4 + UDP headers
        self.link.send(now, bytes, size);
    }

    /// Datagrams handed to this wire so far (before the filter).
    pub fn count(&self) -> u64 {
        self.count
    }
}
