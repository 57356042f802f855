//! What the dissector reports, one value per line of output.

use std::net::SocketAddr;

use ddp::wire::SegmentRepr;
use mpa::wire::{FrameKind, IrdOrd};
use rdmap::wire::{
    AtomicRequestRepr, AtomicResponseRepr, ImmediateDataRepr, ReadRequestRepr, TermControl,
    TermLayout,
};
use rdmap::Opcode;

use capture::pcap::Timestamp;
use capture::reassembly::Direction;

/// Where and when something was seen: the capture frame that completed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Where {
    pub time: Timestamp,
    /// 1-based frame number in the capture.
    pub frame: u64,
    /// 1-based connection number.
    pub connection: usize,
    pub direction: Direction,
    /// Offset in this direction's TCP byte stream (0 = first byte after the SYN).
    pub offset: u64,
}

/// An MPA Request or Reply frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpaFrame {
    pub at: Where,
    pub kind: FrameKind,
    pub rev: u8,
    pub markers: bool,
    pub crc: bool,
    pub reject: bool,
    /// The RFC 6581 IRD/ORD block, when the enhanced bit is set.
    pub enhanced: Option<IrdOrd>,
    /// PD_Length: all private data, the IRD/ORD block included.
    pub pd_length: usize,
    /// The four reserved flag bits as sent.
    pub reserved: u8,
}

/// The framing both sides agreed on, from the Request and Reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    pub connection: usize,
    pub crc: bool,
    /// Markers per direction, indexed by [`Direction::index`].
    pub markers: [bool; 2],
    pub rejected: bool,
}

/// CRC32c of one FPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrcStatus {
    /// CRC in use and the received value matches.
    Good,
    /// CRC in use and the received value does not match.
    Bad { received: u32, computed: u32 },
    /// CRC not negotiated: the field is present but not checked.
    Off,
}

/// A TERMINATE's control word and the headers it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminate {
    pub control: TermControl,
    pub layout: TermLayout,
    /// The DDP Segment Length field, when M, D or R is set.
    pub segment_len: Option<u16>,
    /// The terminated DDP header, when D is set and it parses.
    pub ddp_header: Option<SegmentRepr>,
    /// The terminated RDMA (Read Request) header, when R is set and present.
    pub read_request: Option<ReadRequestRepr>,
}

/// The header an RFC 7306 message carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rfc7306 {
    Immediate(ImmediateDataRepr),
    AtomicRequest(AtomicRequestRepr),
    AtomicResponse(AtomicResponseRepr),
}

/// One FPDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fpdu {
    pub at: Where,
    /// ULPDU_Length: DDP header plus payload.
    pub ulpdu_len: usize,
    /// Bytes the FPDU took in the stream: length, ULPDU, pad, CRC, markers.
    pub wire_len: usize,
    pub crc: CrcStatus,
    /// The DDP header, when it parses.
    pub ddp: Option<SegmentRepr>,
    /// From the RDMAP control byte, when the DDP header parses.
    pub opcode: Option<Opcode>,
    /// DDP payload bytes (for Read Request and Terminate, their header).
    pub payload_len: usize,
    pub read_request: Option<ReadRequestRepr>,
    pub terminate: Option<Terminate>,
    /// The header of an RFC 7306 message (boxed: most FPDUs have none).
    pub rfc7306: Option<Box<Rfc7306>>,
    /// Why the ULPDU is not a well-formed DDP/RDMAP segment.
    pub error: Option<String>,
}

/// How much a note matters for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warning,
    /// Something in an iWARP stream could not be decoded.
    Error,
}

/// Something about a stream that is not an MPA frame or FPDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteKind {
    /// The stream does not start with an MPA key: not iWARP, skipped.
    NotMpa,
    /// The MPA Request/Reply frame is malformed.
    BadMpaFrame(String),
    /// Bytes missing from the capture.
    Gap { len: u64 },
    /// The MPA framing cannot be followed any further.
    Broken(String),
    /// Bytes after the MPA frame while the peer's frame (which says whether
    /// CRC and markers are used) was never seen.
    PeerFrameMissing { bytes: u64 },
    /// The capture ends inside an FPDU.
    PartialFpduAtEnd { bytes: u64 },
    /// A FIN arrived inside an FPDU.
    PartialFpduAtFin { bytes: u64 },
    /// Data after a Reply that rejected the connection.
    DataAfterReject { bytes: u64 },
    /// The stream ended inside the MPA frame.
    PartialMpaFrame { bytes: u64 },
    /// The side that sent the SYN sent the MPA Reply (or the other way round).
    RolesReversed,
}

/// A note about a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub at: Where,
    pub severity: Severity,
    pub kind: NoteKind,
}

/// A connection, reported when its first payload byte is seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    pub number: usize,
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// False when the handshake was not captured and the MPA Request's
    /// sender (or else the first sender) was taken as the client.
    pub handshake_seen: bool,
    pub time: Timestamp,
    pub frame: u64,
}

/// Everything the dissector reports, in capture order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Connection(Connection),
    Mpa(MpaFrame),
    Negotiated(Negotiated),
    Fpdu(Fpdu),
    Note(Note),
}
