//! `struct sockaddr` to and from `SocketAddr`.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::sys;

/// The address at `p` (IPv4 or IPv6), if it is one.
///
/// Programs may hand in addresses at any alignment (inside packed
/// structs, at odd offsets of a buffer): every read is unaligned.
///
/// # Safety
/// `p` is null or points to a `sockaddr` of the size its family implies.
pub unsafe fn read(p: *const sys::sockaddr) -> Option<SocketAddr> {
    if p.is_null() {
        return None;
    }
    // SAFETY: per the contract; `sa_family` is the first field.
    let family = unsafe { std::ptr::read_unaligned(p as *const libc::sa_family_t) } as i32;
    match family {
        libc::AF_INET => {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let s = unsafe { std::ptr::read_unaligned(p as *const libc::sockaddr_in) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(s.sin_addr.s_addr)),
                u16::from_be(s.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 address is a sockaddr_in6.
            let s = unsafe { std::ptr::read_unaligned(p as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(s.sin6_addr.s6_addr),
                u16::from_be(s.sin6_port),
                s.sin6_flowinfo,
                s.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Writes `a` into a `sockaddr_storage`-sized buffer at `p`; returns the
/// length written.
///
/// # Safety
/// `p` points to at least `size_of::<sockaddr_storage>()` writable bytes.
pub unsafe fn write(p: *mut sys::sockaddr_storage, a: SocketAddr) -> usize {
    // SAFETY: per the contract.
    unsafe {
        std::ptr::write_bytes(
            p as *mut u8,
            0,
            std::mem::size_of::<sys::sockaddr_storage>(),
        )
    };
    match a {
        SocketAddr::V4(v4) => {
            // SAFETY: storage is large enough and aligned for sockaddr_in.
            let s = unsafe { &mut *(p as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as u16;
            s.sin_port = v4.port().to_be();
            s.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: storage is large enough and aligned for sockaddr_in6.
            let s = unsafe { &mut *(p as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as u16;
            s.sin6_port = v6.port().to_be();
            s.sin6_addr.s6_addr = v6.ip().octets();
            s.sin6_flowinfo = v6.flowinfo();
            s.sin6_scope_id = v6.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_through_sockaddr_storage() {
        for a in ["127.0.0.1:7174", "[::1]:18515", "0.0.0.0:0"] {
            let a: SocketAddr = a.parse().unwrap();
            // SAFETY: zero is a valid sockaddr_storage.
            let mut st: sys::sockaddr_storage = unsafe { std::mem::zeroed() };
            // SAFETY: `st` is a whole sockaddr_storage.
            let n = unsafe { write(&mut st, a) };
            assert!(n > 0);
            // SAFETY: just written.
            assert_eq!(
                unsafe { read(&st as *const _ as *const sys::sockaddr) },
                Some(a)
            );
        }
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { read(std::ptr::null()) }, None);
        // At an odd address, as inside a packed struct.
        let a: SocketAddr = "10.1.2.3:4791".parse().unwrap();
        // SAFETY: zero is a valid sockaddr_storage.
        let mut st: sys::sockaddr_storage = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a whole sockaddr_storage.
        let n = unsafe { write(&mut st, a) };
        let mut buf = vec![0u8; n + 1];
        // SAFETY: copying the `n` bytes just written.
        unsafe {
            std::ptr::copy_nonoverlapping(&st as *const _ as *const u8, buf.as_mut_ptr().add(1), n)
        };
        // SAFETY: `buf[1..]` holds a whole sockaddr_in.
        assert_eq!(
            unsafe { read(buf.as_ptr().add(1) as *const sys::sockaddr) },
            Some(a)
        );
    }
}
