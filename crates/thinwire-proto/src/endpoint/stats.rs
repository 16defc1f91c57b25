//! [`EndpointStats`]: what arrived that no connection took, and why.

/// Counters of the endpoint as a whole: what arrived that no connection took, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams handed to `handle_datagram`.
    pub datagrams_received: u64,
    /// Datagrams produced by `poll_transmit`.
    pub datagrams_sent: u64,
    /// Dropped: the packet did not parse.
    pub dropped_malformed: u64,
    /// Dropped: short header for a connection id this endpoint does not know.
    pub dropped_unknown_connection: u64,
    /// Dropped: handshake packet of another protocol version.
    pub dropped_version: u64,
    /// Dropped: Connect whose cookie was forged, expired or bound to someone else.
    pub dropped_bad_cookie: u64,
    /// Dropped: handshake packet this endpoint cannot use (not a server, wrong state, wrong sender).
    pub dropped_unexpected: u64,
    /// Refused: a Connect arrived while `max_connections` (or the source's share) were held.
    pub dropped_connection_limit: u64,
    /// Dropped unanswered: the endpoint's budget of stateless replies was spent (a Hello or a
    /// stray packet went unanswered), or a Connect's source spent its own budget.
    pub dropped_rate_limited: u64,
    /// Unusable message 1: a Connect whose Noise message was not written to this server's key
    /// (refused `UnknownServerKey`, also counted in `refusals_sent`), or whose parameters do
    /// not parse (dropped).
    pub dropped_bad_handshake: u64,
    /// Dropped: a short-header packet for a live connection that did not authenticate
    /// (answered like one for an unknown id).
    pub dropped_unauthenticated: u64,
    /// Dropped: a Reset that named no connection of ours or carried the wrong token.
    pub dropped_bad_reset: u64,
    /// Dropped: a stateless reply was due but the reply queue was full.
    pub dropped_reply_queue_full: u64,
    /// Challenges sent (one per Hello, no state kept).
    pub challenges_sent: u64,
    /// Resets sent (for unknown connection ids, and decoys for unauthenticated packets).
    pub resets_sent: u64,
    /// Refusals sent (server full, source over its cap, bad token, not this server's key, ...),
    /// first ones and repeats from the spent-cookie table.
    pub refusals_sent: u64,
    /// Connections accepted.
    pub connections_accepted: u64,
    /// Bytes of the memory budget all connections hold now (see
    /// [`MemoryBudget`](crate::MemoryBudget)).
    pub memory_held: u64,
    /// Connections closed because they held more than their fair share of the memory budget
    /// for longer than its grace period.
    pub closed_over_budget: u64,
    /// Connects queued for their Noise read (cookie, source budget and capacity passed).
    pub handshakes_queued: u64,
    /// Noise message-1 reads: one X25519 operation each, within
    /// `handshake_reads_per_second`.
    pub handshakes_attempted: u64,
    /// Dropped without a read: a Connect whose cookie was spent on a read already (its
    /// refusal, if it was refused, is sent again).
    pub dropped_cookie_spent: u64,
    /// Dropped without a read: a Connect that found the same handshake waiting, found the
    /// queue full, was evicted from it by a source holding fewer, or waited past its cookie's
    /// lifetime.
    pub dropped_handshake_queue: u64,
    /// Refused before a read: the table was under pressure and the client's network prefix
    /// held the most connections (also counted in `dropped_connection_limit`).
    pub refused_busy_network: u64,
}
