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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Interrupts the transport's current (or next) `wait`; callable from any
/// thread, cheap enough to call on every post.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// A Linux eventfd: readable (for poll, epoll, mio or tokio's `AsyncFd`)
/// from the first [`notify`](EventFd::notify) until [`clear`](EventFd::clear).
///
/// Non-blocking and close-on-exec. Notifications coalesce: any number of
/// them before a `clear` make one readable edge, which is all a "look
/// again" signal needs, and only the first of them costs a system call.
/// Consume readiness with `clear`, never by reading the descriptor
/// yourself: a notification made after such a read and before the next
/// `clear` would be skipped as already pending.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
    /// Set by the write of a notification, reset by `clear` after its
    /// read: while set the descriptor is readable, so further
    /// notifications need no write (a level-triggered notifier, such as
    /// a progress turn finding an event still untaken, would otherwise
    /// write on every turn).
    pending: AtomicBool,
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
            pending: AtomicBool::new(false),
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
        if self.pending.swap(true, Ordering::AcqRel) {
            // Written since the last drain, so still readable.
            return;
        }
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
        // After the read, not before: a wake skipped between the two was
        // made after its cause was in place, which whoever drains looks
        // at next; reset first, a wake written in between would be read
        // away with the flag left set, and every later wake skipped.
        self.pending.store(false, Ordering::Release);
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

    /// Spins until `f` holds; panics after a generous bound.
    fn spin_until(f: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !f() {
            assert!(Instant::now() < deadline, "the other thread stopped");
            std::hint::spin_loop();
        }
    }

    #[test]
    fn a_notification_after_a_clear_is_never_skipped() {
        // Each round a notification races the consumer's clear; the
        // consumer then takes the work (as the contract says), and work
        // published after that take must find the descriptor readable,
        // whichever way the skip of already-pending notifications fell.
        use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
        let e = Arc::new(EventFd::new().unwrap());
        // Work published, work the consumer took, notifications made.
        let counters = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
        let rounds = 5_000u64;
        let notifier = {
            let (e, c) = (e.clone(), counters.clone());
            std::thread::spawn(move || {
                for r in 0..rounds {
                    c[0].store(2 * r + 1, SeqCst);
                    e.notify();
                    spin_until(|| c[1].load(SeqCst) > 2 * r);
                    c[0].store(2 * r + 2, SeqCst);
                    e.notify();
                    c[2].store(2 * r + 2, SeqCst);
                }
            })
        };
        let c = &counters;
        for r in 0..rounds {
            spin_until(|| c[0].load(SeqCst) > 2 * r);
            e.clear();
            let taken = c[0].load(SeqCst);
            c[1].store(taken, SeqCst);
            spin_until(|| c[2].load(SeqCst) == 2 * r + 2);
            let mut fds = [e.pollfd()];
            assert_eq!(
                poll(&mut fds, Some(Duration::ZERO)).unwrap(),
                1,
                "round {r}: work after {taken} published unseen"
            );
        }
        notifier.join().unwrap();
    }
}
