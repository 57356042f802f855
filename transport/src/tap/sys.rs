//! Linux TAP device calls: open /dev/net/tun, TUNSETIFF, interface ioctls,
//! non-blocking read and write.
//!
//! Each `unsafe` block passes a file descriptor we own and a pointer to a
//! local `ifreq` or buffer of the right size; return codes are checked.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An `ifreq` naming `ifname`; names must fit IFNAMSIZ with the NUL.
fn ifreq(ifname: &str) -> io::Result<libc::ifreq> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface name must be 1..=15 bytes without NUL",
        ));
    }
    // SAFETY: ifreq is plain old data; all-zero is valid (empty name, zero union).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

fn name_of(req: &libc::ifreq) -> String {
    // SAFETY: ifr_name is NUL-terminated: the kernel writes at most
    // IFNAMSIZ-1 bytes, and we zeroed the array.
    let c = unsafe { CStr::from_ptr(req.ifr_name.as_ptr()) };
    c.to_string_lossy().into_owned()
}

fn ioctl(fd: &OwnedFd, request: libc::c_ulong, req: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: `req` is a live ifreq, the argument every request used here
    // expects; `fd` is open.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens (creating if needed) TAP interface `ifname` without packet
/// information headers, non-blocking; with `vnet_hdr`, every frame read or
/// written is preceded by a virtio-net header. Returns the fd and the
/// kernel's name for the interface (a `%d` in `ifname` is filled in by the
/// kernel).
pub(crate) fn open_tap(ifname: &str, vnet_hdr: bool) -> io::Result<(OwnedFd, String)> {
    // SAFETY: plain open(2) of a constant NUL-terminated path.
    let raw = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor we own from here on.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut req = ifreq(ifname)?;
    let vnet = if vnet_hdr { libc::IFF_VNET_HDR } else { 0 };
    req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI | vnet) as libc::c_short;
    ioctl(&fd, libc::TUNSETIFF as libc::c_ulong, &mut req)?;
    Ok((fd, name_of(&req)))
}

/// Offloads the kernel may use towards us and expects from us
/// (TUNSETOFFLOAD): partial checksums and TCP/IPv4 super-frames. Needs a
/// descriptor opened with the virtio-net header, which is then set to 10
/// bytes (TUNSETVNETHDRSZ) with little-endian fields (TUNSETVNETLE; a
/// little-endian host has them so already).
pub(crate) fn enable_tcp4_offload(fd: &OwnedFd) -> io::Result<()> {
    // The header size belongs to the interface, not the descriptor: another
    // program (qemu uses 12) may have changed it. Ours is the 10-byte one.
    set_vnet_hdr_size(fd, super::vnet::HEADER_LEN)?;
    let le: libc::c_int = 1;
    // SAFETY: TUNSETVNETLE reads one int through the pointer, which points
    // to a live local; `fd` is open.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETVNETLE as _, &le) };
    if rc < 0 && cfg!(target_endian = "big") {
        return Err(io::Error::last_os_error());
    }
    let flags = libc::TUN_F_CSUM | libc::TUN_F_TSO4;
    // SAFETY: TUNSETOFFLOAD takes its flags by value, no pointer; `fd` is open.
    let rc = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            libc::TUNSETOFFLOAD as _,
            flags as libc::c_ulong,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Withdraws the offloads (TUNSETOFFLOAD 0). They belong to the interface
/// and outlive the descriptor: a persistent interface would otherwise hand
/// super-frames to the next program that opens it without them.
pub(crate) fn disable_offload(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: TUNSETOFFLOAD takes its flags by value, no pointer; `fd` is open.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETOFFLOAD as _, 0 as libc::c_ulong) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the size of the virtio-net header before each frame
/// (TUNSETVNETHDRSZ; the kernel accepts 10 or more).
pub(crate) fn set_vnet_hdr_size(fd: &OwnedFd, size: usize) -> io::Result<()> {
    let size =
        libc::c_int::try_from(size).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: TUNSETVNETHDRSZ reads one int through the pointer, which
    // points to a live local; `fd` is open.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETVNETHDRSZ as _, &size) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A datagram socket for interface ioctls, in the calling thread's network
/// namespace (interface names resolve there).
pub(crate) fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) with constant arguments.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// The interface's MTU (SIOCGIFMTU).
pub(crate) fn mtu(ctl: &OwnedFd, ifname: &str) -> io::Result<usize> {
    let mut req = ifreq(ifname)?;
    ioctl(ctl, libc::SIOCGIFMTU, &mut req)?;
    // SAFETY: SIOCGIFMTU fills the `ifru_mtu` member.
    let v = unsafe { req.ifr_ifru.ifru_mtu };
    usize::try_from(v).map_err(|_| io::Error::other("negative MTU"))
}

/// The interface's transmit queue length (SIOCGIFTXQLEN): how many frames
/// the kernel queues towards us before dropping.
pub(crate) fn txqueuelen(ctl: &OwnedFd, ifname: &str) -> io::Result<usize> {
    let mut req = ifreq(ifname)?;
    ioctl(ctl, libc::SIOCGIFTXQLEN, &mut req)?;
    // SAFETY: SIOCGIFTXQLEN fills the int member (`ifr_qlen`).
    let v = unsafe { req.ifr_ifru.ifru_metric };
    usize::try_from(v).map_err(|_| io::Error::other("negative txqueuelen"))
}

/// Sets IFF_UP (and IFF_RUNNING) on the interface, keeping other flags.
pub(crate) fn bring_up(ctl: &OwnedFd, ifname: &str) -> io::Result<()> {
    let mut req = ifreq(ifname)?;
    ioctl(ctl, libc::SIOCGIFFLAGS, &mut req)?;
    // SAFETY: SIOCGIFFLAGS filled `ifru_flags`; we write the same member.
    unsafe {
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    ioctl(ctl, libc::SIOCSIFFLAGS, &mut req)
}

/// Reads one frame; `Ok(None)` when none is waiting.
pub(crate) fn read_frame(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // Bounded: EINTR is retried a few times, then reported as "nothing".
    for _ in 0..4 {
        // SAFETY: `buf` is writable for its whole length.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => return Ok(None),
            io::ErrorKind::Interrupted => continue,
            _ => return Err(e),
        }
    }
    Ok(None)
}

/// Writes one frame; `Ok(false)` if the device would block (frame dropped).
pub(crate) fn write_frame(fd: &OwnedFd, frame: &[u8]) -> io::Result<bool> {
    for _ in 0..4 {
        // SAFETY: `frame` is readable for its whole length.
        let n = unsafe { libc::write(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n >= 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => return Ok(false),
            io::ErrorKind::Interrupted => continue,
            _ => return Err(e),
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked() {
        assert!(ifreq("").is_err());
        assert!(ifreq("0123456789abcdef").is_err(), "16 bytes leaves no NUL");
        assert!(ifreq("a\0b").is_err());
        let r = ifreq("0123456789abcde").unwrap();
        assert_eq!(name_of(&r), "0123456789abcde");
        assert_eq!(r.ifr_name[15], 0);
    }

    #[test]
    fn loopback_has_an_mtu_and_queue() {
        let ctl = control_socket().unwrap();
        assert!(mtu(&ctl, "lo").unwrap() >= 1500);
        assert!(txqueuelen(&ctl, "lo").is_ok());
        let e = mtu(&ctl, "no-such-if0").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV));
    }
}
