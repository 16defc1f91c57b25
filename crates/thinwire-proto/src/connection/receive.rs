//! Incoming short-header packets: one walk validates every frame before any is applied, then
//! acknowledgements, messages, deadline shards and CLOSE take effect.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;

use super::{Connection, State};
use crate::channel::{RecvChannel, RecvOutcome};
use crate::crypto::PathKey;
use crate::deadline::ShardOutcome;
use crate::error::DisconnectReason;
use crate::event::{Event, Message};
use crate::stamp::Stamp;
use crate::wire::{self, Frame};

/// Packets carrying only unreliable messages acknowledged together, at most (sooner when the
/// ACK delay runs out, data goes back, or a packet arrives out of order).
pub(crate) const UNRELIABLE_ACK_EVERY: u32 = 8;

/// What the walk over a packet's frames found.
#[derive(Debug, Default)]
struct Inspection {
    /// A message frame frees receive-buffer space: the next in-order message of its channel,
    /// or one without a sequence number.
    frees_buffer: bool,
    ack_eliciting: bool,
    /// An ack-eliciting frame other than an unreliable message: reliable data, a PING, a
    /// path frame, a shard. Packets with only unreliable messages are acknowledged lazily.
    prompt_ack: bool,
    has_shard: bool,
    /// Fragments of messages not yet under reassembly: each would start a partial message.
    new_partials: usize,
    /// Message and shard frames (at most `wire::MAX_MESSAGES_PER_PACKET`).
    messages: usize,
}

/// An emptied frame list, for the frames of another packet: the same allocation (the
/// standard library collects a vector into itself in place when the element layout is the
/// same), with the borrow of the old packet gone.
#[allow(clippy::unnecessary_filter_map)] // the closure changes the element's lifetime
fn reuse<'b>(mut frames: Vec<Frame<'_>>) -> Vec<Frame<'b>> {
    frames.clear();
    frames.into_iter().filter_map(|_| None).collect()
}

/// A packet's opened payload and, once a message needed it, one shared copy of it: every
/// message of the packet is a slice of that copy (one allocation per packet, none per
/// message). A packet of at most two message or shard frames copies each message on its own
/// instead: one allocation each, where sharing costs two (the copy and the count shared
/// between its slices) and keeps the whole packet alive for as long as the application holds
/// either message.
struct SharedPayload<'a> {
    payload: &'a [u8],
    bytes: Option<Bytes>,
    /// Copy each message on its own (the packet holds at most [`COPY_ALONE`] message or shard
    /// frames).
    alone: bool,
}

/// Up to this many message or shard frames in a packet, each message is copied on its own
/// rather than shared.
const COPY_ALONE: usize = 2;

impl SharedPayload<'_> {
    /// `part` (a sub-slice of the payload) as a slice of the shared copy, or a copy of its own.
    fn slice(&mut self, part: &[u8]) -> Bytes {
        let offset = (part.as_ptr() as usize).wrapping_sub(self.payload.as_ptr() as usize);
        if self.alone
            || offset
                .checked_add(part.len())
                .is_none_or(|end| end > self.payload.len())
        {
            // few messages, or not from this payload (never happens): a copy of its own
            return Bytes::copy_from_slice(part);
        }
        let payload = self.payload;
        let whole = self
            .bytes
            .get_or_insert_with(|| Bytes::copy_from_slice(payload));
        whole.slice(offset..offset + part.len())
    }
}

/// A short-header packet as the endpoint hands it over: parsed header fields, the header
/// bytes (the associated data of the AEAD) and the sealed body, which is opened in place.
#[derive(Debug)]
pub(crate) struct IncomingPacket<'a> {
    /// Where it came from.
    pub(crate) from: SocketAddr,
    /// The truncated packet number and its length in bytes.
    pub(crate) pn_truncated: u64,
    pub(crate) pn_len: usize,
    /// The header bytes.
    pub(crate) header: &'a [u8],
    /// Everything after the header: frames then the tag.
    pub(crate) body: &'a mut [u8],
    /// Bytes the endpoint's memory budget lets this connection add now (what its fair share
    /// or the endpoint's free room allows); data that would add more and frees nothing is
    /// refused like data over `recv_buffer`.
    pub(crate) budget_room: usize,
    /// The endpoint's key for PATH_CHALLENGE data, should the packet come from a new address.
    pub(crate) path_key: &'a PathKey,
}

