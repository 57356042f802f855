//! `rdma_getaddrinfo` / `rdma_freeaddrinfo`: name resolution through the
//! system's getaddrinfo, each result an RC, TCP-port-space entry with the
//! address as source (RAI_PASSIVE) or destination.

use std::ffi::c_char;
use std::net::SocketAddr;

use libc::c_int;

use super::addr;
use crate::guard::{guard, set_errno};
use crate::sys;

/// The addresses getaddrinfo gives for `node`/`service`.
///
/// # Safety
/// `node` and `service` are NULL or NUL-terminated strings.
unsafe fn resolve(
    node: *const c_char,
    service: *const c_char,
    flags: c_int,
    family: c_int,
) -> Result<Vec<SocketAddr>, c_int> {
    // SAFETY: zero is a valid addrinfo hint.
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_family = family;
    hints.ai_socktype = libc::SOCK_STREAM;
    hints.ai_flags = flags;
    let mut res: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: the caller's strings; `res` is freed below.
    let rc = unsafe { libc::getaddrinfo(node, service, &hints, &mut res) };
    if rc != 0 {
        return Err(rc);
    }
    let mut out = Vec::new();
    let mut cur = res;
    // SAFETY: walking the list getaddrinfo made.
    while let Some(ai) = unsafe { cur.as_ref() } {
        // SAFETY: each entry's address is valid for its family.
        if let Some(a) = unsafe { addr::read(ai.ai_addr as *const sys::sockaddr) } {
            if !out.contains(&a) {
                out.push(a);
            }
        }
        cur = ai.ai_next;
    }
    // SAFETY: the list getaddrinfo made, freed once.
    unsafe { libc::freeaddrinfo(res) };
    Ok(out)
}

/// A calloc'd copy of `a`, freed by `rdma_freeaddrinfo`.
fn sockaddr_copy(a: SocketAddr) -> Option<(*mut sys::sockaddr, u32)> {
    // SAFETY: calloc of one sockaddr_storage.
    let p = unsafe { libc::calloc(1, std::mem::size_of::<sys::sockaddr_storage>()) }
        as *mut sys::sockaddr_storage;
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is a whole sockaddr_storage.
    let len = unsafe { addr::write(p, a) };
    Some((p as *mut sys::sockaddr, len as u32))
}

/// `rdma_getaddrinfo`: 0, or getaddrinfo's error code; -1 with errno for
/// what this stack cannot do (datagram QP types, port spaces but TCP).
pub extern "C" fn getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const sys::rdma_addrinfo,
    res: *mut *mut sys::rdma_addrinfo,
) -> c_int {
    guard("rdma_getaddrinfo", -1, || {
        if res.is_null() || (node.is_null() && service.is_null()) {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: the caller's hints or NULL.
        let h = unsafe { hints.as_ref() };
        let flags = h.map_or(0, |h| h.ai_flags as u32);
        if let Some(h) = h {
            let qp_ok = h.ai_qp_type == 0 || h.ai_qp_type == sys::IBV_QPT_RC as c_int;
            let ps_ok = h.ai_port_space == 0 || h.ai_port_space == sys::RDMA_PS_TCP as c_int;
            if !qp_ok || !ps_ok {
                set_errno(libc::EOPNOTSUPP);
                return -1;
            }
        }
        let passive = flags & sys::RAI_PASSIVE != 0;
        let mut gai_flags = 0;
        if passive {
            gai_flags |= libc::AI_PASSIVE;
        }
        if flags & sys::RAI_NUMERICHOST != 0 {
            gai_flags |= libc::AI_NUMERICHOST;
        }
        let family = h.map_or(libc::AF_UNSPEC, |h| h.ai_family);
        // SAFETY: the caller's strings.
        let addrs = match unsafe { resolve(node, service, gai_flags, family) } {
            Ok(a) if !a.is_empty() => a,
            Ok(_) => return libc::EAI_NONAME,
            Err(rc) => return rc,
        };
        let mut head: *mut sys::rdma_addrinfo = std::ptr::null_mut();
        // Built back to front so the list keeps getaddrinfo's order.
        for a in addrs.into_iter().rev() {
            // SAFETY: calloc of one rdma_addrinfo (zero is valid).
            let ai = unsafe { libc::calloc(1, std::mem::size_of::<sys::rdma_addrinfo>()) }
                as *mut sys::rdma_addrinfo;
            let Some((sa, len)) = sockaddr_copy(a).filter(|_| !ai.is_null()) else {
                freeaddrinfo(head);
                set_errno(libc::ENOMEM);
                return -1;
            };
            // SAFETY: `ai` was just allocated and zeroed.
            let r = unsafe { &mut *ai };
            r.ai_flags = flags as c_int;
            r.ai_family = if a.is_ipv4() {
                libc::AF_INET
            } else {
                libc::AF_INET6
            };
            r.ai_qp_type = sys::IBV_QPT_RC as c_int;
            r.ai_port_space = sys::RDMA_PS_TCP as c_int;
            if passive {
                (r.ai_src_addr, r.ai_src_len) = (sa, len);
            } else {
                (r.ai_dst_addr, r.ai_dst_len) = (sa, len);
            }
            r.ai_next = head;
            head = ai;
        }
        // SAFETY: the caller's out-pointer.
        unsafe { *res = head };
        0
    })
}

/// `rdma_freeaddrinfo`.
pub extern "C" fn freeaddrinfo(mut res: *mut sys::rdma_addrinfo) {
    guard("rdma_freeaddrinfo", (), || {
        // SAFETY: a list `getaddrinfo` made; each entry and its addresses
        // were calloc'd.
        while let Some(r) = unsafe { res.as_ref() } {
            let next = r.ai_next;
            // SAFETY: as above, each freed once.
            unsafe {
                libc::free(r.ai_src_addr as *mut _);
                libc::free(r.ai_dst_addr as *mut _);
                libc::free(r.ai_src_canonname as *mut _);
                libc::free(r.ai_dst_canonname as *mut _);
                libc::free(res as *mut _);
            }
            res = next;
        }
    })
}
