//! Shared receive queues inside the engine: each one's buffers its queue
//! pairs draw on, its armed limit and its events, and who still uses it;
//! and the engine's calls that make, fill, arm, query and end them.

use std::collections::VecDeque;

use ddp::memory::PdId;
use ddp::untagged::SharedBuffers;
use rdmap::work_request::RecvWr;

use super::Engine;
use crate::types::{SrqAttr, SrqEvent, SrqInit, VerbsError};

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

impl Engine {
    pub(crate) fn create_srq(&mut self, pd: PdId, init: SrqInit) -> u32 {
        let num = self.next_srq;
        self.next_srq += 1;
        let slot = SrqSlot::new(pd, init.max_wr, init.max_sge, init.srq_limit);
        self.srqs.insert(num, slot);
        num
    }

    fn srq(&mut self, num: u32) -> Result<&mut SrqSlot, VerbsError> {
        self.srqs.get_mut(&num).ok_or(VerbsError::NoSuchSrq(num))
    }

    pub(crate) fn post_srq_recv(&mut self, num: u32, wr: RecvWr) -> Result<(), VerbsError> {
        let s = self.srq(num)?;
        if s.buffers.posted() == 0 {
            // Its queue pairs may have stalled on the empty queue, with
            // their bytes already in: no news from a stream will come.
            for (&qp, slot) in &self.qps {
                if slot.srq == Some(num) {
                    self.work.mark(qp);
                }
            }
        }
        let s = self.srq(num)?;
        s.buffers.post(wr.wr_id, &wr.sgl).map_err(|e| {
            use ddp::untagged::PostError as P;
            use rdmap::work_request::PostError as R;
            VerbsError::Post(match e {
                P::QueueFull { max, .. } => R::QueueFull {
                    queue: "shared receive",
                    depth: max,
                },
                other => other.into(),
            })
        })
    }

    pub(crate) fn arm_srq(&mut self, num: u32, limit: usize) -> Result<(), VerbsError> {
        self.srq(num)?.arm(limit);
        Ok(())
    }

    pub(crate) fn query_srq(&mut self, num: u32) -> Result<SrqAttr, VerbsError> {
        Ok(self.srq(num)?.attr())
    }

    pub(crate) fn take_srq_event(&mut self, num: u32) -> Option<SrqEvent> {
        self.srqs.get_mut(&num)?.events.pop_front()
    }

    pub(crate) fn has_srq_event(&self, num: u32) -> bool {
        self.srqs.get(&num).is_some_and(|s| !s.events.is_empty())
    }

    /// Destroys shared receive queue `num` and hands back the ids of the
    /// work requests still posted, unless queue pairs use it: then
    /// nothing changes and `Err` says how many.
    pub(crate) fn destroy_srq(&mut self, num: u32) -> Result<Vec<u64>, usize> {
        match self.srqs.get(&num) {
            Some(s) if s.qps > 0 => Err(s.qps),
            Some(_) => Ok(self
                .srqs
                .remove(&num)
                .map(|mut s| s.buffers.drain())
                .unwrap_or_default()),
            None => Ok(Vec::new()),
        }
    }

    /// Its handle went away: gone now if no queue pair uses it (returning
    /// how many work requests were still posted, which nobody will see
    /// complete), else kept until the last of them is destroyed.
    pub(crate) fn drop_srq(&mut self, num: u32) -> usize {
        match self.srqs.get_mut(&num) {
            Some(s) if s.qps > 0 => {
                s.orphaned = true;
                s.events.clear();
                0
            }
            Some(_) => self.srqs.remove(&num).map_or(0, |s| s.buffers.posted()),
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot_with(posted: u64, limit: usize) -> SrqSlot {
        let mut s = SrqSlot::new(PdId(1), 8, 1, limit);
        for id in 0..posted {
            s.buffers.post(id, &[]).unwrap();
        }
        s
    }

    /// Takes one buffer, as a message starting on a queue pair does.
    fn take_one(s: &mut SrqSlot) -> bool {
        let before = s.buffers.posted();
        let mut left = s.buffers.drain();
        left.remove(0);
        for id in left {
            s.buffers.post(id, &[]).unwrap();
        }
        s.taken_from(before)
    }

    #[test]
    fn the_limit_fires_once_when_a_take_leaves_fewer_than_it() {
        let mut s = slot_with(4, 3);
        assert!(!take_one(&mut s), "3 left is not fewer than 3");
        assert!(take_one(&mut s), "2 left");
        assert_eq!(s.events.pop_front(), Some(SrqEvent::LimitReached));
        assert_eq!(s.attr().srq_limit, 0, "disarmed");
        assert!(!take_one(&mut s), "not again until armed");
        assert!(s.events.is_empty());
    }

    #[test]
    fn arming_below_the_limit_waits_for_the_next_take() {
        let mut s = slot_with(2, 0);
        s.arm(5);
        assert!(!s.taken_from(2), "nothing was taken");
        assert!(take_one(&mut s));
        // Posting more never fires it.
        let mut s = slot_with(1, 4);
        s.buffers.post(9, &[]).unwrap();
        assert!(!s.taken_from(1));
    }
}
