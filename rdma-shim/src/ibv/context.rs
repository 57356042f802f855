//! A context as C sees it: a real `struct verbs_context`, so the header's
//! inline verbs and `verbs_get_ctx_op` reach this library. Every verbs
//! object checks the context it is given here; the device opens them.

use std::mem::offset_of;

use crate::sys;

/// A context: `struct verbs_context`, whose last field is the `struct
/// ibv_context` C sees.
#[repr(C)]
pub struct Context {
    pub(super) vctx: sys::verbs_context,
}

/// The context a C `ibv_context` pointer belongs to.
///
/// # Safety
/// `ctx` is null or came from [`open_device`](super::device::open_device)
/// (or `shared_context`).
pub unsafe fn context<'a>(ctx: *mut sys::ibv_context) -> Option<&'a Context> {
    if ctx.is_null() {
        return None;
    }
    let off = offset_of!(sys::verbs_context, context);
    // SAFETY: our contexts are `verbs_context`s with `ctx` at `off`.
    unsafe { ((ctx as *mut u8).sub(off) as *const Context).as_ref() }
}

impl Context {
    /// The C view.
    pub fn as_c(&self) -> *mut sys::ibv_context {
        &self.vctx.context as *const _ as *mut _
    }
}
