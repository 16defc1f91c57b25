//! Connections held per network prefix (an IPv4 /24, an IPv6 /48), for the refusals under
//! table pressure (`docs/PROTOCOL.md` §5.6): when the table is nearly full, new handshakes
//! from the prefixes that hold the most connections are refused first, so that an attacker
//! with many addresses in one network (an IPv6 /48 holds 65 536 /64 sources) cannot take the
//! last places.
//!
//! Memory: one entry per prefix that holds a connection, and one per distinct count, so never
//! more entries than connections.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};

/// The table is under pressure once it holds this fraction of `max_connections`:
/// `PRESSURE_NUM / PRESSURE_DEN` (7/8).
pub(crate) const PRESSURE_NUM: usize = 7;
/// See [`PRESSURE_NUM`].
pub(crate) const PRESSURE_DEN: usize = 8;
/// Under pressure a prefix holding fewer connections than this is never refused for its
/// prefix: a household or a small office always gets in while there is room.
pub(crate) const PRESSURE_FLOOR: usize = 4;

/// A network prefix: the /24 of an IPv4 address, the /48 of an IPv6 one (an IPv4-mapped
/// address counts as its IPv4 address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Prefix {
    V4([u8; 3]),
    V6([u8; 6]),
}

impl Prefix {
    pub(crate) fn of(addr: &SocketAddr) -> Self {
        match addr.ip().to_canonical() {
            IpAddr::V4(ip) => {
                let o = ip.octets();
                Prefix::V4([o[0], o[1], o[2]])
            }
            IpAddr::V6(ip) => {
                let mut p = [0u8; 6];
                p.copy_from_slice(&ip.octets()[..6]);
                Prefix::V6(p)
            }
        }
    }
}

/// Connections per prefix, and how many prefixes hold each count (so the largest count is
/// known without a scan).
#[derive(Debug, Default)]
pub(crate) struct PrefixCounts {
    counts: HashMap<Prefix, usize>,
    /// count → number of prefixes holding exactly that many connections.
    histogram: BTreeMap<usize, usize>,
}

impl PrefixCounts {
    fn shift(&mut self, from: usize, to: usize) {
        if from > 0 {
            if let Some(n) = self.histogram.get_mut(&from) {
                *n -= 1;
                if *n == 0 {
                    self.histogram.remove(&from);
                }
            }
        }
        if to > 0 {
            *self.histogram.entry(to).or_default() += 1;
        }
    }

    pub(crate) fn add(&mut self, addr: &SocketAddr) {
        let n = self.counts.entry(Prefix::of(addr)).or_default();
        *n += 1;
        let now = *n;
        self.shift(now - 1, now);
    }

    pub(crate) fn remove(&mut self, addr: &SocketAddr) {
        let prefix = Prefix::of(addr);
        let Some(n) = self.counts.get_mut(&prefix) else {
            return;
        };
        *n -= 1;
        let now = *n;
        if now == 0 {
            self.counts.remove(&prefix);
        }
        self.shift(now + 1, now);
    }

    /// Connections held by the prefix of `addr`.
    pub(crate) fn get(&self, addr: &SocketAddr) -> usize {
        self.counts.get(&Prefix::of(addr)).copied().unwrap_or(0)
    }

    /// The most connections any one prefix holds.
    pub(crate) fn top(&self) -> usize {
        self.histogram.last_key_value().map_or(0, |(&k, _)| k)
    }

    /// Whether a new connection from `addr`'s prefix is refused while the table holds `held`
    /// of `max` connections: under pressure (at least 7/8 of `max` held), a prefix holding at
    /// least [`PRESSURE_FLOOR`] connections, at least half as many as the largest one, and
    /// more than the mean of the prefixes holding any is refused. The largest prefixes go
    /// first, a prefix with few connections is let in until the table is full, and a prefix
    /// alone (a LAN event, a load test from one host) is never refused for its prefix.
    pub(crate) fn refuses(&self, addr: &SocketAddr, held: usize, max: usize) -> bool {
        if held * PRESSURE_DEN < max * PRESSURE_NUM {
            return false;
        }
        let n = self.get(addr);
        n >= PRESSURE_FLOOR && 2 * n >= self.top() && n * self.counts.len() > held
    }

    /// Bytes held (tests of the memory bounds): map slots plus tree nodes, roughly.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.counts.capacity() * (std::mem::size_of::<(Prefix, usize)>() + 8)
            + self.histogram.len() * 2 * std::mem::size_of::<usize>()
    }

    /// Prefixes and distinct counts held.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> (usize, usize) {
        (self.counts.len(), self.histogram.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn prefixes_are_v4_24_and_v6_48() {
        assert_eq!(
            Prefix::of(&addr("10.1.2.3:1")),
            Prefix::of(&addr("10.1.2.200:9"))
        );
        assert_ne!(
            Prefix::of(&addr("10.1.2.3:1")),
            Prefix::of(&addr("10.1.3.3:1"))
        );
        assert_eq!(
            Prefix::of(&addr("[2001:db8:1:2::1]:1")),
            Prefix::of(&addr("[2001:db8:1:ffff::9]:1"))
        );
        assert_ne!(
            Prefix::of(&addr("[2001:db8:1::1]:1")),
            Prefix::of(&addr("[2001:db8:2::1]:1"))
        );
        assert_eq!(
            Prefix::of(&addr("[::ffff:10.1.2.3]:1")),
            Prefix::of(&addr("10.1.2.4:1"))
        );
    }

    #[test]
    fn the_largest_prefixes_are_refused_under_pressure_and_counts_go_away() {
        let mut p = PrefixCounts::default();
        for i in 0..10 {
            p.add(&addr(&format!("10.0.0.{i}:1")));
        }
        for i in 0..3 {
            p.add(&addr(&format!("10.0.9.{i}:1")));
        }
        assert_eq!(p.top(), 10);
        assert_eq!(p.entries(), (2, 2));
        let (big, small, new) = (addr("10.0.0.99:1"), addr("10.0.9.99:1"), addr("1.2.3.4:5"));
        assert!(!p.refuses(&big, 86, 100), "no pressure below 7/8");
        assert!(
            p.refuses(&big, 13, 14),
            "10 of 13 in two prefixes: above the mean"
        );
        assert!(!p.refuses(&small, 13, 14), "below the floor");
        assert!(!p.refuses(&new, 99, 100));
        // alone, a prefix is never the busiest of several: a load test from one host fills
        // the table
        let mut alone = PrefixCounts::default();
        for i in 0..99 {
            alone.add(&addr(&format!("127.0.0.1:{}", 1000 + i)));
        }
        assert!(!alone.refuses(&addr("127.0.0.1:5"), 99, 100));
        for i in 0..10 {
            p.remove(&addr(&format!("10.0.0.{i}:1")));
        }
        assert_eq!(p.top(), 3);
        assert_eq!(p.entries(), (1, 1));
    }
}
