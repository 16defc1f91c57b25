//! [`EndpointStats`]: what arrived that no connection took, and why.

/// Declares [`EndpointStats`] from one list of counters and one of gauges, with the counters'
/// [`NAMES`](EndpointStats::NAMES) and [`for_each`](EndpointStats::for_each), so that a new
/// counter is one line here (plus the line that increments it) and every export sees it.
macro_rules! endpoint_stats {
    (
        counters { $($(#[doc = $doc:literal])* $field:ident,)* }
        gauges { $($(#[doc = $gdoc:literal])* $gauge:ident,)* }
    ) => {
        /// Counters of the endpoint as a whole: what arrived that no connection took, and why.
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct EndpointStats {
            $($(#[doc = $doc])* pub $field: u64,)*
            $($(#[doc = $gdoc])* pub $gauge: u64,)*
        }

        impl EndpointStats {
            /// The counters' names (every field but the gauges), in declaration order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

            /// The counters' doc comments (each line after a space), in the order of
            /// [`Self::NAMES`]: help texts for an export.
            pub const DOCS: &'static [&'static str] = &[$(concat!($($doc),*)),*];

            /// Calls `f` with every counter's name and value (not the gauges, which go up and
            /// down), in the order of [`Self::NAMES`].
            pub fn for_each(&self, mut f: impl FnMut(&'static str, u64)) {
                $(f(stringify!($field), self.$field);)*
            }
        }
    };
}

endpoint_stats! {
    counters {
        /// Datagrams handed to `handle_datagram`.
        datagrams_received,
        /// Datagrams produced by `poll_transmit`.
        datagrams_sent,
        /// Dropped: the packet did not parse.
        dropped_malformed,
        /// Dropped: short header for a connection id this endpoint does not know.
        dropped_unknown_connection,
        /// Dropped: handshake packet of another protocol version.
        dropped_version,
        /// Dropped: Connect whose cookie was forged, expired or bound to someone else.
        dropped_bad_cookie,
        /// Dropped: handshake packet this endpoint cannot use (not a server, wrong state, wrong sender).
        dropped_unexpected,
        /// Refused: a Connect arrived while `max_connections` (or the source's share) were held.
        dropped_connection_limit,
        /// Dropped unanswered: the endpoint's budget of stateless replies was spent (a Hello or a
        /// stray packet went unanswered), or a Connect's source spent its own budget.
        dropped_rate_limited,
        /// Unusable message 1: a Connect whose Noise message was not written to this server's key
        /// (refused `UnknownServerKey`, also counted in `refusals_sent`), or whose parameters do
        /// not parse (dropped).
        dropped_bad_handshake,
        /// Dropped: a short-header packet for a live connection that did not authenticate
        /// (answered like one for an unknown id).
        dropped_unauthenticated,
        /// Dropped: a Reset that named no connection of ours or carried the wrong token.
        dropped_bad_reset,
        /// Dropped: a stateless reply was due but the reply queue was full.
        dropped_reply_queue_full,
        /// Challenges sent (one per Hello, no state kept).
        challenges_sent,
        /// Resets sent (for unknown connection ids, and decoys for unauthenticated packets).
        resets_sent,
        /// Refusals sent (server full, source over its cap, bad token, not this server's key, ...),
        /// first ones and repeats from the spent-cookie table.
        refusals_sent,
        /// Connections accepted.
        connections_accepted,
        /// Connections closed because they held more than their fair share of the memory budget
        /// for longer than its grace period.
        closed_over_budget,
        /// Connects queued for their Noise read (cookie, source budget and capacity passed).
        handshakes_queued,
        /// Noise message-1 reads: one X25519 operation each, within
        /// `handshake_reads_per_second`.
        handshakes_attempted,
        /// Dropped without a read: a Connect whose cookie was spent on a read already (its
        /// refusal, if it was refused, is sent again).
        dropped_cookie_spent,
        /// Dropped without a read: a Connect that found the same handshake waiting, found the
        /// queue full, was evicted from it by a source holding fewer, or waited past its cookie's
        /// lifetime.
        dropped_handshake_queue,
        /// Refused before a read: the table was under pressure and the client's network prefix
        /// held the most connections (also counted in `dropped_connection_limit`).
        refused_busy_network,
    }
    gauges {
        /// Bytes of the memory budget all connections hold now (see
        /// [`MemoryBudget`](crate::MemoryBudget)).
        memory_held,
    }
}

#[cfg(test)]
mod tests {
    use super::EndpointStats;

    #[test]
    fn every_counter_is_named_once_and_visited() {
        let s = EndpointStats {
            refusals_sent: 3,
            memory_held: 7,
            ..EndpointStats::default()
        };
        let mut seen = Vec::new();
        s.for_each(|name, v| seen.push((name, v)));
        let names: Vec<_> = seen.iter().map(|x| x.0).collect();
        assert_eq!(names, EndpointStats::NAMES);
        assert!(seen.contains(&("refusals_sent", 3)));
        assert!(!names.contains(&"memory_held"), "a gauge, not a counter");
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert_eq!(EndpointStats::DOCS.len(), names.len());
        assert_eq!(
            EndpointStats::DOCS[0],
            " Datagrams handed to `handle_datagram`."
        );
    }
}
