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
pub use message::{Body, MessageRepr, ParseError};
pub use read_request::{ReadRequest, ReadRequestRepr};
pub use terminate::{Attached, TermControl, TermLayout, TerminateRepr};

use crate::opcode::Opcode;

/// Why bytes are not a well-formed RDMAP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("header truncated")]
    Truncated,
    #[error("bytes after the end of the header")]
    TrailingBytes,
    #[error("Terminate header has R set without D")]
    MalformedTerminate,
    #[error("RDMAP version {0} (expected 1)")]
    Version(u8),
    #[error("unexpected opcode: {0}")]
    UnexpectedOpcode(Opcode),
    #[error("{opcode} on untagged queue {qn}")]
    WrongQueue { opcode: Opcode, qn: u32 },
    #[error("{0} must be a single DDP segment")]
    NotSingleSegment(Opcode),
    #[error("{opcode} payload of {len} bytes (expected {expected})")]
    BadLength {
        opcode: Opcode,
        len: usize,
        expected: usize,
    },
}
