//! One iWARP connection read off its two TCP streams: the MPA Request and
//! Reply, what they settled, and each direction's FPDUs and ULPDUs, checked
//! by `mpa::Deframer` (so a CRC-on capture yields only FPDUs whose CRC is
//! good).

use core::ops::{ControlFlow, Range};

use capture::reassembly::Direction;
use mpa::wire::{FrameKind, FrameRepr, IrdOrd};
use mpa::{Deframer, Framer, Rtr};

use super::capture::TcpConversation;

/// One direction after its MPA frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Side {
    /// The MPA Request (client) or Reply (server) frame, exactly as sent.
    pub frame: Vec<u8>,
    /// Everything after the frame: the FPDU stream, cut after the last
    /// whole FPDU that deframed cleanly.
    pub fpdu_stream: Vec<u8>,
    /// Each FPDU's bytes within `fpdu_stream`.
    pub fpdus: Vec<Range<usize>>,
    /// Each FPDU's ULPDU (DDP header and payload), CRC and pad removed.
    pub ulpdus: Vec<Vec<u8>>,
    /// Why deframing stopped early, if it did.
    pub error: Option<mpa::DeframeError>,
}

impl Side {
    /// The first `n` FPDUs as one byte string.
    pub fn first_fpdus(&self, n: usize) -> &[u8] {
        let end = match n.checked_sub(1).and_then(|i| self.fpdus.get(i)) {
            Some(r) => r.end,
            None if n == 0 => 0,
            None => self.fpdu_stream.len(),
        };
        &self.fpdu_stream[..end]
    }
}

/// What the Request and Reply of a capture settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    pub request_rev: u8,
    pub reply_rev: u8,
    pub crc: bool,
    /// Markers in the FPDUs sent each way, indexed by [`Direction::index`].
    pub markers: [bool; 2],
    pub request_crc: bool,
    pub request_ird_ord: Option<IrdOrd>,
    pub reply_ird_ord: Option<IrdOrd>,
    /// Private data after the IRD/ORD block.
    pub request_pd_len: usize,
    pub reply_pd_len: usize,
    /// The RTR kind granted by the Reply in peer-to-peer mode.
    pub rtr: Option<Rtr>,
}

/// An iWARP connection as the two peers sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpaConversation {
    /// `<capture stem>-<connection number>`, for seed file names.
    pub label: String,
    pub settled: Settled,
    /// Indexed by [`Direction::index`].
    pub sides: [Side; 2],
}

impl MpaConversation {
    pub fn side(&self, dir: Direction) -> &Side {
        &self.sides[dir.index()]
    }

    /// Reads a TCP conversation as iWARP. `None` when the client's stream
    /// does not open with an MPA Request answered by a Reply that accepts.
    pub fn from_tcp(label: String, tcp: &TcpConversation) -> Option<MpaConversation> {
        let c2s = tcp.stream(Direction::ClientToServer);
        let s2c = tcp.stream(Direction::ServerToClient);
        let (req, req_len) = FrameRepr::parse_bytes(c2s).ok()?;
        let (rep, rep_len) = FrameRepr::parse_bytes(s2c).ok()?;
        if req.kind != FrameKind::Request || rep.kind != FrameKind::Reply || rep.reject {
            return None;
        }
        let rtr = match (req.enhanced, rep.enhanced) {
            (Some(q), Some(p)) if q.peer_to_peer && p.peer_to_peer => p.rtr.preferred(),
            _ => None,
        };
        let settled = Settled {
            request_rev: req.rev,
            reply_rev: rep.rev,
            crc: rep.crc,
            // M in a frame asks for markers in the FPDUs its sender receives.
            markers: [rep.markers, req.markers],
            request_crc: req.crc,
            request_ird_ord: req.enhanced,
            reply_ird_ord: rep.enhanced,
            request_pd_len: req.private_data.len(),
            reply_pd_len: rep.private_data.len(),
            rtr,
        };
        let side = |stream: &[u8], frame_len: usize, markers: bool| {
            let (frame, rest) = stream.split_at(frame_len);
            deframe(frame, rest, settled.crc, markers)
        };
        Some(MpaConversation {
            label,
            settled,
            sides: [
                side(c2s, req_len, settled.markers[0]),
                side(s2c, rep_len, settled.markers[1]),
            ],
        })
    }
}

/// Splits `rest` (the stream after `frame`) into FPDUs and ULPDUs.
fn deframe(frame: &[u8], rest: &[u8], crc: bool, markers: bool) -> Side {
    // Marker positions count from the first FPDU octet, as the stack's
    // `Negotiated::deframer` does.
    let mut deframer = Deframer::new(crc, markers, 65535);
    let mut framer = Framer::new(crc, markers);
    let mut ulpdus = Vec::new();
    let mut fpdus = Vec::new();
    let mut at = 0usize;
    let result = deframer.feed(rest, |u| {
        // The framer, kept at the same stream position, knows how many
        // bytes (pad, CRC and markers included) this ULPDU took.
        let len = framer.fpdu_len(u.len());
        let mut sink = Vec::with_capacity(len);
        if framer.frame_to_vec(u, &[], &mut sink).is_err() || sink.len() != len {
            return ControlFlow::Break(());
        }
        fpdus.push(at..at + len);
        at += len;
        ulpdus.push(u.to_vec());
        ControlFlow::Continue(())
    });
    Side {
        frame: frame.to_vec(),
        fpdu_stream: rest[..at.min(rest.len())].to_vec(),
        fpdus,
        ulpdus,
        error: result.err(),
    }
}
