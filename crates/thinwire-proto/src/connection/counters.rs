//! A connection's counters, packed small while it is idle.
//!
//! [`ConnectionCounters`] is 38 `u64`s, 304 bytes, most of them zero on a connection that only
//! exchanges keepalives. The datagram counters ([`UdpStats`]), which every packet changes,
//! stay at hand in the connection. The other parts live in a box while the connection is
//! busy and are packed into a few bytes when it trims ([`Counters::park`], a [`Parked`]
//! value): a bitmap of the counters that are not zero, then each of those as a LEB128 number
//! ([`Packer::u64`]). The first change after that unpacks them ([`Counters::live`]).

use super::stats::{ConnectionCounters, UdpStats};
use crate::pack::{Pack, Packer, Parked, Unpacker};

/// Counters of [`ConnectionCounters`] (the bitmap has a bit for each).
const COUNT: usize = ConnectionCounters::NAMES.len();
const _: () = assert!(COUNT <= 64, "the packed bitmap is one u64");
/// Bytes of the packed bitmap.
const MASK_BYTES: usize = COUNT.div_ceil(8);

/// Every counter of one connection: the datagram part inline, the rest boxed or packed.
#[derive(Debug)]
pub(crate) struct Counters {
    /// Datagrams and bytes sent and received: every packet changes them, keepalives too.
    pub(crate) udp: UdpStats,
    /// The other counters (their own `udp` part unused, zero). A new connection's are packed,
    /// all zero, which takes no allocation.
    rest: Parked<ConnectionCounters>,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            udp: UdpStats::default(),
            rest: Parked::resting(Box::default()),
        }
    }
}

impl Counters {
    /// Hints the counters other than the datagrams', if unpacked.
    pub(crate) fn prefetch(&self, hint: crate::prefetch::Hint) {
        if let Some(rest) = self.rest.unpacked() {
            hint.value(rest);
        }
    }

    /// The counters other than [`udp`](Self::udp), to change (their `udp` part is not
    /// read: change [`udp`](Self::udp) instead). Packed ones are unpacked first.
    #[inline]
    pub(crate) fn live(&mut self) -> &mut ConnectionCounters {
        &mut self.rest
    }

    /// Every counter, as a value (packed ones are read without unpacking them).
    pub(crate) fn get(&self) -> ConnectionCounters {
        let mut c = self.rest.peek(|c| *c);
        debug_assert_eq!(
            c.udp,
            UdpStats::default(),
            "udp counters go to Counters::udp"
        );
        c.udp = self.udp;
        c
    }

    /// The connection went idle: packs the boxed counters (nothing to do when packed).
    pub(crate) fn park(&mut self) {
        self.rest.park();
    }

    /// Heap bytes held by the boxed or packed part.
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.rest.heap_bytes()
    }
}

#[cfg(test)]
impl super::Connection {
    /// Whether the counters are packed (the connection trimmed and changed none since).
    pub(crate) fn counters_packed(&self) -> bool {
        self.stats.rest.is_parked()
    }
}