impl Connection {
    /// A short-header packet for this connection. Returns false when it does not
    /// authenticate (forged, damaged, or for keys this side does not have): nothing in it was
    /// used and no state changed.
    pub(crate) fn handle_packet(&mut self, now: Instant, packet: IncomingPacket<'_>) -> bool {
        let datagram_len = packet.header.len() + packet.body.len();
        if !self.state.is_data() && !matches!(self.state, State::Draining { .. }) {
            // a client still in its handshake cannot open it yet; the data will come again
            return true;
        }
        // read without unpacking a resting connection: a forged packet must not wake it
        let largest = self.flow.peek(|f| f.rx.largest());
        let Some(keys) = &mut self.keys else {
            return false;
        };
        let pn = wire::pn_decode(packet.pn_truncated, packet.pn_len, largest);
        let at = self.timers.stamp(now);
        let Some(len) = keys.open(at, pn, (packet.header, packet.body), largest) else {
            self.stats.live().security.unauthenticated_packets += 1;
            return false;
        };
        let payload = &packet.body[..len];
        // the client has keys, so it has our Accept
        self.accept_packet = None;
        if self.flow.rx.contains(pn) {
            self.stats.udp.duplicate_packets += 1;
            self.flow.rx.immediate = true; // our ACK may have been lost
            self.update_timers();
            return true;
        }
        // Parse and validate the whole packet before acting on any of it.
        let mut frames = reuse(std::mem::take(&mut self.active.get_mut().scratch.frames));
        let Some(seen) = self.inspect(payload, &mut frames) else {
            // authenticated but malformed: a broken or hostile peer, never the network
            self.stats.udp.malformed_packets += 1;
            return true;
        };
        if let State::Draining { .. } = self.state {
            if frames.iter().any(|f| matches!(f, Frame::Close { .. })) {
                // both sides closed: done
                self.drained();
            } else if self.close.last_sent == Stamp::NONE
                || self.timers.elapsed(self.close.last_sent, self.rto(), now)
            {
                self.due.close = true;
            }
            return true;
        }
        let buffered: usize = self.recv.iter().map(|c| c.buffered_bytes).sum();
        let over_bytes = buffered + payload.len() > self.config.recv_buffer
            || payload.len() > packet.budget_room;
        // counted only for packets that would open partial messages (fragments: rare)
        let over_partials = seen.new_partials > 0
            && self
                .recv
                .iter()
                .map(RecvChannel::partial_count)
                .sum::<usize>()
                + seen.new_partials
                > self.config.max_partial_messages;
        if (over_bytes || over_partials) && !seen.frees_buffer {
            // out-of-order data would overflow the receive buffer (or open more partial
            // messages than allowed) and frees none of it: dropped unacknowledged, so an honest
            // sender sends it again later
            self.stats.udp.dropped_buffer_full += 1;
            return true;
        }
        // out of order: out of sequence, or (unless ACKs are paired) while a gap is open below
        let rx = &mut self.flow.rx;
        let gap_open = rx.gap_open() && !self.config.ack_pairs;
        let out_of_order = rx.insert(pn, at) || gap_open;
        let newest = rx.largest() == Some(pn);
        if newest {
            rx.largest_len = datagram_len;
        }
        self.last_rx = at;
        self.rest.on_packet(seen.messages > 0);
        self.stats.udp.packets_received += 1;
        self.stats.udp.bytes_received += datagram_len as u64;
        if packet.from != self.remote {
            self.on_packet_from_new_address(packet.path_key, packet.from, datagram_len, newest);
        }
        self.apply_frames(
            now,
            packet.from,
            (payload, &mut frames),
            &seen,
            (out_of_order, pn, at),
        );
        self.active.get_mut().scratch.frames = reuse(frames);
        true
    }

