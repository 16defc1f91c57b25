//! Close codes the gateways put on the connections they close, and how a local disconnect
//! becomes the code and reason of a FlowClose.
//!
//! A code the far end chose (a player leaving, the game server kicking) passes through
//! unchanged; the gateways' own codes live at `0x3f00_0000` and up (a 4-byte varint), out of
//! the way of application codes.

use thinwire_proto::DisconnectReason;

use super::frame::MAX_REASON;

/// Base of the gateways' own close codes.
pub const BASE: u64 = 0x3f00_0000;
/// The gateway holds `max_flows` flows already.
pub const GATEWAY_FULL: u64 = BASE + 1;
/// The trunk between the gateways is down.
pub const TRUNK_DOWN: u64 = BASE + 2;
/// The flow held more than `max_flow_backlog` bytes.
pub const BACKLOG: u64 = BASE + 3;
/// The far connection timed out.
pub const TIMED_OUT: u64 = BASE + 4;
/// The far handshake got no answer (game server unreachable).
pub const UNREACHABLE: u64 = BASE + 5;
/// The far end lost the connection's state (restarted).
pub const RESET: u64 = BASE + 6;
/// The far end broke the protocol, or the flow's frames did.
pub const PROTOCOL: u64 = BASE + 7;
/// The trunk's credential is valid but its peer id is not among the server gateway's
/// allowed peers (server gateway, on the trunk it closes at once).
pub const NOT_ADMITTED: u64 = BASE + 9;
/// The player's flow carries on over another trunk flow (it came back through another edge
/// with the same client id): the old flow is closed with this code, its game-server
/// connection kept (server gateway, toward the old edge, which closes the player's old
/// connection with it).
pub const MOVED: u64 = BASE + 10;
/// The game server refused the connection: `REFUSED + RefuseReason::code()`.
pub const REFUSED: u64 = BASE + 0x100;

/// Why the server gateway closed a trunk at once although its credential is valid
/// ([`GatewayEvent::TrunkRefused`](super::GatewayEvent::TrunkRefused)). `Display` gives the
/// reason text the close carries (and the log prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The credential's peer id is not among the server gateway's allowed peers (close code
    /// [`NOT_ADMITTED`]).
    NotAdmitted,
    /// The connection's channel layout is not a trunk's (close code [`PROTOCOL`]).
    NotATrunk,
}

impl Refusal {
    /// The close code the refused trunk reads.
    pub fn code(self) -> u64 {
        match self {
            Refusal::NotAdmitted => NOT_ADMITTED,
            Refusal::NotATrunk => PROTOCOL,
        }
    }

    /// The close reason the refused trunk reads (the `Display` text).
    pub fn text(self) -> &'static str {
        match self {
            Refusal::NotAdmitted => "not an allowed peer",
            Refusal::NotATrunk => "not a trunk",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// Words for a trunk's end, for the log of the side that saw it: the gateways' own codes
/// and the core's refusals get a sentence saying what to do.
pub fn describe(reason: &DisconnectReason) -> String {
    use thinwire_proto::RefuseReason;
    match reason {
        DisconnectReason::ClosedByPeer { code, .. } if *code == NOT_ADMITTED => {
            "not admitted: the server gateway does not list this peer's id (add it to its allowed peers)".to_string()
        }
        DisconnectReason::Refused(RefuseReason::InvalidToken) => {
            "refused: the trunk credential is invalid, expired or minted for another server gateway".to_string()
        }
        DisconnectReason::Refused(RefuseReason::AlreadyConnected) => {
            "refused: the server gateway still holds a trunk for this peer id (an earlier run of this gateway, until it times out there; or a copy of the credential in use elsewhere)".to_string()
        }
        DisconnectReason::HandshakeTimedOut => "the server gateway did not answer".to_string(),
        other => other.to_string(),
    }
}

/// The code and reason a FlowClose carries for a local connection that ended this way.
pub fn of(reason: &DisconnectReason) -> (u64, Vec<u8>) {
    let (code, text) = match reason {
        DisconnectReason::ClosedByPeer { code, reason } => {
            return (*code, reason[..reason.len().min(MAX_REASON)].to_vec())
        }
        DisconnectReason::LocallyClosed => (0, "closed".to_string()),
        DisconnectReason::TimedOut => (TIMED_OUT, "timed out".to_string()),
        DisconnectReason::HandshakeTimedOut => (UNREACHABLE, "unreachable".to_string()),
        DisconnectReason::PeerReset => (RESET, "reset".to_string()),
        DisconnectReason::Refused(r) => (REFUSED + u64::from(r.code()), format!("refused: {r}")),
        DisconnectReason::Peer(_) => (PROTOCOL, "protocol error".to_string()),
    };
    let mut text = text.into_bytes();
    text.truncate(MAX_REASON);
    (code, text)
}