/// The bitmap of the non-zero counters, then each of them in LEB128; nothing if all are zero.
impl Pack for ConnectionCounters {
    fn pack(&self, p: &mut Packer) -> bool {
        let (mut mask, mut i) = (0u64, 0);
        self.for_each(|_, v| {
            mask |= u64::from(v != 0) << i;
            i += 1;
        });
        if mask == 0 {
            return true;
        }
        p.bytes(&mask.to_le_bytes()[..MASK_BYTES]);
        self.for_each(|_, v| {
            if v != 0 {
                p.u64(v);
            }
        });
        true
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        let mut c = ConnectionCounters::default();
        let mut bits = [0u8; 8];
        u.bytes(&mut bits[..MASK_BYTES]);
        let mask = u64::from_le_bytes(bits);
        let mut i = 0;
        c.for_each_mut(|v| {
            if mask >> i & 1 == 1 {
                *v = u.u64();
            }
            i += 1;
        });
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Counters with any values, each zero with probability about 1/2 (as most are on an
    /// idle connection), the `udp` part zero (it is never packed).
    fn counters() -> impl Strategy<Value = ConnectionCounters> {
        let value = prop_oneof![Just(0u64), 1..128u64, any::<u64>()];
        proptest::collection::vec(value, COUNT).prop_map(|values| {
            let mut c = ConnectionCounters::default();
            let mut it = values.into_iter();
            c.for_each_mut(|v| *v = it.next().unwrap_or(0));
            c.udp = UdpStats::default();
            c
        })
    }

    proptest! {
        /// Packing and unpacking gives back every counter, and the packed form is the bitmap
        /// plus at most ten bytes per non-zero counter, or nothing when all are zero.
        #[test]
        fn packed_counters_come_back_unchanged(c in counters()) {
            let mut p = Packer::default();
            prop_assert!(c.pack(&mut p));
            let packed = p.finish();
            prop_assert_eq!(ConnectionCounters::unpack(&mut Unpacker::new(&packed)), c);
            let mut nonzero = 0;
            c.for_each(|_, v| nonzero += usize::from(v != 0));
            if nonzero == 0 {
                prop_assert!(packed.is_empty());
            } else {
                prop_assert!(packed.len() <= MASK_BYTES + 10 * nonzero);
            }
        }

        /// Through the connection's view: the datagram counters stay inline, the rest survive
        /// a park, and a change after a park lands on the unpacked values.
        #[test]
        fn a_parked_connection_keeps_its_counts(c in counters(), sent in any::<u64>()) {
            let mut k = Counters::default();
            *k.live() = c;
            k.udp.packets_sent = sent;
            k.park();
            let mut want = c;
            want.udp.packets_sent = sent;
            prop_assert_eq!(k.get(), want);
            k.live().recovery.packets_lost = k.live().recovery.packets_lost.wrapping_add(1);
            want.recovery.packets_lost = want.recovery.packets_lost.wrapping_add(1);
            prop_assert_eq!(k.get(), want);
        }
    }

    /// A connection that only exchanges keepalives keeps its counters packed, on both ends:
    /// they are packed when it trims and no keepalive or ACK of one unpacks them again (an ACK
    /// that declares nothing lost changes no loss counter).
    #[test]
    fn keepalives_leave_an_idle_connections_counters_packed() {
        use std::time::Duration;

        use crate::testing::Pair;
        use crate::ChannelKind;

        let mut pair = Pair::builder(7).build();
        let (ours, theirs) = pair
            .connect(&[ChannelKind::ReliableOrdered])
            .expect("connects");
        let datagrams = |pair: &Pair| {
            let s = pair.server().endpoint().stats();
            s.datagrams_received + s.datagrams_sent
        };
        let (mut packed_steps, mut datagrams_from) = (0, None);
        for step in 0..200 {
            pair.run_for(Duration::from_millis(50));
            let packed = [
                pair.server().endpoint().connection(theirs),
                pair.client().endpoint().connection(ours),
            ]
            .map(|c| c.expect("held").counters_packed());
            // from 2 s on, once both have trimmed (the handshake changes counters)
            if packed_steps > 0 || (step >= 40 && packed == [true; 2]) {
                assert_eq!(packed, [true; 2], "a keepalive unpacked the counters");
                packed_steps += 1;
                datagrams_from.get_or_insert(datagrams(&pair));
            }
        }
        // eight seconds of keepalives (one every two seconds)
        assert!(packed_steps > 100, "packed for {packed_steps} steps only");
        let while_packed = datagrams(&pair) - datagrams_from.unwrap_or(0);
        assert!(while_packed >= 4, "{while_packed} datagrams");
    }

    /// An idle connection's usual counters pack into a few bytes instead of 304.
    #[test]
    fn an_idle_connections_counters_pack_small() {
        let mut k = Counters::default();
        assert_eq!(
            k.heap_bytes(),
            0,
            "a new connection's counters allocate nothing"
        );
        k.live().frames.first = 3;
        k.live().payload_bytes.first = 200;
        k.live().recovery.ack_repeats = 1;
        assert_eq!(k.heap_bytes(), size_of::<ConnectionCounters>());
        k.park();
        // 5 bytes of bitmap, 1 + 2 + 1 of values
        assert_eq!(k.heap_bytes(), MASK_BYTES + 4);
        assert_eq!(k.get().payload_bytes.first, 200);
    }
}
