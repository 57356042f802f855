//! Completion queues.
//!
//! A completion queue is a bounded FIFO of [`WorkCompletion`]s shared by the
//! queue pairs that report into it. Polling never blocks; [`CompletionQueue::wait`]
//! blocks until a completion arrives or the timeout passes, driving the
//! device's progress while it waits when no progress thread does, so an idle
//! wait sleeps in the transport's readiness wait instead of spinning.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::device::DeviceShared;
use crate::error::VerbsError;

pub use rdmap::{WcOpcode, WcStatus};

/// One completed work request, shaped like `struct ibv_wc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkCompletion {
    pub wr_id: u64,
    pub status: WcStatus,
    pub opcode: WcOpcode,
    /// Bytes received (Recv), read (RDMA Read) or sent (Send, Write).
    pub byte_len: u32,
    /// The queue pair the work request was posted to.
    pub qp_num: u32,
    /// The local STag a peer's Send with Invalidate invalidated (Recv only).
    pub invalidated: Option<ddp::memory::STag>,
    /// The peer's Send asked for a solicited event (Recv only).
    pub solicited: bool,
}

impl WorkCompletion {
    pub(crate) fn from_rdmap(wc: rdmap::WorkCompletion, qp_num: u32) -> Self {
        WorkCompletion {
            wr_id: wc.wr_id,
            status: wc.status,
            opcode: wc.opcode,
            byte_len: wc.byte_len,
            qp_num,
            invalidated: wc.invalidated,
            solicited: wc.solicited,
        }
    }

    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }
}

#[derive(Debug)]
pub(crate) struct CqState {
    entries: VecDeque<WorkCompletion>,
    capacity: usize,
    /// Completions that arrived while the queue was full. They are kept (no
    /// completion is ever lost) and the overflow is reported once by `poll`.
    overflowed: bool,
}

/// The completion-queue storage, shared between the queue's handles and the
/// device's engine that fills it.
#[derive(Debug)]
pub(crate) struct CqShared {
    state: Mutex<CqState>,
}

impl CqShared {
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(CqShared {
            state: Mutex::new(CqState {
                entries: VecDeque::with_capacity(capacity.min(4096)),
                capacity,
                overflowed: false,
            }),
        })
    }

    pub(crate) fn push(&self, wc: WorkCompletion) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.entries.len() >= s.capacity {
            s.overflowed = true;
        }
        s.entries.push_back(wc);
    }

    fn pop_into(&self, out: &mut [WorkCompletion]) -> Result<usize, VerbsError> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if std::mem::take(&mut s.overflowed) {
            return Err(VerbsError::CqOverflow {
                capacity: s.capacity,
            });
        }
        let n = out.len().min(s.entries.len());
        for (slot, wc) in out.iter_mut().zip(s.entries.drain(..n)) {
            *slot = wc;
        }
        Ok(n)
    }

    pub(crate) fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .len()
    }
}

/// A completion queue. Cloning gives another handle to the same queue.
#[derive(Debug, Clone)]
pub struct CompletionQueue {
    pub(crate) shared: Arc<CqShared>,
    pub(crate) device: Arc<DeviceShared>,
}

impl CompletionQueue {
    /// Takes up to `out.len()` completions without blocking (driving one
    /// round of progress first when no progress thread runs).
    ///
    /// Fails with [`VerbsError::CqOverflow`] once after more completions
    /// arrived than the queue's capacity; none of them is dropped.
    pub fn poll(&self, out: &mut [WorkCompletion]) -> Result<usize, VerbsError> {
        if self.shared.len() == 0 {
            self.device.progress_if_caller_driven();
        }
        self.shared.pop_into(out)
    }

    /// Takes one completion, if any.
    pub fn poll_one(&self) -> Result<Option<WorkCompletion>, VerbsError> {
        let mut wc = [PLACEHOLDER];
        Ok((self.poll(&mut wc)? == 1).then_some(wc[0]))
    }

    /// Blocks until at least one completion is available or `timeout`
    /// passes, then takes up to `out.len()`. Returns 0 on timeout.
    pub fn wait(&self, out: &mut [WorkCompletion], timeout: Duration) -> Result<usize, VerbsError> {
        let deadline = Instant::now() + timeout;
        loop {
            let n = self.shared.pop_into(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(0);
            }
            self.device.block_until(deadline, &|| self.shared.len() > 0);
        }
    }

    /// Blocks for one completion; `None` on timeout.
    pub fn wait_one(&self, timeout: Duration) -> Result<Option<WorkCompletion>, VerbsError> {
        let mut wc = [PLACEHOLDER];
        Ok((self.wait(&mut wc, timeout)? == 1).then_some(wc[0]))
    }

    /// Completions waiting to be polled.
    pub fn len(&self) -> usize {
        self.shared.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Filler for output arrays; never returned to the caller as a completion.
pub(crate) const PLACEHOLDER: WorkCompletion = WorkCompletion {
    wr_id: 0,
    status: WcStatus::GeneralErr,
    opcode: WcOpcode::Send,
    byte_len: 0,
    qp_num: 0,
    invalidated: None,
    solicited: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn wc(id: u64) -> WorkCompletion {
        WorkCompletion {
            wr_id: id,
            status: WcStatus::Success,
            ..PLACEHOLDER
        }
    }

    #[test]
    fn fifo_and_partial_takes() {
        let cq = CqShared::new(8);
        for i in 0..5 {
            cq.push(wc(i));
        }
        let mut out = [PLACEHOLDER; 3];
        assert_eq!(cq.pop_into(&mut out).unwrap(), 3);
        assert_eq!(out.map(|w| w.wr_id), [0, 1, 2]);
        assert_eq!(cq.pop_into(&mut out).unwrap(), 2);
        assert_eq!(out[..2].iter().map(|w| w.wr_id).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(cq.pop_into(&mut out).unwrap(), 0);
    }

    #[test]
    fn overflow_is_reported_once_and_nothing_is_lost() {
        let cq = CqShared::new(2);
        for i in 0..4 {
            cq.push(wc(i));
        }
        let mut out = [PLACEHOLDER; 8];
        assert!(matches!(
            cq.pop_into(&mut out),
            Err(VerbsError::CqOverflow { capacity: 2 })
        ));
        assert_eq!(cq.pop_into(&mut out).unwrap(), 4);
        assert_eq!(
            out[..4].iter().map(|w| w.wr_id).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
    }
}
