//! The TUN device of a TCM process: its address, its routes, and the source filter on what
//! is written to it.

use std::process::Command;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::TcmRunError;
pub use crate::trunk::Cidr;

/// The TUN device of a TCM process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunSpec {
    /// Its name (at most 15 bytes), e.g. `tcm0`.
    pub name: String,
    /// Its address and network.
    pub address: Cidr,
    /// Prefixes routed into it (`ip route replace PREFIX dev NAME`): the game server's
    /// address at tcm-local, the players' at tcm-remote. They go with the device. They also
    /// filter the other way: a restored packet is written to the device only if its source is
    /// inside one of them (the far side can only have read such packets), so a trunk peer
    /// cannot inject packets from other addresses. Without routes nothing is filtered.
    pub routes: Vec<Cidr>,
}

/// Creates the TUN device (address, MTU, up), installs the routes, and opens it for tokio.
pub(super) fn open_tun(spec: &TunSpec, mtu: usize) -> Result<AsyncFd<tun::Device>, TcmRunError> {
    let err = |reason: String| TcmRunError::Tun {
        name: spec.name.clone(),
        reason,
    };
    let mtu = u16::try_from(mtu).map_err(|_| err(format!("MTU {mtu} too large")))?;
    let mut cfg = tun::Configuration::default();
    cfg.tun_name(&spec.name)
        .address(spec.address.addr)
        .netmask(spec.address.netmask())
        .mtu(mtu)
        .up();
    let device = tun::Device::new(&cfg).map_err(|e| err(e.to_string()))?;
    device.set_nonblock().map_err(|e| err(e.to_string()))?;
    for route in &spec.routes {
        let out = Command::new("ip")
            .args(["route", "replace", &route.to_string(), "dev", &spec.name])
            .output()
            .map_err(|e| TcmRunError::Route {
                route: *route,
                reason: format!("cannot run `ip`: {e}"),
            })?;
        if !out.status.success() {
            return Err(TcmRunError::Route {
                route: *route,
                reason: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
    }
    // `with_interest` is deprecated in favour of the `unsafe` `register_with_interest`, whose
    // contract (the fd stays open and the same while registered) `tun::Device` keeps: it owns
    // its descriptor, closes it only on drop, and never replaces it.
    #[allow(deprecated)]
    AsyncFd::with_interest(device, Interest::READABLE).map_err(|e| err(e.to_string()))
}
