//! Raw Linux TCP over many loopback connections, driven the way a server
//! on the kernel's TCP is: one epoll set, and work only on the sockets it
//! reports ready. The yardstick for what many connections cost the kernel
//! itself, next to what they cost the stack above it.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use super::sys::Epoll;

/// How long one `epoll_wait` may block: the loop checks its clock at
/// least this often.
const WAIT_MS: i32 = 50;
/// Ready sockets taken per `epoll_wait`.
const EVENTS: usize = 256;

/// What one [`epoll_pump`] moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRun {
    /// Bytes read at the receiving ends.
    pub bytes: u64,
    /// Wall time from the first write to the end.
    pub elapsed: Duration,
}

/// Which end of which connection a descriptor is.
#[derive(Debug, Clone, Copy)]
enum End {
    Sender,
    Receiver,
}

/// Opens `connections` TCP connections on loopback and, for `duration`,
/// writes `chunk` bytes to each sender the epoll set reports writable and
/// reads from each receiver it reports readable, on this thread.
pub fn epoll_pump(connections: usize, chunk: usize, duration: Duration) -> io::Result<RawRun> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let addr = listener.local_addr()?;
    let mut socks: Vec<(TcpStream, End)> = Vec::with_capacity(2 * connections);
    for _ in 0..connections {
        // Accepted at once: the listen backlog never fills.
        let tx = TcpStream::connect(addr)?;
        let (rx, _) = listener.accept()?;
        for (s, end) in [(tx, End::Sender), (rx, End::Receiver)] {
            s.set_nonblocking(true)?;
            s.set_nodelay(true)?;
            socks.push((s, end));
        }
    }
    let epoll = Epoll::new()?;
    // Descriptor numbers are small and dense: index a table by them.
    let max_fd = socks.iter().map(|(s, _)| s.as_raw_fd()).max().unwrap_or(0);
    let mut by_fd: Vec<Option<usize>> = vec![None; usize::try_from(max_fd).unwrap_or(0) + 1];
    for (i, (s, end)) in socks.iter().enumerate() {
        let fd = s.as_raw_fd();
        let events = match end {
            End::Sender => libc::EPOLLOUT,
            End::Receiver => libc::EPOLLIN,
        };
        epoll.add(fd, events as u32)?;
        by_fd[slot(fd)] = Some(i);
    }
    let source: Vec<u8> = (0..chunk.max(1)).map(|i| (i % 251) as u8).collect();
    let mut sink = vec![0u8; chunk.max(1)];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    let mut bytes = 0u64;
    let start = Instant::now();
    while start.elapsed() < duration {
        let n = epoll.wait(&mut events, WAIT_MS)?;
        for ev in &events[..n] {
            let Some(Some(i)) = by_fd.get(slot(ev.u64 as RawFd)).copied() else {
                continue;
            };
            let (sock, end) = &mut socks[i];
            match end {
                End::Sender => match sock.write(&source) {
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                },
                End::Receiver => loop {
                    match sock.read(&mut sink) {
                        Ok(0) => break,
                        Ok(got) => bytes += got as u64,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                },
            }
        }
    }
    Ok(RawRun {
        bytes,
        elapsed: start.elapsed(),
    })
}

fn slot(fd: RawFd) -> usize {
    usize::try_from(fd).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_connection_carries_bytes() {
        let run = epoll_pump(8, 4096, Duration::from_millis(100)).unwrap();
        // Far more than one chunk per connection crosses loopback in
        // 100 ms; none at all would mean the loop never read.
        assert!(run.bytes > 8 * 4096, "{run:?}");
        assert!(run.elapsed >= Duration::from_millis(100));
    }
}
