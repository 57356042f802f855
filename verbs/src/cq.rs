//! Completion queues.
//!
//! A completion queue is a bounded FIFO of [`WorkCompletion`]s shared by the
//! queue pairs that report into it. Polling never blocks; [`CompletionQueue::wait`]
//! blocks until a completion arrives or the timeout passes, driving the
//! device's progress while it waits when no progress thread does, so an idle
//! wait sleeps in the transport's readiness wait instead of spinning.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::channel::EventChannel;
use crate::device::{Device, DeviceShared};
use crate::engine::{CqNotify, CqShared};
use crate::types::VerbsError;
use crate::types::PLACEHOLDER;

pub use crate::types::{WcOpcode, WcStatus, WorkCompletion};

/// How long after a send-queue post a poll of an empty queue drives
/// progress itself when a progress thread runs.
const ASSIST_WINDOW: Duration = Duration::from_millis(10);

impl Device {
    /// A completion queue holding up to `capacity` completions before it
    /// reports an overflow (nothing is dropped).
    pub fn create_cq(&self, capacity: usize) -> CompletionQueue {
        CompletionQueue {
            shared: CqShared::new(capacity.max(1)),
            device: self.shared.clone(),
        }
    }

    /// A completion queue that signals `channel` when armed with
    /// [`CompletionQueue::req_notify`] (`ibv_create_cq` with a
    /// completion channel).
    pub fn create_cq_with_channel(
        &self,
        capacity: usize,
        channel: &EventChannel,
    ) -> CompletionQueue {
        let notify = CqNotify::new(Some(channel.fd.clone()));
        CompletionQueue {
            shared: CqShared::with_notify(capacity.max(1), notify),
            device: self.shared.clone(),
        }
    }
}

/// What arms a completion queue's channel (`ibv_req_notify_cq`'s
/// `solicited_only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotifyOn {
    /// The next completion of any kind.
    Any,
    /// The next receive of a Send the peer marked solicited, or the next
    /// failed completion (IBV_CQ_SOLICITED).
    Solicited,
}

/// A completion queue. Cloning gives another handle to the same queue.
#[derive(Debug, Clone)]
pub struct CompletionQueue {
    pub(crate) shared: Arc<CqShared>,
    pub(crate) device: Arc<DeviceShared>,
}

impl CompletionQueue {
    /// Takes up to `out.len()` completions without blocking. An empty
    /// queue first drives one round of progress on the caller's thread:
    /// always when no progress thread runs; with one, when the device is
    /// idle and free (see [`Device::spawn_progress_thread`]) and a send
    /// was posted to a queue pair of this queue lately, so a program
    /// polling in a loop for its sends' completions moves its own bytes,
    /// while one polling a queue that expects nothing of the wire (a
    /// server waiting on a control connection) leaves the traffic of
    /// others to the thread rather than contend for it.
    ///
    /// Fails with [`VerbsError::CqOverflow`] once after more completions
    /// arrived than the queue's capacity; none of them is dropped.
    pub fn poll(&self, out: &mut [WorkCompletion]) -> Result<usize, VerbsError> {
        if self.shared.len() == 0 {
            self.device
                .progress_for_poller(self.shared.sent_within(ASSIST_WINDOW));
            // Still empty: no lock taken. An overflowed queue is never
            // empty (nothing is dropped), so its error is not missed.
            if self.shared.len() == 0 {
                return Ok(0);
            }
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

    /// Arms the queue's channel: the next completion matching `on` makes it
    /// readable, once (`ibv_req_notify_cq`). Completions already queued do
    /// not fire it: arm, then poll until empty, then wait.
    ///
    /// Fails with [`VerbsError::NoChannel`] for a queue made without one.
    pub fn req_notify(&self, on: NotifyOn) -> Result<(), VerbsError> {
        if !self.shared.notify.has_channel() {
            return Err(VerbsError::NoChannel);
        }
        self.shared.notify.arm(matches!(on, NotifyOn::Solicited));
        Ok(())
    }

    /// Completions waiting to be polled.
    pub fn len(&self) -> usize {
        self.shared.len()
    }

    /// Whether no completion waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
