//! One shared receive queue inside the engine: the buffers its queue pairs
//! draw on, its armed limit and its events, and who still uses it.

use std::collections::VecDeque;

use ddp::memory::PdId;
use ddp::untagged::SharedBuffers;

use crate::types::{SrqAttr, SrqEvent};

pub(super) struct SrqSlot {
    pub(super) buffers: SharedBuffers,
    /// Armed limit; 0: not armed.
    limit: usize,
    pub(super) events: VecDeque<SrqEvent>,
    /// Queue pairs created on it and not yet destroyed.
    pub(super) qps: usize,
    /// Its handle was dropped while queue pairs used it: it goes with the
    /// last of them.
    pub(super) orphaned: bool,
}

impl SrqSlot {
    pub(super) fn new(pd: PdId, max_wr: usize, max_sge: usize, limit: usize) -> Self {
        SrqSlot {
            buffers: SharedBuffers::new(pd, max_wr, max_sge),
            limit,
            events: VecDeque::new(),
            qps: 0,
            orphaned: false,
        }
    }

    pub(super) fn arm(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// After a queue pair's receive drew on the buffers, which held
    /// `before`: if that took the count below the armed limit, queue the
    /// event and disarm (siw and libibverbs: it fires as a receive is
    /// taken, once per arming). True if it fired.
    pub(super) fn taken_from(&mut self, before: usize) -> bool {
        let now = self.buffers.posted();
        if self.limit == 0 || now >= before || now >= self.limit {
            return false;
        }
        self.limit = 0;
        self.events.push_back(SrqEvent::LimitReached);
        true
    }

    pub(super) fn attr(&self) -> SrqAttr {
        SrqAttr {
            max_wr: self.buffers.max_posted(),
            max_sge: self.buffers.max_sge(),
            srq_limit: self.limit,
            posted: self.buffers.posted(),
            qps: self.qps,
        }
    }
}
