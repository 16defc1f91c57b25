//! Wu et al.'s content-based strategies (MTAP 2009, Sec. 4.2 and Table 4)
//! built from the TCP model: "P_MRO uses three TCP streams" (Sec. 5.5).
//!
//! A [`TcpStreams`] endpoint holds one [`TcpConn`] per kind of content
//! (moves, attacks, talk: the channels of [`Mapping::Pmro`]), each with its
//! own sequence space, congestion window and timers, so that a loss on one
//! stream holds back only that stream's messages. What each stream promises
//! follows the strategy ([`Mapping::channels`], the one table of it):
//!
//! | stream kind | built as |
//! |---|---|
//! | reliable, ordered | a plain TCP connection of the model |
//! | reliable, unordered | a TCP connection whose receiver hands a message to the application as soon as every byte of it has arrived, before the holes in front of it are filled (SCTP's unordered chunks; the message boundaries travel with each segment) |
//! | unreliable, unordered | UDP datagrams, one per message, never retransmitted (TCP has no unreliable mode and the paper does not say what carried this stream) |
//!
//! With the same [`TcpConfig`] as the `tcp-model` baseline, the only
//! difference from that baseline is the mapping of content to streams.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::Instant;

use thinwire_netmodel::Corruptible;

use super::{
    add_counter, ChannelSemantics, Counters, Mapping, OutMessage, Protocol, SimEndpoint, TcpConfig,
    TcpConn, TcpSegment, Transmit, UDP_HEADER,
};
use crate::workload::ClassSpec;

/// Streams per endpoint: one per kind of content.
const STREAMS: usize = 3;

/// A packet of a [`StreamsConn`]: a segment of one of its TCP streams, or a
/// datagram of its unreliable stream.
#[derive(Debug, Clone)]
pub enum StreamPacket {
    /// A segment of TCP stream `stream`.
    Tcp {
        /// Stream index.
        stream: u8,
        /// The segment.
        seg: TcpSegment,
        /// Stream offset where each message ending in the segment starts
        /// (`seg.ends` order): the boundaries an unordered receiver needs.
        starts: Vec<u64>,
    },
    /// One unreliable message.
    Datagram {
        /// Message id.
        id: u64,
        /// Damaged on the wire.
        corrupted: bool,
    },
}

impl Corruptible for StreamPacket {
    fn bit_len(&self) -> usize {
        8
    }
    fn flip_bit(&mut self, _bit: usize) {
        match self {
            StreamPacket::Tcp { seg, .. } => seg.corrupted = true,
            StreamPacket::Datagram { corrupted, .. } => *corrupted = true,
        }
    }
}

/// One TCP stream of an endpoint.
#[derive(Debug)]
struct Stream {
    conn: TcpConn,
    unordered: bool,
    /// Sender: next stream offset, and the start of every message by its end.
    next: u64,
    starts: BTreeMap<u64, u64>,
}

/// One endpoint of a strategy built from TCP streams.
#[derive(Debug)]
pub struct StreamsConn {
    prefix: u64,
    /// Stream and kind of each class.
    map: Vec<(u8, ChannelSemantics)>,
    streams: Vec<Stream>,
    datagrams: VecDeque<(u64, u32)>,
    datagrams_sent: u64,
    delivered: VecDeque<u64>,
    /// Every message id handed to the application (an unordered stream hands
    /// a message up on arrival, and its connection again in order later).
    seen: HashSet<u64>,
}

impl StreamsConn {
    /// An endpoint carrying `classes` under `mapping` on TCP streams of
    /// configuration `cfg`.
    pub fn new(cfg: TcpConfig, mapping: Mapping, classes: &[ClassSpec]) -> Self {
        let map = mapping.channels(classes);
        let streams = (0..STREAMS)
            .map(|s| Stream {
                conn: TcpConn::new(cfg, 0),
                unordered: map.iter().any(|&(ch, k)| {
                    usize::from(ch) == s && k == ChannelSemantics::ReliableUnordered
                }),
                next: 0,
                starts: BTreeMap::new(),
            })
            .collect();
        StreamsConn {
            prefix: u64::from(cfg.prefix_bytes),
            map,
            streams,
            datagrams: VecDeque::new(),
            datagrams_sent: 0,
            delivered: VecDeque::new(),
            seen: HashSet::new(),
        }
    }

    /// Unreliable messages sent as datagrams.
    pub fn datagrams_sent(&self) -> u64 {
        self.datagrams_sent
    }

