//! Queue pairs (reliable connected): post work requests, connect, and
//! watch the connection's events.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::channel::EventChannel;
use crate::cq::CompletionQueue;
use crate::device::{Device, DeviceShared, Watched};
use crate::pd::ProtectionDomain;
use crate::qp_stats::QpStats;
use crate::srq::SharedReceiveQueue;
use crate::types::{
    CmEvent, ConnectError, ConnectParams, ConnectionInfo, PostListError, QpCap, QpLimits,
    VerbsError,
};

pub use crate::types::QpState;
pub use crate::types::{wr, AtomicArgs, AtomicOp, RecvWr, STag, SendOp, SendWr, Sge};

/// Sizes and completion queues of a new queue pair.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct QpInit {
    /// Where send-queue work requests complete.
    pub send_cq: CompletionQueue,
    /// Where receive work requests complete.
    pub recv_cq: CompletionQueue,
    /// Outstanding send work requests.
    pub sq_depth: usize,
    /// Posted receive work requests.
    pub rq_depth: usize,
    /// Scatter/gather entries per send work request.
    pub max_send_sge: usize,
    /// Scatter/gather entries per receive work request.
    pub max_recv_sge: usize,
    /// Bytes of inline data a send work request may carry.
    pub max_inline_data: usize,
    /// The shared receive queue its receives come from (number, device).
    pub(crate) srq: Option<(u32, Arc<DeviceShared>)>,
}

impl QpInit {
    /// One completion queue for both directions, siw-like queue sizes.
    pub fn new(cq: &CompletionQueue) -> Self {
        QpInit::with_cqs(cq, cq)
    }

    /// Separate completion queues for sends and receives.
    pub fn with_cqs(send_cq: &CompletionQueue, recv_cq: &CompletionQueue) -> Self {
        QpInit {
            send_cq: send_cq.clone(),
            recv_cq: recv_cq.clone(),
            sq_depth: 128,
            rq_depth: 128,
            max_send_sge: 6,
            max_recv_sge: 6,
            max_inline_data: rdmap::connection::DEFAULT_MAX_INLINE,
            srq: None,
        }
    }

    /// Receiving from `srq` instead of a receive queue of its own (which
    /// `rq_depth` and `max_recv_sge` then do not size): Sends and
    /// Immediate Data take `srq`'s work requests and complete on this
    /// queue pair's receive completion queue.
    pub fn with_srq(mut self, srq: &SharedReceiveQueue) -> Self {
        self.srq = Some((srq.num, srq.device.clone()));
        self
    }

    /// With `sq` outstanding send and `rq` posted receive work requests.
    pub fn with_depths(mut self, sq: usize, rq: usize) -> Self {
        self.sq_depth = sq;
        self.rq_depth = rq;
        self
    }

    /// With at most `bytes` of inline data per send work request.
    pub fn with_max_inline_data(mut self, bytes: usize) -> Self {
        self.max_inline_data = bytes;
        self
    }

    /// With at most `send` and `recv` scatter/gather entries per request.
    pub fn with_max_sge(mut self, send: usize, recv: usize) -> Self {
        self.max_send_sge = send;
        self.max_recv_sge = recv;
        self
    }
}

/// Most work requests one queue pair's send or receive queue holds
/// (`max_qp_wr`; siw's `SIW_MAX_QP_WR`): the queues, and the connection's
/// event queue sized by their sum, may grow to their depths, so a depth
/// without bound would let the program ask for unbounded memory.
pub const MAX_QP_WR: usize = 32 * 1024;

/// Most scatter/gather entries per work request (`max_sge`; siw's
/// `SIW_MAX_SGE`).
pub const MAX_QP_SGE: usize = 6;

/// Refuses a size above `max`, as `ibv_create_qp` does (`EINVAL`).
fn check_qp_size(field: &'static str, value: usize, max: usize) -> Result<(), VerbsError> {
    if value > max {
        return Err(VerbsError::QpSize { field, value, max });
    }
    Ok(())
}

