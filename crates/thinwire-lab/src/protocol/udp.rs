//! A model of plain UDP: each message in its own datagram, no recovery.

use std::collections::VecDeque;
use std::time::Instant;

use super::{OutMessage, Protocol, SimEndpoint, Transmit};
use crate::workload::ClassSpec;

/// IPv4 + UDP header bytes.
pub const UDP_HEADER: usize = 28;

/// A datagram carrying one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpDatagram {
    /// Message id.
    pub id: u64,
    /// Damaged on the wire (fails the checksum, dropped).
    pub corrupted: bool,
}

dropped_when_corrupted!(UdpDatagram);

/// One UDP socket talking to one peer.
#[derive(Debug, Default)]
pub struct UdpEndpoint {
    out: VecDeque<(UdpDatagram, u32)>,
    delivered: VecDeque<u64>,
    seen_last: Option<u64>,
}

impl SimEndpoint for UdpEndpoint {
    type Packet = UdpDatagram;

    fn send(&mut self, _now: Instant, _peer: u32, msg: &OutMessage) {
        self.out.push_back((
            UdpDatagram {
                id: msg.id,
                corrupted: false,
            },
            msg.size,
        ));
    }

    fn receive(&mut self, _now: Instant, _peer: u32, packet: UdpDatagram) {
        // A duplicated datagram is handed to the application once more; the
        // simulator counts a message once, so only drop exact back-to-back
        // duplicates here to keep the queue short.
        if !packet.corrupted && self.seen_last != Some(packet.id) {
            self.seen_last = Some(packet.id);
            self.delivered.push_back(packet.id);
        }
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit<UdpDatagram>> {
        let (d, size) = self.out.pop_front()?;
        Some(Transmit {
            peer: 0,
            packet: d,
            wire_bytes: UDP_HEADER + size as usize,
            payload_bytes: Some(size as usize),
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_delivered(&mut self) -> Option<(u32, u64)> {
        self.delivered.pop_front().map(|id| (0, id))
    }
}

/// The UDP model as a [`Protocol`].
#[derive(Debug, Clone, Copy, Default)]
pub struct UdpModel;

impl Protocol for UdpModel {
    type Packet = UdpDatagram;
    type Endpoint = UdpEndpoint;

    fn name(&self) -> String {
        "udp-model".into()
    }
    fn model(&self) -> bool {
        true
    }
    fn server_per_client(&self) -> bool {
        true
    }
    fn new_client(
        &self,
        _c: u32,
        _n: u32,
        _seed: u64,
        _now: Instant,
        _classes: &[ClassSpec],
    ) -> UdpEndpoint {
        UdpEndpoint::default()
    }
    fn new_server(
        &self,
        _n: u32,
        _seed: u64,
        _now: Instant,
        _classes: &[ClassSpec],
    ) -> UdpEndpoint {
        UdpEndpoint::default()
    }
}
