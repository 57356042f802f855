//! Shared receive queues: not offered through the C ABI yet;
//! `ibv_create_srq` fails with EOPNOTSUPP, as on a provider without them.

use libc::c_int;

use crate::guard::{guard, set_errno};
use crate::sys;

/// `ibv_create_srq`.
pub extern "C" fn create_srq(
    _pd: *mut sys::ibv_pd,
    _attr: *mut sys::ibv_srq_init_attr,
) -> *mut sys::ibv_srq {
    guard("ibv_create_srq", std::ptr::null_mut(), || {
        set_errno(libc::EOPNOTSUPP);
        std::ptr::null_mut()
    })
}

/// The context op behind the header's `ibv_post_srq_recv`: no queue can
/// exist, so any pointer is foreign.
pub extern "C" fn post_srq_recv(
    _srq: *mut sys::ibv_srq,
    wr: *mut sys::ibv_recv_wr,
    bad: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    guard("ibv_post_srq_recv", libc::EIO, || {
        if !bad.is_null() {
            // SAFETY: the caller's out-pointer.
            unsafe { *bad = wr };
        }
        libc::EOPNOTSUPP
    })
}
