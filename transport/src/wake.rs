//! Waking a thread blocked in [`Transport::wait`](super::Transport::wait)
//! from another thread.
//!
//! A progress thread sleeps in the transport's readiness wait; a program
//! thread that posts work must be able to cut that sleep short, or its work
//! waits for the sleep to end. Wakes are sticky: one that arrives while
//! nobody waits makes the next wait return at once, so a wake sent just
//! before the waiter goes to sleep is never lost.
//!
//! The same descriptor, public as [`EventFd`], is what the verbs layer hands
//! to event loops: a completion channel is an eventfd the device makes
//! readable when an armed completion queue gets a completion.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// Interrupts the transport's current (or next) `wait`; callable from any
/// thread, cheap enough to call on every post.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// A Linux eventfd: readable (for poll, epoll, mio or tokio's `AsyncFd`)
/// from the first [`notify`](EventFd::notify) until [`clear`](EventFd::clear).
///
/// Non-blocking and close-on-exec. Notifications coalesce: any number of
/// them before a `clear` make one readable edge, which is all a "look
/// again" signal needs.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

/// The name the transports use for the eventfd that ends their own waits.
pub(crate) type WakeFd = EventFd;

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl EventFd {
    /// A fresh eventfd, not readable.
    pub fn new() -> io::Result<Self> {
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

    /// Makes the descriptor readable until [`EventFd::clear`]; callable
    /// from any thread.
    pub fn notify(&self) {
        self.wake();
    }

    /// Makes the descriptor unreadable again; true if it was readable
    /// (a notification was pending).
    pub fn clear(&self) -> bool {
        self.drain()
    }

    /// Makes the descriptor readable until [`EventFd::drain`].
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

    #[test]
    fn the_public_face_notifies_and_clears_through_its_descriptor() {
        let e = EventFd::new().unwrap();
        let readable = |e: &EventFd| {
            let mut fds = [libc::pollfd {
                fd: e.as_fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            poll(&mut fds, Some(Duration::ZERO)).unwrap() == 1
        };
        assert!(!readable(&e));
        e.notify();
        e.notify();
        assert!(readable(&e), "a notification makes it readable");
        assert!(readable(&e), "and it stays readable until cleared");
        assert!(e.clear());
        assert!(!readable(&e));
        assert!(!e.clear(), "nothing pending any more");
        // A duplicate shares the counter: what an event loop registers.
        let dup = e.as_fd().try_clone_to_owned().unwrap();
        e.notify();
        let mut fds = [libc::pollfd {
            fd: dup.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        assert_eq!(poll(&mut fds, Some(Duration::ZERO)).unwrap(), 1);
    }
}
