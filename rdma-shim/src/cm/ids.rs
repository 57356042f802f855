//! `struct rdma_cm_id`: bind, resolve, listen, connect, accept, reject,
//! disconnect, and the queue pair an id owns.

use std::ffi::c_void;
use std::time::{Duration, Instant};

use libc::c_int;
use verbs::{AcceptParams, ConnectParams, QpState};

use super::events::{queue_event, wait_established, Event};
use super::id::{id, new_id, unlist, Id};
use super::{addr, channel, new_channel};
use crate::guard::{guard, set_errno};
use crate::ibv::from_c;
use crate::ibv::qp::{by_num, qp, Qp};
use crate::qp_holders;
use crate::stack::stack;
use crate::sys;

/// The fewest connect requests a listener holds unanswered.
const MIN_BACKLOG: usize = 8;

/// `rdma_create_id`: TCP port space only (iWARP has no UD).
pub extern "C" fn create_id(
    ch: *mut sys::rdma_event_channel,
    out: *mut *mut sys::rdma_cm_id,
    context: *mut c_void,
    ps: sys::rdma_port_space,
) -> c_int {
    guard("rdma_create_id", -1, || {
        if out.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        if ps != sys::RDMA_PS_TCP {
            set_errno(libc::EOPNOTSUPP);
            return -1;
        }
        if stack().is_err() {
            set_errno(libc::ENODEV);
            return -1;
        }
        // SAFETY: looked up, not dereferenced, unless live.
        if !ch.is_null() && unsafe { channel(ch) }.is_none() {
            set_errno(libc::EINVAL);
            return -1;
        }
        let (ch, own) = if ch.is_null() {
            match new_channel() {
                Some(c) => (c, true),
                None => {
                    set_errno(libc::EMFILE);
                    return -1;
                }
            }
        } else {
            (ch, false)
        };
        // SAFETY: the caller's out-pointer.
        unsafe { *out = new_id(ch, context, own) };
        0
    })
}

