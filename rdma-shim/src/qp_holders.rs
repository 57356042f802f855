//! The C structs outside the verbs half that hold a queue pair's pointer
//! (an `rdma_cm_id`'s `qp` field). A program may destroy an id's queue
//! pair with `ibv_destroy_qp` and keep the id; the field must not be left
//! pointing at the freed queue pair. Below both halves, so the verbs half
//! clears the fields without knowing what holds them.

use std::sync::Mutex;

use crate::sys;

/// The address of every listed field (`*mut *mut sys::ibv_qp`).
static HOLDERS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn holders() -> std::sync::MutexGuard<'static, Vec<usize>> {
    HOLDERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Lists `field`, to be cleared when the queue pair it names is destroyed.
///
/// # Safety
/// `field` stays valid for writes until [`remove`] takes it off the list.
pub(crate) unsafe fn add(field: *mut *mut sys::ibv_qp) {
    holders().push(field as usize);
}

/// Takes `field` off the list (its struct is about to be freed).
pub(crate) fn remove(field: *mut *mut sys::ibv_qp) {
    holders().retain(|&x| x != field as usize);
}

/// Clears every listed field naming `qp` (the queue pair is destroyed).
pub(crate) fn forget(qp: *mut sys::ibv_qp) {
    for &f in holders().iter() {
        let field = f as *mut *mut sys::ibv_qp;
        // SAFETY: listed fields are valid until removed (the contract of
        // `add`); C reads them only between calls into the library.
        unsafe {
            if *field == qp {
                *field = std::ptr::null_mut();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clears_only_the_fields_naming_the_destroyed_queue_pair() {
        let (mut a, mut b) = (0u8, 0u8);
        let (qa, qb) = (
            &mut a as *mut u8 as *mut sys::ibv_qp,
            &mut b as *mut u8 as *mut sys::ibv_qp,
        );
        let mut holds_a = Box::new(qa);
        let mut holds_b = Box::new(qb);
        let unlisted = Box::new(qa);
        let (fa, fb): (*mut *mut sys::ibv_qp, *mut *mut sys::ibv_qp) =
            (&mut *holds_a, &mut *holds_b);
        // SAFETY: both boxes outlive their listing (removed below).
        unsafe {
            add(fa);
            add(fb);
        }
        forget(qa);
        remove(fa);
        remove(fb);
        assert!(holds_a.is_null());
        assert_eq!(*holds_b, qb);
        assert_eq!(*unlisted, qa, "a field not listed is not touched");
        // A removed field is no longer cleared.
        *holds_b = qa;
        forget(qa);
        assert_eq!(*holds_b, qa);
    }
}
