//! TCP stream reassembly for a capture: per connection and direction, bytes
//! in sequence order from the SYN (or from the first data segment when the
//! capture missed the handshake), retransmissions and overlaps dropped,
//! out-of-order segments held within a bound, holes reported as gaps.

mod flows;
mod seq;
mod stream;

pub use flows::{Direction, FlowEntry, FlowTable, Lookup, Orientation, MAX_CONNECTIONS};
pub use seq::SeqNumber;
pub use stream::{Reassembler, StreamEvent, StreamStats, MAX_HELD_BYTES, MAX_HELD_SEGMENTS};
