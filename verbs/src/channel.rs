//! Event channels: a file descriptor an event loop (epoll, mio, tokio's
//! `AsyncFd`) can wait on beside its sockets, made readable when an armed
//! completion queue gets a completion, a watched queue pair or listener
//! gets a connection event, or a watched shared receive queue its limit
//! event. One channel plays the parts of libibverbs' `ibv_comp_channel`
//! (and, for the limit, its async event descriptor) and rdma_cm's
//! `rdma_event_channel`.
//!
//! The channel says only "look again": after it fires, [`ack`](EventChannel::ack)
//! it (never read the descriptor yourself: a notification already
//! pending is not written again, and one made after such a read would be
//! lost), then poll the completion queues and take the events it watches,
//! and re-arm a queue before waiting again (as with `ibv_req_notify_cq`,
//! arm first, then poll until empty, so a completion that landed between
//! the last poll and the arm is not slept through).
//!
//! Something must move the bytes for the channel to fire:
//! * with [`Device::spawn_progress_thread`](crate::Device::spawn_progress_thread) running, the channel fires on
//!   its own;
//! * without it, the caller drives: wait on the channel *and* on
//!   [`Device::readiness_fd`](crate::Device::readiness_fd) (the transport's own descriptor), with a
//!   timeout of [`Device::poll_delay`](crate::Device::poll_delay), and call [`Device::progress`](crate::Device::progress)
//!   whenever either fires or the timeout passes. Every transport of the
//!   stack has a readiness descriptor (kernel TCP's is an epoll set of its
//!   sockets); one without would need the progress thread.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use transport::EventFd;

/// A file descriptor that becomes readable when something it watches is
/// ready. Cloning gives another handle to the same descriptor.
#[derive(Debug, Clone)]
pub struct EventChannel {
    pub(crate) fd: Arc<EventFd>,
}

impl EventChannel {
    /// A new channel (an eventfd), not readable.
    pub fn new() -> io::Result<Self> {
        Ok(EventChannel {
            fd: Arc::new(EventFd::new()?),
        })
    }

    /// Consumes the pending readiness (like `ibv_ack_cq_events` after
    /// `ibv_get_cq_event`); true if the channel had fired.
    pub fn ack(&self) -> bool {
        self.fd.clear()
    }

    /// Blocks until the channel fires or `timeout` passes, then acks it;
    /// true if it fired. For programs without an event loop; it drives
    /// nothing, so the device needs a progress thread.
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ready = transport::poll_readable(&[self.fd.as_fd()], Some(left))?;
            if ready[0] {
                return Ok(self.ack());
            }
            if left.is_zero() {
                return Ok(false);
            }
        }
    }
}

impl AsFd for EventChannel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for EventChannel {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
