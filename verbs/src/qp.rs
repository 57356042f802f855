//! Queue pairs (reliable connected): post work requests, connect, and
//! watch the connection's events.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cm::{CmEvent, ConnectParams, ConnectionInfo};
use crate::cq::CompletionQueue;
use crate::device::DeviceShared;
use crate::error::VerbsError;
use crate::pd::ProtectionDomain;

pub use ddp::memory::STag;
pub use ddp::untagged::Sge;
pub use rdmap::work_request::{RecvWr, SendOp, SendWr};

/// Sizes and completion queues of a new queue pair.
#[derive(Debug, Clone)]
pub struct QpInit {
    pub send_cq: CompletionQueue,
    pub recv_cq: CompletionQueue,
    /// Outstanding send work requests.
    pub sq_depth: usize,
    /// Posted receive work requests.
    pub rq_depth: usize,
    pub max_send_sge: usize,
    pub max_recv_sge: usize,
}

impl QpInit {
    /// One completion queue for both directions, siw-like queue sizes.
    pub fn new(cq: &CompletionQueue) -> Self {
        QpInit::with_cqs(cq, cq)
    }

    pub fn with_cqs(send_cq: &CompletionQueue, recv_cq: &CompletionQueue) -> Self {
        QpInit {
            send_cq: send_cq.clone(),
            recv_cq: recv_cq.clone(),
            sq_depth: 128,
            rq_depth: 128,
            max_send_sge: 6,
            max_recv_sge: 6,
        }
    }
}

/// Where a queue pair stands (the ibv_qp_state a user would see).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpState {
    /// Created, not connected: receives may be posted.
    Init,
    /// TCP or MPA start-up under way.
    Connecting,
    /// Connected: ready to send.
    Rts,
    /// Terminated or disconnected: every work request is flushed.
    Error,
}

/// A reliable connected queue pair.
#[derive(Debug)]
pub struct QueuePair {
    pub(crate) num: u32,
    pub(crate) pd: ProtectionDomain,
    pub(crate) device: Arc<DeviceShared>,
}

impl QueuePair {
    /// The queue pair number reported in completions.
    pub fn num(&self) -> u32 {
        self.num
    }

    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    pub fn state(&self) -> QpState {
        self.device.with_engine(|e| e.qp_state(self.num))
    }

    /// Posts a send-queue work request (Send, Write or Read). Only a
    /// connected queue pair takes them; after a disconnect they complete
    /// at once with a flush status.
    pub fn post_send(&self, wr: SendWr) -> Result<(), VerbsError> {
        self.device.post(|e| e.post_send(self.num, wr))
    }

    /// Posts a receive work request; allowed before connecting. Nothing is
    /// sent for it (RDMAP has no receive credits), so unlike a send-queue
    /// post it does not flush the transport.
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
            Some(CmEvent::Established(info)) => Ok(info),
            Some(CmEvent::Rejected { private_data }) => Err(VerbsError::Rejected { private_data }),
            Some(CmEvent::ConnectFailed(why)) => Err(VerbsError::ConnectFailed(why)),
            Some(CmEvent::Disconnected { reason }) => Err(VerbsError::Disconnected(reason)),
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
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(ev) = self.device.with_engine(|e| e.take_qp_event(self.num)) {
                return Some(ev);
            }
            if Instant::now() >= deadline {
                return None;
            }
            let num = self.num;
            self.device
                .block_until_engine(deadline, &|e| e.has_qp_event(num));
        }
    }

    /// Closes the connection: outstanding work requests are flushed, the
    /// TCP stream is closed once queued bytes are out.
    pub fn disconnect(&self) {
        self.device
            .with_engine_now(|e, now| e.disconnect(self.num, now))
    }
}

impl Drop for QueuePair {
    fn drop(&mut self) {
        let num = self.num;
        self.device.with_engine_now(|e, now| e.destroy_qp(num, now));
    }
}

/// Convenience constructors for work requests.
pub mod wr {
    use super::*;

    pub fn send(wr_id: u64, sgl: Vec<Sge>) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Send {
                solicited: false,
                invalidate: None,
            },
            sgl,
            signaled: true,
        }
    }

    pub fn send_solicited(wr_id: u64, sgl: Vec<Sge>) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Send {
                solicited: true,
                invalidate: None,
            },
            sgl,
            signaled: true,
        }
    }

    pub fn send_invalidate(wr_id: u64, sgl: Vec<Sge>, invalidate: STag) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Send {
                solicited: false,
                invalidate: Some(invalidate),
            },
            sgl,
            signaled: true,
        }
    }

    pub fn write(wr_id: u64, sgl: Vec<Sge>, remote_stag: STag, remote_to: u64) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Write {
                remote_stag,
                remote_to,
            },
            sgl,
            signaled: true,
        }
    }

    pub fn read(wr_id: u64, sink: Sge, remote_stag: STag, remote_to: u64) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Read {
                remote_stag,
                remote_to,
            },
            sgl: vec![sink],
            signaled: true,
        }
    }

    pub fn recv(wr_id: u64, sgl: Vec<Sge>) -> RecvWr {
        RecvWr { wr_id, sgl }
    }
}