impl Device {
    /// A queue pair in `pd`, reporting into the completion queues of `init`.
    ///
    /// Depths above [`MAX_QP_WR`] and scatter/gather counts above
    /// [`MAX_QP_SGE`] are refused with [`VerbsError::QpSize`]; a post
    /// beyond the depth a queue pair was created with is refused with
    /// `PostError::QueueFull` (libibverbs' `ENOMEM`).
    pub fn create_qp(&self, pd: &ProtectionDomain, init: QpInit) -> Result<QueuePair, VerbsError> {
        if !Arc::ptr_eq(&pd.device, &self.shared) {
            return Err(VerbsError::WrongDevice);
        }
        check_qp_size("sq_depth", init.sq_depth, MAX_QP_WR)?;
        check_qp_size("rq_depth", init.rq_depth, MAX_QP_WR)?;
        check_qp_size("max_send_sge", init.max_send_sge, MAX_QP_SGE)?;
        check_qp_size("max_recv_sge", init.max_recv_sge, MAX_QP_SGE)?;
        let limits = QpLimits {
            sq_depth: init.sq_depth,
            rq_depth: init.rq_depth,
            max_send_sge: init.max_send_sge,
            max_recv_sge: init.max_recv_sge,
            max_inline_data: init.max_inline_data,
        };
        let srq = match &init.srq {
            Some((n, device)) if Arc::ptr_eq(device, &self.shared) => Some(*n),
            Some(_) => return Err(VerbsError::WrongDevice),
            None => None,
        };
        let (send_cq, recv_cq) = (init.send_cq.shared.clone(), init.recv_cq.shared.clone());
        let num = self
            .shared
            .with_engine(|e| e.create_qp(pd.id, send_cq, recv_cq, limits, srq))?;
        Ok(QueuePair {
            num,
            srq,
            cap: QpCap {
                sq_depth: init.sq_depth,
                rq_depth: if srq.is_some() { 0 } else { init.rq_depth },
                max_send_sge: init.max_send_sge,
                max_recv_sge: init.max_recv_sge,
                max_inline_data: init.max_inline_data,
            },
            pd: pd.clone(),
            device: self.shared.clone(),
        })
    }
}

/// A reliable connected queue pair.
#[derive(Debug)]
pub struct QueuePair {
    pub(crate) num: u32,
    pub(crate) srq: Option<u32>,
    pub(crate) cap: QpCap,
    pub(crate) pd: ProtectionDomain,
    pub(crate) device: Arc<DeviceShared>,
}

impl QueuePair {
    /// The queue pair number reported in completions.
    pub fn num(&self) -> u32 {
        self.num
    }

    /// The protection domain it was created in.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// Where the queue pair stands now.
    pub fn state(&self) -> QpState {
        self.device.with_engine(|e| e.qp_state(self.num))
    }

    /// Its traffic each way, outstanding work, IRD/ORD in use, start-up
    /// phase, last TERMINATE and its TCP connection's state: what tells a
    /// stuck queue pair from a busy one (docs/diagnostics.md). Waits for
    /// the transport if a thread is waiting in it.
    pub fn stats(&self) -> QpStats {
        self.device.with_transport_engine(|e| e.qp_stats(self.num))
    }

    /// Posts a send-queue work request (Send, Write or Read). Only a
    /// connected queue pair takes them; after a disconnect they complete
    /// at once with a flush status.
    pub fn post_send(&self, wr: SendWr) -> Result<(), VerbsError> {
        self.device.post(|e| e.post_send(self.num, wr))
    }

    /// Posts send-queue work requests in list order, as one
    /// `ibv_post_send` of a linked list: one engine call and one push onto
    /// the wire for the whole list, instead of one per request. Ordering
    /// and completions are those of posting them one by one. Stops at the
    /// first refused request; the error says how many were posted before
    /// it.
    ///
    /// `wrs` is iterated with the device's engine held: an iterator that
    /// calls into the same device (posts, polls) would wait on itself.
    /// Build the requests first, or from plain values as here:
    ///
    /// ```no_run
    /// # fn demo(qp: &verbs::QueuePair, mr: &verbs::MemoryRegion) -> Result<(), verbs::VerbsError> {
    /// use verbs::wr;
    /// let sge = mr.sge(0, 64)?;
    /// qp.post_send_list((0..8).map(|id| wr::send(id, vec![sge])))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn post_send_list<I>(&self, wrs: I) -> Result<(), PostListError>
    where
        I: IntoIterator<Item = SendWr>,
    {
        self.device.post(|e| e.post_send_list(self.num, wrs))
    }

    /// Posts receive work requests in list order under one engine call
    /// (`ibv_post_recv` of a linked list), stopping at the first refused
    /// one as [`QueuePair::post_send_list`] does (whose note on the
    /// iterator applies too).
    pub fn post_recv_list<I>(&self, wrs: I) -> Result<(), PostListError>
    where
        I: IntoIterator<Item = RecvWr>,
    {
        self.device.with_engine(|e| e.post_recv_list(self.num, wrs))
    }

