//! Protection domains and memory regions registered in place.

use std::ffi::c_void;

use libc::c_int;
use verbs::{Access, MemoryRegion, ProtectionDomain};

use super::context::context;
use super::{from_c, into_c, obj};
use crate::foreign::ForeignBuffer;
use crate::guard::{guard, set_errno};
use crate::stack::stack;
use crate::sys;

/// `struct ibv_pd` and its domain.
#[repr(C)]
pub struct Pd {
    ibv: sys::ibv_pd,
    /// The facade's domain.
    pub pd: ProtectionDomain,
}

/// The domain behind a C pointer.
///
/// # Safety
/// `p` is null or came from [`alloc_pd`] and was not deallocated.
pub unsafe fn pd<'a>(p: *mut sys::ibv_pd) -> Option<&'a Pd> {
    // SAFETY: per the contract.
    unsafe { obj(p) }
}

/// `ibv_alloc_pd`.
pub extern "C" fn alloc_pd(ctx: *mut sys::ibv_context) -> *mut sys::ibv_pd {
    guard("ibv_alloc_pd", std::ptr::null_mut(), || {
        // SAFETY: `context` checks for NULL; otherwise a context of ours.
        let (Some(_), Ok(st)) = (unsafe { context(ctx) }, stack()) else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        let pd = st.device.alloc_pd();
        let ibv = sys::ibv_pd {
            context: ctx,
            handle: pd.id().0,
        };
        into_c(Box::new(Pd { ibv, pd }))
    })
}

/// `ibv_dealloc_pd`.
pub extern "C" fn dealloc_pd(p: *mut sys::ibv_pd) -> c_int {
    guard("ibv_dealloc_pd", libc::EIO, || {
        if p.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a domain of ours, given back once.
        drop(unsafe { from_c::<_, Pd>(p) });
        0
    })
}

/// `struct ibv_mr` and its registration.
#[repr(C)]
pub struct Mr {
    ibv: sys::ibv_mr,
    mr: MemoryRegion,
}

/// `IBV_ACCESS_*` bits this stack knows; the others are refused, except
/// the optional hints (relaxed ordering) a provider may ignore.
const KNOWN_ACCESS: c_int = 0xf;
const OPTIONAL_ACCESS: c_int = sys::IBV_ACCESS_RELAXED_ORDERING as c_int;

fn register(p: *mut sys::ibv_pd, addr: *mut c_void, len: usize, access: c_int) -> *mut sys::ibv_mr {
    // SAFETY: a domain of ours or NULL.
    let Some(pdo) = (unsafe { pd(p) }) else {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    };
    if access & !(KNOWN_ACCESS | OPTIONAL_ACCESS) != 0 {
        set_errno(libc::EOPNOTSUPP);
        return std::ptr::null_mut();
    }
    // Remote write or atomic needs local write, as the verbs spec says.
    let a = access & KNOWN_ACCESS;
    if a & 0xa != 0 && a & 1 == 0 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: `ibv_reg_mr`'s contract: the program keeps the buffer valid
    // until `ibv_dereg_mr`, which drops the region made from it.
    let bytes = unsafe { ForeignBuffer::new(addr as *mut u8, len) };
    match pdo
        .pd
        .register_buffer(bytes, Access::from_bits_truncate(a as u32 & 0xf))
    {
        Ok(mr) => {
            let ibv = sys::ibv_mr {
                context: pdo.ibv.context,
                pd: p,
                addr,
                length: len,
                handle: mr.lkey().0,
                lkey: mr.lkey().0,
                rkey: mr.rkey().0,
            };
            into_c(Box::new(Mr { ibv, mr }))
        }
        Err(_) => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

/// `ibv_reg_mr`.
pub extern "C" fn reg_mr(
    p: *mut sys::ibv_pd,
    addr: *mut c_void,
    len: usize,
    access: c_int,
) -> *mut sys::ibv_mr {
    guard("ibv_reg_mr", std::ptr::null_mut(), || {
        register(p, addr, len, access)
    })
}

/// `ibv_reg_mr_iova2`: the tagged offset of a region is its address here,
/// so only `iova == addr` can be honoured.
pub extern "C" fn reg_mr_iova2(
    p: *mut sys::ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: libc::c_uint,
) -> *mut sys::ibv_mr {
    guard("ibv_reg_mr_iova2", std::ptr::null_mut(), || {
        if iova != addr as u64 {
            set_errno(libc::EOPNOTSUPP);
            return std::ptr::null_mut();
        }
        register(p, addr, len, access as c_int)
    })
}

/// `ibv_dereg_mr`: the STag is invalid at once; the buffer is the
/// program's again once no placement is under way into it.
pub extern "C" fn dereg_mr(m: *mut sys::ibv_mr) -> c_int {
    guard("ibv_dereg_mr", libc::EIO, || {
        if m.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a region of ours, given back once.
        let mr = unsafe { from_c::<_, Mr>(m) };
        mr.mr.deregister();
        0
    })
}
