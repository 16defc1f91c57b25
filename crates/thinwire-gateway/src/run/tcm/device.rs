//! The TUN device of a TCM process: its address, its routes, and the source filter on what
//! is written to it.

use std::fmt;
use std::net::Ipv4Addr;
use std::process::Command;
use std::str::FromStr;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::TcmRunError;

/// An IPv4 prefix, `ADDRESS/LENGTH` (e.g. `10.1.0.1/24`: an interface address with its
/// network, or `10.2.0.0/24`: a route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The address.
    pub addr: Ipv4Addr,
    /// The prefix length (0..=32).
    pub prefix: u8,
}

impl Cidr {
    /// The netmask of the prefix.
    pub fn netmask(&self) -> Ipv4Addr {
        Ipv4Addr::from(
            u32::MAX
                .checked_shl(32 - u32::from(self.prefix))
                .unwrap_or(0),
        )
    }

    /// Whether `addr` is inside the prefix.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let mask = u32::from(self.netmask());
        u32::from(addr) & mask == u32::from(self.addr) & mask
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s}: expected an IPv4 prefix like 10.1.0.0/24");
        let (addr, prefix) = s.split_once('/').ok_or_else(bad)?;
        let addr = addr.parse().map_err(|_| bad())?;
        let prefix = prefix.parse().ok().filter(|p| *p <= 32).ok_or_else(bad)?;
        Ok(Self { addr, prefix })
    }
}

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

/// Whether `packet`'s source may be written to the device: inside one of `sources` (an IPv4
/// packet), or anything when there are none.
pub(super) fn source_allowed(sources: &[Cidr], packet: &[u8]) -> bool {
    if sources.is_empty() {
        return true;
    }
    match packet.get(12..16) {
        Some(&[a, b, c, d]) if packet[0] >> 4 == 4 => {
            let src = Ipv4Addr::new(a, b, c, d);
            sources.iter().any(|r| r.contains(src))
        }
        _ => false,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_and_give_their_netmask() {
        let c: Cidr = "10.1.0.1/24".parse().expect("parses");
        assert_eq!(c.addr, Ipv4Addr::new(10, 1, 0, 1));
        assert_eq!(c.netmask(), Ipv4Addr::new(255, 255, 255, 0));
        assert_eq!(c.to_string(), "10.1.0.1/24");
        let all: Cidr = "0.0.0.0/0".parse().expect("parses");
        assert_eq!(all.netmask(), Ipv4Addr::UNSPECIFIED);
        assert_eq!(
            "1.2.3.4/32".parse::<Cidr>().unwrap().netmask(),
            Ipv4Addr::BROADCAST
        );
        assert!(c.contains(Ipv4Addr::new(10, 1, 0, 200)));
        assert!(!c.contains(Ipv4Addr::new(10, 1, 1, 1)));
        assert!(all.contains(Ipv4Addr::new(192, 0, 2, 1)));
        for bad in ["10.0.0.0", "10.0.0.0/33", "x/8", "::1/64"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn restored_packets_must_come_from_a_routed_prefix() {
        let routes = ["10.1.0.0/24".parse::<Cidr>().expect("cidr")];
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&[10, 1, 0, 7]);
        assert!(source_allowed(&routes, &p));
        assert!(source_allowed(&[], &p));
        p[12..16].copy_from_slice(&[10, 9, 0, 7]);
        assert!(!source_allowed(&routes, &p));
        p[0] = 0x60; // IPv6
        assert!(!source_allowed(&routes, &p));
        assert!(!source_allowed(&routes, &p[..10]));
    }
}