    fn on_segment(&mut self, now: Instant, stream: usize, seg: TcpSegment, starts: &[u64]) {
        let Some(s) = self.streams.get_mut(stream) else {
            return;
        };
        if s.unordered && !seg.corrupted {
            let end = seg.seq + u64::from(seg.len);
            for (&(e, id), &start) in seg.ends.iter().zip(starts) {
                if start >= seg.seq && e <= end && self.seen.insert(id) {
                    self.delivered.push_back(id);
                }
            }
        }
        s.conn.on_segment(now, seg);
        while let Some(id) = s.conn.poll_message() {
            if self.seen.insert(id) {
                self.delivered.push_back(id);
            }
        }
    }
}

impl SimEndpoint for StreamsConn {
    type Packet = StreamPacket;

    fn send(&mut self, _now: Instant, _peer: u32, msg: &OutMessage) {
        let (ch, kind) = self
            .map
            .get(usize::from(msg.class))
            .copied()
            .unwrap_or((0, ChannelSemantics::ReliableOrdered));
        if kind == ChannelSemantics::Unreliable {
            self.datagrams.push_back((msg.id, msg.size));
            return;
        }
        let s = &mut self.streams[usize::from(ch).min(STREAMS - 1)];
        let end = s.next + self.prefix + u64::from(msg.size);
        s.starts.insert(end, s.next);
        s.next = end;
        s.conn.send_message(msg);
    }

    fn receive(&mut self, now: Instant, _peer: u32, packet: StreamPacket) {
        match packet {
            StreamPacket::Tcp {
                stream,
                seg,
                starts,
            } => {
                self.on_segment(now, usize::from(stream), seg, &starts);
            }
            StreamPacket::Datagram { id, corrupted } => {
                if !corrupted && self.seen.insert(id) {
                    self.delivered.push_back(id);
                }
            }
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<StreamPacket>> {
        if let Some((id, size)) = self.datagrams.pop_front() {
            self.datagrams_sent += 1;
            return Some(Transmit {
                peer: 0,
                wire_bytes: UDP_HEADER + size as usize,
                payload_bytes: Some(size as usize),
                packet: StreamPacket::Datagram {
                    id,
                    corrupted: false,
                },
            });
        }
        for (i, s) in self.streams.iter_mut().enumerate() {
            let Some(tx) = s.conn.poll_transmit(now) else {
                continue;
            };
            let starts = tx
                .packet
                .ends
                .iter()
                .map(|&(e, _)| s.starts.get(&e).copied().unwrap_or(e))
                .collect();
            return Some(Transmit {
                peer: 0,
                wire_bytes: tx.wire_bytes,
                payload_bytes: tx.payload_bytes,
                packet: StreamPacket::Tcp {
                    stream: i as u8,
                    seg: tx.packet,
                    starts,
                },
            });
        }
        None
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.streams
            .iter()
            .filter_map(|s| s.conn.next_timeout())
            .min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        for s in &mut self.streams {
            s.conn.on_timeout(now);
        }
    }

    fn poll_delivered(&mut self) -> Option<(u32, u64)> {
        self.delivered.pop_front().map(|id| (0, id))
    }

    fn add_counters(&self, out: &mut Counters) {
        for s in &self.streams {
            s.conn.add_counters(out);
        }
        add_counter(out, "udp_datagrams", self.datagrams_sent as f64);
    }
}

/// Wu et al.'s P_MRO, P_MR or P_M on TCP streams, as a [`Protocol`]
/// (`tcp-pmro`, `tcp-pmr`, `tcp-pm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpStreams {
    /// The strategy: [`Mapping::Pmro`], [`Mapping::Pmr`] or [`Mapping::Pm`].
    pub mapping: Mapping,
    /// Configuration of every TCP stream (the `tcp-model` baseline's).
    pub config: TcpConfig,
}

impl TcpStreams {
    /// The strategy of `mapping` on streams of the `tcp-model` baseline.
    pub fn new(mapping: Mapping) -> Self {
        TcpStreams {
            mapping,
            config: TcpConfig::default(),
        }
    }
}

impl Protocol for TcpStreams {
    type Packet = StreamPacket;
    type Endpoint = StreamsConn;

