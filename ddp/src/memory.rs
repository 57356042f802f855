//! The seam between placement and whoever owns registered memory.
//!
//! DDP validates and places; it never owns buffers. The verbs layer implements
//! [`Memory`] over its registration table, tests and fuzzers use
//! [`RegionTable`]. A `&mut` to the memory is held for the duration of one
//! call into the protocol, so a lookup and the write that follows it see the
//! same registration.

use std::collections::HashMap;

pub use crate::region::{Access, InvalidateError, OutOfRange, PdId, RegionInfo, STag};
use crate::rights::check;

/// Work done over bytes as they are gathered out of a region: DDP moves
/// the bytes, the layer below decides what else the pass computes.
pub trait CopyHook {
    /// Copies `src` into `out` (of the same length).
    fn copy(&mut self, out: &mut [u8], src: &[u8]);
    /// Sees bytes the memory has already copied into their place.
    fn copied(&mut self, bytes: &[u8]);
}

/// a hook that only copies.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainCopy;

impl CopyHook for PlainCopy {
    #[inline]
    fn copy(&mut self, out: &mut [u8], src: &[u8]) {
        out.copy_from_slice(src);
    }

    #[inline]
    fn copied(&mut self, _bytes: &[u8]) {}
}

/// Registered memory as placement sees it.
///
/// `offset` is relative to the region's first byte (`to - base`).
/// Implementations must never touch bytes outside a region and must not
/// panic: a range outside the region is reported as [`OutOfRange`].
pub trait Memory {
    /// A valid (registered, not invalidated) region. The whole STag is the
    /// key: a matching index with another consumer key is not valid.
    fn region(&self, stag: STag) -> Option<RegionInfo>;
    /// Copies `data` into the region at `offset`.
    fn write(&mut self, stag: STag, offset: u64, data: &[u8]) -> Result<(), OutOfRange>;
    /// Copies from the region at `offset` into `out`.
    fn read(&self, stag: STag, offset: u64, out: &mut [u8]) -> Result<(), OutOfRange>;
    /// Invalidates `stag` on behalf of a peer in domain `pd` (Send with Invalidate).
    fn invalidate(&mut self, stag: STag, pd: PdId) -> Result<(), InvalidateError>;
    /// Replaces the 8 bytes at `offset` (a `u64` in native byte order, as
    /// libibverbs programs read it) with `f` of their value and returns
    /// the value before: an RFC 7306 atomic. Implementations that share
    /// regions between threads hold the region for the whole update, so
    /// updates of the same bytes never interleave.
    fn update_u64(
        &mut self,
        stag: STag,
        offset: u64,
        f: &mut dyn FnMut(u64) -> u64,
    ) -> Result<u64, OutOfRange> {
        let mut b = [0u8; 8];
        self.read(stag, offset, &mut b)?;
        let old = u64::from_ne_bytes(b);
        self.write(stag, offset, &f(old).to_ne_bytes())?;
        Ok(old)
    }

    /// Copies from the region at `offset` into `out` through `hook`, so
    /// whatever the caller computes over the bytes on their way out (the
    /// FPDU's CRC32c, for MPA) can share the copy's one pass. The default
    /// reads, then shows `hook` the copied bytes; an implementation that
    /// can hand out the region's bytes calls [`CopyHook::copy`] with them.
    fn read_via<H: CopyHook>(
        &self,
        stag: STag,
        offset: u64,
        out: &mut [u8],
        hook: &mut H,
    ) -> Result<(), OutOfRange> {
        self.read(stag, offset, out)?;
        hook.copied(out);
        Ok(())
    }

    /// Checks `data.len()` bytes at tagged offset `to` of `stag` for
    /// access `need` from domain `pd` ([`check`] over
    /// [`region`](Self::region)) and writes them there: on `Err`
    /// nothing was written. Implementations may override it to look the
    /// region up once for both steps; the answer must be the one the
    /// default gives.
    fn place_checked(
        &mut self,
        stag: STag,
        pd: PdId,
        to: u64,
        data: &[u8],
        need: Access,
    ) -> Result<(), crate::error::TaggedError> {
        place_in_two_steps(self, stag, pd, to, data, need)
    }
}

