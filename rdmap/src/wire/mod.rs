//! RDMAP wire formats as checked views and `Repr`s.
//!
//! Panic contract (as in smoltcp's `wire`): once `new_checked`/`check_len`
//! succeeded no accessor panics. Every `emit` checks its buffer before the
//! first write and returns [`EmitError`] (DDP's, so both layers share one
//! contract), writing nothing, when it is shorter than `buffer_len()`; it
//! never panics. Parsers take bytes from the peer and return [`WireError`];
//! nothing here indexes unchecked, and field offsets live in each header's
//! private `field` module.

pub mod atomic;
pub mod control;
pub mod immediate;
pub mod message;
pub mod read_request;
pub mod terminate;

pub use atomic::{AtomicOp, AtomicRequest, AtomicRequestRepr, AtomicResponse, AtomicResponseRepr};
pub use control::{Control, RDMAP_VERSION};
pub use ddp::wire::EmitError;
pub use immediate::{ImmediateData, ImmediateDataRepr};
pub use message::{Body, DataSegment, MessageRepr, ParseError};
pub use read_request::{ReadRequest, ReadRequestRepr};
pub use terminate::{Attached, TermControl, TermLayout, TerminateRepr};

use crate::opcode::Opcode;

/// Why bytes are not a well-formed RDMAP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Shorter than the header needs.
    #[error("header truncated")]
    Truncated,
    /// Longer than the header, where nothing may follow.
    #[error("bytes after the end of the header")]
    TrailingBytes,
    /// A Terminate header says a Read Request header is attached (R) but not the DDP header (D)
    /// it follows.
    #[error("Terminate header has R set without D")]
    MalformedTerminate,
    /// Not RDMAP version 1.
    #[error("RDMAP version {0} (expected 1)")]
    Version(u8),
    /// An opcode not allowed where it came (or unknown).
    #[error("unexpected opcode: {0}")]
    UnexpectedOpcode(Opcode),
    /// An untagged opcode on a queue it does not belong to.
    #[error("{opcode} on untagged queue {qn}")]
    WrongQueue {
        /// The opcode.
        opcode: Opcode,
        /// The queue it came on.
        qn: u32,
    },
    /// A message that must fit one DDP segment was split.
    #[error("{0} must be a single DDP segment")]
    NotSingleSegment(Opcode),
    /// A fixed-size message of the wrong length.
    #[error("{opcode} payload of {len} bytes (expected {expected})")]
    BadLength {
        /// The message's opcode.
        opcode: Opcode,
        /// The payload length it came with.
        len: usize,
        /// The length its opcode needs.
        expected: usize,
    },
}
