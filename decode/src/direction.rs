//! One direction of one connection: the MPA frame at the start of the
//! stream, then FPDUs once both sides' frames say how they are framed.

use mpa::wire::{FrameRepr, HEADER_LEN, KEY_LEN, MAX_PRIVATE_DATA, REPLY_KEY, REQUEST_KEY};

use super::event::{MpaFrame, Where};
use super::framing::FpduStream;
use super::summary::DirectionSummary;

/// Bytes after our MPA frame held while the peer's frame is awaited.
pub(crate) const MAX_PENDING: usize = 1024 * 1024;

/// Where a direction's decoding stands.
#[derive(Debug)]
pub(crate) enum Phase {
    /// Collecting the stream's first bytes: an MPA frame or not.
    Start(Vec<u8>),
    /// Our frame is parsed; bytes after it wait for the peer's frame.
    AwaitPeer(Vec<u8>),
    Fpdus(Box<FpduStream>),
    /// Not an MPA stream: ignored.
    NotMpa,
    /// After a Reply that rejected the connection.
    Rejected,
    /// Decoding stopped (gap, framing error); later bytes are counted.
    Stopped,
    /// The connection is over and its buffers are released.
    Finished,
}

/// What feeding bytes at the stream start found.
pub(crate) enum StartOutcome {
    NeedMore,
    NotMpa,
    Frame { frame: MpaFrame, rest: Vec<u8> },
    Bad(String),
}

/// The decoding state of one direction.
#[derive(Debug)]
pub(crate) struct DirectionDecoder {
    pub(crate) phase: Phase,
    pub(crate) frame: Option<MpaFrame>,
    /// Stream offset where the FPDU stream (after the MPA frame) begins.
    pub(crate) fpdu_base: u64,
    pub(crate) summary: DirectionSummary,
    pub(crate) saw_data: bool,
    pub(crate) saw_fin: bool,
    /// The stream began with an MPA key but the frame was malformed.
    pub(crate) bad_frame: bool,
}

impl Default for DirectionDecoder {
    fn default() -> Self {
        DirectionDecoder {
            phase: Phase::Start(Vec::new()),
            frame: None,
            fpdu_base: 0,
            summary: DirectionSummary::default(),
            saw_data: false,
            saw_fin: false,
            bad_frame: false,
        }
    }
}

/// True if `buf` could still be the start of an MPA Request or Reply.
fn could_be_mpa(buf: &[u8]) -> bool {
    let n = buf.len().min(KEY_LEN);
    buf.get(..n) == REQUEST_KEY.get(..n) || buf.get(..n) == REPLY_KEY.get(..n)
}

impl DirectionDecoder {
    /// Adds stream-start bytes and tries to read the MPA frame.
    pub(crate) fn feed_start(buf: &mut Vec<u8>, bytes: &[u8], at: Where) -> StartOutcome {
        // Bounded: once a maximal frame's worth is here the parse either
        // succeeds or fails, so `buf` never outgrows that plus one segment.
        buf.extend_from_slice(bytes);
        if !could_be_mpa(buf) {
            return StartOutcome::NotMpa;
        }
        match FrameRepr::parse_bytes(buf) {
            Ok((repr, len)) => {
                let frame = MpaFrame {
                    at,
                    kind: repr.kind,
                    rev: repr.rev,
                    markers: repr.markers,
                    crc: repr.crc,
                    reject: repr.reject,
                    enhanced: repr.enhanced,
                    pd_length: repr.pd_length(),
                    reserved: repr.reserved,
                };
                let rest = buf.get(len..).unwrap_or_default().to_vec();
                StartOutcome::Frame { frame, rest }
            }
            Err(mpa::wire::Error::Truncated { .. })
                if buf.len() < HEADER_LEN + MAX_PRIVATE_DATA =>
            {
                StartOutcome::NeedMore
            }
            Err(e) => StartOutcome::Bad(e.to_string()),
        }
    }
}
