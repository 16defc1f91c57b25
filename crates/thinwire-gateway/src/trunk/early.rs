//! Data that reaches the server gateway before its flow's FlowOpen (control frames travel on
//! the ordered trunk channel 0, data on channels 1 and 2, so a lost FlowOpen lets data
//! overtake it). Flow ids only grow, so any id above the highest opened is still to come:
//! its frames are held, bounded in bytes and in how far ahead the id may be.

use std::collections::HashMap;

use bytes::Bytes;

/// Frames for flows not opened yet.
#[derive(Debug)]
pub(crate) struct Early {
    highest: Option<u32>,
    frames: HashMap<u32, Vec<Bytes>>,
    bytes: usize,
    limit: usize,
    window: u32,
}

impl Early {
    /// At most `limit` bytes in all, for ids at most `window` above the highest opened.
    pub(crate) fn new(limit: usize, window: usize) -> Self {
        Self {
            highest: None,
            frames: HashMap::new(),
            bytes: 0,
            limit,
            window: u32::try_from(window).unwrap_or(u32::MAX),
        }
    }

    /// Whether `flow` is above every id opened so far (it may still open).
    pub(crate) fn is_future(&self, flow: u32) -> bool {
        self.highest.is_none_or(|h| flow > h)
    }

    /// Holds a frame for a future flow; `false` (and nothing held) past the bounds.
    pub(crate) fn hold(&mut self, flow: u32, frame: Bytes) -> bool {
        let base = self.highest.map_or(0, |h| h.saturating_add(1));
        let ahead = flow.checked_sub(base);
        if ahead.is_none_or(|a| a >= self.window) || self.bytes + frame.len() > self.limit {
            return false;
        }
        self.bytes += frame.len();
        self.frames.entry(flow).or_default().push(frame);
        true
    }

    /// `flow` opens: returns its held frames and forgets those of the ids it passed over.
    /// `None` if the id does not grow (the peer broke the rule).
    pub(crate) fn open(&mut self, flow: u32) -> Option<Vec<Bytes>> {
        if !self.is_future(flow) {
            return None;
        }
        self.highest = Some(flow);
        let mine = self.frames.remove(&flow).unwrap_or_default();
        self.frames.retain(|&id, _| id > flow);
        self.bytes = self.frames.values().flatten().map(Bytes::len).sum();
        Some(mine)
    }

    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}
