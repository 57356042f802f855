//! Waiting for descriptors to become readable without an event-loop crate:
//! a safe face over ppoll(2) for programs (and tests) that want to block on
//! a completion channel and a transport's readiness descriptor together.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use crate::kernel::sys;

/// Blocks until at least one of `fds` is readable or `timeout` passes
/// (`None`: no limit), and says which are. All `false` on timeout or on an
/// interrupted wait; callers loop.
///
/// The timeout keeps its microseconds (ppoll(2), not poll(2)'s whole
/// milliseconds): a progress thread waiting for a frame due on a modelled
/// path in 12 µs must not sleep a millisecond.
pub fn poll_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut set: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    sys::ppoll(&mut set, timeout)?;
    Ok(set
        .iter()
        .map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventFd;
    use std::os::fd::AsFd;
    use std::time::Instant;

    #[test]
    fn reports_which_descriptor_is_readable() {
        let (a, b) = (EventFd::new().unwrap(), EventFd::new().unwrap());
        let ready = poll_readable(&[a.as_fd(), b.as_fd()], Some(Duration::ZERO)).unwrap();
        assert_eq!(ready, [false, false]);
        b.notify();
        let ready = poll_readable(&[a.as_fd(), b.as_fd()], Some(Duration::ZERO)).unwrap();
        assert_eq!(ready, [false, true]);
    }

    #[test]
    fn a_notify_from_another_thread_ends_the_wait() {
        let e = std::sync::Arc::new(EventFd::new().unwrap());
        let e2 = e.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            e2.notify();
        });
        let start = Instant::now();
        let ready = poll_readable(&[e.as_fd()], Some(Duration::from_secs(10))).unwrap();
        assert_eq!(ready, [true]);
        assert!(start.elapsed() < Duration::from_secs(5));
        t.join().unwrap();
    }
}
