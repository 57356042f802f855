//! The buffers a memory region can be registered over: any owned,
//! thread-safe byte buffer, used in place.
//!
//! Placement writes straight into the buffer the program handed over
//! (`Vec<u8>`, `bytes::BytesMut`, `Box<[u8]>`, a memory map such as
//! `memmap2::MmapMut`, huge-page memory behind its own type), and
//! [`MemoryRegion::deregister_into`](crate::MemoryRegion::deregister_into)
//! hands the same buffer back.
//!
//! The region's tagged offset is the address of the buffer's first byte
//! when it is registered, so the buffer must keep its bytes where they are
//! while registered (every type above does, as long as nobody grows it).
//! That is a promise about addresses, not about memory safety: placement
//! reaches the bytes only through [`RegionBuffer::bytes_mut`], checked
//! against the length of the slice it returns, so a buffer that broke the
//! promise would misplace nothing outside itself.

use std::any::Any;

/// An owned byte buffer a region can be registered over without a copy.
///
/// Implemented for every `Send + Sync + 'static` type that is
/// `AsRef<[u8]> + AsMut<[u8]>`; a type of one's own (an mmap'd or
/// huge-page area) gets it by implementing those two.
pub trait RegionBuffer: Send + Sync + 'static {
    /// The registered bytes.
    fn bytes(&self) -> &[u8];
    /// The registered bytes, for placement and the program's writes.
    fn bytes_mut(&mut self) -> &mut [u8];
    /// The buffer as `Any`, to hand it back as its own type.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// Whether the buffer is a `T`.
    fn is_a(&self, type_id: core::any::TypeId) -> bool;
}

impl core::fmt::Debug for dyn RegionBuffer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "RegionBuffer({} bytes)", self.bytes().len())
    }
}

impl<T> RegionBuffer for T
where
    T: AsRef<[u8]> + AsMut<[u8]> + Send + Sync + 'static,
{
    #[inline]
    fn bytes(&self) -> &[u8] {
        self.as_ref()
    }

    #[inline]
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.as_mut()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }

    fn is_a(&self, type_id: core::any::TypeId) -> bool {
        type_id == core::any::TypeId::of::<T>()
    }
}
