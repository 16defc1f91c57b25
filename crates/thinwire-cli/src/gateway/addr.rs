//! Addresses given as `host:port` (or an IP address and port), resolved with the system's
//! resolver when the process starts.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

/// Resolves `spec` (`host:port`, `1.2.3.4:5`, `[::1]:5`) given as `what` (an option's name,
/// for the error); with `family` (true: IPv6), the first address of that family, else the
/// first address.
pub(crate) fn resolve(what: &str, spec: &str, family: Option<bool>) -> Result<SocketAddr, String> {
    let found: Vec<SocketAddr> = match spec.parse::<SocketAddr>() {
        Ok(a) => vec![a],
        Err(_) => spec
            .to_socket_addrs()
            .map_err(|e| format!("{what} {spec}: does not resolve ({e}); expected host:port"))?
            .collect(),
    };
    let pick = found
        .iter()
        .find(|a| family.is_none_or(|v6| a.is_ipv6() == v6));
    match (pick, family) {
        (Some(a), _) => Ok(*a),
        (None, Some(v6)) if !found.is_empty() => Err(format!(
            "{what} {spec}: resolves to no IPv{} address (only {}); bind the socket toward it \
             to an address of the other family",
            if v6 { 6 } else { 4 },
            found[0]
        )),
        (None, _) => Err(format!("{what} {spec}: resolves to no address")),
    }
}

/// The socket toward a peer: `bind` when given (resolved), else the unspecified address of
/// the peer's family, port 0. Returns (bind, peer), the peer resolved in the bind's family.
pub(crate) fn bind_and_peer(
    bind: (&str, Option<&str>),
    peer: (&str, &str),
) -> Result<(SocketAddr, SocketAddr), String> {
    match bind.1 {
        Some(b) => {
            let b = resolve(bind.0, b, None)?;
            Ok((b, resolve(peer.0, peer.1, Some(b.is_ipv6()))?))
        }
        None => {
            let p = resolve(peer.0, peer.1, None)?;
            let any = match p.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            };
            Ok((SocketAddr::new(any, 0), p))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_hostnames_and_families() {
        let a = resolve("--listen", "127.0.0.1:7100", None).expect("literal");
        assert_eq!(a, "127.0.0.1:7100".parse().expect("addr"));
        let l = resolve("--server-gateway", "localhost:7100", None).expect("localhost");
        assert!(l.ip().is_loopback() && l.port() == 7100, "{l}");
        let v4 = resolve("--server-gateway", "localhost:7100", Some(false)).expect("v4");
        assert_eq!(v4, "127.0.0.1:7100".parse().expect("addr"));
        let e = resolve("--server-gateway", "[::1]:7100", Some(false)).expect_err("family");
        assert!(e.contains("no IPv4 address"), "{e}");
        let e = resolve("--game-server", "no-such-host.invalid:1", None).expect_err("nx");
        assert!(
            e.starts_with("--game-server no-such-host.invalid:1: does not resolve"),
            "{e}"
        );
        let e = resolve("--listen", "localhost", None).expect_err("no port");
        assert!(e.contains("host:port"), "{e}");
    }

    #[test]
    fn the_default_bind_follows_the_peer() {
        let (b, p) =
            bind_and_peer(("--trunk-bind", None), ("--server-gateway", "[::1]:9")).expect("v6");
        assert_eq!(b, "[::]:0".parse().expect("addr"));
        assert_eq!(p, "[::1]:9".parse().expect("addr"));
        let (b, p) = bind_and_peer(
            ("--trunk-bind", Some("127.0.0.1:0")),
            ("--server-gateway", "localhost:9"),
        )
        .expect("v4");
        assert!(b.is_ipv4() && p.is_ipv4());
    }
}
