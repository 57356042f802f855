//! Test-only builders: TCP conversations written as pcap files, and the
//! MPA/DDP/RDMAP bytes they carry, built with the protocol crates' emitters.

use std::net::SocketAddr;

use ddp::memory::STag;
use ddp::wire::{SegmentRepr, TaggedRepr, UntaggedRepr};
use mpa::wire::{FrameKind, FrameRepr, IrdOrd};
use mpa::Framer;
use rdmap::wire::{Control, ReadRequestRepr};
use rdmap::Opcode;

use crate::{decode, Event, Summary};
use capture::net::build;
use capture::pcap::{LinkType, PcapWriter, Timestamp};
use capture::reassembly::Direction;

pub(crate) const SYN: u8 = 0x02;
pub(crate) const ACK: u8 = 0x10;
pub(crate) const FIN: u8 = 0x01;
pub(crate) const PSH: u8 = 0x08;

/// A scripted TCP conversation between a client and a server.
pub(crate) struct Conv {
    pub(crate) client: SocketAddr,
    pub(crate) server: SocketAddr,
    /// Initial sequence numbers, client then server.
    isn: [u32; 2],
    /// Next sequence number to send, per direction.
    next: [u32; 2],
    time_ns: u64,
    pub(crate) frames: Vec<(Timestamp, Vec<u8>)>,
}

impl Conv {
    pub(crate) fn new(client: &str, server: &str) -> Self {
        Self::with_isn(client, server, 0x1000_0000, 0xf000_0000)
    }

    pub(crate) fn with_isn(client: &str, server: &str, isn_c: u32, isn_s: u32) -> Self {
        Conv {
            client: client.parse().unwrap(),
            server: server.parse().unwrap(),
            isn: [isn_c, isn_s],
            next: [isn_c.wrapping_add(1), isn_s.wrapping_add(1)],
            time_ns: 1_700_000_000_000_000_000,
            frames: Vec::new(),
        }
    }

    fn ends(&self, dir: Direction) -> (SocketAddr, SocketAddr) {
        match dir {
            Direction::ClientToServer => (self.client, self.server),
            Direction::ServerToClient => (self.server, self.client),
        }
    }

    /// Appends a raw segment with sequence number `seq`.
    pub(crate) fn raw(&mut self, dir: Direction, seq: u32, flags: u8, payload: &[u8]) -> &mut Self {
        let (src, dst) = self.ends(dir);
        let ack = self.next[dir.reverse().index()];
        let frame = build::frame(src, dst, seq, ack, flags, payload);
        self.time_ns += 1_000_000;
        let t = Timestamp::new(
            self.time_ns / 1_000_000_000,
            (self.time_ns % 1_000_000_000) as u32,
        );
        self.frames.push((t, frame));
        self
    }

    pub(crate) fn handshake(&mut self) -> &mut Self {
        let [c, s] = self.isn;
        self.raw(Direction::ClientToServer, c, SYN, &[])
            .raw(Direction::ServerToClient, s, SYN | ACK, &[])
            .raw(Direction::ClientToServer, c.wrapping_add(1), ACK, &[])
    }

    /// One in-order data segment.
    pub(crate) fn data(&mut self, dir: Direction, payload: &[u8]) -> &mut Self {
        let seq = self.next[dir.index()];
        self.next[dir.index()] = seq.wrapping_add(payload.len() as u32);
        self.raw(dir, seq, ACK | PSH, payload)
    }

    /// A segment at `offset` bytes into the direction's stream, without
    /// moving the next sequence number (for reordering and duplicates).
    pub(crate) fn data_at(&mut self, dir: Direction, offset: usize, payload: &[u8]) -> &mut Self {
        let seq = self.isn[dir.index()]
            .wrapping_add(1)
            .wrapping_add(offset as u32);
        self.raw(dir, seq, ACK | PSH, payload)
    }

    /// Moves the direction's next sequence number to `offset` bytes in.
    pub(crate) fn skip_to(&mut self, dir: Direction, offset: usize) -> &mut Self {
        self.next[dir.index()] = self.isn[dir.index()]
            .wrapping_add(1)
            .wrapping_add(offset as u32);
        self
    }

    pub(crate) fn fin(&mut self, dir: Direction) -> &mut Self {
        let seq = self.next[dir.index()];
        self.next[dir.index()] = seq.wrapping_add(1);
        self.raw(dir, seq, FIN | ACK, &[])
    }

    pub(crate) fn pcap(&self) -> Vec<u8> {
        let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET).unwrap();
        for (t, f) in &self.frames {
            w.packet(*t, f).unwrap();
        }
        w.into_inner()
    }
}

/// Every frame of several conversations, interleaved by position.
pub(crate) fn interleave(convs: &[&Conv]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET).unwrap();
    let longest = convs.iter().map(|c| c.frames.len()).max().unwrap_or(0);
    for i in 0..longest {
        for c in convs {
            if let Some((t, f)) = c.frames.get(i) {
                w.packet(*t, f).unwrap();
            }
        }
    }
    w.into_inner()
}

