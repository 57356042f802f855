//! The libibverbs half: the device list, contexts and the verbs objects.
//! Each C object (`struct ibv_pd`, `ibv_cq`...) is the first field of a
//! `#[repr(C)]` Rust struct holding the facade's handle, so the pointer C
//! holds converts back to the Rust object.

pub mod context;
pub mod cq;
pub mod device;
pub mod limits;
pub mod pd;
pub mod qp;
pub mod srq;
pub mod wr;

/// The Rust object behind a C pointer whose struct is its first field.
///
/// # Safety
/// `p` is null or a pointer this library handed out for a `T` whose first
/// field is the C struct `C`, and not yet destroyed.
pub(crate) unsafe fn obj<'a, C, T>(p: *mut C) -> Option<&'a T> {
    // SAFETY: per the contract, a live `T` starts at `p`.
    unsafe { (p as *const T).as_ref() }
}

/// Gives a boxed object to C as a pointer to its first field.
pub(crate) fn into_c<T, C>(b: Box<T>) -> *mut C {
    Box::into_raw(b) as *mut C
}

/// Takes back an object handed out by [`into_c`].
///
/// # Safety
/// `p` came from `into_c::<T, C>` and is given back once.
pub(crate) unsafe fn from_c<C, T>(p: *mut C) -> Box<T> {
    // SAFETY: per the contract, the box was leaked by `into_c`.
    unsafe { Box::from_raw(p as *mut T) }
}