    /// Posts a receive work request; allowed before connecting. Nothing is
    /// sent for it (RDMAP has no receive credits), so unlike a send-queue
    /// post it does not flush the transport. A queue pair receiving from a
    /// shared receive queue refuses it
    /// ([`PostError::SharedReceiveQueue`](rdmap::work_request::PostError::SharedReceiveQueue)).
    pub fn post_recv(&self, wr: RecvWr) -> Result<(), VerbsError> {
        self.device.with_engine(|e| e.post_recv(self.num, wr))
    }

    /// Starts connecting to `remote`; see [`QueuePair::wait_established`].
    pub fn connect(&self, remote: SocketAddr, params: ConnectParams) -> Result<(), VerbsError> {
        self.device
            .with_engine_now(|e, now| e.connect(self.num, remote, params, now))
    }

    /// Connects and waits for the outcome.
    pub fn connect_blocking(
        &self,
        remote: SocketAddr,
        params: ConnectParams,
        timeout: Duration,
    ) -> Result<ConnectionInfo, VerbsError> {
        self.connect(remote, params)?;
        self.wait_established(timeout)
    }

    /// Waits for the connection to be established (or to fail).
    pub fn wait_established(&self, timeout: Duration) -> Result<ConnectionInfo, VerbsError> {
        match self.wait_event(timeout) {
            Some(ev) => connect_outcome(ev),
            None => Err(VerbsError::Timeout),
        }
    }

    /// The next connection event, if any.
    pub fn try_event(&self) -> Option<CmEvent> {
        self.device.progress_if_caller_driven();
        self.device.with_engine(|e| e.take_qp_event(self.num))
    }

    /// Blocks for the next connection event; `None` on timeout.
    pub fn wait_event(&self, timeout: Duration) -> Option<CmEvent> {
        let num = self.num;
        self.device
            .wait_take(timeout, |e| e.take_qp_event(num), &|e| e.has_qp_event(num))
    }

    /// Makes `channel` readable whenever this queue pair has a connection
    /// event waiting for [`QueuePair::try_event`] (rdma_cm's event channel;
    /// see [`EventChannel`] for who drives progress). Fires at once if one
    /// waits already.
    pub fn watch_events(&self, channel: &EventChannel) {
        self.device.watch(Watched::Qp(self.num), &channel.fd);
    }

    /// Closes the connection: outstanding work requests are flushed, the
    /// TCP stream is closed once queued bytes are out.
    pub fn disconnect(&self) {
        self.device
            .with_engine_now(|e, now| e.disconnect(self.num, now))
    }
}

/// What a connection event means for a caller waiting to be connected.
pub(crate) fn connect_outcome(ev: CmEvent) -> Result<ConnectionInfo, VerbsError> {
    match ev {
        CmEvent::Established(info) => Ok(info),
        CmEvent::Rejected { private_data } => Err(ConnectError::Rejected { private_data }.into()),
        CmEvent::ConnectFailed(why) => Err(why.into()),
        CmEvent::Disconnected { reason } => Err(VerbsError::Disconnected(reason)),
    }
}

impl Drop for QueuePair {
    fn drop(&mut self) {
        let num = self.num;
        self.device.unwatch(Watched::Qp(num));
        let discarded = self.device.with_engine_now(|e, now| e.destroy_qp(num, now));
        self.device.note_srq_discarded(discarded);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::memory::{MemoryLink, MemoryLinkConfig};

    #[test]
    fn a_queue_pair_slot_holds_no_device_handle() {
        let (a, _b) = MemoryLink::pair(&MemoryLinkConfig::default()).unwrap();
        let device = Device::new(Box::new(a));
        let pd = device.alloc_pd();
        let (send_cq, recv_cq) = (device.create_cq(8), device.create_cq(8));
        let before = Arc::strong_count(&device.shared);
        let qp = device
            .create_qp(&pd, QpInit::with_cqs(&send_cq, &recv_cq))
            .unwrap();
        // The queue pair handle (and the protection domain it keeps) are the
        // only new holders: the engine's slot keeps the queues' shared
        // state, not their device-holding handles.
        assert_eq!(Arc::strong_count(&device.shared), before + 2);
        drop(qp);
        assert_eq!(Arc::strong_count(&device.shared), before);
    }
}