    /// Applies a validated packet's frames (parsed from `payload`), then decides when to
    /// acknowledge it.
    fn apply_frames<'a>(
        &mut self,
        now: Instant,
        from: SocketAddr,
        (payload, frames): (&'a [u8], &mut Vec<Frame<'a>>),
        seen: &Inspection,
        (out_of_order, pn, at): (bool, u64, Stamp),
    ) {
        let mut completed = false;
        // whether any ack-eliciting frame brought something new (not a copy of data held)
        let mut fresh = false;
        let mut marked = false;
        // the packet's messages share one copy of it, made at the first message (or, few,
        // are copied one by one)
        let mut shared = SharedPayload {
            payload,
            bytes: None,
            alone: seen.messages <= COPY_ALONE,
        };
        for frame in frames.drain(..) {
            match frame {
                Frame::Ack(ack) => self.on_ack_frame((now, at), &ack),
                Frame::Close { code, reason } => {
                    let reason = reason.to_vec();
                    self.events.push_back(Event::Disconnected {
                        reason: DisconnectReason::ClosedByPeer {
                            code,
                            reason: reason.clone(),
                        },
                    });
                    self.enter_draining(now, None, code, reason);
                    self.update_timers();
                    return;
                }
                Frame::Message(m) => {
                    let (delivered, new) = self.on_message_frame(m, &mut shared);
                    completed |= delivered;
                    fresh |= new;
                }
                // acknowledgements of deadline shards are never delayed (seen.has_shard)
                Frame::Shard(f) => {
                    fresh = true;
                    self.on_shard_frame(&f);
                }
                Frame::PathChallenge(data) => {
                    fresh = true;
                    self.on_path_challenge(from, data);
                }
                Frame::PathResponse(data) => {
                    fresh = true;
                    self.on_path_response(data);
                }
                Frame::Ping => fresh = true,
                Frame::Copies => marked = true,
                Frame::Padding(_) => {}
            }
        }
        // A packet marked as repair copies whose messages this side already has: its ACK
        // would only repeat the one that acknowledged them, so it rides with the next ACK. (A
        // copy that delivers a message, its retransmission having been lost, is acknowledged
        // as usual.)
        let repair_copy = marked && !fresh;
        if seen.ack_eliciting && !repair_copy {
            let rx = &mut self.flow.rx;
            rx.changed = true;
            rx.unacked_eliciting += 1;
            // Unreliable data is never retransmitted: its ACK only feeds the RTT, the loss
            // estimate and the congestion window, so it waits up to the ACK delay for data
            // going back to ride on, or for UNRELIABLE_ACK_EVERY such packets.
            let (immediate_rule, every) = if self.config.ack_pairs {
                // paired: an odd packet's ACK covers its even predecessor, which waited (the
                // sender's timeout of an odd packet allows for no ACK delay)
                (seen.has_shard || pn % 2 == 1, u32::MAX)
            } else if seen.prompt_ack {
                let completed = self.config.immediate_ack && completed;
                (seen.has_shard || completed, 2)
            } else {
                (false, UNRELIABLE_ACK_EVERY)
            };
            if out_of_order || immediate_rule || rx.unacked_eliciting >= every {
                rx.immediate = true;
            } else if rx.deadline == Stamp::NONE {
                rx.deadline = at.after(self.config.max_ack_delay);
            }
        }
        self.maybe_finish_close(now);
        self.update_timers();
    }

    /// The one walk over a packet's frames: parses them all into `frames` and says what they
    /// hold, or `None` if the packet is malformed or one an honest peer never sends (it
    /// acknowledges a packet never sent, or a reliable message lands beyond its channel's
    /// receive window, or it carries more than `wire::MAX_MESSAGES_PER_PACKET` messages).
    /// Nothing is applied, so a damaged packet cannot move any state.
    fn inspect<'a>(&self, payload: &'a [u8], frames: &mut Vec<Frame<'a>>) -> Option<Inspection> {
        let mut seen = Inspection::default();
        for f in wire::frames(payload, &self.channels) {
            let f = f.ok()?;
            if matches!(f, Frame::Message(_) | Frame::Shard(_)) {
                seen.messages += 1;
                if seen.messages > wire::MAX_MESSAGES_PER_PACKET {
                    return None;
                }
            }
            match &f {
                Frame::Ack(a) if a.largest >= self.flow.next_pn => return None,
                Frame::Message(m) => {
                    // a channel that received nothing yet is in its initial state
                    let fresh;
                    let ch = match self.recv.get(m.channel as usize) {
                        Some(ch) => ch,
                        None => {
                            let kind = self.channels[m.channel as usize];
                            fresh = RecvChannel::new(kind, self.latest_keys_per_channel());
                            &fresh
                        }
                    };
                    match m.seq {
                        Some(s) => {
                            let seq = wire::seq_expand(s, ch.expected());
                            if !ch.in_window(seq) {
                                return None;
                            }
                            let frag = m.fragment.map(|f| (f.index, f.count));
                            seen.frees_buffer |= ch.frees_buffer(seq, frag);
                            if m.fragment.is_some() && !ch.has_partial(seq) {
                                seen.new_partials += 1;
                            }
                        }
                        None => seen.frees_buffer = true,
                    }
                }
                Frame::Shard(_) => seen.has_shard = true,
                _ => {}
            }
            seen.ack_eliciting |= f.is_ack_eliciting();
            seen.prompt_ack |= match &f {
                Frame::Message(m) => self.channels[m.channel as usize].is_reliable(),
                f => f.is_ack_eliciting(),
            };
            frames.push(f);
        }
        Some(seen)
    }

    /// Returns whether a message was delivered, and whether the frame was not a duplicate.
    fn on_message_frame(
        &mut self,
        m: wire::MessageFrame<'_>,
        shared: &mut SharedPayload<'_>,
    ) -> (bool, bool) {
        let data = shared.slice(m.payload);
        let idx = m.channel as usize;
        self.ensure_recv();
        if m.seq.is_none() && m.fragment.is_none() {
            // an unreliable message (its channel numbers none, and the parser read none): it
            // is delivered as it comes, packets being deduplicated by their numbers (what
            // `RecvChannel::on_frame` does with it, without the list in between)
            self.stats.live().frames.messages_delivered += 1;
            self.events.push_back(Event::Message(Message {
                channel: m.channel,
                seq: None,
                key: None,
                data,
                deadline: None,
            }));
            return (true, true);
        }
        let ch = &mut self.recv[idx];
        let seq = m.seq.map(|s| wire::seq_expand(s, ch.expected()));
        let frag = m.fragment.map(|f| (f.index, f.count));
        let mut out = std::mem::take(&mut self.active.get_mut().scratch.delivered);
        let outcome = ch.on_frame(seq, m.key, frag, data, &mut out);
        match outcome {
            RecvOutcome::Accepted => {}
            RecvOutcome::Duplicate => self.stats.live().frames.duplicate += 1,
            RecvOutcome::Refused => self.stats.live().frames.refused += 1,
        }
        let delivered = !out.is_empty();
        for d in out.drain(..) {
            self.stats.live().frames.messages_delivered += 1;
            self.events.push_back(Event::Message(Message {
                channel: m.channel,
                seq: d.seq,
                key: d.key,
                data: d.data,
                deadline: None,
            }));
        }
        self.active.get_mut().scratch.delivered = out;
        (delivered, outcome != RecvOutcome::Duplicate)
    }

    pub(super) fn on_shard_frame(&mut self, f: &wire::ShardFrame<'_>) {
        let half_rtt = self.flow.recovery.rtt.srtt() / 2;
        match self.deadline_mut().rx.on_shard(f, half_rtt) {
            ShardOutcome::Stored => {}
            ShardOutcome::Duplicate => self.stats.live().frames.duplicate += 1,
            ShardOutcome::Refused => self.stats.live().frames.refused += 1,
            ShardOutcome::Decoded {
                channel,
                data,
                status,
            } => {
                self.stats.live().deadline.delivered += 1;
                if status.late {
                    self.stats.live().deadline.late += 1;
                    if !self.config.deliver_late {
                        return;
                    }
                }
                self.stats.live().frames.messages_delivered += 1;
                self.events.push_back(Event::Message(Message {
                    channel,
                    seq: None,
                    key: None,
                    data,
                    deadline: Some(status),
                }));
            }
        }
    }
}
