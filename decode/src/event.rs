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
    /// The capture timestamp of that frame.
    pub time: Timestamp,
    /// 1-based frame number in the capture.
    pub frame: u64,
    /// 1-based connection number.
    pub connection: usize,
    /// Which way the bytes travelled.
    pub direction: Direction,
    /// Offset in this direction's TCP byte stream (0 = first byte after the SYN).
    pub offset: u64,
}

/// An MPA Request or Reply frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpaFrame {
    /// Where the frame was seen.
    pub at: Where,
    /// Request or Reply.
    pub kind: FrameKind,
    /// The MPA revision it carries.
    pub rev: u8,
    /// M: the sender wants markers in the stream it receives.
    pub markers: bool,
    /// C: the sender wants (Request) or settles (Reply) CRCs.
    pub crc: bool,
    /// R: the Reply rejects the connection.
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
    /// The connection's number.
    pub connection: usize,
    /// Whether FPDUs carry a CRC.
    pub crc: bool,
    /// Markers per direction, indexed by [`Direction::index`].
    pub markers: [bool; 2],
    /// The Reply rejected the connection: no FPDUs should follow.
    pub rejected: bool,
}

/// CRC32c of one FPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrcStatus {
    /// CRC in use and the received value matches.
    Good,
    /// CRC in use and the received value does not match.
    Bad {
        /// The CRC field as sent.
        received: u32,
        /// The CRC of the bytes as captured.
        computed: u32,
    },
    /// CRC not negotiated: the field is present but not checked.
    Off,
}

/// A TERMINATE's control word and the headers it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminate {
    /// The control word.
    pub control: TermControl,
    /// Which layout it was read in (RFC 5040 or Linux siw).
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
    /// Immediate Data (with or without Solicited Event).
    Immediate(ImmediateDataRepr),
    /// An Atomic Operation Request.
    AtomicRequest(AtomicRequestRepr),
    /// An Atomic Response.
    AtomicResponse(AtomicResponseRepr),
}

/// One FPDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fpdu {
    /// Where the FPDU was completed.
    pub at: Where,
    /// ULPDU_Length: DDP header plus payload.
    pub ulpdu_len: usize,
    /// Bytes the FPDU took in the stream: length, ULPDU, pad, CRC, markers.
    pub wire_len: usize,
    /// Whether its CRC was checked, and how it came out.
    pub crc: CrcStatus,
    /// The DDP header, when it parses.
    pub ddp: Option<SegmentRepr>,
    /// From the RDMAP control byte, when the DDP header parses.
    pub opcode: Option<Opcode>,
    /// DDP payload bytes (for Read Request and Terminate, their header).
    pub payload_len: usize,
    /// The Read Request header, for a Read Request.
    pub read_request: Option<ReadRequestRepr>,
    /// The Terminate header, for a Terminate.
    pub terminate: Option<Terminate>,
    /// The header of an RFC 7306 message (boxed: most FPDUs have none).
    pub rfc7306: Option<Box<Rfc7306>>,
    /// Why the ULPDU is not a well-formed DDP/RDMAP segment.
    pub error: Option<String>,
}

/// How much a note matters for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing, not wrong.
    Info,
    /// Unusual but allowed, or a capture problem (bytes missing).
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
    Gap {
        /// Bytes missing.
        len: u64,
    },
    /// The MPA framing cannot be followed any further.
    Broken(String),
    /// Bytes after the MPA frame while the peer's frame (which says whether
    /// CRC and markers are used) was never seen.
    PeerFrameMissing {
        /// Bytes left undecoded.
        bytes: u64,
    },
    /// The capture ends inside an FPDU.
    PartialFpduAtEnd {
        /// Bytes of the FPDU captured.
        bytes: u64,
    },
    /// A FIN arrived inside an FPDU.
    PartialFpduAtFin {
        /// Bytes of the FPDU before the FIN.
        bytes: u64,
    },
    /// Data after a Reply that rejected the connection.
    DataAfterReject {
        /// Bytes after the Reply.
        bytes: u64,
    },
    /// The stream ended inside the MPA frame.
    PartialMpaFrame {
        /// Bytes of the frame seen.
        bytes: u64,
    },
    /// The side that sent the SYN sent the MPA Reply (or the other way round).
    RolesReversed,
}

/// A note about a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Where it was seen.
    pub at: Where,
    /// How much it matters.
    pub severity: Severity,
    /// What it says.
    pub kind: NoteKind,
}

/// A connection, reported when its first payload byte is seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    /// The connection's number, 1-based in order of appearance.
    pub number: usize,
    /// The side taken as the client (see `handshake_seen`).
    pub client: SocketAddr,
    /// The other side.
    pub server: SocketAddr,
    /// False when the handshake was not captured and the MPA Request's
    /// sender (or else the first sender) was taken as the client.
    pub handshake_seen: bool,
    /// When its first payload byte was captured.
    pub time: Timestamp,
    /// The frame that carried it.
    pub frame: u64,
}

/// Everything the dissector reports, in capture order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A connection's first payload byte.
    Connection(Connection),
    /// An MPA Request or Reply.
    Mpa(MpaFrame),
    /// The framing both sides settled on.
    Negotiated(Negotiated),
    /// An FPDU.
    Fpdu(Fpdu),
    /// Something that is neither.
    Note(Note),
}