/// [`Memory::place_checked`]'s answer in its two steps, the check over
/// [`region`](Memory::region) and then [`write`](Memory::write): the
/// trait's default, and the fallback of an override for the regions its
/// shortcut does not cover.
pub fn place_in_two_steps<M: Memory + ?Sized>(
    mem: &mut M,
    stag: STag,
    pd: PdId,
    to: u64,
    data: &[u8],
    need: Access,
) -> Result<(), crate::error::TaggedError> {
    let offset = check(mem.region(stag), pd, stag, to, data.len(), need)?;
    mem.write(stag, offset, data)
        .map_err(crate::error::TaggedError::Memory)
}

/// A plain registration table owning its buffers: the reference [`Memory`]
/// for tests, fuzzing and simple single-threaded users.
#[derive(Debug, Default, Clone)]
pub struct RegionTable {
    regions: HashMap<u32, (RegionInfo, Vec<u8>, bool)>,
}

impl RegionTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `bytes` as a region at tagged offset `base`. `invalidatable`
    /// says whether a peer's Send with Invalidate may invalidate it.
    pub fn register(
        &mut self,
        stag: STag,
        pd: PdId,
        base: u64,
        access: Access,
        bytes: Vec<u8>,
        invalidatable: bool,
    ) {
        let info = RegionInfo {
            pd,
            base,
            len: bytes.len() as u64,
            access,
        };
        self.regions.insert(stag.0, (info, bytes, invalidatable));
    }

    /// Removes a region, returning its bytes.
    pub fn deregister(&mut self, stag: STag) -> Option<Vec<u8>> {
        self.regions.remove(&stag.0).map(|(_, b, _)| b)
    }

    /// The bytes of a region, valid or not.
    pub fn bytes(&self, stag: STag) -> Option<&[u8]> {
        self.regions.get(&stag.0).map(|(_, b, _)| b.as_slice())
    }

    /// The region's bytes for writing, for tests and tools that fill regions in place.
    pub fn bytes_mut(&mut self, stag: STag) -> Option<&mut [u8]> {
        self.regions
            .get_mut(&stag.0)
            .map(|(_, b, _)| b.as_mut_slice())
    }

    fn range(
        &self,
        stag: STag,
        offset: u64,
        len: usize,
    ) -> Result<core::ops::Range<usize>, OutOfRange> {
        let err = OutOfRange {
            stag: stag.0,
            offset,
            len,
        };
        let (_, bytes, _) = self.regions.get(&stag.0).ok_or(err)?;
        let start = usize::try_from(offset).map_err(|_| err)?;
        let end = start.checked_add(len).ok_or(err)?;
        if end > bytes.len() {
            return Err(err);
        }
        Ok(start..end)
    }
}

impl Memory for RegionTable {
    fn region(&self, stag: STag) -> Option<RegionInfo> {
        self.regions.get(&stag.0).map(|(info, _, _)| *info)
    }

    fn write(&mut self, stag: STag, offset: u64, data: &[u8]) -> Result<(), OutOfRange> {
        let range = self.range(stag, offset, data.len())?;
        let (_, bytes, _) = self.regions.get_mut(&stag.0).ok_or(OutOfRange {
            stag: stag.0,
            offset,
            len: data.len(),
        })?;
        bytes[range].copy_from_slice(data);
        Ok(())
    }

    fn read(&self, stag: STag, offset: u64, out: &mut [u8]) -> Result<(), OutOfRange> {
        let range = self.range(stag, offset, out.len())?;
        let (_, bytes, _) = &self.regions[&stag.0];
        out.copy_from_slice(&bytes[range]);
        Ok(())
    }

    fn invalidate(&mut self, stag: STag, pd: PdId) -> Result<(), InvalidateError> {
        let (info, _, invalidatable) = self.regions.get(&stag.0).ok_or(InvalidateError::Invalid)?;
        if info.pd != pd {
            return Err(InvalidateError::WrongPd);
        }
        if !*invalidatable {
            return Err(InvalidateError::NotAllowed);
        }
        self.regions.remove(&stag.0);
        Ok(())
    }