/// `rdma_destroy_id`.
pub extern "C" fn destroy_id(p: *mut sys::rdma_cm_id) -> c_int {
    guard("rdma_destroy_id", -1, || {
        // SAFETY: None unless a live id of ours.
        let Some(i) = (unsafe { id(p) }) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        if !unlist(p) {
            // Destroyed on another thread since the lookup.
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: `p` is a live id (checked above); only its address is taken.
        qp_holders::remove(unsafe { std::ptr::addr_of_mut!((*p).qp) });
        if let Some(ch) = i.channel() {
            let mut g = ch.lock();
            g.ids.retain(|&x| x != p as usize);
            g.queue.retain(|e| e.c.id != p && e.c.listen_id != p);
        }
        let own = i.is_sync();
        release_owned_cqs(i);
        let chp = i.c.channel;
        // SAFETY: given back once.
        drop(unsafe { from_c::<_, Id>(p) });
        if own {
            super::destroy_event_channel(chp);
        }
        0
    })
}

/// Runs `f` on the id, or fails with EINVAL.
fn with_id(name: &str, p: *mut sys::rdma_cm_id, f: impl FnOnce(&Id) -> Result<(), c_int>) -> c_int {
    guard(name, -1, || {
        // SAFETY: None unless a live id of ours.
        let Some(i) = (unsafe { id(p) }) else {
            crate::guard::log(&format!("{name}: {p:?} is not a live rdma_cm_id"));
            set_errno(libc::EINVAL);
            return -1;
        };
        match f(i) {
            Ok(()) => 0,
            Err(e) => {
                set_errno(e);
                -1
            }
        }
    })
}

/// `rdma_bind_addr`.
pub extern "C" fn bind_addr(p: *mut sys::rdma_cm_id, a: *mut sys::sockaddr) -> c_int {
    with_id("rdma_bind_addr", p, |i| {
        // SAFETY: the caller's address.
        let a = unsafe { addr::read(a) }.ok_or(libc::EAFNOSUPPORT)?;
        i.set_addrs(Some(a), None);
        Ok(())
    })
}

/// `rdma_resolve_addr`: immediate (the transport routes); the event is
/// queued at once.
pub extern "C" fn resolve_addr(
    p: *mut sys::rdma_cm_id,
    src: *mut sys::sockaddr,
    dst: *mut sys::sockaddr,
    _timeout_ms: c_int,
) -> c_int {
    with_id("rdma_resolve_addr", p, |i| {
        // SAFETY: the caller's addresses.
        let d = unsafe { addr::read(dst) }.ok_or(libc::EAFNOSUPPORT)?;
        // SAFETY: as above.
        let s = unsafe { addr::read(src) };
        i.set_addrs(s, Some(d));
        if !i.is_sync() {
            queue_event(i, Event::new(i.as_c(), sys::RDMA_CM_EVENT_ADDR_RESOLVED, 0));
        }
        Ok(())
    })
}

/// `rdma_resolve_route`: immediate.
pub extern "C" fn resolve_route(p: *mut sys::rdma_cm_id, _timeout_ms: c_int) -> c_int {
    with_id("rdma_resolve_route", p, |i| {
        if i.lock().dst.is_none() {
            return Err(libc::EINVAL);
        }
        queue_event(
            i,
            Event::new(i.as_c(), sys::RDMA_CM_EVENT_ROUTE_RESOLVED, 0),
        );
        Ok(())
    })
}

/// `rdma_listen` on the bound port (any port if 0, then written back).
pub extern "C" fn listen(p: *mut sys::rdma_cm_id, backlog: c_int) -> c_int {
    with_id("rdma_listen", p, |i| {
        let st = stack().map_err(|_| libc::ENODEV)?;
        let src = i.lock().src.ok_or(libc::EINVAL)?;
        let mut opts = st.listen_options();
        // The facade refuses a newcomer once `backlog` requests wait
        // unanswered; programs pass small backlogs (perftest passes 1 and
        // opens two connections at once) that a kernel TCP listener
        // would round up, so the facade's default is the least taken.
        if backlog as usize > MIN_BACKLOG {
            opts = opts.with_backlog(backlog as usize);
        } else {
            opts = opts.with_backlog(MIN_BACKLOG);
        }
        let l = st
            .device
            .listen(src.port(), opts)
            .map_err(|_| libc::EADDRINUSE)?;
        if let Some(ch) = i.channel() {
            l.watch_requests(&ch.ev);
        }
        let mut bound = src;
        bound.set_port(l.port());
        i.set_addrs(Some(bound), None);
        i.lock().listener = Some(l);
        Ok(())
    })
}

/// `rdma_create_qp`: a queue pair in `pd` (the id's own domain when
/// NULL), owned by the id.
pub extern "C" fn create_qp(
    p: *mut sys::rdma_cm_id,
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> c_int {
    with_id("rdma_create_qp", p, |i| {
        let c = i.as_c();
        let pd = if pd.is_null() {
            // SAFETY: the id's own field.
            let own = unsafe { (*c).pd };
            if own.is_null() {
                let made = crate::ibv::pd::alloc_pd(i.c.verbs);
                // SAFETY: as above.
                unsafe { (*c).pd = made };
                made
            } else {
                own
            }
        } else {
            pd
        };
        // SAFETY: the caller's attributes (create_qp checks NULL again).
        if let Some(a) = unsafe { attr.as_mut() } {
            // librdmacm takes the type from the id (rdma_create_ep's
            // callers leave it zero).
            if a.qp_type == 0 {
                a.qp_type = i.c.qp_type;
            }
            if a.send_cq.is_null() || a.recv_cq.is_null() {
                let depth = a.cap.max_send_wr.max(a.cap.max_recv_wr).max(1) as c_int;
                make_owned_cqs(i, depth)?;
                // SAFETY: the id's own fields, just set.
                unsafe {
                    if a.send_cq.is_null() {
                        a.send_cq = (*c).send_cq;
                    }
                    if a.recv_cq.is_null() {
                        a.recv_cq = (*c).recv_cq;
                    }
                }
            }
        }
        let q = crate::ibv::qp::create_qp(pd, attr);
        if q.is_null() {
            // SAFETY: reading errno set by create_qp.
            return Err(unsafe { *libc::__errno_location() });
        }
        // SAFETY: the id's own field.
        unsafe { (*c).qp = q };
        Ok(())
    })
}

/// `rdma_destroy_qp`: also the completion queues the id made for it.
pub extern "C" fn destroy_qp(p: *mut sys::rdma_cm_id) {
    with_id("rdma_destroy_qp", p, |i| {
        let q = i.c.qp;
        if !q.is_null() {
            crate::ibv::qp::destroy_qp(q);
        }
        release_owned_cqs(i);
        Ok(())
    });
}

/// Completion queues (each with a completion channel, its context the
/// id) made for a queue pair whose attributes named none, as librdmacm
/// does; `rdma_get_send_comp`/`rdma_get_recv_comp` wait on them.
fn make_owned_cqs(i: &Id, depth: c_int) -> Result<(), c_int> {
    let c = i.as_c();
    let ctx = i.c.verbs;
    // SAFETY: the id's own fields; C reads them between calls only.
    unsafe {
        if (*c).send_cq.is_null() {
            let ch = crate::ibv::cq::create_comp_channel(ctx);
            let cq = crate::ibv::cq::create_cq(ctx, depth, c as *mut c_void, ch, 0);
            if ch.is_null() || cq.is_null() {
                return Err(libc::ENOMEM);
            }
            (*c).send_cq_channel = ch;
            (*c).send_cq = cq;
        }
        if (*c).recv_cq.is_null() {
            let ch = crate::ibv::cq::create_comp_channel(ctx);
            let cq = crate::ibv::cq::create_cq(ctx, depth, c as *mut c_void, ch, 0);
            if ch.is_null() || cq.is_null() {
                return Err(libc::ENOMEM);
            }
            (*c).recv_cq_channel = ch;
            (*c).recv_cq = cq;
        }
    }
    i.lock().owns_cqs = true;
    Ok(())
}

/// Destroys what [`make_owned_cqs`] made, and the domain the id
/// allocated, once its queue pair is gone.
pub(super) fn release_owned_cqs(i: &Id) {
    if !std::mem::take(&mut i.lock().owns_cqs) || !i.c.qp.is_null() {
        return;
    }
    let c = i.as_c();
    // SAFETY: the id's own fields, made by make_owned_cqs.
    unsafe {
        for (cq, ch) in [
            ((*c).send_cq, (*c).send_cq_channel),
            ((*c).recv_cq, (*c).recv_cq_channel),
        ] {
            if !cq.is_null() {
                crate::ibv::cq::destroy_cq(cq);
            }
            if !ch.is_null() {
                crate::ibv::cq::destroy_comp_channel(ch);
            }
        }
        (*c).send_cq = std::ptr::null_mut();
        (*c).recv_cq = std::ptr::null_mut();
        (*c).send_cq_channel = std::ptr::null_mut();
        (*c).recv_cq_channel = std::ptr::null_mut();
    }
}

/// The queue pair an id connects: its own, or the one `param.qp_num`
/// names (a queue pair the program made with `ibv_create_qp`).
fn conn_qp<'a>(i: &'a Id, param: Option<&sys::rdma_conn_param>) -> Result<&'a Qp, c_int> {
    if let Some(q) = i.qp() {
        return Ok(q);
    }
    let num = param.map(|p| p.qp_num).ok_or(libc::EINVAL)?;
    let p = by_num(num).ok_or(libc::EINVAL)?;
    // SAFETY: listed queue pairs are live.
    unsafe { qp(p) }.ok_or(libc::EINVAL)
}

