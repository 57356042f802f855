//! Errors of the MPA layer and the TERMINATE codes they map to.
//!
//! Errors caused by the peer carry the LLP-layer error type and code that go
//! into a TERMINATE message (RFC 5040 section 4.8, RFC 5044 section 8,
//! RFC 6581; numbered as siw's `enum llp_ecode`). Local misuse of
//! the API is a [`ConfigError`] and never looks like the peer's fault.

use crate::seq::StreamOffset;
use crate::wire;

/// The LLP-layer TERMINATE error type and codes for MPA.
pub mod llp {
    /// TERMINATE layer number of the LLP (RFC 5040 section 4.8).
    pub const LAYER: u8 = 2;
    /// The only LLP error type: MPA.
    pub const ETYPE_MPA: u8 = 0;
    /// TCP connection closed, terminated or lost.
    pub const TCP_STREAM_LOST: u8 = 0x01;
    /// Received MPA CRC does not match the calculated value.
    pub const RECEIVED_CRC: u8 = 0x02;
    /// A marker (if enabled) and the ULPDU_Length framing disagree.
    pub const FPDU_START: u8 = 0x03;
    /// Invalid MPA Request or Reply frame.
    pub const INVALID_REQ_RESP: u8 = 0x04;
    /// RFC 6581: local catastrophic error.
    pub const LOCAL_CATASTROPHIC: u8 = 0x05;
    /// RFC 6581: the initiator's IRD is below the responder's ORD.
    pub const INSUFFICIENT_IRD: u8 = 0x06;
    /// RFC 6581: no RTR kind both sides support.
    pub const NO_MATCHING_RTR: u8 = 0x07;
}

/// The stream of FPDUs from the peer is broken; the connection must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DeframeError {
    /// The CRC32c field does not match the FPDU.
    #[error("MPA CRC mismatch: computed {computed:#010x}, received {received:#010x}")]
    Crc {
        /// CRC32c computed over the FPDU.
        computed: u32,
        /// The CRC field as received (least significant byte first).
        received: u32,
    },
    /// ULPDU_Length exceeds what this receiver accepts; refused before any
    /// of the ULPDU is buffered.
    #[error("ULPDU_Length {len} exceeds the maximum of {max}")]
    UlpduTooLong {
        /// ULPDU_Length as received.
        len: u16,
        /// The configured maximum.
        max: usize,
    },
    /// A marker's FPDUPTR does not point at the FPDU it sits in.
    #[error("marker at stream offset {at} has FPDUPTR {fpduptr}, expected {expected}")]
    Marker {
        /// Stream position of the marker.
        at: StreamOffset,
        /// FPDUPTR as received.
        fpduptr: u16,
        /// FPDUPTR the framing implies.
        expected: u16,
    },
}

impl DeframeError {
    /// The LLP-layer TERMINATE (error type, error code) for this error.
    ///
    /// A CRC error is (0, 2) as siw sends it. A marker that disagrees with the
    /// framing is (0, 3). An over-long ULPDU_Length also means the framing
    /// cannot be followed, so it is reported as (0, 3) too.
    pub fn terminate_code(&self) -> (u8, u8) {
        match self {
            DeframeError::Crc { .. } => (llp::ETYPE_MPA, llp::RECEIVED_CRC),
            DeframeError::UlpduTooLong { .. } | DeframeError::Marker { .. } => {
                (llp::ETYPE_MPA, llp::FPDU_START)
            }
        }
    }
}

/// Why an FPDU could not be framed. Local: the framer's state is untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// ULPDU_Length is 16 bits.
    #[error("ULPDU of {len} bytes does not fit the 16-bit ULPDU_Length")]
    UlpduTooLong {
        /// Header plus payload length asked for.
        len: usize,
    },
    /// The output buffer cannot hold the FPDU.
    #[error("FPDU needs {needed} bytes, buffer has {available}")]
    OutTooSmall {
        /// Bytes the FPDU occupies.
        needed: usize,
        /// Bytes offered.
        available: usize,
    },
    /// With markers, a marker this deep into the FPDU cannot point back to
    /// its header with a 16-bit FPDUPTR; send a smaller ULPDU (see
    /// `Framer::max_ulpdu`).
    #[error("FPDU of {fpdu_len} bytes is too long for 16-bit marker pointers")]
    MarkerPointerOverflow {
        /// Length the FPDU would have.
        fpdu_len: usize,
    },
}

