//! RFC 7306 atomic operations in flight: the requester's requests awaiting
//! their responses, and the responder's responses waiting to go out.
//!
//! Atomic Requests travel with RDMA Read Requests on queue 1 and share
//! their budget: the requester keeps READs plus atomics within ORD, the
//! responder refuses more than IRD unanswered READs plus atomics (as
//! libibverbs' `max_rd_atomic` and `max_dest_rd_atomic` count both).
//! Responses come back in request order, each naming its request.

use std::collections::VecDeque;

use ddp::untagged::Sge;

use crate::term::TermCode;
use crate::wire::AtomicResponseRepr;

/// A request on the wire whose response has not arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutstandingAtomic {
    /// The send queue entry that posted it.
    pub seq: u64,
    pub request_id: u32,
    /// Where the original value goes (8 bytes).
    pub sink: Sge,
}

/// The requester's side.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutboundAtomics {
    queue: VecDeque<OutstandingAtomic>,
    next_id: u32,
}

impl OutboundAtomics {
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The identifier for the next request (distinct among those
    /// outstanding: at most ORD of 2^32 are).
    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    /// Records a request just sent with [`next_id`](Self::next_id).
    pub fn push(&mut self, seq: u64, sink: Sge) {
        self.queue.push_back(OutstandingAtomic {
            seq,
            request_id: self.next_id,
            sink,
        });
        self.next_id = self.next_id.wrapping_add(1);
    }

    /// Takes the request a response answers: the oldest, whose identifier
    /// it must carry. A response nobody asked for is an unexpected opcode
    /// (as an unsolicited Read Response is); one naming another request
    /// is a remote operation error.
    pub fn answer(&mut self, r: &AtomicResponseRepr) -> Result<OutstandingAtomic, TermCode> {
        let head = self
            .queue
            .front()
            .ok_or(TermCode::RDMAP_UNEXPECTED_OPCODE)?;
        if head.request_id != r.request_id {
            return Err(TermCode::RDMAP_OPERATION_UNSPECIFIED);
        }
        self.queue
            .pop_front()
            .ok_or(TermCode::RDMAP_UNEXPECTED_OPCODE)
    }

    pub fn clear(&mut self) {
        self.queue.clear();
    }
}

/// The responder's side: executed requests whose responses are queued.
#[derive(Debug, Clone, Default)]
pub(crate) struct InboundAtomics {
    queue: VecDeque<AtomicResponseRepr>,
}

impl InboundAtomics {
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn push(&mut self, r: AtomicResponseRepr) {
        self.queue.push_back(r);
    }

    pub fn front(&self) -> Option<&AtomicResponseRepr> {
        self.queue.front()
    }

    pub fn pop_front(&mut self) -> Option<AtomicResponseRepr> {
        self.queue.pop_front()
    }

    pub fn clear(&mut self) {
        self.queue.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddp::memory::STag;

    fn sink() -> Sge {
        Sge {
            stag: STag(0x100),
            to: 0,
            len: 8,
        }
    }

    #[test]
    fn responses_answer_the_oldest_request_by_id() {
        let mut out = OutboundAtomics::default();
        assert_eq!(
            out.answer(&AtomicResponseRepr {
                request_id: 0,
                original: 1
            }),
            Err(TermCode::RDMAP_UNEXPECTED_OPCODE)
        );
        out.push(10, sink());
        out.push(11, sink());
        assert_eq!(out.len(), 2);
        assert_eq!(
            out.answer(&AtomicResponseRepr {
                request_id: 1,
                original: 1
            }),
            Err(TermCode::RDMAP_OPERATION_UNSPECIFIED)
        );
        let first = out.answer(&AtomicResponseRepr {
            request_id: 0,
            original: 1,
        });
        assert_eq!(first.map(|a| a.seq), Ok(10));
        assert_eq!(out.next_id(), 2);
    }
}
