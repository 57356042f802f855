//! Synchronous ids (made without an event channel) and the endpoint
//! calls built on them: `rdma_create_ep`, `rdma_get_request`,
//! `rdma_destroy_ep`. A synchronous id's calls block for their outcome
//! on the id's private channel instead of reporting events.

use libc::c_int;

use super::events::{ack_cm_event, next_event};
use super::id::id;
use super::ids;
use crate::guard::{guard, set_errno};
use crate::sys;

/// `rdma_create_ep`: a synchronous id bound (passive) or resolved to
/// `res`'s address, with a queue pair when `attr` is given (a passive
/// one keeps the attributes for each `rdma_get_request`).
pub extern "C" fn create_ep(
    out: *mut *mut sys::rdma_cm_id,
    res: *mut sys::rdma_addrinfo,
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> c_int {
    guard("rdma_create_ep", -1, || {
        // SAFETY: the caller's address info.
        let (false, Some(r)) = (out.is_null(), unsafe { res.as_ref() }) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        let mut p = std::ptr::null_mut();
        if ids::create_id(
            std::ptr::null_mut(),
            &mut p,
            std::ptr::null_mut(),
            sys::RDMA_PS_TCP,
        ) != 0
        {
            return -1;
        }
        let passive = r.ai_flags as u32 & sys::RAI_PASSIVE != 0;
        let rc = if passive {
            ids::bind_addr(p, r.ai_src_addr)
        } else {
            match ids::resolve_addr(p, r.ai_src_addr, r.ai_dst_addr, 2000) {
                0 => ids::resolve_route(p, 2000),
                e => e,
            }
        };
        if rc != 0 {
            ids::destroy_id(p);
            return -1;
        }
        // SAFETY: the caller's attributes or NULL.
        if let Some(a) = unsafe { attr.as_ref() } {
            if passive {
                // SAFETY: just made.
                let i = unsafe { id(p) }.expect("just made");
                i.lock().ep_qp = Some((*a, pd as usize));
            } else if ids::create_qp(p, pd, attr) != 0 {
                ids::destroy_id(p);
                return -1;
            }
        }
        // SAFETY: the caller's out-pointer.
        unsafe { *out = p };
        0
    })
}

/// `rdma_destroy_ep`: the queue pair, the library's completion queues
/// and the id.
pub extern "C" fn destroy_ep(p: *mut sys::rdma_cm_id) {
    guard("rdma_destroy_ep", (), || {
        // SAFETY: an id of ours or NULL.
        if let Some(i) = unsafe { id(p) } {
            if !i.c.qp.is_null() {
                ids::destroy_qp(p);
            }
            ids::destroy_id(p);
        }
    })
}

/// `rdma_get_request`: blocks for the next connect request of a
/// synchronous listener; the new id is synchronous too, with the
/// listener's queue pair attributes applied.
pub extern "C" fn get_request(
    listen: *mut sys::rdma_cm_id,
    out: *mut *mut sys::rdma_cm_id,
) -> c_int {
    guard("rdma_get_request", -1, || {
        // SAFETY: an id of ours or NULL.
        let (Some(l), false) = (unsafe { id(listen) }, out.is_null()) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        if !l.is_sync() {
            set_errno(libc::EINVAL);
            return -1;
        }
        let child = loop {
            let e = match next_event(l) {
                Ok(e) => e,
                Err(err) => {
                    set_errno(err);
                    return -1;
                }
            };
            // SAFETY: an event just handed out, freed below.
            let (kind, child) = unsafe { ((*e).event, (*e).id) };
            ack_cm_event(e);
            if kind == sys::RDMA_CM_EVENT_CONNECT_REQUEST {
                break child;
            }
        };
        // The new id gets a private channel of its own.
        let Some(ch) = super::new_channel() else {
            ids::destroy_id(child);
            set_errno(libc::EMFILE);
            return -1;
        };
        ids::migrate_id(child, ch);
        // SAFETY: the request's id, just made by the library.
        let ci = unsafe { id(child) }.expect("request id");
        ci.sync.store(true, std::sync::atomic::Ordering::Release);
        let ep = l.lock().ep_qp;
        if let Some((mut attr, pd)) = ep {
            if ids::create_qp(child, pd as *mut sys::ibv_pd, &mut attr) != 0 {
                ids::reject(child, std::ptr::null(), 0);
                ids::destroy_id(child);
                return -1;
            }
        }
        // SAFETY: the caller's out-pointer.
        unsafe { *out = child };
        0
    })
}
