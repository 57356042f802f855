//! Completion queues and completion channels.
//!
//! A completion channel's descriptor is an epoll set holding one eventfd
//! per completion queue attached to it (the facade's [`EventChannel`]),
//! each registered with the queue's address: poll(2) and epoll see the
//! channel readable when any armed queue fired, and `ibv_get_cq_event`
//! learns from the set which queue it was.

use std::ffi::c_void;
use std::os::fd::AsRawFd;

use libc::c_int;
use verbs::{CompletionQueue, EventChannel, NotifyOn, WcOpcode, WorkCompletion};

use super::context::context;
use super::limits::MAX_CQE;
use super::{from_c, into_c, obj};
use crate::guard::{guard, set_errno};
use crate::stack::stack;
use crate::sys;

/// `struct ibv_comp_channel`, its descriptor an epoll set.
#[repr(C)]
pub struct CompChannel {
    ibv: sys::ibv_comp_channel,
}

/// `ibv_create_comp_channel`.
pub extern "C" fn create_comp_channel(ctx: *mut sys::ibv_context) -> *mut sys::ibv_comp_channel {
    guard("ibv_create_comp_channel", std::ptr::null_mut(), || {
        // SAFETY: a context of ours or NULL.
        if unsafe { context(ctx) }.is_none() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: plain system call.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return std::ptr::null_mut();
        }
        let ibv = sys::ibv_comp_channel {
            context: ctx,
            fd,
            refcnt: 0,
        };
        into_c(Box::new(CompChannel { ibv }))
    })
}

/// `ibv_destroy_comp_channel`: EBUSY while queues use it.
pub extern "C" fn destroy_comp_channel(ch: *mut sys::ibv_comp_channel) -> c_int {
    guard("ibv_destroy_comp_channel", -1, || {
        // SAFETY: a channel of ours or NULL.
        let Some(c) = (unsafe { obj::<_, CompChannel>(ch) }) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        if c.ibv.refcnt > 0 {
            set_errno(libc::EBUSY);
            return -1;
        }
        // SAFETY: given back once; the epoll descriptor is ours to close.
        let c = unsafe { from_c::<_, CompChannel>(ch) };
        // SAFETY: closing the descriptor this channel created.
        unsafe { libc::close(c.ibv.fd) };
        0
    })
}

/// `struct ibv_cq` and its queue.
#[repr(C)]
pub struct Cq {
    ibv: sys::ibv_cq,
    /// The facade's queue.
    pub cq: CompletionQueue,
    /// Its own eventfd, in the completion channel's epoll set.
    events: Option<EventChannel>,
}

/// The queue behind a C pointer.
///
/// # Safety
/// `p` is null or came from [`create_cq`] and was not destroyed.
pub unsafe fn cq<'a>(p: *mut sys::ibv_cq) -> Option<&'a Cq> {
    // SAFETY: per the contract.
    unsafe { obj(p) }
}

/// `ibv_create_cq`.
pub extern "C" fn create_cq(
    ctx: *mut sys::ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut sys::ibv_comp_channel,
    _comp_vector: c_int,
) -> *mut sys::ibv_cq {
    guard("ibv_create_cq", std::ptr::null_mut(), || {
        // SAFETY: a context of ours or NULL.
        let (Some(_), Ok(st)) = (unsafe { context(ctx) }, stack()) else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        if !(1..=MAX_CQE).contains(&cqe) {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: a channel of ours or NULL.
        let ch = unsafe { channel.as_mut() };
        let (queue, events) = match ch {
            None => (st.device.create_cq(cqe as usize), None),
            Some(_) => match EventChannel::new() {
                Ok(ev) => (
                    st.device.create_cq_with_channel(cqe as usize, &ev),
                    Some(ev),
                ),
                Err(_) => {
                    set_errno(libc::EMFILE);
                    return std::ptr::null_mut();
                }
            },
        };
        // SAFETY: integers, pointers and pthread objects: zero is valid
        // (the initialisers of a glibc mutex and condition variable).
        let mut ibv: sys::ibv_cq = unsafe { std::mem::zeroed() };
        ibv.context = ctx;
        ibv.channel = channel;
        ibv.cq_context = cq_context;
        ibv.cqe = cqe;
        let b = Box::new(Cq {
            ibv,
            cq: queue,
            events,
        });
        let p: *mut sys::ibv_cq = into_c(b);
        // SAFETY: `p` was just made; the channel (if any) is ours.
        let c = unsafe { cq(p) }.expect("just made");
        if let (Some(ch), Some(ev)) = (unsafe { channel.as_mut() }, &c.events) {
            let mut e = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: p as u64,
            };
            // SAFETY: adding our eventfd to the channel's epoll set.
            if unsafe { libc::epoll_ctl(ch.fd, libc::EPOLL_CTL_ADD, ev.as_raw_fd(), &mut e) } != 0 {
                // SAFETY: not handed out yet.
                drop(unsafe { from_c::<_, Cq>(p) });
                return std::ptr::null_mut();
            }
            ch.refcnt += 1;
        }
        p
    })
}