fn private_data(param: Option<&sys::rdma_conn_param>) -> Vec<u8> {
    match param {
        Some(p) if !p.private_data.is_null() && p.private_data_len > 0 => {
            // SAFETY: the caller's private data, `private_data_len` bytes.
            unsafe {
                std::slice::from_raw_parts(p.private_data as *const u8, p.private_data_len as usize)
            }
            .to_vec()
        }
        _ => Vec::new(),
    }
}

fn watch(i: &Id, q: &Qp) {
    if let Some(ch) = i.channel() {
        q.qp.watch_events(&ch.ev);
    }
    i.lock().watching = true;
}

/// `rdma_connect`: IRD/ORD from `responder_resources`/`initiator_depth`.
pub extern "C" fn connect(p: *mut sys::rdma_cm_id, param: *mut sys::rdma_conn_param) -> c_int {
    with_id("rdma_connect", p, |i| {
        let st = stack().map_err(|_| libc::ENODEV)?;
        // SAFETY: the caller's parameters or NULL.
        let param = unsafe { param.as_ref() };
        let q = conn_qp(i, param)?;
        let dst = i.lock().dst.ok_or(libc::EINVAL)?;
        let mut cp = ConnectParams::default()
            .private_data(private_data(param))
            .mpa(st.mpa.clone());
        if let Some(pm) = param {
            cp = cp
                .ird(pm.responder_resources.into())
                .ord(pm.initiator_depth.into());
        }
        watch(i, q);
        q.qp.connect(dst, cp).map_err(|_| libc::EINVAL)?;
        if i.is_sync() {
            wait_established(i)?;
        }
        Ok(())
    })
}

