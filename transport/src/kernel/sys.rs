//! The few socket calls `std::net` does not offer: non-blocking connect,
//! TCP_MAXSEG, SO_LINGER, buffer sizes, poll(2) and an epoll set.
//!
//! Each `unsafe` block passes a live file descriptor and pointers to local,
//! correctly sized values; return codes are checked and turned into
//! `io::Error` through `errno`.

use std::io;
use std::mem::size_of;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// `sockaddr_storage` filled from a std address, and its used length.
fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in; we write exactly one sockaddr_in at its start.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Starts a TCP connection without waiting for it: the returned socket is
/// non-blocking and its handshake completes (or fails) in the background.
pub(crate) fn connect_nonblocking(addr: SocketAddr) -> io::Result<TcpStream> {
    let domain = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: plain syscall with constant arguments.
    let fd = unsafe {
        libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket we own; the TcpStream takes ownership
    // and closes it on every path below.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    let rc = unsafe { libc::connect(fd, &storage as *const _ as *const libc::sockaddr, len) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(err);
        }
    }
    Ok(stream)
}

fn getsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value/len point to a c_int and its size.
    let rc = unsafe { libc::getsockopt(fd, level, name, &mut value as *mut _ as *mut _, &mut len) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: value points to a live T of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value as *const T as *const libc::c_void,
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The connection's maximum segment size (TCP_MAXSEG).
pub(crate) fn tcp_maxseg(s: &TcpStream) -> io::Result<usize> {
    let v = getsockopt_int(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_MAXSEG)?;
    usize::try_from(v).map_err(|_| io::Error::other("negative TCP_MAXSEG"))
}

/// The connection's TCP_INFO.
pub(crate) fn tcp_info(s: &TcpStream) -> io::Result<libc::tcp_info> {
    // SAFETY: tcp_info is plain old data; all-zero is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: info/len point to a tcp_info and its size; the kernel
    // writes at most `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

/// The MSS this end advertised (TCP_INFO's `tcpi_advmss`): what its route
/// allows, before any bound from the peer's window.
pub(crate) fn advertised_mss(s: &TcpStream) -> io::Result<usize> {
    Ok(tcp_info(s)?.tcpi_advmss as usize)
}

/// Bytes the kernel has received for the connection that nobody has
/// read yet (SIOCINQ).
pub(crate) fn unread(s: &TcpStream) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: a live socket and a pointer to a c_int, as SIOCINQ takes.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::FIONREAD, &mut n as *mut libc::c_int) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Makes the next close send RST instead of FIN (SO_LINGER with timeout 0).
pub(crate) fn set_linger_zero(s: &TcpStream) -> io::Result<()> {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, &l)
}

/// Bytes the kernel holds for the connection that the peer has not
/// acknowledged yet, sent or not (SIOCOUTQ: for TCP, write_seq - snd_una).
pub(crate) fn unacknowledged(s: &TcpStream) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: a live socket and a pointer to a c_int, as SIOCOUTQ takes.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::TIOCOUTQ, &mut n as *mut libc::c_int) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    usize::try_from(n).map_err(|_| io::Error::other("negative SIOCOUTQ"))
}

/// Sets SO_SNDBUF and SO_RCVBUF (the kernel doubles and clamps them).
pub(crate) fn set_buffer_sizes(fd: RawFd, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &v)?;
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &v)
}

/// Waits on `fds` with poll(2); `None` waits without limit. EINTR counts as
/// a wake-up with nothing ready.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = match timeout {
        None => -1,
        // Round up so a 100 µs deadline does not become a 0 ms busy poll.
        Some(t) => libc::c_int::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX),
    };
    // SAFETY: fds is a valid slice of pollfd; its length fits nfds_t.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    ready_count(rc)
}

/// What poll(2), ppoll(2) or epoll_wait(2) returned: the number of ready
/// descriptors (or events), none when a signal interrupted the wait, or
/// the error.
fn ready_count(rc: libc::c_int) -> io::Result<usize> {
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(err);
    }
    Ok(rc as usize)
}

