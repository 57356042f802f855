//! Byte-order-aware field reads for headers whose order the file declares.

/// The byte order a capture section was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first (what x86 hosts write).
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    pub(crate) fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    pub(crate) fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    pub(crate) fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }
}

/// `N` bytes of `b` at `at`, or `None` if `b` is too short.
pub(crate) fn array_at<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// A field reader over one body slice in one byte order; `None` past the end.
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) endian: Endian,
}

impl Fields<'_> {
    pub(crate) fn u16(&self, at: usize) -> Option<u16> {
        array_at(self.bytes, at).map(|b| self.endian.u16(b))
    }

    pub(crate) fn u32(&self, at: usize) -> Option<u32> {
        array_at(self.bytes, at).map(|b| self.endian.u32(b))
    }

    pub(crate) fn u64(&self, at: usize) -> Option<u64> {
        array_at(self.bytes, at).map(|b| self.endian.u64(b))
    }
}
