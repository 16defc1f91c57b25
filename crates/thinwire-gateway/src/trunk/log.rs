//! What a gateway's log says about its trunks: [`GatewayEvent::log_line`].

use super::close;
use super::GatewayEvent;

impl GatewayEvent {
    /// The log line of a trunk event (up, down with the reason and the redial, refused) or a
    /// move between edges (parked, resumed, expired); `None` for the other per-flow events
    /// and bundles, too many to log.
    pub fn log_line(&self) -> Option<String> {
        match self {
            GatewayEvent::TrunkUp { peer } => Some(format!("trunk of peer {peer} up")),
            GatewayEvent::TrunkDown {
                peer,
                reason,
                redial_in,
            } => {
                let why = close::describe(reason);
                Some(match redial_in {
                    Some(d) => format!(
                        "trunk of peer {peer} down ({why}); dialing again in {:.1} s",
                        d.as_secs_f64()
                    ),
                    None => format!("trunk of peer {peer} down ({why})"),
                })
            }
            GatewayEvent::TrunkRefused { peer, reason } => Some(format!(
                "trunk of peer {peer} refused after its handshake: {reason}"
            )),
            GatewayEvent::FlowParked {
                peer,
                flow,
                client_id,
            } => Some(format!(
                "player {client_id} (flow {flow} of peer {peer}) parked: its game-server connection waits for it to come back"
            )),
            GatewayEvent::FlowResumed {
                peer,
                flow,
                client_id,
                from_peer,
                from_flow,
            } => Some(format!(
                "player {client_id} resumed on flow {flow} of peer {peer} (was flow {from_flow} of peer {from_peer})"
            )),
            GatewayEvent::FlowResumeExpired {
                peer,
                flow,
                client_id,
            } => Some(format!(
                "player {client_id} (flow {flow} of peer {peer}) did not come back in time: its game-server connection is closed"
            )),
            GatewayEvent::FlowOpened { .. }
            | GatewayEvent::FlowClosed { .. }
            | GatewayEvent::Bundle { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use thinwire_proto::{DisconnectReason, RefuseReason};

    use super::*;

    #[test]
    fn refusals_and_timeouts_read_differently() {
        let line = |reason| {
            GatewayEvent::TrunkDown {
                peer: 3,
                reason,
                redial_in: Some(Duration::from_secs(2)),
            }
            .log_line()
            .expect("a trunk event")
        };
        let token = line(DisconnectReason::Refused(RefuseReason::InvalidToken));
        let dup = line(DisconnectReason::Refused(RefuseReason::AlreadyConnected));
        let not_admitted = line(DisconnectReason::ClosedByPeer {
            code: close::NOT_ADMITTED,
            reason: b"not an allowed peer".to_vec(),
        });
        let timeout = line(DisconnectReason::HandshakeTimedOut);
        assert!(token.contains("credential is invalid"), "{token}");
        assert!(dup.contains("still holds a trunk"), "{dup}");
        assert!(not_admitted.contains("not admitted"), "{not_admitted}");
        assert!(timeout.contains("did not answer"), "{timeout}");
        assert!(timeout.contains("dialing again in 2.0 s"), "{timeout}");
    }
}
