//! The untagged buffer model (RFC 5041 sections 3 and 5.3): queues of
//! buffers the ULP posts, filled in order, one message per buffer.
//!
//! A message's segments must arrive in order, each with MO equal to the
//! bytes already placed, and a queue assembles one message at a time —
//! what siw enforces and what an in-order TCP stream makes free. Each queue
//! keeps O(1) state for the message in progress and at most a configured
//! number of posted buffers.
//!
//! A queue is either [`QueueMode::Posted`] (payload scattered through
//! [`Memory`](crate::memory::Memory) into the oldest posted buffer, checked
//! for local write) or [`QueueMode::Inline`] (the ULP consumes the payload
//! itself, e.g. RDMAP's Read Requests and Terminates; DDP checks only the
//! sequencing and a size bound). A [`QueueMode::Shared`] queue takes its
//! buffers from a [`SharedBuffers`] pool several streams draw on.

mod msn;
mod queue;
mod queues;
mod sgl;
mod shared;

pub use msn::MsnCounter;
pub use queue::{RecvQueue, INITIAL_MSN};
pub use queues::{
    UntaggedQueues, MAX_QUEUES, QN_READ_REQUEST, QN_SEND, QN_TERMINATE, READ_REQUEST_LEN,
    TERMINATE_MAX_LEN,
};
pub use sgl::{check_sgl, Sge};
pub use shared::SharedBuffers;

/// How a queue receives its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueMode {
    /// Into buffers the ULP posts: at most `max_posted` waiting, each an
    /// SGL of at most `max_sge` elements.
    Posted {
        /// Posted buffers the queue may hold at once.
        max_posted: usize,
        /// Elements each buffer's SGL may have.
        max_sge: usize,
    },
    /// Handed to the ULP segment by segment; a message may not exceed
    /// `max_message` bytes.
    Inline {
        /// Longest message the ULP accepts.
        max_message: u32,
    },
    /// Into buffers of a [`SharedBuffers`] pool passed with each segment
    /// ([`RecvQueue::place_with`]); nothing is posted to the queue itself.
    Shared,
}

/// A message that filled a posted buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Completion {
    /// The queue the message arrived on.
    pub qn: u32,
    /// Its message sequence number.
    pub msn: u32,
    /// The handle the buffer was posted with.
    pub id: u64,
    /// Message length in bytes.
    pub len: u32,
    /// From the last segment: RDMAP's version and opcode.
    pub rsvd_ulp: u8,
    /// From the last segment: RDMAP's STag to invalidate.
    pub rsvd_ulp2: u32,
}

/// What accepting one untagged segment did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placed {
    /// Payload placed into posted buffer `id`; the message goes on.
    Partial {
        /// The queue the segment was for.
        qn: u32,
        /// The message it belongs to.
        msn: u32,
        /// The posted buffer it went into.
        id: u64,
        /// Payload bytes this segment placed.
        placed: u32,
    },
    /// The last segment: the buffer holds a whole message.
    Complete(Completion),
    /// A segment of an inline queue, in sequence: the ULP takes the payload
    /// (message bytes `mo..mo + payload.len()`).
    Inline {
        /// The queue the segment was for.
        qn: u32,
        /// The message it belongs to.
        msn: u32,
        /// Where its payload goes in the message.
        mo: u32,
        /// Whether it is the message's last segment.
        last: bool,
    },
}

/// A local posting mistake: never the peer's fault, no TERMINATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// No such queue
    #[error("queue {qn} is not enabled")]
    NoSuchQueue {
        /// The queue number given.
        qn: u32,
    },
    /// The queue hands its messages to the ULP inline, so buffers cannot be posted to it.
    #[error("queue {qn} takes no posted buffers (inline)")]
    NotPostable {
        /// The queue number given.
        qn: u32,
    },
    /// The queue holds as many buffers as it may.
    #[error("queue {qn} already holds {max} posted buffers")]
    QueueFull {
        /// The queue number given.
        qn: u32,
        /// Its limit.
        max: usize,
    },
    /// The SGL has more elements than the queue allows.
    #[error("{n} SGEs, at most {max} allowed")]
    TooManySges {
        /// Elements given.
        n: usize,
        /// The queue's limit.
        max: usize,
    },
    /// An element's end does not fit in 64 bits.
    #[error("SGE {index} ends past 2^64")]
    SgeWraps {
        /// Its position in the SGL.
        index: usize,
    },
}

#[cfg(test)]
mod tests;