/// `ibv_destroy_cq`.
pub extern "C" fn destroy_cq(p: *mut sys::ibv_cq) -> c_int {
    guard("ibv_destroy_cq", libc::EIO, || {
        if p.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a queue of ours, given back once.
        let c = unsafe { from_c::<_, Cq>(p) };
        // SAFETY: the channel outlives the queues attached to it (EBUSY).
        if let (Some(ch), Some(ev)) = (unsafe { c.ibv.channel.as_mut() }, &c.events) {
            // SAFETY: removing our eventfd from the channel's set.
            unsafe {
                libc::epoll_ctl(
                    ch.fd,
                    libc::EPOLL_CTL_DEL,
                    ev.as_raw_fd(),
                    std::ptr::null_mut(),
                )
            };
            ch.refcnt -= 1;
        }
        0
    })
}

/// `ibv_get_cq_event`: blocks (unless the channel's descriptor was made
/// non-blocking, then EAGAIN) until an armed queue fires.
pub extern "C" fn get_cq_event(
    ch: *mut sys::ibv_comp_channel,
    cq_out: *mut *mut sys::ibv_cq,
    ctx_out: *mut *mut c_void,
) -> c_int {
    guard("ibv_get_cq_event", -1, || {
        // SAFETY: a channel of ours or NULL.
        let Some(c) = (unsafe { obj::<_, CompChannel>(ch) }) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        let fd = c.ibv.fd;
        // SAFETY: plain system call on our descriptor.
        let nonblocking = unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_NONBLOCK != 0;
        let mut e = libc::epoll_event { events: 0, u64: 0 };
        loop {
            // SAFETY: one event into `e`.
            let n = unsafe { libc::epoll_wait(fd, &mut e, 1, if nonblocking { 0 } else { -1 }) };
            if n == 1 {
                break;
            }
            if n == 0 {
                set_errno(libc::EAGAIN);
                return -1;
            }
            // SAFETY: reading errno.
            if unsafe { *libc::__errno_location() } != libc::EINTR {
                return -1;
            }
        }
        let p = e.u64 as *mut sys::ibv_cq;
        // SAFETY: the set holds queues of ours; a queue leaves it before
        // it is freed.
        let Some(q) = (unsafe { cq(p) }) else {
            set_errno(libc::EIO);
            return -1;
        };
        if let Some(ev) = &q.events {
            ev.ack();
        }
        // SAFETY: the caller passes writable pointers.
        unsafe {
            if !cq_out.is_null() {
                *cq_out = p;
            }
            if !ctx_out.is_null() {
                *ctx_out = q.ibv.cq_context;
            }
        }
        0
    })
}

/// `ibv_ack_cq_events`: counted, as rdma-core does; nothing waits on it.
pub extern "C" fn ack_cq_events(p: *mut sys::ibv_cq, n: libc::c_uint) {
    guard("ibv_ack_cq_events", (), || {
        // SAFETY: a queue of ours; the count is only read by the program.
        if let Some(c) = unsafe { (p as *mut Cq).as_mut() } {
            c.ibv.comp_events_completed = c.ibv.comp_events_completed.wrapping_add(n);
        }
    })
}

