//! Posted buffers shared by the queue 0 of several streams: the storage of
//! a verbs shared receive queue. A stream whose queue is
//! [`QueueMode::Shared`](super::QueueMode::Shared) takes the oldest buffer
//! here when a message starts, and keeps it until the message completes;
//! the buffers still here belong to none of the streams, so a stream that
//! fails or closes flushes only the one it was filling.

use std::collections::VecDeque;

use super::queue::Posted;
use super::PostError;
use crate::memory::PdId;
use crate::untagged::{Sge, QN_SEND};

/// A pool of posted receive buffers, at most `max_posted` of at most
/// `max_sge` SGEs each, registered in protection domain `pd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedBuffers {
    pd: PdId,
    max_posted: usize,
    max_sge: usize,
    posted: VecDeque<Posted>,
}

impl SharedBuffers {
    /// An empty pool whose buffers are scattered into as domain `pd`.
    pub fn new(pd: PdId, max_posted: usize, max_sge: usize) -> Self {
        SharedBuffers {
            pd,
            max_posted,
            max_sge,
            posted: VecDeque::new(),
        }
    }

    /// The protection domain its buffers are checked against.
    pub fn pd(&self) -> PdId {
        self.pd
    }

    /// Most buffers it holds at once.
    pub fn max_posted(&self) -> usize {
        self.max_posted
    }

    /// Most SGEs per buffer.
    pub fn max_sge(&self) -> usize {
        self.max_sge
    }

    /// Buffers posted and not yet taken by a stream.
    pub fn posted(&self) -> usize {
        self.posted.len()
    }

    /// Posts a buffer (checked as a queue's own post is, reported as
    /// queue 0's).
    pub fn post(&mut self, id: u64, sgl: &[Sge]) -> Result<(), PostError> {
        let b = Posted::check(
            QN_SEND,
            self.max_posted,
            self.max_sge,
            self.posted.len(),
            id,
            sgl,
        )?;
        self.posted.push_back(b);
        Ok(())
    }

    /// Handles of every buffer still posted, oldest first, leaving the
    /// pool empty: what its owner gets back when it goes away.
    pub fn drain(&mut self) -> Vec<u64> {
        self.posted.drain(..).map(|b| b.id).collect()
    }

    /// The oldest buffer, taken by a stream whose message starts.
    pub(super) fn take(&mut self) -> Option<Posted> {
        self.posted.pop_front()
    }
}
