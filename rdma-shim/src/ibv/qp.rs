//! Reliable connected queue pairs: create, modify as rdma_cm drives it,
//! query, destroy, and the context ops behind the header's inline
//! `ibv_post_send` and `ibv_post_recv`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use libc::c_int;
use verbs::{QpInit, QpState, QueuePair};

use super::cq::cq;
use super::limits::{MAX_QP_WR, MAX_RD_ATOM, MAX_SGE};
use super::pd::pd;
use super::wr::{post_list, recv_wr, send_wr, SendLimits};
use super::{from_c, into_c, obj};
use crate::guard::{guard, set_errno};
use crate::stack::stack;
use crate::sys;

/// Inline bytes a send request may carry, at most.
pub const MAX_INLINE: u32 = 256;

/// `struct ibv_qp` and its queue pair.
#[repr(C)]
pub struct Qp {
    ibv: sys::ibv_qp,
    /// The facade's queue pair.
    pub qp: QueuePair,
    cap: sys::ibv_qp_cap,
    sig_all: bool,
    /// The state the program last set (rdma_cm's INIT/RTR/RTS steps),
    /// reported while the connection itself has not moved on.
    set_state: AtomicU32,
}

/// Queue pairs by number, for `rdma_accept`/`rdma_connect` given a
/// `qp_num` of a queue pair the program made itself.
static BY_NUM: Mutex<Option<HashMap<u32, usize>>> = Mutex::new(None);

/// The queue pair numbered `num`, if it exists.
pub fn by_num(num: u32) -> Option<*mut sys::ibv_qp> {
    let g = BY_NUM.lock().unwrap_or_else(|e| e.into_inner());
    g.as_ref()?.get(&num).map(|p| *p as *mut sys::ibv_qp)
}

/// The queue pair behind a C pointer.
///
/// # Safety
/// `p` is null or came from [`create_qp`] and was not destroyed.
pub unsafe fn qp<'a>(p: *mut sys::ibv_qp) -> Option<&'a Qp> {
    // SAFETY: per the contract.
    unsafe { obj(p) }
}

