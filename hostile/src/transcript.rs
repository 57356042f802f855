//! What went over one connection, both ways, kept to be written as a pcap
//! (TCP/IP framing synthesized around the real bytes, so tshark and
//! `iwarp decode` read it) and to be replayed from one.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use capture::net::build;
use capture::pcap::{frames, LinkType, PcapError, PcapWriter, Timestamp};
use capture::reassembly::{FlowTable, Lookup, SeqNumber, StreamEvent};

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
    /// Stream bytes.
    Data(Vec<u8>),
    /// A FIN: no more bytes this way.
    Fin,
    /// A reset: the connection ended abruptly.
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
    /// Each event with the time since the connection began and its direction.
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
    /// An empty transcript of a connection between `ours` and `theirs`, starting at `now`.
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
        let mut push =
            |at: Duration, from_client: bool, flags: u8, payload: &[u8], seq: &mut [u32; 2]| {
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

    /// The two byte streams (client to server, server to client) of the
    /// first TCP connection of a capture, reassembled: what a replay
    /// sends again, or what a mutation run starts from.
    pub fn streams_from_pcap(file: &[u8]) -> Result<[Vec<u8>; 2], PcapError> {
        let mut flows: FlowTable<()> = FlowTable::new();
        let mut out = [Vec::new(), Vec::new()];
        for (link, frame) in frames(file)? {
            let Ok(seg) = capture::net::tcp_segment(link, &frame) else {
                continue;
            };
            let (i, dir) = match flows.lookup(&seg, || ()) {
                Lookup::Existing(i, d) | Lookup::New(i, d) => (i, d),
                Lookup::Replaced { .. } | Lookup::Full => continue,
            };
            if i != 0 {
                continue;
            }
            let Some(entry) = flows.entry_mut(0) else {
                continue;
            };
            let bytes = &mut out[dir.index()];
            entry.stream(dir).segment(
                SeqNumber(seg.seq),
                seg.flags.syn(),
                seg.flags.fin(),
                seg.payload,
                seg.payload_len,
                &mut |ev| {
                    if let StreamEvent::Data { bytes: b, .. } = ev {
                        bytes.extend_from_slice(b);
                    }
                },
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_reads_back_from_its_pcap() {
        let now = Instant::now();
        let ours: SocketAddr = "10.0.0.1:40000".parse().unwrap();
        let theirs: SocketAddr = "10.0.0.2:7174".parse().unwrap();
        let mut t = Transcript::new(ours, theirs, true, now);
        let big: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        t.record(now, Dir::ToTarget, Event::Data(b"request".to_vec()));
        t.record(now, Dir::FromTarget, Event::Data(b"reply".to_vec()));
        t.record(now, Dir::ToTarget, Event::Data(big.clone()));
        t.record(now, Dir::ToTarget, Event::Fin);
        t.record(now, Dir::FromTarget, Event::Reset);
        let pcap = t.to_pcap(Duration::from_secs(1_700_000_000));
        let [c, s] = Transcript::streams_from_pcap(&pcap).unwrap();
        let mut want = b"request".to_vec();
        want.extend_from_slice(&big);
        assert_eq!(c, want);
        assert_eq!(s, b"reply");
        assert_eq!(t.stream(Dir::ToTarget), want);
    }

    #[test]
    fn the_client_is_whoever_connected() {
        let now = Instant::now();
        let ours: SocketAddr = "10.0.0.1:7174".parse().unwrap();
        let theirs: SocketAddr = "10.0.0.2:40000".parse().unwrap();
        let mut t = Transcript::new(ours, theirs, false, now);
        t.record(now, Dir::FromTarget, Event::Data(b"request".to_vec()));
        t.record(now, Dir::ToTarget, Event::Data(b"reply".to_vec()));
        let [c, s] = Transcript::streams_from_pcap(&t.to_pcap(Duration::ZERO)).unwrap();
        assert_eq!(
            (c.as_slice(), s.as_slice()),
            (&b"request"[..], &b"reply"[..])
        );
    }
}
