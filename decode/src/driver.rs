//! Drives the dissection: capture packets through TCP reassembly into the
//! per-connection decoders, events out in capture order.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::connection::{ConnectionDecoder, Ctx};
use super::event::{Connection, Event, Note, NoteKind, Severity};
use super::summary::{ConnectionSummary, Summary};
use capture::net;
use capture::pcap::{CaptureReader, Packet, PcapError, Timestamp};
use capture::reassembly::{Direction, FlowEntry, FlowTable, Lookup, Orientation, SeqNumber};

/// Packet-at-a-time dissector. Feed [`Decoder::packet`] in capture order,
/// then [`Decoder::finish`].
#[derive(Debug, Default)]
pub struct Decoder {
    flows: FlowTable<ConnectionDecoder>,
    summary: Summary,
    last: (Timestamp, u64),
    /// Events of the packet being processed, before the client side is sure.
    pending: Vec<Event>,
}

fn flip(ev: &mut Event) {
    let fix = |d: &mut Direction| *d = d.reverse();
    match ev {
        Event::Mpa(f) => fix(&mut f.at.direction),
        Event::Fpdu(f) => fix(&mut f.at.direction),
        Event::Note(n) => fix(&mut n.at.direction),
        Event::Negotiated(n) => n.markers.swap(0, 1),
        Event::Connection(_) => {}
    }
}

impl Decoder {
    /// A decoder before the first packet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Dissects one captured packet.
    pub fn packet(&mut self, p: &Packet<'_>, sink: &mut dyn FnMut(&Event)) {
        self.summary.packets += 1;
        self.last = (p.timestamp, p.number);
        let seg = match net::tcp_segment(p.link, p.data) {
            Ok(seg) => seg,
            Err(skip) => {
                *self
                    .summary
                    .skipped
                    .entry(skip.label().to_string())
                    .or_default() += 1;
                return;
            }
        };
        self.summary.tcp_segments += 1;
        let (index, dir) = match self.flows.lookup(&seg, ConnectionDecoder::default) {
            Lookup::Full => return,
            Lookup::Existing(i, d) | Lookup::New(i, d) => (i, d),
            Lookup::Replaced { old, new, dir } => {
                self.finish_connection(old, sink);
                (new, dir)
            }
        };
        let Some(entry) = self.flows.entry_mut(index) else {
            return;
        };
        let ctx = Ctx {
            time: p.timestamp,
            frame: p.number,
            connection: entry.number,
        };
        let FlowEntry { streams, state, .. } = &mut *entry;
        let pending = &mut self.pending;
        streams[dir.index()].segment(
            SeqNumber(seg.seq),
            seg.flags.syn(),
            seg.flags.fin(),
            seg.payload,
            seg.payload_len,
            &mut |ev| state.on_stream(&ctx, dir, ev, pending),
        );
        if seg.flags.rst() {
            entry.reset = true;
        }
        self.settle_roles(index);
        self.flush(index, sink);
    }

    /// Swaps client and server when the handshake was not seen and the MPA
    /// Request came from the side first taken as the server.
    fn settle_roles(&mut self, index: usize) {
        let Some(entry) = self.flows.entry_mut(index) else {
            return;
        };
        if !entry.state.roles_reversed {
            return;
        }
        if entry.orientation == Orientation::Handshake {
            // The SYN says otherwise: report it, do not swap.
            entry.state.roles_reversed = false;
            if let Some(at) = entry.state.dirs.iter().find_map(|d| d.frame).map(|f| f.at) {
                self.pending.push(Event::Note(Note {
                    at,
                    severity: Severity::Warning,
                    kind: NoteKind::RolesReversed,
                }));
            }
            return;
        }
        let server = entry.server();
        if entry.decide_client(server) {
            entry.state.swap();
            self.pending.iter_mut().for_each(flip);
        }
    }

    /// Emits the pending events, announcing the connection first.
    fn flush(&mut self, index: usize, sink: &mut dyn FnMut(&Event)) {
        let Some(entry) = self.flows.entry_mut(index) else {
            return;
        };
        if !entry.state.announced && (entry.state.saw_data() || !self.pending.is_empty()) {
            entry.state.announced = true;
            sink(&Event::Connection(Connection {
                number: entry.number,
                client: entry.client(),
                server: entry.server(),
                handshake_seen: entry.orientation == Orientation::Handshake,
                time: self.last.0,
                frame: self.last.1,
            }));
        }
        for ev in self.pending.drain(..) {
            sink(&ev);
        }
    }

    /// End of a connection (capture end, or its address pair reused).
    fn finish_connection(&mut self, index: usize, sink: &mut dyn FnMut(&Event)) {
        let (time, frame) = self.last;
        let Some(entry) = self.flows.entry_mut(index) else {
            return;
        };
        if entry.state.finished {
            return;
        }
        entry.state.finished = true;
        let ctx = Ctx {
            time,
            frame,
            connection: entry.number,
        };
        let FlowEntry { streams, state, .. } = &mut *entry;
        let pending = &mut self.pending;
        for dir in Direction::BOTH {
            streams[dir.index()].finish(&mut |ev| state.on_stream(&ctx, dir, ev, pending));
        }
        for dir in Direction::BOTH {
            state.dirs[dir.index()].summary.tcp = *streams[dir.index()].stats();
        }
        state.finish(&ctx, pending);
        self.settle_roles(index);
        self.flush(index, sink);
    }

    /// Finishes every connection and returns the totals.
    pub fn finish(mut self, sink: &mut dyn FnMut(&Event)) -> Summary {
        for index in 0..self.flows.entries().len() {
            self.finish_connection(index, sink);
        }
        self.summary.untracked_segments = self.flows.untracked_segments();
        self.summary.connections = self
            .flows
            .entries()
            .iter()
            .map(|e| ConnectionSummary {
                number: e.number,
                client: e.client(),
                server: e.server(),
                kind: e.state.kind(),
                mpa_rev: e.state.dirs.iter().find_map(|d| d.frame.map(|f| f.rev)),
                crc: e.state.negotiated.map(|n| n.crc),
                directions: [
                    e.state.dirs[0].summary.clone(),
                    e.state.dirs[1].summary.clone(),
                ],
                errors: e.state.errors,
            })
            .collect();
        self.summary
    }
}

/// Dissects a whole capture from `reader`. A capture that cannot be read to
/// its end still yields everything before the damage; the error is in
/// [`Summary::capture_error`].
pub fn decode<R: Read>(reader: R, sink: &mut dyn FnMut(&Event)) -> Summary {
    let mut capture = match CaptureReader::new(reader) {
        Ok(c) => c,
        Err(e) => {
            return Summary {
                capture_error: Some(e),
                ..Summary::default()
            }
        }
    };
    let mut decoder = Decoder::new();
    decoder.summary.format = Some(capture.format());
    let mut error = None;
    loop {
        match capture.next_packet() {
            Ok(Some(p)) => decoder.packet(&p, sink),
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let mut summary = decoder.finish(sink);
    summary.capture_error = error;
    summary
}

/// [`decode`] of the file at `path`.
pub fn decode_path(path: &Path, sink: &mut dyn FnMut(&Event)) -> Summary {
    match File::open(path) {
        Ok(f) => decode(BufReader::new(f), sink),
        Err(e) => Summary {
            capture_error: Some(PcapError::Io(e)),
            ..Summary::default()
        },
    }
}
