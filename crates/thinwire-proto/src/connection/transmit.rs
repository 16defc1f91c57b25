//! Building the connection's next datagram: handshake packets, ACKs, retransmissions, new data
//! and redundant bundling, in that order of priority.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;

use super::active::Pending;
use super::{Connection, Side, State};
use crate::recovery::{ChunkRef, SentPacket};
use crate::stamp::Stamp;
use crate::wire::{self, AckFrame, Fragment, LongPacket, ShortHeader};

/// Where a chunk placed in a packet came from (for statistics).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    First,
    Retransmit,
    Bundle,
    /// A copy the repair policy scheduled.
    Copy,
}

impl Connection {
    /// Writes the next datagram into `buf` (cleared first) and returns its destination.
    pub(crate) fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        buf.clear();
        // the moment the packet was written, if its writer made it already
        let mut at = None;
        let to = match &self.state {
            State::Closed => None,
            State::AwaitingChallenge | State::AwaitingAccept => {
                self.write_handshake(now, buf).then_some(self.remote)
            }
            State::Draining(d) => {
                if self.due.close {
                    let (code, reason) = (d.close.code, d.close.reason.clone());
                    self.write_close(now, code, &reason, buf)
                        .then_some(self.remote)
                } else {
                    None
                }
            }
            State::Established | State::Closing { .. } => {
                if self.due.accept && self.side == Side::Server {
                    self.write_accept(buf).then_some(self.remote)
                } else if let Some(to) = self.write_path_packet(now, buf) {
                    Some(to)
                } else {
                    at = self.write_data(now, buf);
                    at.map(|_| self.remote)
                }
            }
        };
        let to = to?;
        self.stats.udp.packets_sent += 1;
        self.stats.udp.bytes_sent += buf.len() as u64;
        self.last_tx = at.unwrap_or_else(|| self.timers.stamp(now));
        // what carried data said so already (`write_data`, `write_shard`)
        self.rest.on_packet(false);
        self.update_timers();
        Some(to)
    }

    fn write_handshake(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if !self.due.handshake {
            return false;
        }
        let hs = &self.handshake;
        match &self.state {
            State::AwaitingChallenge => {
                LongPacket::Hello {
                    version: wire::VERSION,
                    src_cid: self.local_cid,
                    instance: hs.instance,
                    nonce: hs.nonce,
                }
                .encode(buf);
                tracing::trace!(remote = %self.remote, cid = %self.local_cid, "Hello sent");
            }
            State::AwaitingAccept => {
                let Some(connect) = hs.client.as_ref().and_then(|c| c.connect.as_ref()) else {
                    return false;
                };
                buf.extend_from_slice(connect);
                tracing::trace!(remote = %self.remote, cid = %self.local_cid, "Connect sent");
            }
            _ => return false,
        }
        self.due.handshake = false;
        if let Some(c) = self.handshake.client.as_mut() {
            c.sent_at = Some(now);
        }
        true
    }

    fn write_accept(&mut self, buf: &mut Vec<u8>) -> bool {
        self.due.accept = false;
        let Some(accept) = &self.accept_packet else {
            return false;
        };
        buf.extend_from_slice(accept);
        true
    }

    /// Seals the packet in `buf` (header of `header_len` bytes, then frames) for `pn`.
    pub(super) fn seal(&mut self, pn: u64, header_len: usize, buf: &mut Vec<u8>) {
        if let Some(keys) = &mut self.keys {
            keys.seal(pn, buf, header_len);
        }
    }

    pub(super) fn write_header(&mut self, buf: &mut Vec<u8>) -> Option<u64> {
        let cid = self.remote_cid?;
        let pn = self.flow.next_pn;
        let pn_len = wire::pn_encode_len(pn, self.flow.recovery.sent.largest_acked());
        ShortHeader::encode(&cid, pn, pn_len, buf);
        Some(pn)
    }

    /// An ACK frame, written at moment `now`.
    fn write_ack(&mut self, now: Stamp, buf: &mut Vec<u8>) {
        // a delay below the timer granularity is reported as none: the peer's timers cannot
        // resolve it, and an ACK without delay fits the short form
        let delay =
            Some(self.flow.rx.ack_delay(now)).filter(|d| *d >= self.config.timer_granularity);
        if let Some(ack) = AckFrame::from_ranges(
            self.flow.rx.ranges_desc(),
            delay.map_or(0, |d| d.as_micros() as u64),
            self.config.ack_frame_ranges,
        ) {
            wire::encode_ack(&ack, buf);
        }
        if !self.flow.rx.changed && self.flow.rx.repeat_armed {
            self.stats.live().recovery.ack_repeats += 1;
        }
        self.flow.rx.on_ack_sent();
    }

    fn write_close(&mut self, now: Instant, code: u64, reason: &[u8], buf: &mut Vec<u8>) -> bool {
        let Some(pn) = self.write_header(buf) else {
            return false;
        };
        let header_len = buf.len();
        self.flow.next_pn += 1;
        // the reason is cut so that the packet fits one datagram
        let room = self.frame_room().saturating_sub(header_len + 20);
        wire::encode_close(code, &reason[..reason.len().min(room)], buf);
        self.seal(pn, header_len, buf);
        self.due.close = false;
        self.close.last_sent = self.timers.stamp(now);
        true
    }

    fn has_new_data(&mut self, now: Instant) -> bool {
        let queues = &self.active.get().queues;
        !queues.retransmit.is_empty() || !queues.pending.is_empty() || self.due_copy(now).is_some()
    }

    /// A packet carrying one deadline shard (and an ACK if one is due). Shards are not held by
    /// the congestion window: the stage policy already decided how many the deadline needs.
    fn write_shard(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Stamp> {
        let pn = self.write_header(buf)?;
        let header_len = buf.len();
        let at = self.timers.stamp(now);
        let wrote_ack = self.flow.rx.changed || self.flow.rx.ack_due(|| at);
        if wrote_ack {
            self.write_ack(at, buf);
        }
        let room = self.frame_room().saturating_sub(buf.len());
        let shard = self
            .deadline
            .as_mut()
            .and_then(|d| d.tx.write_next(now, buf, room));
        let Some(shard) = shard else {
            buf.clear();
            if wrote_ack {
                // the ACK written above goes with the next packet instead (its bookkeeping
                // counted it sent, and no timer would bring it back)
                self.flow.rx.immediate = true;
            }
            return None;
        };
        self.flow.next_pn += 1;
        self.seal(pn, header_len, buf);
        self.rest.on_packet(true);
        self.flow.recovery.sent.on_sent(
            pn,
            SentPacket {
                time_sent: at,
                lost: false,
                repair: false,
                copy: false,
                indicated_at: Stamp::NONE,
                chunks: Vec::new(),
                shard: Some(shard),
            },
        );
        Some(at)
    }

    /// A packet of data, ACK or PING, if any is due: the moment it was written.
    fn write_data(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Stamp> {
        if self.deadline.as_ref().is_some_and(|d| d.tx.has_pending()) {
            if let Some(at) = self.write_shard(now, buf) {
                return Some(at);
            }
        }
        let want_ping = self.due.ping || self.due.probe;
        // a resting connection (nothing in flight, no ACK owed: `trim`) with nothing new to
        // send sends nothing, and is not unpacked to find that out
        if !want_ping && self.flow.is_parked() && !self.has_new_data(now) {
            return None;
        }
        let recovery = &self.flow.recovery;
        let may_send_data = self.due.probe || recovery.cc.can_send(recovery.sent.in_flight());
        let want_data = may_send_data && self.has_new_data(now);
        let rx = &self.flow.rx;
        let want_ack = rx.ack_due(|| self.timers.stamp(now)) || (want_data && rx.changed);
        if !want_data && !want_ack && !want_ping {
            return None;
        }
        let pn = self.write_header(buf)?;
        let at = self.timers.stamp(now);
        let header_len = buf.len();
        // one byte kept for a COPIES marker
        let max = self.frame_room().saturating_sub(1);
        // an ACK rides along when there is news, and (ACK redundancy) in the next packets
        // after news even without
        let rx = &self.flow.rx;
        let repeat = self.config.ack_redundancy && rx.repeats_left > 0;
        let news = rx.changed && rx.unacked_eliciting > 0;
        let rides = repeat || rx.ack_for_numbering();
        if want_ack || rx.changed || (rides && (want_data || want_ping)) {
            self.write_ack(at, buf);
        }
        let mut chunks = self.flow.recovery.sent.chunk_list();
        let mut repair = false;
        if let Some(a) = self.active.made() {
            a.last_message = None;
            a.copies_placed = 0;
        }
        if may_send_data {
            repair |= self.fill_from_queue((now, pn), true, buf, max, &mut chunks);
            self.fill_from_queue((now, pn), false, buf, max, &mut chunks);
            repair |= self.fill_copies(now, pn, buf, max, &mut chunks);
            if !chunks.is_empty() && self.config.bundling && self.is_thin() {
                self.bundle(now, pn, buf, max, &mut chunks);
            }
        }
        let mut ack_eliciting = !chunks.is_empty();
        self.rest.on_packet(ack_eliciting);
        // the message frame that ends the packet takes the last-frame form (no length, a seq8
        // for a full-form frame): its payload runs to the end
        if let Some((start, header, len)) = self.active.made().and_then(|a| a.last_message.take()) {
            wire::message_to_last(buf, start, &header, len);
        }
        let only_copies = ack_eliciting
            && self
                .active
                .made()
                .is_some_and(|a| a.copies_placed == chunks.len());
        if only_copies {
            wire::insert_copies(buf, header_len);
        }
        if !ack_eliciting && want_ping {
            wire::encode_ping(buf);
            ack_eliciting = true;
        }
        self.flow.next_pn += 1;
        self.seal(pn, header_len, buf);
        if ack_eliciting {
            self.due.ping = false;
            self.due.probe = false;
            // only ack-eliciting packets are recorded (an ACK-only packet is never acknowledged)
            let packet = SentPacket {
                time_sent: at,
                lost: false,
                repair,
                copy: false,
                indicated_at: Stamp::NONE,
                chunks,
                shard: None,
            };
            if only_copies {
                self.flow.recovery.sent.on_sent_copies(pn, packet);
            } else {
                self.flow.recovery.sent.on_sent(pn, packet);
            }
        } else {
            self.flow.recovery.sent.recycle(chunks);
            if news {
                self.maybe_repeat_ack(now, buf.len());
            }
        }
        Some(at)
    }

    /// ACK redundancy for an ACK-only packet of `len` bytes that acknowledged new
    /// ack-eliciting packets: it goes once more, half the ACK delay later (inside the margin
    /// the peer's timeout allows for this side's ACK delay), when the packet it acknowledges
    /// is worth more than it: `incoming loss rate x acknowledged packet's bytes >= len`, the
    /// expected bytes of the spurious retransmission a lost ACK would cause (at least one
    /// copy) against the bytes of the repeat.
    fn maybe_repeat_ack(&mut self, now: Instant, len: usize) {
        let worth = self.flow.rx.loss() * self.flow.rx.largest_len as f64;
        if self.config.ack_redundancy && worth >= len as f64 {
            self.flow.rx.repeat_armed = true;
            self.flow.rx.deadline = self.timers.stamp(now).after(self.config.max_ack_delay / 2);
        }
    }

    /// Whether chunk `c` still awaits its acknowledgement (its message neither acknowledged nor
    /// replaced).
    pub(super) fn chunk_unacked(&self, c: ChunkRef) -> bool {
        self.send
            .get(c.channel as usize)
            .and_then(|ch| ch.frag(c.seq, c.frag))
            .is_some_and(|f| !f.acked)
    }

    /// Places chunks from the retransmit queue (`retransmit`) or the new-data queue, in order,
    /// while they fit. Returns whether any was placed.
    fn fill_from_queue(
        &mut self,
        (now, pn): (Instant, u64),
        retransmit: bool,
        buf: &mut Vec<u8>,
        max: usize,
        chunks: &mut Vec<ChunkRef>,
    ) -> bool {
        let origin = if retransmit {
            Origin::Retransmit
        } else {
            Origin::First
        };
        let mut placed = false;
        loop {
            if chunks.len() >= wire::MAX_MESSAGES_PER_PACKET {
                return placed;
            }
            // taken off its queue, and put back if it does not fit
            let Some(queues) = self.active.made().map(|a| &mut a.queues) else {
                return placed;
            };
            let next = if retransmit {
                queues.retransmit.pop_front().map(|chunk| Pending {
                    chunk,
                    payload: None,
                })
            } else {
                queues.pending.pop_front()
            };
            let Some(Pending { chunk: c, payload }) = next else {
                return placed;
            };
            let fits = match &payload {
                // an unreliable message, sent once and whole
                Some(data) => self.place_unreliable(c, data, buf, max),
                // a chunk whose message was acknowledged or replaced meanwhile is dropped unsent
                None if !self.chunk_unacked(c) => continue,
                None => self.place_chunk((now, pn), c, origin, buf, max),
            };
            if !fits {
                let queues = &mut self.active.get_mut().queues;
                if retransmit {
                    queues.retransmit.push_front(c);
                } else {
                    queues.pending.push_front(Pending { chunk: c, payload });
                }
                return placed;
            }
            chunks.push(c);
            placed = true;
        }
    }

    /// The repair policy's copies that are due, in a packet other than the one that carried
    /// their chunk last. Returns whether any was placed.
    fn fill_copies(
        &mut self,
        now: Instant,
        pn: u64,
        buf: &mut Vec<u8>,
        max: usize,
        chunks: &mut Vec<ChunkRef>,
    ) -> bool {
        let mut placed = false;
        while let Some(c) = self.due_copy(now) {
            let same_packet = chunks.contains(&c)
                || self.send[c.channel as usize]
                    .frag(c.seq, c.frag)
                    .is_some_and(|f| f.last_pn == Some(pn));
            if same_packet
                || chunks.len() >= wire::MAX_MESSAGES_PER_PACKET
                || !self.place_chunk((now, pn), c, Origin::Copy, buf, max)
            {
                break;
            }
            chunks.push(c);
            placed = true;
            self.active.get_mut().queues.copies.pop_front();
        }
        placed
    }

    /// Redundant data bundling: unacknowledged reliable chunks, oldest first, ride again. On a
    /// channel with a repair target only the copies its policy scheduled ride (early: the
    /// packet saves them a packet of their own); on one without, every unacknowledged chunk
    /// rides up to `bundle_max_copies` times.
    fn bundle(
        &mut self,
        now: Instant,
        pn: u64,
        buf: &mut Vec<u8>,
        max: usize,
        chunks: &mut Vec<ChunkRef>,
    ) {
        let budget_end = buf.len() + self.config.bundle_budget;
        let limit = max.min(budget_end);
        // drop acknowledged entries from the front
        while let Some(&c) = self.active.get().queues.unacked_order.front() {
            if self.chunk_unacked(c) {
                break;
            }
            self.active.get_mut().queues.unacked_order.pop_front();
        }
        // by index: placing a chunk needs `&mut self`, and copying the queue for every packet
        // would allocate on the hot path
        for i in 0..self.active.get().queues.unacked_order.len() {
            let c = self.active.get().queues.unacked_order[i];
            if buf.len() >= limit || chunks.len() >= wire::MAX_MESSAGES_PER_PACKET {
                break;
            }
            let Some(f) = self.send[c.channel as usize].frag(c.seq, c.frag) else {
                continue;
            };
            // a channel with a repair target bundles only the copies its policy asks for
            let plain = self.send[c.channel as usize].repair.is_none()
                && f.bundled < self.config.bundle_max_copies;
            if f.acked
                || f.queued
                || f.last_pn == Some(pn)
                || chunks.contains(&c)
                || !(plain || f.copies_due > 0)
            {
                continue;
            }
            let origin = if f.copies_due > 0 {
                Origin::Copy
            } else {
                Origin::Bundle
            };
            if self.place_chunk((now, pn), c, origin, buf, limit) {
                chunks.push(c);
            }
        }
    }

    /// Encodes unreliable message `payload`, chunk `c`, if it fits under `limit` (the caller
    /// took it off the new-data queue: it is sent once).
    fn place_unreliable(
        &mut self,
        c: ChunkRef,
        payload: &Bytes,
        buf: &mut Vec<u8>,
        limit: usize,
    ) -> bool {
        let ch = &mut self.send[c.channel as usize];
        let active = self.active.get_mut();
        let len = payload.len();
        let header = wire::MessageHeader {
            channel: c.channel,
            kind: ch.kind,
            seq: c.seq,
            compact_seq: wire::seq_compact_ok(c.seq, ch.receiver_low(), ch.next_seq),
            key: None,
            fragment: None,
        };
        if buf.len() + wire::message_frame_len(&header, len) > limit {
            return false;
        }
        active.last_message = Some((buf.len(), header, len));
        wire::encode_message(&header, payload, buf);
        ch.sent_unsent(len);
        let s = self.stats.live();
        s.frames.first += 1;
        s.payload_bytes.first += len as u64;
        true
    }

    /// Encodes one chunk if it fits under `limit`; updates its state and the statistics, and
    /// schedules the copies the repair policy wants for a first transmission or a
    /// retransmission.
    fn place_chunk(
        &mut self,
        (now, pn): (Instant, u64),
        c: ChunkRef,
        origin: Origin,
        buf: &mut Vec<u8>,
        limit: usize,
    ) -> bool {
        let ch = &mut self.send[c.channel as usize];
        let kind = ch.kind;
        let compact = wire::seq_compact_ok(c.seq, ch.receiver_low(), ch.next_seq);
        let Some(msg) = ch.msgs.get_mut(c.seq) else {
            return false;
        };
        let count = msg.frag_count();
        let fragment = (count > 1).then_some(Fragment {
            index: c.frag,
            count,
        });
        let payload = msg.frag_payload(c.frag);
        let payload_len = payload.len();
        let header = wire::MessageHeader {
            channel: c.channel,
            kind,
            seq: c.seq,
            compact_seq: compact,
            key: msg.key,
            fragment,
        };
        if buf.len() + wire::message_frame_len(&header, payload_len) > limit {
            return false;
        }
        self.active.get_mut().last_message = Some((buf.len(), header, payload_len));
        wire::encode_message(&header, payload, buf);
        let f = &mut msg.frags[c.frag as usize];
        // a copy is not the transmission that recovery follows: the packet that carried the
        // stage's first copy stays the one whose loss queues the data again (a packet of
        // copies is never declared lost)
        if origin != Origin::Copy {
            f.last_pn = Some(pn);
        }
        f.queued = false;
        let bytes = payload_len as u64;
        match origin {
            Origin::First => {
                f.stage = 1;
                msg.sent_frags += 1;
                msg.first_sent.get_or_insert(now);
                let s = self.stats.live();
                s.frames.first += 1;
                s.payload_bytes.first += bytes;
                // (unreliable messages are placed by `place_unreliable`)
                self.active.get_mut().queues.unacked_order.push_back(c);
                self.schedule_copies(now, c, 1);
            }
            Origin::Retransmit => {
                f.stage = f.stage.saturating_add(1);
                let stage = f.stage;
                let s = self.stats.live();
                s.frames.retransmitted += 1;
                s.payload_bytes.retransmitted += bytes;
                self.schedule_copies(now, c, stage);
            }
            Origin::Copy => {
                f.copies_due = f.copies_due.saturating_sub(1);
                self.active.get_mut().copies_placed += 1;
                let s = self.stats.live();
                s.recovery.repair_copies += 1;
                s.payload_bytes.copies += bytes;
            }
            Origin::Bundle => {
                f.bundled = f.bundled.saturating_add(1);
                let s = self.stats.live();
                s.frames.bundled += 1;
                s.payload_bytes.bundled += bytes;
            }
        }
        true
    }
}
