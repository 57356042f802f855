//! Shared receive queues: one pool of receive work requests that the
//! untagged messages of several queue pairs (Sends, Sends with Invalidate
//! or Solicited Event, RFC 7306 Immediate Data) draw on, as
//! `ibv_create_srq` makes.
//!
//! A queue pair created with one ([`QpInit::with_srq`](crate::QpInit::with_srq))
//! has no receive queue of its own: posting to it fails. A message takes
//! the oldest work request posted to the shared queue when it starts, and
//! completes on the receiving queue pair's receive completion queue with
//! that queue pair's number. A Send that finds none posted is answered as
//! with an empty receive queue: TERMINATE, DDP untagged buffer error 0x02
//! (no buffer available).
//!
//! The work requests posted belong to the shared queue, not to any queue
//! pair: a queue pair that is disconnected, fails or is destroyed flushes
//! only the one its message in progress was filling. What becomes of
//! those still posted when the queue goes:
//! * [`SharedReceiveQueue::destroy`] refuses while queue pairs use it (as
//!   `ibv_destroy_srq` does, EBUSY) and otherwise hands their ids back;
//! * dropping the handle while queue pairs use it keeps the queue serving
//!   them until the last one is destroyed; when it goes (then, or at once
//!   if unused) the work requests still posted are counted in
//!   [`DeviceStats::srq_wrs_discarded`](crate::DeviceStats::srq_wrs_discarded)
//!   and never complete: there is no completion queue to flush them to.
//!
//! The limit: armed with [`SharedReceiveQueue::modify_limit`] (or
//! [`SrqInit::srq_limit`]), it fires [`SrqEvent::LimitReached`] once when
//! a message takes a work request and fewer than the limit stay posted,
//! and disarms. Take it with [`SharedReceiveQueue::try_event`] or
//! [`SharedReceiveQueue::wait_event`], or have an [`EventChannel`] fire
//! for it ([`SharedReceiveQueue::watch_events`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::channel::EventChannel;
use crate::device::{Device, DeviceShared, Watched};
use crate::pd::ProtectionDomain;
use crate::types::{RecvWr, VerbsError};

pub use crate::types::{SrqAttr, SrqEvent, SrqInit, MAX_SRQ_SGE, MAX_SRQ_WR};

impl Device {
    /// A shared receive queue in `pd`: its work requests' buffers are
    /// checked against that domain, whatever the domain of the queue
    /// pairs receiving into them.
    pub fn create_srq(
        &self,
        pd: &ProtectionDomain,
        init: SrqInit,
    ) -> Result<SharedReceiveQueue, VerbsError> {
        if !Arc::ptr_eq(&pd.device, &self.shared) {
            return Err(VerbsError::WrongDevice);
        }
        check_size("max_wr", init.max_wr, MAX_SRQ_WR)?;
        check_size("max_sge", init.max_sge, MAX_SRQ_SGE)?;
        check_limit(init.srq_limit, init.max_wr)?;
        let num = self.shared.with_engine(|e| e.create_srq(pd.id, init));
        Ok(SharedReceiveQueue {
            num,
            pd: pd.clone(),
            device: self.shared.clone(),
        })
    }
}

fn check_size(field: &'static str, value: usize, max: usize) -> Result<(), VerbsError> {
    if value == 0 || value > max {
        return Err(VerbsError::SrqSize { field, value, max });
    }
    Ok(())
}

fn check_limit(limit: usize, max_wr: usize) -> Result<(), VerbsError> {
    if limit > max_wr {
        return Err(VerbsError::SrqSize {
            field: "srq_limit",
            value: limit,
            max: max_wr,
        });
    }
    Ok(())
}

/// A shared receive queue.
#[derive(Debug)]
pub struct SharedReceiveQueue {
    pub(crate) num: u32,
    pd: ProtectionDomain,
    pub(crate) device: Arc<DeviceShared>,
}

impl SharedReceiveQueue {
    /// Its number on the device.
    pub fn num(&self) -> u32 {
        self.num
    }

    /// The protection domain it was created in.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// Posts a receive work request. Fails when `max_wr` are posted
    /// already or the request has more than `max_sge` entries.
    pub fn post_recv(&self, wr: RecvWr) -> Result<(), VerbsError> {
        self.device.with_engine(|e| e.post_srq_recv(self.num, wr))
    }

    /// Arms the limit at `limit` (`ibv_modify_srq` with IBV_SRQ_LIMIT); 0
    /// disarms it. At most `max_wr`.
    pub fn modify_limit(&self, limit: usize) -> Result<(), VerbsError> {
        self.device.with_engine(|e| {
            let max_wr = e.query_srq(self.num)?.max_wr;
            check_limit(limit, max_wr)?;
            e.arm_srq(self.num, limit)
        })
    }

    /// Sizes, armed limit, work requests posted, queue pairs using it.
    pub fn query(&self) -> Result<SrqAttr, VerbsError> {
        self.device.with_engine(|e| e.query_srq(self.num))
    }

    /// The next event, if any.
    pub fn try_event(&self) -> Option<SrqEvent> {
        self.device.progress_if_caller_driven();
        self.device.with_engine(|e| e.take_srq_event(self.num))
    }

    /// Blocks for the next event; `None` on timeout.
    pub fn wait_event(&self, timeout: Duration) -> Option<SrqEvent> {
        let num = self.num;
        self.device
            .wait_take(timeout, |e| e.take_srq_event(num), &|e| {
                e.has_srq_event(num)
            })
    }

    /// Makes `channel` readable whenever an event waits for
    /// [`SharedReceiveQueue::try_event`] (libibverbs delivers it on the
    /// context's async event descriptor). Fires at once if one waits.
    pub fn watch_events(&self, channel: &EventChannel) {
        self.device.watch(Watched::Srq(self.num), &channel.fd);
    }

    /// Destroys the queue and returns the ids of the work requests still
    /// posted, oldest first: they will not complete, their buffers are the
    /// caller's again. While queue pairs use it, nothing changes and the
    /// queue comes back in the error.
    pub fn destroy(self) -> Result<Vec<u64>, SrqInUse> {
        match self.device.with_engine(|e| e.destroy_srq(self.num)) {
            Ok(ids) => Ok(ids),
            Err(qps) => Err(SrqInUse { srq: self, qps }),
        }
    }
}

impl Drop for SharedReceiveQueue {
    fn drop(&mut self) {
        let num = self.num;
        self.device.unwatch(Watched::Srq(num));
        let discarded = self.device.with_engine(|e| e.drop_srq(num));
        self.device.note_srq_discarded(discarded);
    }
}

/// [`SharedReceiveQueue::destroy`] while queue pairs still receive from
/// the queue: destroy them first. Holds the queue, unchanged.
#[derive(Debug)]
pub struct SrqInUse {
    /// The queue, still in service.
    pub srq: SharedReceiveQueue,
    /// Queue pairs using it.
    pub qps: usize,
}

impl fmt::Display for SrqInUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shared receive queue {} is used by {} queue pair(s)",
            self.srq.num, self.qps
        )
    }
}

impl std::error::Error for SrqInUse {}