    fn name(&self) -> String {
        format!("tcp-{}", self.mapping.as_str())
    }
    fn model(&self) -> bool {
        true
    }
    fn server_per_client(&self) -> bool {
        true
    }
    fn new_client(
        &self,
        _client: u32,
        _clients: u32,
        _seed: u64,
        _now: Instant,
        classes: &[ClassSpec],
    ) -> StreamsConn {
        StreamsConn::new(self.config, self.mapping, classes)
    }
    fn new_server(
        &self,
        _clients: u32,
        _seed: u64,
        _now: Instant,
        classes: &[ClassSpec],
    ) -> StreamsConn {
        StreamsConn::new(self.config, self.mapping, classes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Semantics;
    use std::time::Duration;

    fn classes() -> Vec<ClassSpec> {
        [
            ("move", Semantics::Newest),
            ("attack", Semantics::Unordered),
            ("talk", Semantics::Ordered),
        ]
        .into_iter()
        .map(|(n, s)| ClassSpec {
            name: n.into(),
            semantics: s,
        })
        .collect()
    }

    fn msg(id: u64, class: u16) -> OutMessage {
        OutMessage {
            class,
            ..crate::protocol::test_message(id, 25)
        }
    }

    /// Sends `msgs` (id, class), message `i` at `10 i` ms, from a client to a
    /// server endpoint 50 ms away, drops the client's packets whose index is
    /// in `drop`, runs 3 s, and returns the ids in the order the server
    /// delivered them.
    fn deliver(mapping: Mapping, msgs: &[(u64, u16)], drop: &[usize]) -> Vec<u64> {
        let p = TcpStreams::new(mapping);
        let t0 = Instant::now();
        let mut a = p.new_client(0, 1, 1, t0, &classes());
        let mut b = p.new_server(1, 1, t0, &classes());
        let (mut out, mut k, mut now) = (Vec::new(), 0, t0);
        let one_way = Duration::from_millis(50);
        let mut wire: Vec<(Instant, bool, StreamPacket)> = Vec::new();
        let mut ms = 0u64;
        while ms < 3000 {
            if let Some(&(id, c)) = msgs.get(ms as usize / 10).filter(|_| ms % 10 == 0) {
                a.send(now, 0, &msg(id, c));
            }
            while let Some(tx) = a.poll_transmit(now) {
                if !drop.contains(&k) {
                    wire.push((now + one_way, true, tx.packet));
                }
                k += 1;
            }
            while let Some(tx) = b.poll_transmit(now) {
                wire.push((now + one_way, false, tx.packet));
            }
            let (due, rest): (Vec<_>, Vec<_>) = wire.into_iter().partition(|w| w.0 <= now);
            wire = rest;
            for (_, to_b, pkt) in due {
                if to_b {
                    b.receive(now, 0, pkt);
                } else {
                    a.receive(now, 0, pkt);
                }
            }
            for ep in [&mut a, &mut b] {
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.handle_timeout(now);
                }
            }
            while let Some((_, id)) = b.poll_delivered() {
                out.push(id);
            }
            ms += 1;
            now = t0 + Duration::from_millis(ms);
        }
        out
    }

    #[test]
    fn a_loss_holds_back_only_its_own_stream() {
        // Client packets: move 0, attack 1, talk 2, move 3, 10 ms apart. The first move is lost: under P_MRO
        // the second move waits for its retransmission, the attack and the
        // talk do not.
        let msgs = [(0, 0), (1, 1), (2, 2), (3, 0)];
        let got = deliver(Mapping::Pmro, &msgs, &[0]);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(&got[..2], &[1, 2], "{got:?}");
        let pos = |id| got.iter().position(|&x| x == id).expect("delivered");
        assert!(pos(0) < pos(3), "in order within the move stream: {got:?}");
    }

    #[test]
    fn unordered_streams_deliver_past_a_hole_and_unreliable_moves_are_not_resent() {
        // P_MR: two attacks, the first lost: the second is delivered before
        // the first's retransmission (unordered), and both arrive.
        let got = deliver(Mapping::Pmr, &[(0, 1), (1, 1)], &[0]);
        assert_eq!(got, vec![1, 0]);
        // The same on an ordered stream (P_MRO) keeps the order.
        let got = deliver(Mapping::Pmro, &[(0, 1), (1, 1)], &[0]);
        assert_eq!(got, vec![0, 1]);
        // P_M: moves are datagrams; a lost one is never resent.
        let got = deliver(Mapping::Pm, &[(0, 0), (1, 0), (2, 1)], &[0]);
        assert_eq!(got, vec![1, 2]);
    }
}