/// An MPA Request or Reply.
pub(crate) fn mpa_frame(
    kind: FrameKind,
    crc: bool,
    markers: bool,
    reject: bool,
    rev: u8,
) -> Vec<u8> {
    let enhanced = (rev == 2).then_some(IrdOrd {
        ird: 1,
        ord: 1,
        ..IrdOrd::default()
    });
    FrameRepr {
        kind,
        markers,
        crc,
        reject,
        rev,
        enhanced,
        private_data: &[],
        reserved: 0,
    }
    .to_vec()
    .unwrap()
}

pub(crate) fn request(crc: bool) -> Vec<u8> {
    mpa_frame(FrameKind::Request, crc, false, false, 2)
}

pub(crate) fn reply(crc: bool) -> Vec<u8> {
    mpa_frame(FrameKind::Reply, crc, false, false, 2)
}

fn ulpdu(ddp: SegmentRepr, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0xa5; ddp.buffer_len()];
    ddp.emit(&mut out).unwrap();
    out.extend_from_slice(payload);
    out
}

/// A one-segment Send on queue 0.
pub(crate) fn send(msn: u32, payload: &[u8]) -> Vec<u8> {
    let ctl = Control::new(Opcode::Send).0;
    ulpdu(UntaggedRepr::new(true, ctl, 0, 0, msn, 0).into(), payload)
}

/// An RDMA Write segment.
pub(crate) fn write(stag: u32, to: u64, last: bool, payload: &[u8]) -> Vec<u8> {
    let ctl = Control::new(Opcode::RdmaWrite).0;
    ulpdu(TaggedRepr::new(last, ctl, STag(stag), to).into(), payload)
}

/// An RDMA Read Response segment.
pub(crate) fn read_response(stag: u32, to: u64, payload: &[u8]) -> Vec<u8> {
    let ctl = Control::new(Opcode::ReadResponse).0;
    ulpdu(TaggedRepr::new(true, ctl, STag(stag), to).into(), payload)
}

/// An RDMA Read Request on queue 1.
pub(crate) fn read_request(msn: u32, sink: u32, size: u32, source: u32) -> Vec<u8> {
    let ctl = Control::new(Opcode::ReadRequest).0;
    let rr = ReadRequestRepr {
        sink_stag: STag(sink),
        sink_to: 0x1000,
        size,
        source_stag: STag(source),
        source_to: 0x2000,
    };
    ulpdu(
        UntaggedRepr::new(true, ctl, 0, 1, msn, 0).into(),
        &rr.to_bytes(),
    )
}

/// A Send variant (`op`) segment on queue 0 with message offset `mo`.
pub(crate) fn send_segment(
    op: Opcode,
    inval: u32,
    msn: u32,
    mo: u32,
    last: bool,
    payload: &[u8],
) -> Vec<u8> {
    let ctl = Control::new(op).0;
    ulpdu(
        UntaggedRepr::new(last, ctl, inval, 0, msn, mo).into(),
        payload,
    )
}

/// A TERMINATE in the RFC 5040 layout (rdmap's emitter) carrying the
/// header of a Read Request that failed a remote protection check.
pub(crate) fn terminate_rfc(failed: &[u8]) -> Vec<u8> {
    use rdmap::wire::{Attached, TermControl, TermLayout, TerminateRepr};
    let t = TerminateRepr {
        control: TermControl {
            layer: 0,
            etype: 1,
            code: 0,
            m: true,
            d: true,
            r: true,
            reserved: 0,
        },
        layout: TermLayout::Rfc5040,
        attached: Some(Attached {
            segment_len: failed.len() as u16,
            ddp_header: Some(&failed[..18]),
            rdma_header: Some(&failed[18..]),
        }),
    };
    let mut body = vec![0xa5; t.buffer_len()];
    t.emit(&mut body).unwrap();
    let ctl = Control::new(Opcode::Terminate).0;
    ulpdu(UntaggedRepr::new(true, ctl, 0, 2, 1, 0).into(), &body)
}

/// FPDUs carrying `ulpdus`, framed from the start of the FPDU stream.
pub(crate) fn fpdus(crc: bool, markers: bool, ulpdus: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Framer::new(crc, markers);
    let mut out = Vec::new();
    for u in ulpdus {
        f.frame_to_vec(u, &[], &mut out).unwrap();
    }
    out
}

/// Decodes a capture held in memory.
pub(crate) fn run(pcap: &[u8]) -> (Vec<Event>, Summary) {
    let mut events = Vec::new();
    let summary = decode(pcap, &mut |e| events.push(e.clone()));
    (events, summary)
}

/// The FPDU events only.
pub(crate) fn fpdus_of(events: &[Event]) -> Vec<&crate::Fpdu> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Fpdu(f) => Some(f),
            _ => None,
        })
        .collect()
}

/// The note events only.
pub(crate) fn notes_of(events: &[Event]) -> Vec<&crate::Note> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Note(n) => Some(n),
            _ => None,
        })
        .collect()
}
