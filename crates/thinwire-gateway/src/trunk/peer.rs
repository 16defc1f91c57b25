//! The peers a server gateway admits ([`TrunkPeer`]), and the prefixes ([`Cidr`]) whose
//! packets a TCM peer may send.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// An edge (or tcm-local) the server gateway admits: the id its trunk credential carries
/// (see [`mint_trunk_credential`](super::mint_trunk_credential)), a name for the logs, and in
/// TCM mode the prefixes its players' packets may come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrunkPeer {
    /// The peer id sealed in its credential (the token's `client_id`).
    pub id: u64,
    /// A name for the logs and statistics.
    pub name: String,
    /// TCM mode: a restored packet from this peer is written to the TUN device only if its
    /// source lies in one of these (tcm-remote refuses to start without any, unless told to
    /// accept any source). Unused in edge mode.
    pub prefixes: Vec<Cidr>,
    /// Most flows this peer's trunk may hold at once; `None`: the gateway's
    /// [`TrunkOptions::max_flows`](super::TrunkOptions::max_flows), which also bounds all
    /// trunks together.
    pub max_flows: Option<usize>,
}

impl FromStr for TrunkPeer {
    type Err = String;

    /// `ID:NAME` or `ID:NAME:PREFIX,PREFIX...` (e.g. `3:edge-eu` or `1:lan:10.1.0.0/24`).
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.splitn(3, ':');
        let bad = || format!("{s}: expected ID:NAME or ID:NAME:PREFIX,PREFIX...");
        let id = parts.next().and_then(|i| i.parse().ok()).ok_or_else(bad)?;
        let name = parts.next().filter(|n| !n.is_empty()).ok_or_else(bad)?;
        let prefixes = match parts.next() {
            None => Vec::new(),
            Some(list) => list.split(',').map(str::parse).collect::<Result<_, _>>()?,
        };
        Ok(Self {
            prefixes,
            ..Self::new(id, name)
        })
    }
}

impl TrunkPeer {
    /// A peer with no prefixes and the gateway's flow bound.
    pub fn new(id: u64, name: &str) -> Self {
        Self {
            id,
            name: name.to_string(),
            prefixes: Vec::new(),
            max_flows: None,
        }
    }
}

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

/// Whether `packet` is an IPv4 packet whose source lies inside one of `prefixes` (none: no).
/// tcm-remote writes a restored packet to its TUN device only if this holds for the prefixes
/// of the peer whose trunk carried it (or it was told to accept any source), and tcm-local
/// for its own routes.
pub fn source_allowed(prefixes: &[Cidr], packet: &[u8]) -> bool {
    match packet.get(12..16) {
        Some(&[a, b, c, d]) if packet[0] >> 4 == 4 => {
            let src = Ipv4Addr::new(a, b, c, d);
            prefixes.iter().any(|r| r.contains(src))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(src: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0];
        p.extend_from_slice(&src);
        p.extend_from_slice(&[10, 0, 0, 1]);
        p
    }

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
    fn peers_parse() {
        let p: TrunkPeer = "3:edge-eu".parse().expect("parses");
        assert_eq!(p, TrunkPeer::new(3, "edge-eu"));
        let p: TrunkPeer = "1:lan:10.1.0.0/24,10.9.0.0/16".parse().expect("parses");
        assert_eq!(p.prefixes.len(), 2);
        for bad in ["", "x:a", "1:", "1:a:10.0.0.0/40", "1"] {
            assert!(bad.parse::<TrunkPeer>().is_err(), "{bad}");
        }
    }

    #[test]
    fn only_sources_inside_the_prefixes_pass() {
        let mine: Vec<Cidr> = vec!["10.1.0.0/24".parse().unwrap()];
        assert!(source_allowed(&mine, &packet([10, 1, 0, 77])));
        assert!(
            !source_allowed(&mine, &packet([10, 1, 1, 77])),
            "another peer's"
        );
        assert!(
            !source_allowed(&[], &packet([10, 1, 0, 77])),
            "no prefix: nothing"
        );
        assert!(
            !source_allowed(&mine, &packet([10, 1, 0, 77])[..14]),
            "truncated"
        );
        let mut v6 = packet([10, 1, 0, 77]);
        v6[0] = 0x60;
        assert!(!source_allowed(&mine, &v6), "not IPv4");
    }
}
