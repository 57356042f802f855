//! The untagged queues of one stream, addressed by queue number.

use super::{Placed, PostError, QueueMode, RecvQueue, Sge, SharedBuffers};
use crate::error::UntaggedError;
use crate::memory::{Memory, PdId};
use crate::wire::UntaggedRepr;

/// Most queue numbers a stream may enable: bounds the table.
pub const MAX_QUEUES: u32 = 16;

/// RDMAP's queue numbers (RFC 5040 section 5.1).
pub const QN_SEND: u32 = 0;
/// Where RDMA Read Requests arrive.
pub const QN_READ_REQUEST: u32 = 1;
/// Where TERMINATE messages arrive.
pub const QN_TERMINATE: u32 = 2;

/// Payload of an RDMA Read Request: sink STag, sink TO, size, source STag,
/// source TO (RFC 5040 section 4.4).
pub const READ_REQUEST_LEN: u32 = 28;
/// Bound on a Terminate message's payload: the 4-byte control word, a
/// 2-byte length, and the quoted DDP and RDMAP headers (at most 18 + 28),
/// rounded up generously.
pub const TERMINATE_MAX_LEN: u32 = 128;

/// The queues of one stream. A QN the ULP did not enable is refused with
/// "invalid QN".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UntaggedQueues {
    queues: Vec<Option<RecvQueue>>,
}

impl UntaggedQueues {
    /// No queue enabled.
    pub fn new() -> Self {
        Self::default()
    }

    /// RDMAP's three queues: Sends into posted buffers (at most
    /// `max_posted` of at most `max_sge` SGEs), Read Requests and
    /// Terminates consumed inline by RDMAP.
    pub fn rdmap(max_posted: usize, max_sge: usize) -> Self {
        let mut q = Self::new();
        q.enable(
            QN_SEND,
            QueueMode::Posted {
                max_posted,
                max_sge,
            },
        );
        q.enable(
            QN_READ_REQUEST,
            QueueMode::Inline {
                max_message: READ_REQUEST_LEN,
            },
        );
        q.enable(
            QN_TERMINATE,
            QueueMode::Inline {
                max_message: TERMINATE_MAX_LEN,
            },
        );
        q
    }

    /// Enables (or resets) queue `qn`. Returns `false`, changing nothing, if
    /// `qn >= MAX_QUEUES`.
    pub fn enable(&mut self, qn: u32, mode: QueueMode) -> bool {
        if qn >= MAX_QUEUES {
            return false;
        }
        let i = qn as usize;
        if self.queues.len() <= i {
            self.queues.resize(i + 1, None);
        }
        self.queues[i] = Some(RecvQueue::new(qn, mode));
        true
    }

    /// Disables queue `qn`, returning it.
    pub fn disable(&mut self, qn: u32) -> Option<RecvQueue> {
        self.queues.get_mut(qn as usize).and_then(Option::take)
    }

    /// Queue `qn`, if enabled.
    pub fn queue(&self, qn: u32) -> Option<&RecvQueue> {
        self.queues.get(qn as usize).and_then(Option::as_ref)
    }

    /// Queue `qn` for posting or placing, if enabled.
    pub fn queue_mut(&mut self, qn: u32) -> Option<&mut RecvQueue> {
        self.queues.get_mut(qn as usize).and_then(Option::as_mut)
    }

    /// Posts a receive buffer to queue `qn`.
    pub fn post(&mut self, qn: u32, id: u64, sgl: &[Sge]) -> Result<(), PostError> {
        self.queue_mut(qn)
            .ok_or(PostError::NoSuchQueue { qn })?
            .post(id, sgl)
    }

    /// Accepts one untagged segment from the peer: picks its queue and
    /// places it there (see [`RecvQueue::place`]).
    pub fn place<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        pd: PdId,
        repr: &UntaggedRepr,
        payload: &[u8],
    ) -> Result<Placed, UntaggedError> {
        self.place_with(mem, pd, repr, payload, None)
    }

    /// [`Self::place`] with the pool a [`QueueMode::Shared`] queue draws
    /// its buffers from (see [`RecvQueue::place_with`]; inlined, as it
    /// is).
    #[inline(always)]
    pub fn place_with<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        pd: PdId,
        repr: &UntaggedRepr,
        payload: &[u8],
        shared: Option<&mut SharedBuffers>,
    ) -> Result<Placed, UntaggedError> {
        self.queue_mut(repr.qn)
            .ok_or(UntaggedError::InvalidQn { qn: repr.qn })?
            .place_with(mem, pd, repr, payload, shared)
    }

    /// Flushes every queue: the handles of all buffers still held, by
    /// queue, in-progress first.
    pub fn flush(&mut self) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        for q in self.queues.iter_mut().flatten() {
            let qn = q.qn();
            out.extend(q.flush().into_iter().map(|id| (qn, id)));
        }
        out
    }
}