/// `rdma_accept` of the connect request the id was made for.
pub extern "C" fn accept(p: *mut sys::rdma_cm_id, param: *mut sys::rdma_conn_param) -> c_int {
    with_id("rdma_accept", p, |i| {
        // SAFETY: the caller's parameters or NULL.
        let param = unsafe { param.as_ref() };
        let q = conn_qp(i, param)?;
        let req = i.lock().request.take().ok_or(libc::EINVAL)?;
        let mut ap = AcceptParams::default().private_data(private_data(param));
        if let Some(pm) = param {
            ap = ap
                .ird(pm.responder_resources.into())
                .ord(pm.initiator_depth.into());
        }
        watch(i, q);
        req.accept(&q.qp, ap).map_err(|_| libc::ECONNABORTED)?;
        if i.is_sync() {
            wait_established(i)?;
        }
        Ok(())
    })
}

/// `rdma_reject` with private data.
pub extern "C" fn reject(p: *mut sys::rdma_cm_id, data: *const c_void, len: u8) -> c_int {
    with_id("rdma_reject", p, |i| {
        let req = i.lock().request.take().ok_or(libc::EINVAL)?;
        let pd = if data.is_null() {
            Vec::new()
        } else {
            // SAFETY: the caller's `len` bytes.
            unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) }.to_vec()
        };
        req.reject(&pd).map_err(|_| libc::EINVAL)
    })
}

/// `rdma_disconnect`: closes the connection; the queue pair's work
/// requests are flushed. With a disconnect grace set
/// (`IWARP_DISCONNECT_GRACE_MS`), an established connection is first
/// given that long for the peer to close it.
pub extern "C" fn disconnect(p: *mut sys::rdma_cm_id) -> c_int {
    with_id("rdma_disconnect", p, |i| {
        let q = i.qp().ok_or(libc::EINVAL)?;
        let grace = stack().map_or(Duration::ZERO, |s| s.disconnect_grace);
        wait_peer_close(q, grace);
        q.qp.disconnect();
        Ok(())
    })
}

