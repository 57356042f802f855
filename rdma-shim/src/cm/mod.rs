//! The librdmacm half: event channels, ids, address and route
//! resolution, listen/connect/accept/reject/disconnect over the facade's
//! connection manager.
//!
//! An event channel's descriptor is the facade's [`EventChannel`] (an
//! eventfd): the ids on the channel make it readable through the facade's
//! watchers (connect requests of a listener, connection events of a queue
//! pair), and the library itself for the events it makes (address and
//! route resolution, which are immediate here). `rdma_get_cm_event`
//! gathers what the ids have and hands out one event at a time, leaving
//! the descriptor readable while more wait.

pub mod addr;
pub mod addrinfo;
mod events;
mod id;
pub mod ids;
pub mod sync;

pub use events::{ack_cm_event, event_str, get_cm_event};

use std::collections::VecDeque;
use std::sync::Mutex;

use libc::c_int;
use verbs::EventChannel;

use crate::guard::{guard, set_errno};
use crate::ibv::{from_c, into_c, obj};
use crate::live::Live;
use crate::stack::stack;
use crate::sys;

/// `struct rdma_event_channel` and the ids and events behind it.
#[repr(C)]
pub struct Channel {
    /// `fd` is an epoll set holding `ev`: the program may make it
    /// non-blocking without touching the facade's eventfd (which is
    /// always non-blocking).
    pub(super) c: sys::rdma_event_channel,
    ev: EventChannel,
    inner: Mutex<ChannelInner>,
}

#[derive(Default)]
struct ChannelInner {
    /// The ids reporting here (`*mut id::Id`).
    ids: Vec<usize>,
    /// Events gathered and not yet handed out.
    queue: VecDeque<Box<events::Event>>,
}

impl Channel {
    /// Makes the descriptor readable: an event waits.
    fn signal(&self) {
        use std::os::fd::AsRawFd;
        let one: u64 = 1;
        // SAFETY: an 8-byte write to our own eventfd.
        unsafe { libc::write(self.ev.as_raw_fd(), &one as *const u64 as *const _, 8) };
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ChannelInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every live channel (`*mut Channel`).
static CHANNELS: Live = Live::new();

/// The channel behind a C pointer: None unless it is a live channel of
/// ours.
///
/// # Safety
/// A live channel is not destroyed while the returned reference is used
/// (the program destroys a channel after its ids and outside its calls on
/// it, as rdma-core requires).
pub(crate) unsafe fn channel<'a>(p: *mut sys::rdma_event_channel) -> Option<&'a Channel> {
    if !CHANNELS.contains(p) {
        return None;
    }
    // SAFETY: listed, so made by `new_channel` and not yet destroyed.
    unsafe { obj(p) }
}

pub(crate) fn new_channel() -> Option<*mut sys::rdma_event_channel> {
    use std::os::fd::AsRawFd;
    let ev = EventChannel::new().ok()?;
    // SAFETY: plain system calls; the epoll set is closed with the channel.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut e = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: 0,
    };
    // SAFETY: adding our eventfd to our epoll set.
    if unsafe { libc::epoll_ctl(fd, libc::EPOLL_CTL_ADD, ev.as_raw_fd(), &mut e) } != 0 {
        // SAFETY: closing the set just made.
        unsafe { libc::close(fd) };
        return None;
    }
    let c = sys::rdma_event_channel { fd };
    let p = into_c(Box::new(Channel {
        c,
        ev,
        inner: Mutex::new(ChannelInner::default()),
    }));
    CHANNELS.insert(p);
    Some(p)
}

/// `rdma_create_event_channel`: ENODEV when the stack cannot start.
pub extern "C" fn create_event_channel() -> *mut sys::rdma_event_channel {
    guard("rdma_create_event_channel", std::ptr::null_mut(), || {
        if let Err(e) = stack() {
            crate::guard::log(&format!("cannot start the stack: {e}"));
            set_errno(libc::ENODEV);
            return std::ptr::null_mut();
        }
        new_channel().unwrap_or_else(|| {
            set_errno(libc::EMFILE);
            std::ptr::null_mut()
        })
    })
}

/// `rdma_destroy_event_channel`.
pub extern "C" fn destroy_event_channel(p: *mut sys::rdma_event_channel) {
    guard("rdma_destroy_event_channel", (), || {
        // A channel destroyed already (or never ours) is left alone.
        if CHANNELS.remove(p) {
            // SAFETY: a channel of ours, unlisted above, so given back once.
            let c = unsafe { from_c::<_, Channel>(p) };
            // SAFETY: closing the epoll set this channel made.
            unsafe { libc::close(c.c.fd) };
        }
    })
}

/// `rdma_get_devices`: the one context, NULL-terminated.
pub extern "C" fn get_devices(num: *mut c_int) -> *mut *mut sys::ibv_context {
    guard("rdma_get_devices", std::ptr::null_mut(), || {
        if stack().is_err() {
            set_errno(libc::ENODEV);
            return std::ptr::null_mut();
        }
        // SAFETY: calloc of two pointers, freed by rdma_free_devices.
        let list =
            unsafe { libc::calloc(2, std::mem::size_of::<usize>()) } as *mut *mut sys::ibv_context;
        if list.is_null() {
            set_errno(libc::ENOMEM);
            return list;
        }
        // SAFETY: room for two; the second stays NULL.
        unsafe { *list = crate::ibv::device::shared_context() };
        if !num.is_null() {
            // SAFETY: the caller's int.
            unsafe { *num = 1 };
        }
        list
    })
}

/// `rdma_free_devices`.
pub extern "C" fn free_devices(list: *mut *mut sys::ibv_context) {
    // SAFETY: from `get_devices`' calloc, or NULL.
    guard("rdma_free_devices", (), || unsafe {
        libc::free(list as *mut _)
    })
}
