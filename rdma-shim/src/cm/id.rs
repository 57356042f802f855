//! `struct rdma_cm_id` and what the library keeps beside it: the object
//! every rdma_cm call and event works on.

use std::ffi::c_void;
use std::net::SocketAddr;
use std::sync::Mutex;

use verbs::{ConnectRequest, Listener};

use super::{addr, channel, Channel};
use crate::ibv::device::shared_context;
use crate::ibv::qp::{qp, Qp};
use crate::ibv::{into_c, obj};
use crate::live::Live;
use crate::qp_holders;
use crate::sys;

/// An id: the C struct first, then what the library keeps.
#[repr(C)]
pub struct Id {
    pub(super) c: sys::rdma_cm_id,
    pub(super) st: Mutex<IdState>,
    /// The id was created without a channel (synchronous use): the
    /// library made one, destroyed with the id, and connect, accept and
    /// resolution block instead of reporting events.
    pub(super) sync: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
pub(super) struct IdState {
    pub(super) src: Option<SocketAddr>,
    pub(super) dst: Option<SocketAddr>,
    pub(super) listener: Option<Listener>,
    pub(super) request: Option<ConnectRequest>,
    /// The queue pair's connection events are watched (connect or accept
    /// started).
    pub(super) watching: bool,
    /// The completion queues in `id->send_cq`/`recv_cq` were made by the
    /// library (rdma_create_qp without them).
    pub(super) owns_cqs: bool,
    /// A synchronous listener's queue pair attributes and domain, for
    /// the queue pair `rdma_get_request` makes on each new id.
    pub(super) ep_qp: Option<(sys::ibv_qp_init_attr, usize)>,
}

impl Id {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, IdState> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn channel(&self) -> Option<&Channel> {
        // SAFETY: an id's channel outlives it (the program destroys ids first).
        unsafe { channel(self.c.channel) }
    }

    pub(super) fn qp(&self) -> Option<&Qp> {
        // SAFETY: `c.qp` is a queue pair of ours or NULL (cleared when it
        // is destroyed).
        unsafe { qp(self.c.qp) }
    }

    /// Whether the id is synchronous (made without a channel).
    pub(super) fn is_sync(&self) -> bool {
        self.sync.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(super) fn as_c(&self) -> *mut sys::rdma_cm_id {
        &self.c as *const _ as *mut _
    }

    /// Records the addresses in `id->route.addr`.
    pub(super) fn set_addrs(&self, src: Option<SocketAddr>, dst: Option<SocketAddr>) {
        let c = self.as_c();
        // SAFETY: the id's own route fields; C reads them only between calls.
        unsafe {
            if let Some(s) = src {
                addr::write(&mut (*c).route.addr.__bindgen_anon_1.src_storage, s);
            }
            if let Some(d) = dst {
                addr::write(&mut (*c).route.addr.__bindgen_anon_2.dst_storage, d);
            }
        }
        let mut st = self.lock();
        if src.is_some() {
            st.src = src;
        }
        if dst.is_some() {
            st.dst = dst;
        }
    }
}

/// Every live id (`*mut Id`), so that a program's stale handle is an
/// error, not a read of freed memory.
static IDS: Live = Live::new();

/// The id behind a C pointer: None unless it is a live id of ours.
///
/// # Safety
/// A live id is not destroyed while the returned reference is used
/// (destroying an id in use on another thread is the program's error,
/// as with rdma-core).
pub(crate) unsafe fn id<'a>(p: *mut sys::rdma_cm_id) -> Option<&'a Id> {
    if !IDS.contains(p) {
        return None;
    }
    // SAFETY: listed, so made by `new_id` and not yet destroyed.
    unsafe { obj(p) }
}

/// Unlists a live id about to be freed; false when it was not listed
/// (destroyed already on another thread), so it must not be freed.
pub(super) fn unlist(p: *mut sys::rdma_cm_id) -> bool {
    IDS.remove(p)
}

/// Makes an id on `ch` and lists it there.
pub(super) fn new_id(
    ch: *mut sys::rdma_event_channel,
    context: *mut c_void,
    own_channel: bool,
) -> *mut sys::rdma_cm_id {
    // SAFETY: integers, pointers and unions of them: zero is valid.
    let mut c: sys::rdma_cm_id = unsafe { std::mem::zeroed() };
    c.channel = ch;
    c.context = context;
    c.ps = sys::RDMA_PS_TCP;
    c.qp_type = sys::IBV_QPT_RC;
    c.verbs = shared_context();
    c.port_num = 1;
    let p: *mut sys::rdma_cm_id = into_c(Box::new(Id {
        c,
        st: Mutex::new(IdState::default()),
        sync: own_channel.into(),
    }));
    IDS.insert(p);
    // SAFETY: the id is boxed (its fields do not move) and is taken off
    // the list in `destroy_id` before it is freed.
    unsafe { qp_holders::add(std::ptr::addr_of_mut!((*p).qp)) };
    // SAFETY: None unless the channel is live.
    if let Some(chan) = unsafe { channel(ch) } {
        chan.lock().ids.push(p as usize);
    }
    p
}