    fn read_via<H: CopyHook>(
        &self,
        stag: STag,
        offset: u64,
        out: &mut [u8],
        hook: &mut H,
    ) -> Result<(), OutOfRange> {
        let range = self.range(stag, offset, out.len())?;
        let (_, bytes, _) = &self.regions[&stag.0];
        hook.copy(out, &bytes[range]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> RegionTable {
        let mut t = RegionTable::new();
        t.register(
            STag::new(1, 0),
            PdId(1),
            0x1000,
            Access::ALL,
            vec![0; 16],
            true,
        );
        t
    }

    #[test]
    fn stag_fields() {
        let s = STag::new(0x12_3456, 0x78);
        assert_eq!(s.0, 0x1234_5678);
        assert_eq!(s.index(), 0x12_3456);
        assert_eq!(s.key(), 0x78);
    }

    #[test]
    fn write_read_inside() {
        let mut t = table();
        let s = STag::new(1, 0);
        t.write(s, 4, &[1, 2, 3]).unwrap();
        let mut out = [0u8; 5];
        t.read(s, 3, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 0]);
    }

    #[test]
    fn outside_is_refused() {
        let mut t = table();
        let s = STag::new(1, 0);
        assert!(t.write(s, 14, &[0; 3]).is_err());
        assert!(t.write(s, u64::MAX, &[0; 1]).is_err());
        assert!(t.write(STag::new(2, 0), 0, &[0; 1]).is_err());
        assert!(t.read(s, 17, &mut []).is_err());
        assert_eq!(t.bytes(s).unwrap(), &[0u8; 16][..]);
    }

    /// A table that keeps the trait's default `read_via` (read, then show).
    struct DefaultReadVia(RegionTable);

    impl Memory for DefaultReadVia {
        fn region(&self, stag: STag) -> Option<RegionInfo> {
            self.0.region(stag)
        }
        fn write(&mut self, stag: STag, offset: u64, data: &[u8]) -> Result<(), OutOfRange> {
            self.0.write(stag, offset, data)
        }
        fn read(&self, stag: STag, offset: u64, out: &mut [u8]) -> Result<(), OutOfRange> {
            self.0.read(stag, offset, out)
        }
        fn invalidate(&mut self, stag: STag, pd: PdId) -> Result<(), InvalidateError> {
            self.0.invalidate(stag, pd)
        }
    }

    /// Records every byte it is shown, whichever way it is shown them.
    #[derive(Default)]
    struct Witness {
        seen: Vec<u8>,
        copies: usize,
    }

    impl CopyHook for Witness {
        fn copy(&mut self, out: &mut [u8], src: &[u8]) {
            out.copy_from_slice(src);
            self.seen.extend_from_slice(src);
            self.copies += 1;
        }
        fn copied(&mut self, bytes: &[u8]) {
            self.seen.extend_from_slice(bytes);
        }
    }

    #[test]
    fn read_via_copies_and_shows_the_hook_each_byte_once() {
        let s = STag::new(1, 0);
        let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 1) as u8).collect();
        let mut t = RegionTable::new();
        t.register(s, PdId(1), 0, Access::ALL, bytes.clone(), false);
        let default = DefaultReadVia(t.clone());
        for (offset, len) in [(0, 0), (3, 1), (5, 255), (1, 1460), (0, 3000)] {
            let at = offset as usize;
            let want = &bytes[at..at + len];
            let mut w = Witness::default();
            let mut out = vec![0u8; len];
            assert_eq!(t.read_via(s, offset, &mut out, &mut w), Ok(()));
            assert_eq!((&out[..], &w.seen[..], w.copies), (want, want, 1));
            let mut w = Witness::default();
            let mut out = vec![0u8; len];
            assert_eq!(default.read_via(s, offset, &mut out, &mut w), Ok(()));
            assert_eq!((&out[..], &w.seen[..], w.copies), (want, want, 0));
        }
        let mut out = [0u8; 2];
        let mut w = Witness::default();
        assert!(t.read_via(s, 2999, &mut out, &mut w).is_err());
        assert!(default.read_via(s, 2999, &mut out, &mut w).is_err());
        assert_eq!((out, w.seen.len()), ([0, 0], 0));
    }

    #[test]
    fn invalidate_checks_pd() {
        let mut t = table();
        let s = STag::new(1, 0);
        assert_eq!(t.invalidate(s, PdId(2)), Err(InvalidateError::WrongPd));
        assert_eq!(t.invalidate(s, PdId(1)), Ok(()));
        assert!(t.region(s).is_none());
        assert_eq!(t.invalidate(s, PdId(1)), Err(InvalidateError::Invalid));
    }
}
