//! Channel kinds (delivery classes) and their wire codes.

/// The delivery class of a channel, fixed at connection setup by the
/// Connect packet (one code byte per channel).
///
/// The kind decides which fields a message frame on that channel carries:
/// a sequence number when [`has_seq`](Self::has_seq), a key when
/// [`has_key`](Self::has_key).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ChannelKind {
    /// Reliable, delivered in send order (e.g. chat, inventory changes).
    /// Wire code 0.
    ReliableOrdered,
    /// Reliable, delivered as soon as it arrives, no ordering wait
    /// (e.g. attacks, hits: every one must arrive, none should wait behind
    /// a lost one). Wire code 1.
    ReliableUnordered,
    /// Fire and forget: never retransmitted, may be lost or arrive out of
    /// order, delivered on arrival. Carries no sequence number. Wire code 2.
    Unreliable,
    /// Unreliable, but a message older than the newest already delivered
    /// is dropped (e.g. position updates). Wire code 3.
    UnreliableSequenced,
    /// Reliable latest-value per `u64` key: for each key only the newest
    /// value matters; an older value in flight is superseded, not
    /// retransmitted (e.g. per-entity state). Wire code 4.
    LatestReliable,
}

impl ChannelKind {
    /// Every kind, in wire-code order.
    pub const ALL: [ChannelKind; 5] = [
        ChannelKind::ReliableOrdered,
        ChannelKind::ReliableUnordered,
        ChannelKind::Unreliable,
        ChannelKind::UnreliableSequenced,
        ChannelKind::LatestReliable,
    ];

    /// The wire code (0..=4).
    pub fn code(self) -> u8 {
        match self {
            ChannelKind::ReliableOrdered => 0,
            ChannelKind::ReliableUnordered => 1,
            ChannelKind::Unreliable => 2,
            ChannelKind::UnreliableSequenced => 3,
            ChannelKind::LatestReliable => 4,
        }
    }

    /// The kind with wire code `code`, if defined.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code)).copied()
    }

    /// True for kinds whose messages are retransmitted until acknowledged
    /// (ReliableOrdered, ReliableUnordered, LatestReliable).
    pub fn is_reliable(self) -> bool {
        matches!(
            self,
            ChannelKind::ReliableOrdered
                | ChannelKind::ReliableUnordered
                | ChannelKind::LatestReliable
        )
    }

    /// True when message frames carry a per-channel sequence number
    /// (every kind but Unreliable).
    pub fn has_seq(self) -> bool {
        !matches!(self, ChannelKind::Unreliable)
    }

    /// True when message frames carry a `u64` key (LatestReliable only).
    pub fn has_key(self) -> bool {
        matches!(self, ChannelKind::LatestReliable)
    }
}
