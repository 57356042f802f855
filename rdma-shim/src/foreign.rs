//! Registering the program's own memory.
//!
//! `ibv_reg_mr` registers a buffer the program owns, and the stack must
//! place RDMA Writes into it and send from it without copies, because the
//! program reads and writes that buffer directly. The facade registers any
//! buffer in place (`ProtectionDomain::register_buffer`); [`ForeignBuffer`]
//! is the program's bytes seen as such a buffer. Dropping it leaves the
//! memory alone: it stays the program's.
//!
//! The facade and the program then both access the bytes, as a NIC and a
//! program do; the facade only touches them under the region's lock, and
//! the program's accesses are outside Rust's view.

/// The program's `len` bytes at `ptr`, registered in place.
#[derive(Debug)]
pub struct ForeignBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the bytes belong to the program, which keeps them valid until
// `ibv_dereg_mr` drops the region holding this buffer (`ibv_reg_mr`'s
// contract); any thread may then reach them, as any thread of the program
// may, and the facade does so only under the region's lock.
unsafe impl Send for ForeignBuffer {}
// SAFETY: as above; shared access only reads through `as_ref`.
unsafe impl Sync for ForeignBuffer {}

impl ForeignBuffer {
    /// The program's `len` bytes at `ptr` (none when `ptr` is NULL or
    /// `len` is 0).
    ///
    /// # Safety
    /// `ptr..ptr+len` must be memory the program keeps valid until the
    /// buffer is dropped (`ibv_dereg_mr`'s contract).
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        let len = if ptr.is_null() { 0 } else { len };
        ForeignBuffer { ptr, len }
    }
}

impl AsRef<[u8]> for ForeignBuffer {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: valid memory of `len` bytes while this buffer lives (see
        // `new`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl AsMut<[u8]> for ForeignBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as in `as_ref`; `&mut self` makes this the one Rust
        // borrow of the bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_buffer_is_seen_in_place_and_not_freed() {
        let mut mine = vec![7u8; 64];
        let ptr = mine.as_mut_ptr();
        {
            // SAFETY: `mine` outlives the buffer.
            let mut foreign = unsafe { ForeignBuffer::new(ptr, mine.len()) };
            assert_eq!(foreign.as_ref().as_ptr(), ptr as *const u8);
            foreign.as_mut()[3] = 9;
        }
        // Still ours, with the write seen in place.
        assert_eq!(mine[3], 9);
        mine[0] = 1;
        // SAFETY: a NULL pointer is no memory at all.
        let none = unsafe { ForeignBuffer::new(std::ptr::null_mut(), 16) };
        assert!(none.as_ref().is_empty());
    }
}
