//! `struct rdma_cm_event`: gathered from the ids of a channel, handed out
//! one at a time by `rdma_get_cm_event`, freed by `rdma_ack_cm_event`;
//! a synchronous id's blocking calls wait here for theirs.

use std::ffi::{c_char, CStr};

use libc::c_int;
use verbs::{CmEvent, ConnectError};

use super::id::{id, new_id, Id};
use super::{channel, Channel};
use crate::guard::{debug, guard, log, set_errno};
use crate::sys;

/// An event and the private data its `param.conn` points into.
#[repr(C)]
pub struct Event {
    pub(super) c: sys::rdma_cm_event,
    private: Vec<u8>,
}

impl Event {
    pub(super) fn new(
        id: *mut sys::rdma_cm_id,
        kind: sys::rdma_cm_event_type,
        status: c_int,
    ) -> Box<Event> {
        // SAFETY: pointers, integers and a union of plain structs: zero is valid.
        let mut c: sys::rdma_cm_event = unsafe { std::mem::zeroed() };
        c.id = id;
        c.event = kind;
        c.status = status;
        Box::new(Event {
            c,
            private: Vec::new(),
        })
    }

    fn with_conn(mut self: Box<Self>, private: Vec<u8>, ird: u16, ord: u16) -> Box<Event> {
        self.private = private;
        // SAFETY: the `conn` member is the one connection events use.
        let conn = unsafe { &mut self.c.param.conn };
        conn.private_data_len = self.private.len().min(255) as u8;
        conn.private_data = if self.private.is_empty() {
            std::ptr::null()
        } else {
            self.private.as_ptr() as *const _
        };
        conn.responder_resources = ird.min(255) as u8;
        conn.initiator_depth = ord.min(255) as u8;
        self
    }
}

/// Queues an event the library made (address, route) and signals.
pub(super) fn queue_event(i: &Id, e: Box<Event>) {
    if let Some(ch) = i.channel() {
        ch.lock().queue.push_back(e);
        ch.signal();
    }
}

/// What a queue pair's connection event is to rdma_cm.
fn from_qp_event(idp: *mut sys::rdma_cm_id, ev: CmEvent) -> Box<Event> {
    match ev {
        CmEvent::Established(info) => Event::new(idp, sys::RDMA_CM_EVENT_ESTABLISHED, 0).with_conn(
            info.private_data,
            info.ird,
            info.ord,
        ),
        CmEvent::Rejected { private_data } => Event::new(
            idp,
            sys::RDMA_CM_EVENT_REJECTED,
            -libc::ECONNREFUSED,
        )
        .with_conn(private_data, 0, 0),
        CmEvent::ConnectFailed(why) => {
            if debug() {
                log(&format!("connect failed: {why:?}"));
            }
            // As Linux's iw_cm reports them: a refused TCP connection is
            // a rejection, a timeout unreachable, the rest an error.
            let (kind, status) = match why {
                ConnectError::Unreachable => (sys::RDMA_CM_EVENT_REJECTED, -libc::ECONNREFUSED),
                ConnectError::Timeout => (sys::RDMA_CM_EVENT_UNREACHABLE, -libc::ETIMEDOUT),
                ConnectError::Rejected { private_data } => {
                    return Event::new(idp, sys::RDMA_CM_EVENT_REJECTED, -libc::ECONNREFUSED)
                        .with_conn(private_data, 0, 0)
                }
                _ => (sys::RDMA_CM_EVENT_CONNECT_ERROR, -libc::ECONNRESET),
            };
            Event::new(idp, kind, status)
        }
        CmEvent::Disconnected { .. } => Event::new(idp, sys::RDMA_CM_EVENT_DISCONNECTED, 0),
        _ => Event::new(idp, sys::RDMA_CM_EVENT_CONNECT_ERROR, -libc::EIO),
    }
}

/// Moves what the channel's ids have into its queue.
fn gather(ch: &Channel, chp: *mut sys::rdma_event_channel) {
    let ids: Vec<usize> = ch.lock().ids.clone();
    let mut found = Vec::new();
    for p in ids {
        let idp = p as *mut sys::rdma_cm_id;
        // SAFETY: listed ids are live (destroy unlists them first).
        let Some(i) = (unsafe { id(idp) }) else {
            continue;
        };
        let st = i.lock();
        if let Some(l) = &st.listener {
            while let Some(req) = l.try_request() {
                let child = new_id(chp, i.c.context, false);
                // SAFETY: just made.
                let ci = unsafe { id(child) }.expect("just made");
                ci.set_addrs(st.src, req.peer_addr);
                let (pd, ird, ord) = (
                    req.private_data.clone(),
                    req.ird.unwrap_or(0),
                    req.ord.unwrap_or(0),
                );
                ci.lock().request = Some(req);
                let mut e = Event::new(child, sys::RDMA_CM_EVENT_CONNECT_REQUEST, 0)
                    .with_conn(pd, ird, ord);
                e.c.listen_id = idp;
                found.push(e);
            }
        }
        let watching = st.watching;
        drop(st);
        if watching {
            if let Some(q) = i.qp() {
                while let Some(ev) = q.qp.try_event() {
                    if debug() {
                        log(&format!("queue pair {} event {ev:?}", q.qp.num()));
                    }
                    if let CmEvent::Established(info) = &ev {
                        i.set_addrs(info.local_addr, info.peer_addr);
                    }
                    found.push(from_qp_event(idp, ev));
                }
            }
        }
    }
    if !found.is_empty() {
        ch.lock().queue.extend(found);
    }
}

