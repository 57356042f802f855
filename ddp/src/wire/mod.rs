//! DDP headers on the wire (RFC 5041 section 4), smoltcp style: checked
//! views over borrowed bytes ([`TaggedHeader`], [`UntaggedHeader`]) and
//! `Repr`s that hold their meaning ([`TaggedRepr`], [`UntaggedRepr`]).
//!
//! Panic contract: once `new_checked` (or [`Segment::new_checked`]) has
//! accepted a buffer, no accessor panics. Every `emit` checks the buffer
//! first and returns [`EmitError`], writing nothing, when it is shorter than
//! `buffer_len()`; it never panics. Every bit of a header survives
//! parse-then-emit, reserved bits included. Field offsets live in each
//! header's private `field` module; nothing indexes by number.

pub mod control;
mod emit_error;
mod segment;
mod tagged;
mod untagged;

pub use control::{Control, DDP_VERSION};
pub use emit_error::EmitError;
pub use segment::{parse_segment, Segment, SegmentRepr};
pub use tagged::{TaggedHeader, TaggedRepr};
pub use untagged::{UntaggedHeader, UntaggedRepr};

/// Length of the tagged DDP header: control, RsvdULP, STag, TO.
pub const TAGGED_HEADER_LEN: usize = 14;
/// Length of the untagged DDP header: control, 40-bit RsvdULP, QN, MSN, MO.
pub const UNTAGGED_HEADER_LEN: usize = 18;

/// Big-endian u32 at `at`. Callers have checked the length.
#[inline]
fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Big-endian u64 at `at`. Callers have checked the length.
#[inline]
fn read_u64(b: &[u8], at: usize) -> u64 {
    (u64::from(read_u32(b, at)) << 32) | u64::from(read_u32(b, at + 4))
}