/// Waits up to `grace` while `q` is connected, so that the peer closes
/// first. A peer whose last SEND is still completing when our FIN
/// arrives may flush it instead (Linux siw does; perftest's server sends
/// its last control message just before its client disconnects). The
/// progress thread moves the queue pair out of RTS when the peer closes.
fn wait_peer_close(q: &Qp, grace: Duration) {
    let deadline = Instant::now() + grace;
    while q.qp.state() == QpState::Rts && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `rdma_establish`: nothing to do, the stack moves the queue pair.
pub extern "C" fn establish(p: *mut sys::rdma_cm_id) -> c_int {
    with_id("rdma_establish", p, |_| Ok(()))
}

/// `rdma_init_qp_attr`: the attributes for the state asked for.
pub extern "C" fn init_qp_attr(
    p: *mut sys::rdma_cm_id,
    attr: *mut sys::ibv_qp_attr,
    mask: *mut c_int,
) -> c_int {
    with_id("rdma_init_qp_attr", p, |_| {
        // SAFETY: the caller's structs.
        let (Some(a), Some(m)) = (unsafe { attr.as_mut() }, unsafe { mask.as_mut() }) else {
            return Err(libc::EINVAL);
        };
        *m = sys::IBV_QP_STATE as c_int;
        match a.qp_state {
            sys::IBV_QPS_INIT => {
                a.port_num = 1;
                a.pkey_index = 0;
                a.qp_access_flags = sys::IBV_ACCESS_LOCAL_WRITE
                    | sys::IBV_ACCESS_REMOTE_WRITE
                    | sys::IBV_ACCESS_REMOTE_READ;
                *m |=
                    (sys::IBV_QP_ACCESS_FLAGS | sys::IBV_QP_PORT | sys::IBV_QP_PKEY_INDEX) as c_int;
            }
            sys::IBV_QPS_RTR | sys::IBV_QPS_RTS => {}
            _ => return Err(libc::EINVAL),
        }
        Ok(())
    })
}

/// `rdma_migrate_id`: moves the id (and its waiting events) to another
/// channel.
pub extern "C" fn migrate_id(p: *mut sys::rdma_cm_id, to: *mut sys::rdma_event_channel) -> c_int {
    with_id("rdma_migrate_id", p, |i| {
        // SAFETY: a channel of ours or NULL.
        let new = unsafe { channel(to) }.ok_or(libc::EINVAL)?;
        let mut moved = Vec::new();
        if let Some(old) = i.channel() {
            let mut g = old.lock();
            g.ids.retain(|&x| x != p as usize);
            let (mine, rest): (Vec<_>, Vec<_>) = g.queue.drain(..).partition(|e| e.c.id == p);
            g.queue = rest.into();
            moved = mine;
        }
        // SAFETY: the id's own field.
        unsafe { (*i.as_c()).channel = to };
        {
            let mut g = new.lock();
            g.ids.push(p as usize);
            g.queue.extend(moved);
        }
        let st = i.lock();
        if let Some(l) = &st.listener {
            l.watch_requests(&new.ev);
        }
        if st.watching {
            if let Some(q) = i.qp() {
                q.qp.watch_events(&new.ev);
            }
        }
        new.signal();
        Ok(())
    })
}

fn port_of(p: *mut sys::rdma_cm_id, src: bool) -> u16 {
    guard("rdma_get_port", 0, || {
        // SAFETY: an id of ours or NULL.
        let Some(i) = (unsafe { id(p) }) else {
            return 0;
        };
        let st = i.lock();
        let a = if src { st.src } else { st.dst };
        a.map_or(0, |a| a.port().to_be())
    })
}

/// `rdma_get_src_port` (network byte order).
pub extern "C" fn get_src_port(p: *mut sys::rdma_cm_id) -> u16 {
    port_of(p, true)
}

/// `rdma_get_dst_port` (network byte order).
pub extern "C" fn get_dst_port(p: *mut sys::rdma_cm_id) -> u16 {
    port_of(p, false)
}

/// `rdma_set_option`: the options iWARP ids take are accepted and have
/// no effect here (TOS, address reuse, ack timeout).
pub extern "C" fn set_option(
    p: *mut sys::rdma_cm_id,
    _level: c_int,
    _name: c_int,
    _val: *mut c_void,
    _len: usize,
) -> c_int {
    with_id("rdma_set_option", p, |_| Ok(()))
}
