//! The pieces a simulation is built from: links, endpoints and
//! cross-traffic generators, seeded from the setup.

use std::time::Instant;

use thinwire_netmodel::{Corruptible, Link};

use super::Frame;
use crate::protocol::Protocol;
use crate::seed;
use crate::sim::cross::{CrossGen, CrossTraffic};
use crate::sim::setup::SimSetup;
use crate::workload::ClassSpec;

/// The links: every client's access link up, then down, then the
/// bottleneck's up and down (if any).
pub(super) fn links<Pk: Clone + Corruptible>(setup: &SimSetup) -> Vec<Link<Frame<Pk>>> {
    let clients = setup.clients;
    let mut links = Vec::with_capacity(2 * clients as usize + 2);
    for c in 0..clients {
        let cfg = setup.access_up[c as usize % setup.access_up.len().max(1)].clone();
        links.push(Link::new(
            cfg,
            seed::derive(setup.seed, seed::ACCESS_UP, u64::from(c)),
        ));
    }
    for c in 0..clients {
        let cfg = setup.access_down[c as usize % setup.access_down.len().max(1)].clone();
        links.push(Link::new(
            cfg,
            seed::derive(setup.seed, seed::ACCESS_DOWN, u64::from(c)),
        ));
    }
    if let Some((up, down)) = &setup.bottleneck {
        links.push(Link::new(
            up.clone(),
            seed::derive(setup.seed, seed::BOTTLENECK_UP, 0),
        ));
        links.push(Link::new(
            down.clone(),
            seed::derive(setup.seed, seed::BOTTLENECK_DOWN, 0),
        ));
    }
    links
}

/// The endpoints: every client's, then the server's (one per client, or one).
pub(super) fn endpoints<P: Protocol>(
    proto: &P,
    setup: &SimSetup,
    now: Instant,
    classes: &[ClassSpec],
) -> Vec<P::Endpoint> {
    let clients = setup.clients;
    let mut endpoints = Vec::new();
    for c in 0..clients {
        endpoints.push(proto.new_client(
            c,
            clients,
            seed::derive(setup.seed, seed::CLIENT_ENDPOINT, u64::from(c)),
            now,
            classes,
        ));
    }
    if proto.server_per_client() {
        for c in 0..clients {
            endpoints.push(proto.new_server(
                1,
                seed::derive(setup.seed, seed::SERVER_ENDPOINT, u64::from(c)),
                now,
                classes,
            ));
        }
    } else {
        endpoints.push(proto.new_server(
            clients,
            seed::derive(setup.seed, seed::SERVER_ENDPOINT, 0),
            now,
            classes,
        ));
    }
    endpoints
}

/// The cross-traffic generators (up, down; only with a bottleneck) and their
/// packet size.
pub(super) fn cross(setup: &SimSetup) -> ([Option<CrossGen>; 2], usize) {
    let size = [setup.cross.0, setup.cross.1]
        .iter()
        .flatten()
        .map(|c| c.packet_bytes as usize)
        .next()
        .unwrap_or(1000);
    if setup.bottleneck.is_none() {
        return ([None, None], size);
    }
    let gen = |c: Option<CrossTraffic>, tag| {
        c.map(|c| CrossGen::new(c, seed::derive(setup.seed, tag, 0)))
    };
    (
        [
            gen(setup.cross.0, seed::CROSS_UP),
            gen(setup.cross.1, seed::CROSS_DOWN),
        ],
        size,
    )
}
