//! Socket rings in memory mapped straight from the kernel, so that a ring
//! costs resident memory only for the pages its stream has used.
//!
//! A ring from the heap (`vec![0u8; n]`) is resident from the start
//! whenever the allocator reuses freed memory, which it must clear: one
//! idle connection then held megabytes. An anonymous mapping is zero pages
//! until written, however the allocator's state; and
//! [`release_pages`] gives pages of an unused part of a ring back to the
//! kernel, so a ring that went idle shrinks again.

use std::ptr::NonNull;

/// One anonymous private mapping, unmapped on drop.
#[derive(Debug)]
pub(crate) struct RingMemory {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value alone; moving it
// to another thread moves that ownership.
unsafe impl Send for RingMemory {}

impl RingMemory {
    /// `len` bytes of zero pages; `None` if the kernel refuses.
    pub(crate) fn map(len: usize) -> Option<RingMemory> {
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh anonymous private mapping at an address of the
        // kernel's choosing: no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        Some(RingMemory {
            ptr: NonNull::new(p.cast())?,
            len,
        })
    }

    /// The whole mapping as a slice for a socket to own.
    ///
    /// # Safety
    ///
    /// At most one slice per mapping may exist, and it must be dropped
    /// (the socket holding it dropped) before this value is.
    pub(crate) unsafe fn lend(&self) -> &'static mut [u8] {
        // SAFETY: `len` bytes from `ptr` are mapped readable and writable
        // and stay so while `self` lives; the caller keeps the slice
        // unique and shorter-lived than `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for RingMemory {
    fn drop(&mut self) {
        // SAFETY: our own mapping, of this length; no slice of it is left
        // (see `lend`). A failure leaves it mapped, which only leaks.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Gives the whole pages inside `buf` back to the kernel: they read as
/// zero afterwards and cost no resident memory until written. Anything in
/// `buf` may change (to zero, or to what a file mapping holds), which any
/// `u8` may hold; bytes outside it are untouched. Returns the bytes
/// released.
pub(crate) fn release_pages(buf: &mut [u8]) -> usize {
    const PAGE: usize = 4096;
    let start = buf.as_mut_ptr() as usize;
    let first = start.next_multiple_of(PAGE);
    let end = (start + buf.len()) & !(PAGE - 1);
    if end <= first {
        return 0;
    }
    // SAFETY: [first, end) lies inside `buf`, which we borrow mutably, so
    // no one else reads or writes it meanwhile; MADV_DONTNEED changes only
    // the contents of those pages. An error (memory that cannot be
    // released) changes nothing.
    let rc = unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_DONTNEED) };
    if rc == 0 {
        end - first
    } else {
        0
    }
}

/// Resident pages of the `len` bytes at `ptr`, by mincore(2); for tests.
#[cfg(test)]
pub(crate) fn resident_pages(buf: &[u8]) -> usize {
    let mut vec = vec![0u8; buf.len().div_ceil(4096)];
    // SAFETY: `buf` starts on a page (the tests pass whole mappings) and
    // `vec` has one byte per page of it.
    let rc = unsafe {
        libc::mincore(
            buf.as_ptr() as *mut libc::c_void,
            buf.len(),
            vec.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    vec.iter().filter(|&&v| v & 1 != 0).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_ring_is_resident_only_where_written_and_released_again() {
        let mem = RingMemory::map(64 * 4096).unwrap();
        // SAFETY: the only slice of `mem`, dropped first.
        let ring = unsafe { mem.lend() };
        // (mincore counts a page read as zero as present: read nothing
        // before counting.)
        assert_eq!(resident_pages(ring), 0);
        ring[5 * 4096..7 * 4096].fill(0xa5);
        assert_eq!(resident_pages(ring), 2);
        // Only whole pages inside the slice are released.
        assert_eq!(release_pages(&mut ring[5 * 4096 + 1..]), (64 - 6) * 4096);
        assert_eq!(resident_pages(ring), 1);
        assert_eq!(ring[5 * 4096 + 1], 0xa5);
        assert_eq!(ring[6 * 4096], 0);
        assert_eq!(ring[63 * 4096], 0);
        assert_eq!(release_pages(&mut ring[..4095]), 0);
        let _ = ring;
        drop(mem);
    }
}
