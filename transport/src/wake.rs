//! Waking a thread blocked in [`Transport::wait`](super::Transport::wait)
//! from another thread.
//!
//! A progress thread sleeps in the transport's readiness wait; a program
//! thread that posts work must be able to cut that sleep short, or its work
//! waits for the sleep to end. Wakes are sticky: one that arrives while
//! nobody waits makes the next wait return at once, so a wake sent just
//! before the waiter goes to sleep is never lost.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// Interrupts the transport's current (or next) `wait`; callable from any
/// thread, cheap enough to call on every post.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// A Linux eventfd that poll(2)-based waits include in their descriptor set.
#[derive(Debug)]
pub(crate) struct WakeFd {
    fd: OwnedFd,
}

impl WakeFd {
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: plain syscall with constant flags.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        Ok(WakeFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub(crate) fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Makes the descriptor readable until [`WakeFd::drain`].
    pub(crate) fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd. A full
        // counter (EAGAIN) already means "readable": nothing to do.
        let _ = unsafe { libc::write(self.raw(), (&one as *const u64).cast(), 8) };
    }

    /// Consumes pending wakes; true if there were any.
    pub(crate) fn drain(&self) -> bool {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64; non-blocking.
        let n = unsafe { libc::read(self.raw(), (&mut v as *mut u64).cast(), 8) };
        n == 8 && v > 0
    }

    /// The pollfd entry a wait adds to its set.
    pub(crate) fn pollfd(&self) -> libc::pollfd {
        libc::pollfd {
            fd: self.raw(),
            events: libc::POLLIN,
            revents: 0,
        }
    }

    /// A [`Waker`] that wakes this descriptor.
    pub(crate) fn waker(self: &Arc<Self>) -> Waker {
        let me = Arc::clone(self);
        Arc::new(move || me.wake())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sys::poll;
    use std::time::{Duration, Instant};

    #[test]
    fn wake_is_sticky_and_drain_clears_it() {
        let w = Arc::new(WakeFd::new().unwrap());
        assert!(!w.drain(), "fresh eventfd has nothing pending");
        let waker = w.waker();
        waker();
        waker();
        let mut fds = [w.pollfd()];
        let start = Instant::now();
        assert_eq!(poll(&mut fds, Some(Duration::from_secs(5))).unwrap(), 1);
        assert!(start.elapsed() < Duration::from_secs(1));
        assert!(w.drain());
        assert!(!w.drain(), "both wakes consumed at once");
        let mut fds = [w.pollfd()];
        assert_eq!(poll(&mut fds, Some(Duration::from_millis(5))).unwrap(), 0);
    }

    #[test]
    fn wake_from_another_thread_ends_a_poll() {
        let w = Arc::new(WakeFd::new().unwrap());
        let waker = w.waker();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            waker();
        });
        let mut fds = [w.pollfd()];
        let start = Instant::now();
        assert_eq!(poll(&mut fds, Some(Duration::from_secs(10))).unwrap(), 1);
        assert!(start.elapsed() < Duration::from_secs(5));
        t.join().unwrap();
    }
}
