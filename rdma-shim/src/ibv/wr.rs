//! `struct ibv_send_wr` / `ibv_recv_wr` lists into the facade's work
//! requests.

use verbs::{AtomicArgs, RecvWr, STag, SendOp, SendWr, Sge};

use crate::sys;

/// Why a work request cannot be taken (`ibv_post_send`'s return value).
pub type Errno = libc::c_int;

fn sgl(wr_sg: *mut sys::ibv_sge, n: libc::c_int, max: usize) -> Result<Vec<Sge>, Errno> {
    if n < 0 || n as usize > max {
        return Err(libc::EINVAL);
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    if wr_sg.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: the caller's list has `num_sge` entries.
    let s = unsafe { std::slice::from_raw_parts(wr_sg, n as usize) };
    Ok(s.iter()
        .map(|e| Sge {
            stag: STag(e.lkey),
            to: e.addr,
            len: e.length,
        })
        .collect())
}

/// Copies the bytes an inline work request names.
fn inline_bytes(s: &[Sge], max: usize) -> Result<Vec<u8>, Errno> {
    let total: usize = s.iter().map(|e| e.len as usize).sum();
    if total > max {
        return Err(libc::EINVAL);
    }
    let mut out = Vec::with_capacity(total);
    for e in s {
        // SAFETY: an inline request's addresses are the program's memory,
        // readable for `length` bytes (no registration needed).
        out.extend_from_slice(unsafe {
            std::slice::from_raw_parts(e.to as *const u8, e.len as usize)
        });
    }
    Ok(out)
}

/// Limits of the queue pair a request is posted to.
#[derive(Debug, Clone, Copy)]
pub struct SendLimits {
    /// Scatter/gather entries per request.
    pub max_sge: usize,
    /// Inline bytes per request.
    pub max_inline: usize,
    /// `sq_sig_all`: every request completes.
    pub sig_all: bool,
}

/// One send work request.
///
/// # Safety
/// `wr` points to a valid `ibv_send_wr` whose lists are valid.
pub unsafe fn send_wr(wr: &sys::ibv_send_wr, lim: SendLimits) -> Result<SendWr, Errno> {
    let flags = wr.send_flags;
    let mut list = sgl(wr.sg_list, wr.num_sge, lim.max_sge)?;
    let solicited = flags & sys::IBV_SEND_SOLICITED != 0;
    // SAFETY: the union member the opcode selects.
    let (rdma, atomic, imm) = unsafe { (wr.wr.rdma, wr.wr.atomic, wr.__bindgen_anon_1.imm_data) };
    let op = match wr.opcode {
        sys::IBV_WR_SEND => SendOp::Send {
            solicited,
            invalidate: None,
        },
        sys::IBV_WR_SEND_WITH_INV => SendOp::Send {
            solicited,
            // SAFETY: the union member SEND_WITH_INV uses.
            invalidate: Some(STag(unsafe { wr.__bindgen_anon_1.invalidate_rkey })),
        },
        sys::IBV_WR_SEND_WITH_IMM => SendOp::SendImm {
            solicited,
            imm: u32::from_be(imm),
        },
        sys::IBV_WR_RDMA_WRITE => SendOp::Write {
            remote_stag: STag(rdma.rkey),
            remote_to: rdma.remote_addr,
        },
        sys::IBV_WR_RDMA_WRITE_WITH_IMM => SendOp::WriteImm {
            remote_stag: STag(rdma.rkey),
            remote_to: rdma.remote_addr,
            imm: u32::from_be(imm),
        },
        sys::IBV_WR_RDMA_READ => SendOp::Read {
            remote_stag: STag(rdma.rkey),
            remote_to: rdma.remote_addr,
        },
        sys::IBV_WR_ATOMIC_FETCH_AND_ADD => SendOp::Atomic {
            remote_stag: STag(atomic.rkey),
            remote_to: atomic.remote_addr,
            args: AtomicArgs::fetch_add(atomic.compare_add),
        },
        sys::IBV_WR_ATOMIC_CMP_AND_SWP => SendOp::Atomic {
            remote_stag: STag(atomic.rkey),
            remote_to: atomic.remote_addr,
            args: AtomicArgs::cmp_swap(atomic.compare_add, atomic.swap),
        },
        sys::IBV_WR_LOCAL_INV => SendOp::LocalInvalidate {
            // SAFETY: the union member LOCAL_INV uses.
            stag: STag(unsafe { wr.__bindgen_anon_1.invalidate_rkey }),
        },
        _ => return Err(libc::EINVAL),
    };
    let inline = if flags & sys::IBV_SEND_INLINE != 0
        && matches!(
            op,
            SendOp::Send { .. }
                | SendOp::SendImm { .. }
                | SendOp::Write { .. }
                | SendOp::WriteImm { .. }
        ) {
        let bytes = inline_bytes(&list, lim.max_inline)?;
        list.clear();
        bytes
    } else {
        Vec::new()
    };
    let fenced = flags & sys::IBV_SEND_FENCE != 0;
    let wr = SendWr::new(wr.wr_id, op, list)
        .with_signaled(lim.sig_all || flags & sys::IBV_SEND_SIGNALED != 0)
        .with_inline(inline);
    Ok(if fenced { wr.fenced() } else { wr })
}

/// One receive work request.
///
/// # Safety
/// `wr` points to a valid `ibv_recv_wr` whose list is valid.
pub unsafe fn recv_wr(wr: &sys::ibv_recv_wr, max_sge: usize) -> Result<RecvWr, Errno> {
    Ok(RecvWr::new(wr.wr_id, sgl(wr.sg_list, wr.num_sge, max_sge)?))
}

/// What a refused post returns, as rdma-core providers do.
pub fn post_errno(e: &verbs::VerbsError) -> Errno {
    match e {
        verbs::VerbsError::Post(rdmap::work_request::PostError::QueueFull { .. }) => libc::ENOMEM,
        verbs::VerbsError::NoSuchQp(_) => libc::EINVAL,
        _ => libc::EINVAL,
    }
}

/// An entry of a C work request list: each names the next, NULL ends it.
pub trait WrList {
    /// The entry after this one, or NULL.
    fn next_wr(&self) -> *mut Self;
}

impl WrList for sys::ibv_send_wr {
    fn next_wr(&self) -> *mut Self {
        self.next
    }
}

impl WrList for sys::ibv_recv_wr {
    fn next_wr(&self) -> *mut Self {
        self.next
    }
}

/// Posts the caller's list `first` as rdma-core's providers do: each entry
/// is converted (`convert`) up to the first it refuses, those before it go
/// to `post` as one batch, and `bad` names the first request not posted.
/// Returns 0 or the errno of the refusal.
///
/// # Safety
/// `first` is NULL or the head of a list whose entries stay valid until
/// `next` is NULL; `bad` is NULL or writable.
pub unsafe fn post_list<W: WrList, R>(
    first: *mut W,
    bad: *mut *mut W,
    mut convert: impl FnMut(&W) -> Result<R, Errno>,
    post: impl FnOnce(Vec<R>) -> Result<(), verbs::PostListError>,
) -> Errno {
    let mut ptrs = Vec::new();
    let mut wrs = Vec::new();
    let mut cur = first;
    let mut refused = None;
    // SAFETY: the caller's list, each entry valid until `next` is NULL.
    while let Some(w) = unsafe { cur.as_ref() } {
        match convert(w) {
            Ok(r) => {
                wrs.push(r);
                ptrs.push(cur);
            }
            Err(e) => {
                refused = Some((cur, e));
                break;
            }
        }
        cur = w.next_wr();
    }
    let set_bad = |w: *mut W| {
        if !bad.is_null() {
            // SAFETY: the caller's out-pointer.
            unsafe { *bad = w };
        }
    };
    if !wrs.is_empty() {
        if let Err(e) = post(wrs) {
            set_bad(ptrs[e.posted]);
            return post_errno(&e.error);
        }
    }
    match refused {
        Some((w, e)) => {
            set_bad(w);
            e
        }
        None => 0,
    }
}