/// `rdma_get_cm_event`: blocks (unless the descriptor was made
/// non-blocking, then EAGAIN) for the next event.
pub extern "C" fn get_cm_event(
    chp: *mut sys::rdma_event_channel,
    out: *mut *mut sys::rdma_cm_event,
) -> c_int {
    guard("rdma_get_cm_event", -1, || {
        // SAFETY: a channel of ours or NULL.
        let (Some(ch), false) = (unsafe { channel(chp) }, out.is_null()) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        let fd = ch.c.fd;
        // SAFETY: plain system call on our descriptor.
        let nonblocking = unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_NONBLOCK != 0;
        loop {
            ch.ev.ack();
            gather(ch, chp);
            let mut g = ch.lock();
            if let Some(e) = g.queue.pop_front() {
                if !g.queue.is_empty() {
                    ch.signal();
                }
                drop(g);
                if debug() {
                    log(&format!(
                        "cm event {}",
                        event_name(e.c.event).to_string_lossy()
                    ));
                }
                // SAFETY: the caller's out-pointer; freed by rdma_ack_cm_event.
                unsafe { *out = Box::into_raw(e) as *mut sys::rdma_cm_event };
                return 0;
            }
            drop(g);
            if nonblocking {
                set_errno(libc::EAGAIN);
                return -1;
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd.
            unsafe { libc::poll(&mut pfd, 1, -1) };
        }
    })
}

/// `rdma_ack_cm_event`.
pub extern "C" fn ack_cm_event(e: *mut sys::rdma_cm_event) -> c_int {
    guard("rdma_ack_cm_event", -1, || {
        if e.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: an event handed out by get_cm_event, given back once.
        drop(unsafe { Box::from_raw(e as *mut Event) });
        0
    })
}

fn event_name(e: sys::rdma_cm_event_type) -> &'static CStr {
    const NAMES: [&CStr; 16] = [
        c"RDMA_CM_EVENT_ADDR_RESOLVED",
        c"RDMA_CM_EVENT_ADDR_ERROR",
        c"RDMA_CM_EVENT_ROUTE_RESOLVED",
        c"RDMA_CM_EVENT_ROUTE_ERROR",
        c"RDMA_CM_EVENT_CONNECT_REQUEST",
        c"RDMA_CM_EVENT_CONNECT_RESPONSE",
        c"RDMA_CM_EVENT_CONNECT_ERROR",
        c"RDMA_CM_EVENT_UNREACHABLE",
        c"RDMA_CM_EVENT_REJECTED",
        c"RDMA_CM_EVENT_ESTABLISHED",
        c"RDMA_CM_EVENT_DISCONNECTED",
        c"RDMA_CM_EVENT_DEVICE_REMOVAL",
        c"RDMA_CM_EVENT_MULTICAST_JOIN",
        c"RDMA_CM_EVENT_MULTICAST_ERROR",
        c"RDMA_CM_EVENT_ADDR_CHANGE",
        c"RDMA_CM_EVENT_TIMEWAIT_EXIT",
    ];
    NAMES.get(e as usize).copied().unwrap_or(c"UNKNOWN EVENT")
}

/// `rdma_event_str`: rdma-core's names.
pub extern "C" fn event_str(e: sys::rdma_cm_event_type) -> *const c_char {
    event_name(e).as_ptr() as *const c_char
}

/// Takes the next event of `i`'s private channel (blocking).
pub(super) fn next_event(i: &Id) -> Result<*mut sys::rdma_cm_event, c_int> {
    let mut e = std::ptr::null_mut();
    if get_cm_event(i.c.channel, &mut e) != 0 {
        // SAFETY: reading errno set by get_cm_event.
        return Err(unsafe { *libc::__errno_location() });
    }
    Ok(e)
}

/// Blocks until `i`'s connection is established; the refusal otherwise.
pub(super) fn wait_established(i: &Id) -> Result<(), c_int> {
    loop {
        let e = next_event(i)?;
        // SAFETY: an event just handed out, freed below.
        let kind = unsafe { (*e).event };
        ack_cm_event(e);
        match kind {
            sys::RDMA_CM_EVENT_ESTABLISHED => return Ok(()),
            sys::RDMA_CM_EVENT_REJECTED => return Err(libc::ECONNREFUSED),
            sys::RDMA_CM_EVENT_CONNECT_ERROR
            | sys::RDMA_CM_EVENT_UNREACHABLE
            | sys::RDMA_CM_EVENT_DISCONNECTED => return Err(libc::ECONNRESET),
            _ => continue,
        }
    }
}