/// The context op behind the header's `ibv_req_notify_cq`.
pub extern "C" fn req_notify_cq(p: *mut sys::ibv_cq, solicited_only: c_int) -> c_int {
    guard("ibv_req_notify_cq", libc::EIO, || {
        // SAFETY: a queue of ours or NULL.
        let Some(c) = (unsafe { cq(p) }) else {
            return libc::EINVAL;
        };
        let on = if solicited_only != 0 {
            NotifyOn::Solicited
        } else {
            NotifyOn::Any
        };
        match c.cq.req_notify(on) {
            Ok(()) => 0,
            Err(_) => libc::EINVAL,
        }
    })
}

fn wc_opcode(op: WcOpcode) -> sys::ibv_wc_opcode {
    match op {
        WcOpcode::Send => sys::IBV_WC_SEND,
        WcOpcode::RdmaWrite => sys::IBV_WC_RDMA_WRITE,
        WcOpcode::RdmaRead => sys::IBV_WC_RDMA_READ,
        WcOpcode::Recv => sys::IBV_WC_RECV,
        WcOpcode::RecvImm => sys::IBV_WC_RECV_RDMA_WITH_IMM,
        WcOpcode::FetchAdd => sys::IBV_WC_FETCH_ADD,
        WcOpcode::CmpSwap => sys::IBV_WC_COMP_SWAP,
        // Masked swap has no ibv_wc_opcode of its own.
        WcOpcode::Swap => sys::IBV_WC_COMP_SWAP,
        WcOpcode::LocalInv => sys::IBV_WC_LOCAL_INV,
        // An opcode newer than this mapping: reported by its direction,
        // as the nearest opcode a libibverbs program knows.
        other if other.is_recv() => sys::IBV_WC_RECV,
        _ => sys::IBV_WC_SEND,
    }
}

/// One facade completion as `struct ibv_wc`.
pub fn to_ibv_wc(wc: &WorkCompletion) -> sys::ibv_wc {
    // SAFETY: integers and a union of integers: zero is valid.
    let mut out: sys::ibv_wc = unsafe { std::mem::zeroed() };
    out.wr_id = wc.wr_id;
    out.status = wc.status.ibv_value();
    out.opcode = wc_opcode(wc.opcode);
    out.byte_len = wc.byte_len;
    out.qp_num = wc.qp_num;
    if let Some(imm) = wc.imm_data {
        out.__bindgen_anon_1.imm_data = imm.to_be();
        out.wc_flags |= sys::IBV_WC_WITH_IMM;
    } else if let Some(stag) = wc.invalidated {
        out.__bindgen_anon_1.invalidated_rkey = stag.0;
        out.wc_flags |= sys::IBV_WC_WITH_INV;
    }
    out
}

/// The context op behind the header's `ibv_poll_cq`.
pub extern "C" fn poll_cq(p: *mut sys::ibv_cq, n: c_int, wc: *mut sys::ibv_wc) -> c_int {
    guard("ibv_poll_cq", -1, || {
        // SAFETY: a queue of ours or NULL.
        let Some(c) = (unsafe { cq(p) }) else {
            return -1;
        };
        if n <= 0 || wc.is_null() {
            return 0;
        }
        // The first completion alone, into a one-entry buffer: a program
        // spinning on an empty queue (perftest) calls this millions of
        // times, and each call would otherwise fill the whole batch
        // buffer below before finding nothing.
        let mut first = [WorkCompletion::FILLER];
        match c.cq.poll(&mut first) {
            Ok(0) => return 0,
            Ok(_) => {}
            Err(_) => return -1,
        }
        // SAFETY: the caller's array has `n` >= 1 entries.
        unsafe { *wc = to_ibv_wc(&first[0]) };
        // Nothing more waiting: no second poll, which would drive another
        // progress turn for a queue just found non-empty.
        if n == 1 || c.cq.is_empty() {
            return 1;
        }
        const BATCH: usize = 32;
        let mut buf = [WorkCompletion::FILLER; BATCH];
        let mut done = 1usize;
        while done < n as usize {
            let want = (n as usize - done).min(BATCH);
            let got = match c.cq.poll(&mut buf[..want]) {
                Ok(got) => got,
                Err(_) => return done as c_int,
            };
            for (i, w) in buf[..got].iter().enumerate() {
                // SAFETY: the caller's array has `n` entries.
                unsafe { *wc.add(done + i) = to_ibv_wc(w) };
            }
            done += got;
            if got < want {
                break;
            }
        }
        done as c_int
    })
}