/// After a failed [`poll`] or [`ppoll`] (bad arguments or ENOMEM, which an
/// immediate retry would meet again): sleeps out the wait, at most a
/// millisecond, so the caller's loop does not spin.
pub(crate) fn sleep_after_failed_wait(timeout: Option<Duration>) {
    std::thread::sleep(
        timeout
            .unwrap_or(Duration::from_millis(1))
            .min(Duration::from_millis(1)),
    );
}

/// [`poll`] with a timeout to the nanosecond (ppoll(2)), for loops whose
/// deadlines are microseconds apart, such as a forwarder releasing frames
/// at a link's rate.
pub(crate) fn ppoll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds is a valid slice of pollfd; `tsp` is null or points at
    // `ts`, alive for the call; a null signal mask leaves it unchanged.
    let rc = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    ready_count(rc)
}

/// An epoll instance, used only as a descriptor: it polls readable while
/// any descriptor in its set is ready for the events it was registered
/// with (epoll descriptors are themselves pollable, so poll(2), mio or
/// tokio can watch a whole set of sockets through this one). The transport
/// itself only asks it, without blocking, which members are ready (so a
/// poll reads just those); a poll of the epoll descriptor rechecks each
/// registered descriptor, so one that is no longer ready stops counting.
#[derive(Debug)]
pub(crate) struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: plain syscall with a constant flag.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        Ok(Epoll {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Adds `fd`, watched (level-triggered) for `events` (`EPOLLIN`,
    /// `EPOLLOUT`; errors and hang-ups are always reported).
    pub(crate) fn add(&self, fd: RawFd, events: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events)
    }

    /// Changes what a registered `fd` is watched for.
    pub(crate) fn modify(&self, fd: RawFd, events: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events)
    }

    /// Takes `fd` out of the set (closing it would too).
    pub(crate) fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events,
            u64: fd as u64,
        };
        // SAFETY: our live epoll descriptor, a descriptor the caller holds
        // open, and a pointer to a local epoll_event (ignored for DEL).
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` (0: not at all) for ready descriptors and
    /// fills `events` with them; returns how many. An interrupted wait
    /// reports none.
    pub(crate) fn wait(
        &self,
        events: &mut [libc::epoll_event],
        timeout_ms: i32,
    ) -> io::Result<usize> {
        let max = i32::try_from(events.len()).unwrap_or(i32::MAX);
        // SAFETY: our live epoll descriptor and a writable slice of `max`
        // epoll_event values the kernel fills at most.
        let rc =
            unsafe { libc::epoll_wait(self.fd.as_raw_fd(), events.as_mut_ptr(), max, timeout_ms) };
        ready_count(rc)
    }

    /// A duplicate of the epoll descriptor, sharing the same set.
    pub(crate) fn try_clone_fd(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    #[cfg(test)]
    pub(crate) fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::Instant;

    fn wait_writable(s: &TcpStream) {
        let mut fds = [libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        }];
        poll(&mut fds, Some(Duration::from_secs(5))).unwrap();
        assert_ne!(fds[0].revents & libc::POLLOUT, 0);
    }

    #[test]
    fn nonblocking_connect_completes_on_loopback() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = connect_nonblocking(l.local_addr().unwrap()).unwrap();
        wait_writable(&c);
        assert!(c.take_error().unwrap().is_none());
        let (mut s, _) = l.accept().unwrap();
        assert_eq!(c.peer_addr().unwrap(), l.local_addr().unwrap());
        c.write_all(b"hi").unwrap();
        let mut b = [0u8; 2];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hi");
        assert!(tcp_maxseg(&c).unwrap() > 500);
        assert!(advertised_mss(&c).unwrap() >= tcp_maxseg(&c).unwrap());
    }

    #[test]
    fn nonblocking_connect_over_ipv6_loopback() {
        let Ok(l) = TcpListener::bind("[::1]:0") else {
            println!("skipping: no IPv6 loopback here");
            return;
        };
        let c = connect_nonblocking(l.local_addr().unwrap()).unwrap();
        wait_writable(&c);
        assert!(c.take_error().unwrap().is_none());
        assert_eq!(c.peer_addr().unwrap(), l.local_addr().unwrap());
    }

    #[test]
    fn refused_connect_reports_through_so_error() {
        // Bind then drop to find a port with nobody listening.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        match connect_nonblocking(port) {
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused),
            Ok(c) => {
                wait_writable(&c);
                let err = c.take_error().unwrap().expect("refused");
                assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
            }
        }
    }

    #[test]
    fn linger_zero_makes_close_reset() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        set_linger_zero(&c).unwrap();
        drop(c);
        let mut b = [0u8; 1];
        let err = s.read(&mut b).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
    }

    #[test]
    fn buffer_sizes_apply() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        set_buffer_sizes(l.as_raw_fd(), 256 * 1024).unwrap();
        let rcv = getsockopt_int(l.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap();
        assert!(rcv >= 256 * 1024, "{rcv}");
    }

    #[test]
    fn poll_times_out_without_spinning() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut fds = [libc::pollfd {
            fd: l.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        let start = Instant::now();
        assert_eq!(
            poll(&mut fds, Some(Duration::from_micros(1500))).unwrap(),
            0
        );
        assert!(start.elapsed() >= Duration::from_millis(1));
        assert_eq!(poll(&mut [], Some(Duration::ZERO)).unwrap(), 0);
    }

    fn epoll_readable(ep: &Epoll) -> bool {
        let mut fds = [libc::pollfd {
            fd: ep.raw(),
            events: libc::POLLIN,
            revents: 0,
        }];
        poll(&mut fds, Some(Duration::ZERO)).unwrap() == 1
    }

    #[test]
    fn an_epoll_set_polls_readable_while_a_member_is_ready_for_its_events() {
        let ep = Epoll::new().unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        ep.add(s.as_raw_fd(), libc::EPOLLIN as u32).unwrap();
        assert!(!epoll_readable(&ep), "nothing to read yet");
        c.write_all(b"x").unwrap();
        let start = Instant::now();
        while !epoll_readable(&ep) {
            assert!(start.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        assert!(!epoll_readable(&ep), "read out: not ready any more");
        // Writable interest on a socket with send-buffer room is ready at once.
        ep.modify(s.as_raw_fd(), (libc::EPOLLIN | libc::EPOLLOUT) as u32)
            .unwrap();
        assert!(epoll_readable(&ep));
        ep.delete(s.as_raw_fd()).unwrap();
        assert!(!epoll_readable(&ep));
        // A duplicate is the same set.
        let dup = ep.try_clone_fd().unwrap();
        ep.add(s.as_raw_fd(), libc::EPOLLOUT as u32).unwrap();
        let mut fds = [libc::pollfd {
            fd: dup.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        assert_eq!(poll(&mut fds, Some(Duration::ZERO)).unwrap(), 1);
    }

    #[test]
    fn sockaddr_layouts() {
        let (s, len) = sockaddr("10.1.2.3:258".parse().unwrap());
        assert_eq!(len as usize, size_of::<libc::sockaddr_in>());
        // SAFETY: just written as a sockaddr_in.
        let sin = unsafe { *(&s as *const _ as *const libc::sockaddr_in) };
        assert_eq!(sin.sin_family as i32, libc::AF_INET);
        assert_eq!(u16::from_be(sin.sin_port), 258);
        assert_eq!(sin.sin_addr.s_addr.to_ne_bytes(), [10, 1, 2, 3]);
        let (_, len6) = sockaddr("[fe80::1]:1".parse().unwrap());
        assert_eq!(len6 as usize, size_of::<libc::sockaddr_in6>());
    }
}
