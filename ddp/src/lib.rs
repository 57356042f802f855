//! DDP (RFC 5041): tagged and untagged direct data placement.
//!
//! Sans-IO: header views and reprs ([`wire`]), a segmenter for outbound
//! messages ([`segment`]), tagged placement checks ([`tagged`]), untagged
//! queues with MSN/MO bookkeeping ([`untagged`]), all writing through the
//! [`memory::Memory`] seam. Every error a peer can cause is typed and maps
//! to the TERMINATE triple that goes on the wire ([`error`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod memory;
mod region;
mod rights;
pub mod segment;
pub mod tagged;
pub mod untagged;
pub mod wire;

pub use error::{DdpError, Layer, TaggedError, TermCode, UntaggedError};
pub use memory::{Access, CopyHook, Memory, PdId, PlainCopy, RegionInfo, RegionTable, STag};
pub use segment::Segmenter;
pub use tagged::{place_tagged, TaggedSequence};
pub use untagged::{Completion, Placed, QueueMode, RecvQueue, Sge, SharedBuffers, UntaggedQueues};
pub use wire::{
    parse_segment, Segment, SegmentRepr, TaggedHeader, TaggedRepr, UntaggedHeader, UntaggedRepr,
    DDP_VERSION, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN,
};
