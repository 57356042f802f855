//! What went over one connection, both ways, kept to be written as a pcap
//! (TCP/IP framing synthesized around the real bytes, so tshark and
//! `iwarp decode` read it) and to be replayed from one.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use capture::net::build;
use capture::pcap::{frames, LinkType, PcapError, PcapWriter, Timestamp};

/// Which way bytes went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// From the hostile side to the target.
    ToTarget,
    /// From the target.
    FromTarget,
}

/// One thing that happened on the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Data(Vec<u8>),
    Fin,
    Reset,
}

/// Everything one connection carried, in order.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The hostile side's address.
    pub ours: SocketAddr,
    /// The target's.
    pub theirs: SocketAddr,
    /// Whether the hostile side opened the connection.
    pub we_connected: bool,
    start: Instant,
    pub events: Vec<(Duration, Dir, Event)>,
}

/// TCP payload per synthesized segment.
const SEGMENT: usize = 1448;
const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH_ACK: u8 = 0x18;
const FIN_ACK: u8 = 0x11;
const RST: u8 = 0x04;

impl Transcript {
    pub fn new(ours: SocketAddr, theirs: SocketAddr, we_connected: bool, now: Instant) -> Self {
        Transcript {
            ours,
            theirs,
            we_connected,
            start: now,
            events: Vec::new(),
        }
    }

    /// Records `event` going `dir` at `now`.
    pub fn record(&mut self, now: Instant, dir: Dir, event: Event) {
        if matches!(&event, Event::Data(d) if d.is_empty()) {
            return;
        }
        self.events
            .push((now.saturating_duration_since(self.start), dir, event));
    }

    /// All bytes that went `dir`, in order.
    pub fn stream(&self, dir: Dir) -> Vec<u8> {
        let mut out = Vec::new();
        for (_, d, e) in &self.events {
            if let (true, Event::Data(b)) = (*d == dir, e) {
                out.extend_from_slice(b);
            }
        }
        out
    }

    /// The connection as an Ethernet pcap, starting at `wall` (time since
    /// the Unix epoch).
    pub fn to_pcap(&self, wall: Duration) -> Vec<u8> {
        let (client, server) = if self.we_connected {
            (self.ours, self.theirs)
        } else {
            (self.theirs, self.ours)
        };
        let ours_is_client = self.we_connected;
        // seq[0]: the client's next sequence number, seq[1]: the server's.
        let mut seq = [0x1000_0000u32, 0x2000_0000u32];
        let mut frames_out: Vec<(Duration, Vec<u8>)> = Vec::new();
        let mut push = |at: Duration, from_client: bool, flags: u8, payload: &[u8], seq: &mut [u32; 2]| {
            let (src, dst, i) = if from_client {
                (client, server, 0)
            } else {
                (server, client, 1)
            };
            let f = build::frame(src, dst, seq[i], seq[1 - i], flags, payload);
            seq[i] = seq[i].wrapping_add(payload.len() as u32);
            if flags & (SYN | 0x01) != 0 {
                seq[i] = seq[i].wrapping_add(1);
            }
            frames_out.push((at, f));
        };
        push(Duration::ZERO, true, SYN, &[], &mut seq);
        push(Duration::ZERO, false, SYN | ACK, &[], &mut seq);
        push(Duration::ZERO, true, ACK, &[], &mut seq);
        for (at, dir, ev) in &self.events {
            let from_client = (*dir == Dir::ToTarget) == ours_is_client;
            match ev {
                Event::Data(b) => {
                    for chunk in b.chunks(SEGMENT) {
                        push(*at, from_client, PSH_ACK, chunk, &mut seq);
                    }
                }
                Event::Fin => push(*at, from_client, FIN_ACK, &[], &mut seq),
                Event::Reset => push(*at, from_client, RST, &[], &mut seq),
            }
        }
        let mut w = match PcapWriter::new(Vec::new(), LinkType::ETHERNET) {
            Ok(w) => w,
            Err(_) => return Vec::new(),
        };
        for (at, f) in frames_out {
            let t = wall + at;
            // Writing into a Vec cannot fail.
            let _ = w.packet(Timestamp::new(t.as_secs(), t.subsec_nanos()), &f);
        }
        w.into_inner()
    }

    /// The bytes the client (the side that sent the first SYN) sent, in
    /// order, from a pcap of one connection such as [`Self::to_pcap`]
    /// writes: what a replay sends again.
    pub fn client_stream_from_pcap(file: &[u8]) -> Result<Vec<u8>, PcapError> {
        let mut client = None;
        let mut out = Vec::new();
        for (link, frame) in frames(file)? {
            let Ok(seg) = capture::net::tcp_segment(link, &frame) else {
                continue;
            };
            let from = seg.endpoints.src;
            if seg.flags.syn() && !seg.flags.ack() && client.is_none() {
                client = Some(from);
            }
            if client == Some(from) {
                out.extend_from_slice(seg.payload);
            }
        }
        Ok(out)
    }
}
