//! [`GatewayStats`]: what a gateway relayed, held and dropped.

use std::time::Duration;

/// Datagram counters of one socket (UDP payload bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Datagrams sent.
    pub packets_sent: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// Datagrams received.
    pub packets_received: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
}

impl LinkCounters {
    pub(crate) fn sent(&mut self, bytes: usize) {
        self.packets_sent += 1;
        self.bytes_sent += bytes as u64;
    }

    pub(crate) fn received(&mut self, bytes: usize) {
        self.packets_received += 1;
        self.bytes_received += bytes as u64;
    }
}

/// Counters of one gateway, from `stats()`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayStats {
    /// Flows open now.
    pub flows_open: usize,
    /// Flows opened since the start.
    pub flows_total: u64,
    /// Player messages pushed into the trunk.
    pub messages_to_trunk: u64,
    /// Player messages received from the trunk (Data frames).
    pub messages_from_trunk: u64,
    /// The trunk socket.
    pub trunk: LinkCounters,
    /// The local socket (players at the edge, the game server at the server gateway).
    pub local: LinkCounters,
    /// Messages that went through the period-T hold before entering the trunk.
    pub held_messages: u64,
    /// Sum of their hold times (arrival to push).
    pub held_delay_total: Duration,
    /// Longest hold time.
    pub held_delay_max: Duration,
    /// Messages dropped: for a closed flow, stale (older than one delivered), refused by a
    /// connection, or lost with their flow's overflowing backlog.
    pub dropped_messages: u64,
    /// Flows refused: the table was full (`max_flows`), or the trunk was down.
    pub flows_refused: u64,
    /// Trunks closed at once after their handshake (server gateway): a valid credential whose
    /// id is not an allowed peer, or not a trunk's channels. (Connects without a valid
    /// credential are refused by the trunk endpoint and counted in its statistics.)
    pub trunks_refused: u64,
    /// Trunk frames that did not parse or broke the protocol (counted and dropped).
    pub bad_frames: u64,
    /// Flows closed because their backlog passed `max_flow_backlog`.
    pub flows_overflowed: u64,
    /// Server gateway: flows parked (their trunk went down or their edge lost the player;
    /// their game-server connection waits for the player to come back).
    pub flows_parked: u64,
    /// Server gateway: flows that carried on over another trunk flow with the same client id
    /// (from parked, or moved from an open flow on another edge).
    pub flows_resumed: u64,
    /// Server gateway: parked flows whose grace ran out (their game-server connection closed).
    pub flows_resume_expired: u64,
    /// Events dropped because the application did not poll them (the queue is bounded).
    pub events_dropped: u64,
}

impl GatewayStats {
    pub(crate) fn held(&mut self, delay: Duration) {
        self.held_messages += 1;
        self.held_delay_total += delay;
        self.held_delay_max = self.held_delay_max.max(delay);
    }

    /// Mean hold time of the messages pushed so far.
    pub fn held_delay_mean(&self) -> Duration {
        match u32::try_from(self.held_messages) {
            Ok(0) => Duration::ZERO,
            Ok(n) => self.held_delay_total / n,
            Err(_) => self.held_delay_total / u32::MAX,
        }
    }
}
