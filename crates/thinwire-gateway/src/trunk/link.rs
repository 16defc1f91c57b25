//! One trunk connection as a gateway keeps it once it is up: whose it is, and what is bounded
//! per trunk (its hold, its early data, its flows). An edge holds at most one; a server
//! gateway one per admitted peer.

use std::time::Instant;

use super::config::TrunkOptions;
use super::early::Early;
use super::hold::Hold;

/// An up trunk.
#[derive(Debug)]
pub(crate) struct TrunkLink {
    /// The id of the edge (or tcm-local) the trunk belongs to, at both ends.
    pub(crate) peer: u64,
    /// Messages toward this trunk, pushed every period T.
    pub(crate) hold: Hold,
    /// Server gateway only: data for this trunk's flows whose FlowOpen has not arrived.
    pub(crate) early: Option<Early>,
    /// Most flows on this trunk.
    pub(crate) max_flows: usize,
    /// Flows open on this trunk.
    pub(crate) flows: usize,
}

impl TrunkLink {
    /// A trunk of `peer` with `options`' bounds (its flows at most `max_flows`); `early` for
    /// the server gateway.
    pub(crate) fn new(peer: u64, options: &TrunkOptions, max_flows: usize, early: bool) -> Self {
        Self {
            peer,
            hold: Hold::new(options.period, options.max_flow_backlog, options.max_held),
            early: early.then(|| Early::new(options.max_flow_backlog, max_flows)),
            max_flows,
            flows: 0,
        }
    }

    /// When the hold is due.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.hold.poll_timeout()
    }
}