/// Connection start-up failed. `terminate_code` says what a TERMINATE would
/// carry, where the RFCs assign a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StartupError {
    /// The peer's bytes do not start with an MPA key.
    #[error("peer did not send an MPA Request/Reply key")]
    BadKey,
    /// A Request arrived where a Reply was due, or the other way round.
    #[error("expected an MPA {expected}, received an MPA {received}")]
    UnexpectedFrame {
        /// The frame this side waits for.
        expected: wire::FrameKind,
        /// The frame that came.
        received: wire::FrameKind,
    },
    /// A revision this side cannot work with.
    #[error("MPA revision {rev} not supported")]
    BadRev {
        /// The Rev octet received.
        rev: u8,
    },
    /// PD_Length over 512, refused before buffering the private data.
    #[error("peer announced {pd_length} bytes of private data (limit 512)")]
    PrivateDataTooLong {
        /// PD_Length received.
        pd_length: usize,
    },
    /// The enhanced flag without room for the IRD/ORD block, or a rev-2
    /// Reply without the block that the rev-2 Request asked for.
    #[error("MPA frame lacks its IRD/ORD block")]
    MissingIrdOrd,
    /// The peer sent bytes before this side's Reply (a Responder waiting to
    /// accept), which RFC 5044 forbids.
    #[error("peer sent data before the MPA exchange completed")]
    UnexpectedData,
    /// The Responder set R.
    #[error("peer rejected the connection")]
    Rejected,
    /// We require CRC and the peer's frame has C clear.
    #[error("CRC required but the peer does not use it")]
    CrcRequired,
    /// We refuse CRC (policy `Never`) and the peer requires it.
    #[error("peer requires CRC, which this side refuses")]
    CrcRefused,
    /// The peer wants markers in what we send, and we do not send markers.
    #[error("peer requires markers, which this side does not send")]
    MarkersRefused,
    /// The Responder will issue more RDMA READs than our IRD accepts.
    #[error("peer ORD {peer_ord} exceeds our IRD {our_ird}")]
    InsufficientIrd {
        /// Our advertised IRD.
        our_ird: u16,
        /// The ORD in the peer's Reply.
        peer_ord: u16,
    },
    /// Peer-to-peer mode without an RTR kind both sides support.
    #[error("no RTR kind both sides support")]
    NoMatchingRtr,
    /// The timer ran out before the peer's frame arrived.
    #[error("timed out waiting for the peer's MPA frame")]
    Timeout,
    /// The TCP connection closed before start-up completed.
    #[error("connection closed during MPA start-up")]
    PeerClosed,
}

impl StartupError {
    /// The LLP-layer TERMINATE (error type, error code), where one is
    /// assigned. Policy refusals, a reject, a timeout and a closed connection
    /// have none: the connection simply ends.
    pub fn terminate_code(&self) -> Option<(u8, u8)> {
        let code = match self {
            StartupError::BadKey
            | StartupError::UnexpectedFrame { .. }
            | StartupError::BadRev { .. }
            | StartupError::PrivateDataTooLong { .. }
            | StartupError::MissingIrdOrd
            | StartupError::UnexpectedData => llp::INVALID_REQ_RESP,
            StartupError::InsufficientIrd { .. } => llp::INSUFFICIENT_IRD,
            StartupError::NoMatchingRtr => llp::NO_MATCHING_RTR,
            StartupError::Rejected
            | StartupError::CrcRequired
            | StartupError::CrcRefused
            | StartupError::MarkersRefused
            | StartupError::Timeout
            | StartupError::PeerClosed => return None,
        };
        Some((llp::ETYPE_MPA, code))
    }
}

/// Local misuse of the start-up API: bad configuration or a call in the
/// wrong state. Never the peer's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Only revisions 1 (RFC 5044) and 2 (RFC 6581) exist.
    #[error("MPA revision {0} is not 1 or 2")]
    BadRev(u8),
    /// Private data over 512 bytes (508 next to an IRD/ORD block).
    #[error("{len} bytes of private data exceed the limit of {max}")]
    PrivateDataTooLong {
        /// Bytes given.
        len: usize,
        /// The limit for this frame.
        max: usize,
    },
    /// IRD or ORD above 0x3fff.
    #[error("IRD/ORD {0} exceeds 0x3fff")]
    IrdOrdOutOfRange(u16),
    /// Peer-to-peer asked for with no RTR kind allowed.
    #[error("peer-to-peer mode needs at least one RTR kind")]
    NoRtrKind,
    /// Peer-to-peer needs the IRD/ORD block, which revision 1 lacks.
    #[error("peer-to-peer mode needs MPA revision 2")]
    PeerToPeerNeedsRev2,
    /// `accept`/`reject` outside the request-received state, or a
    /// responder-only call on an initiator.
    #[error("call not valid in the current start-up state")]
    WrongState,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_error_is_llp_mpa_code_2() {
        let e = DeframeError::Crc {
            computed: 1,
            received: 2,
        };
        assert_eq!(e.terminate_code(), (0, 2));
    }

    #[test]
    fn marker_and_length_errors_are_code_3() {
        let e = DeframeError::Marker {
            at: StreamOffset(512),
            fpduptr: 4,
            expected: 8,
        };
        assert_eq!(e.terminate_code(), (0, 3));
        let e = DeframeError::UlpduTooLong {
            len: 9000,
            max: 1460,
        };
        assert_eq!(e.terminate_code(), (0, 3));
    }

    #[test]
    fn startup_codes() {
        assert_eq!(StartupError::BadKey.terminate_code(), Some((0, 4)));
        assert_eq!(
            StartupError::BadRev { rev: 7 }.terminate_code(),
            Some((0, 4))
        );
        assert_eq!(
            StartupError::InsufficientIrd {
                our_ird: 1,
                peer_ord: 2
            }
            .terminate_code(),
            Some((0, 6))
        );
        assert_eq!(StartupError::NoMatchingRtr.terminate_code(), Some((0, 7)));
        assert_eq!(StartupError::Timeout.terminate_code(), None);
        assert_eq!(StartupError::Rejected.terminate_code(), None);
        assert_eq!(StartupError::PeerClosed.terminate_code(), None);
    }

    #[test]
    fn messages_name_the_numbers() {
        let e = DeframeError::Crc {
            computed: 0xdead_beef,
            received: 0,
        };
        assert_eq!(
            e.to_string(),
            "MPA CRC mismatch: computed 0xdeadbeef, received 0x00000000"
        );
    }
}
