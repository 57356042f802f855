//! MPA wire formats that carry no state: the Request/Reply frames of
//! connection start-up (RFC 5044 section 7.1) and the RFC 6581 IRD/ORD block.
//!
//! Panic contract, as in smoltcp: once [`Frame::new_checked`] (or
//! [`Frame::check_len`]) succeeds, no accessor panics; [`FrameRepr::emit`]
//! never panics and refuses a buffer shorter than [`FrameRepr::buffer_len`].

mod frame;
mod ird_ord;

pub use frame::{
    flags, Frame, FrameKind, FrameRepr, HEADER_LEN, KEY_LEN, MAX_PRIVATE_DATA, REPLY_KEY,
    REQUEST_KEY,
};
pub use ird_ord::{IrdOrd, Rtr, RtrSet, IRD_ORD_LEN, IRD_ORD_MAX};

/// Why bytes are not a valid MPA Request/Reply frame, or a frame cannot be
/// emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Fewer bytes than the frame needs (`needed` counts from the frame
    /// start).
    #[error("truncated MPA frame: {have} of {needed} bytes")]
    Truncated {
        /// Bytes the frame needs.
        needed: usize,
        /// Bytes present.
        have: usize,
    },
    /// The 16-byte key is neither "MPA ID Req Frame" nor "MPA ID Rep Frame".
    #[error("not an MPA Request/Reply key")]
    BadKey,
    /// PD_Length (or the private data to emit) exceeds 512 octets
    /// (RFC 5044 section 7.1).
    #[error("private data of {pd_length} bytes exceeds the MPA limit of 512")]
    PrivateDataTooLong {
        /// The length found or asked for, IRD/ORD block included.
        pd_length: usize,
    },
    /// The enhanced flag is set but the private data cannot hold the 4-byte
    /// IRD/ORD block (RFC 6581).
    #[error("enhanced flag set but only {pd_length} bytes of private data")]
    EnhancedTooShort {
        /// PD_Length of the frame.
        pd_length: usize,
    },
    /// IRD or ORD above the 14-bit maximum (0x3fff).
    #[error("IRD {ird} / ORD {ord} do not fit 14 bits")]
    IrdOrdOutOfRange {
        /// The IRD asked for.
        ird: u16,
        /// The ORD asked for.
        ord: u16,
    },
    /// The output buffer is shorter than the frame.
    #[error("buffer of {available} bytes, frame needs {needed}")]
    BufferTooSmall {
        /// Bytes the frame needs.
        needed: usize,
        /// Bytes offered.
        available: usize,
    },
}