/// `ibv_create_qp`: RC only, as on every iWARP device.
pub extern "C" fn create_qp(
    p: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> *mut sys::ibv_qp {
    guard("ibv_create_qp", std::ptr::null_mut(), || {
        // SAFETY: the caller's domain and attributes.
        let (Some(pdo), Some(attr), Ok(st)) = (unsafe { pd(p) }, unsafe { attr.as_mut() }, stack())
        else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        if attr.qp_type != sys::IBV_QPT_RC {
            set_errno(libc::EOPNOTSUPP);
            return std::ptr::null_mut();
        }
        // SAFETY: a shared receive queue of ours or NULL.
        let shared = unsafe { super::srq::srq(attr.srq) };
        if !attr.srq.is_null() && shared.is_none() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: queues of ours or NULL.
        let (Some(scq), Some(rcq)) = (unsafe { cq(attr.send_cq) }, unsafe { cq(attr.recv_cq) })
        else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        let c = &mut attr.cap;
        if c.max_send_wr > MAX_QP_WR as u32
            || c.max_recv_wr > MAX_QP_WR as u32
            || c.max_send_sge > MAX_SGE as u32
            || c.max_recv_sge > MAX_SGE as u32
            || c.max_inline_data > MAX_INLINE
        {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        c.max_send_wr = c.max_send_wr.max(1);
        c.max_recv_wr = c.max_recv_wr.max(1);
        c.max_send_sge = c.max_send_sge.max(1);
        c.max_recv_sge = c.max_recv_sge.max(1);
        c.max_inline_data = MAX_INLINE;
        let init = QpInit::with_cqs(&scq.cq, &rcq.cq)
            .with_depths(c.max_send_wr as usize, c.max_recv_wr as usize)
            .with_max_sge(c.max_send_sge as usize, c.max_recv_sge as usize)
            .with_max_inline_data(MAX_INLINE as usize);
        let init = match shared {
            Some(q) => init.with_srq(&q.srq),
            None => init,
        };
        let q = match st.device.create_qp(&pdo.pd, init) {
            Ok(q) => q,
            Err(_) => {
                set_errno(libc::ENOMEM);
                return std::ptr::null_mut();
            }
        };
        // SAFETY: integers, pointers and pthread objects: zero is valid.
        let mut ibv: sys::ibv_qp = unsafe { std::mem::zeroed() };
        // SAFETY: the domain's context.
        ibv.context = pdo_context(p);
        ibv.qp_context = attr.qp_context;
        ibv.pd = p;
        ibv.send_cq = attr.send_cq;
        ibv.recv_cq = attr.recv_cq;
        ibv.srq = attr.srq;
        ibv.handle = q.num();
        ibv.qp_num = q.num();
        ibv.state = sys::IBV_QPS_RESET;
        ibv.qp_type = sys::IBV_QPT_RC;
        let num = q.num();
        let b = Box::new(Qp {
            ibv,
            qp: q,
            cap: *c,
            sig_all: attr.sq_sig_all != 0,
            set_state: AtomicU32::new(sys::IBV_QPS_RESET),
        });
        let out: *mut sys::ibv_qp = into_c(b);
        BY_NUM
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(num, out as usize);
        out
    })
}

fn pdo_context(p: *mut sys::ibv_pd) -> *mut sys::ibv_context {
    // SAFETY: `p` is a domain of ours (checked by the caller); its C
    // struct is its first field.
    unsafe { (*p).context }
}

/// `ibv_destroy_qp`.
pub extern "C" fn destroy_qp(p: *mut sys::ibv_qp) -> c_int {
    guard("ibv_destroy_qp", libc::EIO, || {
        // SAFETY: a queue pair of ours or NULL.
        let Some(q) = (unsafe { qp(p) }) else {
            return libc::EINVAL;
        };
        let num = q.qp.num();
        if let Some(m) = BY_NUM.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            m.remove(&num);
        }
        crate::qp_holders::forget(p);
        // SAFETY: given back once.
        drop(unsafe { from_c::<_, Qp>(p) });
        0
    })
}

impl Qp {
    /// The state as `ibv_qp_state`: the connection's, or the step the
    /// program set while it has not started.
    pub fn state(&self) -> sys::ibv_qp_state {
        match self.qp.state() {
            QpState::Init => self.set_state.load(Ordering::Acquire),
            QpState::Connecting => sys::IBV_QPS_RTR,
            QpState::Rts => sys::IBV_QPS_RTS,
            _ => sys::IBV_QPS_ERR,
        }
    }
}

/// `ibv_modify_qp`: the connection itself is rdma_cm's to make; the
/// states are recorded, and ERR (or RESET) closes the connection,
/// flushing the queues.
pub extern "C" fn modify_qp(
    p: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    mask: c_int,
) -> c_int {
    guard("ibv_modify_qp", libc::EIO, || {
        // SAFETY: the caller's queue pair and attributes.
        let (Some(q), Some(a)) = (unsafe { qp(p) }, unsafe { attr.as_ref() }) else {
            return libc::EINVAL;
        };
        if mask & sys::IBV_QP_STATE as c_int == 0 {
            return 0;
        }
        match a.qp_state {
            sys::IBV_QPS_ERR | sys::IBV_QPS_RESET | sys::IBV_QPS_SQD | sys::IBV_QPS_SQE => {
                q.qp.disconnect();
            }
            sys::IBV_QPS_INIT | sys::IBV_QPS_RTR | sys::IBV_QPS_RTS => {}
            _ => return libc::EINVAL,
        }
        q.set_state.store(a.qp_state, Ordering::Release);
        // SAFETY: the program reads `state` from the struct; ours to write.
        unsafe { (*p).state = q.state() };
        0
    })
}

/// `ibv_query_qp`.
pub extern "C" fn query_qp(
    p: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    _mask: c_int,
    init: *mut sys::ibv_qp_init_attr,
) -> c_int {
    guard("ibv_query_qp", libc::EIO, || {
        // SAFETY: the caller's queue pair and structs.
        let (Some(q), Some(a)) = (unsafe { qp(p) }, unsafe { attr.as_mut() }) else {
            return libc::EINVAL;
        };
        // SAFETY: plain data: zero is valid.
        *a = unsafe { std::mem::zeroed() };
        a.qp_state = q.state();
        a.cur_qp_state = a.qp_state;
        a.cap = q.cap;
        a.max_rd_atomic = MAX_RD_ATOM as u8;
        a.max_dest_rd_atomic = MAX_RD_ATOM as u8;
        a.port_num = 1;
        a.path_mtu = sys::IBV_MTU_4096;
        // SAFETY: writable or NULL.
        if let Some(i) = unsafe { init.as_mut() } {
            // SAFETY: plain data: zero is valid.
            *i = unsafe { std::mem::zeroed() };
            i.qp_context = q.ibv.qp_context;
            i.send_cq = q.ibv.send_cq;
            i.recv_cq = q.ibv.recv_cq;
            i.cap = q.cap;
            i.qp_type = sys::IBV_QPT_RC;
            i.sq_sig_all = q.sig_all as c_int;
        }
        0
    })
}

/// The context op behind the header's `ibv_post_send`: the list is posted
/// in one facade call; on a refusal `bad_wr` names the refused request and
/// those before it are posted.
pub extern "C" fn post_send(
    p: *mut sys::ibv_qp,
    wr: *mut sys::ibv_send_wr,
    bad: *mut *mut sys::ibv_send_wr,
) -> c_int {
    guard("ibv_post_send", libc::EIO, || {
        // SAFETY: a queue pair of ours or NULL.
        let Some(q) = (unsafe { qp(p) }) else {
            return libc::EINVAL;
        };
        let lim = SendLimits {
            max_sge: q.cap.max_send_sge as usize,
            max_inline: q.cap.max_inline_data as usize,
            sig_all: q.sig_all,
        };
        // SAFETY: the caller's list and out-pointer, as the ABI promises;
        // each entry is valid while it is converted.
        unsafe { post_list(wr, bad, |w| send_wr(w, lim), |wrs| q.qp.post_send_list(wrs)) }
    })
}

/// The context op behind the header's `ibv_post_recv`.
pub extern "C" fn post_recv(
    p: *mut sys::ibv_qp,
    wr: *mut sys::ibv_recv_wr,
    bad: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    guard("ibv_post_recv", libc::EIO, || {
        // SAFETY: a queue pair of ours or NULL.
        let Some(q) = (unsafe { qp(p) }) else {
            return libc::EINVAL;
        };
        let max = q.cap.max_recv_sge as usize;
        // SAFETY: the caller's list and out-pointer, as the ABI promises;
        // each entry is valid while it is converted.
        unsafe { post_list(wr, bad, |w| recv_wr(w, max), |wrs| q.qp.post_recv_list(wrs)) }
    })
}
