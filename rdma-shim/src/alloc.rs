//! Registering the user's own memory.
//!
//! `ibv_reg_mr` registers a buffer the program owns, and the stack must
//! place RDMA Writes into it and send from it without copies, because the
//! program reads and writes that buffer directly. The verbs facade owns a
//! region's bytes as a boxed slice; the shim hands it a `Vec` built over
//! the user's pointer ([`adopt`]). When the facade drops that region, the
//! allocator below sees the adopted pointer and does not free it: the
//! buffer belongs to the program.
//!
//! The facade and the program then both access the bytes, as a NIC and a
//! program do; the facade only touches them under its placement lock, and
//! the program's accesses are outside Rust's view.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Adopted buffers alive at once, at most (registrations beyond it fail
/// with ENOMEM).
pub const MAX_ADOPTED: usize = 4096;

static ADOPTED: [AtomicUsize; MAX_ADOPTED] = [const { AtomicUsize::new(0) }; MAX_ADOPTED];
/// One past the highest slot ever used: deallocation scans only this far.
static HIGH: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, never freeing an adopted buffer.
pub struct ShimAlloc;

// SAFETY: every call is forwarded to `System`, except deallocations of
// adopted pointers, which are dropped (the memory stays the program's).
unsafe impl GlobalAlloc for ShimAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if HIGH.load(Ordering::Acquire) > 0 && release(ptr as usize) {
            return;
        }
        // SAFETY: not adopted, so it came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // An adopted buffer is a boxed slice of its exact length: never
        // grown or shrunk, so never seen here.
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Forgets one adoption of `addr`; true if there was one.
fn release(addr: usize) -> bool {
    let high = HIGH.load(Ordering::Acquire).min(MAX_ADOPTED);
    // A plain load first: every deallocation passes here while regions
    // are registered, and a compare-exchange would claim each slot's
    // cache line.
    ADOPTED[..high].iter().any(|slot| {
        slot.load(Ordering::Acquire) == addr
            && slot
                .compare_exchange(addr, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    })
}

/// Notes `addr` as adopted; false when the table is full.
fn note(addr: usize) -> bool {
    for (i, slot) in ADOPTED.iter().enumerate() {
        if slot
            .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            HIGH.fetch_max(i + 1, Ordering::AcqRel);
            return true;
        }
    }
    false
}

/// A `Vec` over the program's `len` bytes at `ptr`, to register in
/// place; `None` when too many buffers are adopted already. Dropping it
/// (or the boxed slice it becomes) leaves the memory alone.
///
/// # Safety
/// `ptr..ptr+len` must be memory the program keeps valid until the region
/// made from it is dropped (`ibv_dereg_mr`'s contract).
pub unsafe fn adopt(ptr: *mut u8, len: usize) -> Option<Vec<u8>> {
    if len == 0 || ptr.is_null() {
        return Some(Vec::new());
    }
    if !note(ptr as usize) {
        return None;
    }
    // SAFETY: the caller keeps the bytes valid; capacity == length, so the
    // facade's `into_boxed_slice` never reallocates, and the allocator
    // above skips the final deallocation.
    Some(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adopted_buffer_survives_its_vec_and_is_seen_in_place() {
        let mut mine = vec![7u8; 64];
        let ptr = mine.as_mut_ptr();
        // SAFETY: `mine` outlives the adopted copy.
        let adopted = unsafe { adopt(ptr, mine.len()) }.unwrap();
        assert_eq!(adopted.as_ptr(), ptr as *const u8);
        let mut boxed = adopted.into_boxed_slice();
        boxed[3] = 9;
        drop(boxed);
        // Still ours, with the write seen in place.
        assert_eq!(mine[3], 9);
        mine[0] = 1;
        assert!(!release(ptr as usize), "the adoption was used up");
    }
}
