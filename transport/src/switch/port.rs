//! The two kinds of switch port: a TAP device and a memory-link host.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

use crate::memory::MemoryPort;
use crate::tap::{netns::in_netns, sys};

/// A TAP device the switch reads frames from and writes frames to: the
/// kernel on its other side is an ordinary host (its TCP, its ARP).
pub struct TapPort {
    fd: OwnedFd,
    name: String,
    /// Where a frame is read to: room for the largest, allocated and
    /// zeroed once, so a frame costs a copy of its own length, not a
    /// buffer of [`MAX_FRAME`] (a frame held in the delay line keeps
    /// only its bytes).
    rx: Box<[u8]>,
}

impl std::fmt::Debug for TapPort {
    /// The device, not the 64 KiB of its receive buffer.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapPort")
            .field("fd", &self.fd)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl TapPort {
    /// Opens (creating if needed) TAP interface `ifname`, inside network
    /// namespace `netns` if given. No virtio-net header is asked for, so
    /// the kernel hands over frames no larger than the device's MTU, as
    /// a wire would carry them. Bringing the interface up and giving it an
    /// address are the caller's (`ip -n NS ...`).
    pub fn open(ifname: &str, netns: Option<&str>) -> io::Result<TapPort> {
        let open = || sys::open_tap(ifname, false);
        let (fd, name) = match netns {
            Some(ns) => in_netns(ns, open)??,
            None => open()?,
        };
        Ok(TapPort {
            fd,
            name,
            rx: vec![0; MAX_FRAME].into_boxed_slice(),
        })
    }

    /// The kernel's name for the interface.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One port of a [`Switch`](super::Switch).
#[derive(Debug)]
pub enum Port {
    /// A TAP device: Linux's stack on the far side.
    Tap(TapPort),
    /// A smoltcp host on a memory link.
    Memory(MemoryPort),
}

impl Port {
    /// The next frame waiting, into `buf` (cleared first). `Ok(false)` if
    /// none.
    pub(crate) fn recv(&mut self, now: Instant, buf: &mut Vec<u8>) -> io::Result<bool> {
        match self {
            Port::Tap(t) => match sys::read_frame(&t.fd, &mut t.rx)? {
                Some(n) => {
                    buf.clear();
                    buf.extend_from_slice(&t.rx[..n]);
                    Ok(true)
                }
                None => Ok(false),
            },
            Port::Memory(m) => Ok(m.recv(now, buf)),
        }
    }

    /// Sends `frame` out of the port; false if it had no room (dropped, as
    /// a full transmit ring drops).
    pub(crate) fn send(&mut self, now: Instant, frame: &[u8]) -> io::Result<bool> {
        match self {
            Port::Tap(t) => sys::write_frame(&t.fd, frame),
            Port::Memory(m) => Ok(m.send(now, frame)),
        }
    }

    /// What poll(2) watches to learn a frame is waiting.
    pub(crate) fn pollfd(&self) -> Option<(OwnedFdOrRaw, libc::pollfd)> {
        let (keep, raw) = match self {
            Port::Tap(t) => (None, t.fd.as_raw_fd()),
            Port::Memory(m) => {
                let fd = m.readiness_fd()?;
                let raw = fd.as_raw_fd();
                (Some(fd), raw)
            }
        };
        Some((
            keep,
            libc::pollfd {
                fd: raw,
                events: libc::POLLIN,
                revents: 0,
            },
        ))
    }
}

/// A descriptor the poll set must keep open (a memory port's duplicate),
/// or none when the port owns it.
pub(crate) type OwnedFdOrRaw = Option<OwnedFd>;

/// Largest frame read from a TAP device: a 64 KiB IP packet plus its
/// Ethernet header.
pub(crate) const MAX_FRAME: usize = 65535 + 14;
