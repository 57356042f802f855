//! Shared receive queues: create, post (the context op behind the
//! header's `ibv_post_srq_recv`), modify the limit, query, destroy, and
//! queue pairs that receive from one.

use libc::c_int;
use verbs::{SharedReceiveQueue, SrqInit};

use super::pd::pd;
use super::wr::{post_errno, recv_wr};
use super::{from_c, into_c, obj};
use crate::guard::{guard, set_errno};
use crate::stack::stack;
use crate::sys;

/// `struct ibv_srq` and its queue.
#[repr(C)]
pub struct Srq {
    ibv: sys::ibv_srq,
    /// The facade's queue.
    pub srq: SharedReceiveQueue,
    max_sge: usize,
}

/// The queue behind a C pointer.
///
/// # Safety
/// `p` is null or came from [`create_srq`] and was not destroyed.
pub unsafe fn srq<'a>(p: *mut sys::ibv_srq) -> Option<&'a Srq> {
    // SAFETY: per the contract.
    unsafe { obj(p) }
}

/// `ibv_create_srq`: the sizes actually granted are written back.
pub extern "C" fn create_srq(
    p: *mut sys::ibv_pd,
    attr: *mut sys::ibv_srq_init_attr,
) -> *mut sys::ibv_srq {
    guard("ibv_create_srq", std::ptr::null_mut(), || {
        // SAFETY: the caller's domain and attributes.
        let (Some(pdo), Some(a), Ok(st)) = (unsafe { pd(p) }, unsafe { attr.as_mut() }, stack())
        else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        let mut init = SrqInit::new(
            a.attr.max_wr.max(1) as usize,
            a.attr.max_sge.max(1) as usize,
        );
        init.srq_limit = a.attr.srq_limit as usize;
        let q = match st.device.create_srq(&pdo.pd, init) {
            Ok(q) => q,
            Err(_) => {
                set_errno(libc::EINVAL);
                return std::ptr::null_mut();
            }
        };
        a.attr.max_wr = a.attr.max_wr.max(1);
        a.attr.max_sge = a.attr.max_sge.max(1);
        // SAFETY: integers, pointers and pthread objects: zero is valid.
        let mut ibv: sys::ibv_srq = unsafe { std::mem::zeroed() };
        // SAFETY: the domain's own context field.
        ibv.context = unsafe { (*p).context };
        ibv.srq_context = a.srq_context;
        ibv.pd = p;
        ibv.handle = q.num();
        into_c(Box::new(Srq {
            ibv,
            srq: q,
            max_sge: a.attr.max_sge as usize,
        }))
    })
}

/// `ibv_destroy_srq`: EBUSY while queue pairs receive from it.
pub extern "C" fn destroy_srq(p: *mut sys::ibv_srq) -> c_int {
    guard("ibv_destroy_srq", libc::EIO, || {
        // SAFETY: a queue of ours or NULL.
        let Some(q) = (unsafe { srq(p) }) else {
            return libc::EINVAL;
        };
        if q.srq.query().map_or(0, |a| a.qps) > 0 {
            return libc::EBUSY;
        }
        // SAFETY: given back once.
        drop(unsafe { from_c::<_, Srq>(p) });
        0
    })
}

/// `ibv_modify_srq`: the limit only (the queue is not resized).
pub extern "C" fn modify_srq(
    p: *mut sys::ibv_srq,
    attr: *mut sys::ibv_srq_attr,
    mask: c_int,
) -> c_int {
    guard("ibv_modify_srq", libc::EIO, || {
        // SAFETY: the caller's queue and attributes.
        let (Some(q), Some(a)) = (unsafe { srq(p) }, unsafe { attr.as_ref() }) else {
            return libc::EINVAL;
        };
        if mask & sys::IBV_SRQ_MAX_WR as c_int != 0 {
            return libc::EINVAL;
        }
        if mask & sys::IBV_SRQ_LIMIT as c_int != 0
            && q.srq.modify_limit(a.srq_limit as usize).is_err()
        {
            return libc::EINVAL;
        }
        0
    })
}

/// `ibv_query_srq`.
pub extern "C" fn query_srq(p: *mut sys::ibv_srq, attr: *mut sys::ibv_srq_attr) -> c_int {
    guard("ibv_query_srq", libc::EIO, || {
        // SAFETY: the caller's queue and attributes.
        let (Some(q), Some(a)) = (unsafe { srq(p) }, unsafe { attr.as_mut() }) else {
            return libc::EINVAL;
        };
        let Ok(got) = q.srq.query() else {
            return libc::EINVAL;
        };
        a.max_wr = got.max_wr as u32;
        a.max_sge = got.max_sge as u32;
        a.srq_limit = got.srq_limit as u32;
        0
    })
}

/// The context op behind the header's `ibv_post_srq_recv`; `bad_wr`
/// names the first refused request (those before it are posted).
pub extern "C" fn post_srq_recv(
    p: *mut sys::ibv_srq,
    wr: *mut sys::ibv_recv_wr,
    bad: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    guard("ibv_post_srq_recv", libc::EIO, || {
        // SAFETY: a queue of ours or NULL.
        let Some(q) = (unsafe { srq(p) }) else {
            return libc::EINVAL;
        };
        let mut cur = wr;
        // SAFETY: the caller's list, each entry valid until `next` is NULL.
        while let Some(w) = unsafe { cur.as_ref() } {
            // SAFETY: as above.
            let r = unsafe { recv_wr(w, q.max_sge) }
                .and_then(|r| q.srq.post_recv(r).map_err(|e| post_errno(&e)));
            if let Err(e) = r {
                if !bad.is_null() {
                    // SAFETY: the caller's out-pointer.
                    unsafe { *bad = cur };
                }
                return e;
            }
            cur = w.next;
        }
        0
    })
}
