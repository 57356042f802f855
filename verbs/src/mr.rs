//! Memory regions, and registration into the device's table (the table
//! itself, which placement writes through, belongs to the engine and is
//! re-exported here).
//!
//! The memory model: a region is registered over a buffer the program hands
//! over ([`Registry::register_buffer`]: a `Vec<u8>`, a `BytesMut`, any
//! [`RegionBuffer`]), used in place and handed back by
//! [`MemoryRegion::deregister_into`]. While registered it sits behind a
//! per-region lock. A peer's RDMA Write lands while the program runs, so the
//! program never holds a plain `&mut [u8]` that a remote write could race
//! with; it reads and writes through copy accessors ([`MemoryRegion::read`],
//! [`MemoryRegion::write`]) and closures over a copy
//! ([`MemoryRegion::with_bytes`], [`MemoryRegion::with_bytes_mut`]).
//! Placement takes the same lock per DDP segment, so every observation is
//! of whole segments.
//!
//! No program code runs under a region's lock: the program holds it for
//! one copy, never for a closure. Placement runs under the device's engine
//! lock and waits for the region's lock, so a closure holding it could
//! stall every queue pair of the device, and one calling into the device
//! would deadlock it; a copy cannot do either (docs/memory-regions.md).
//!
//! The tagged offset of a region's first byte is the address of its buffer,
//! as with libibverbs, so peers such as rping see ordinary virtual addresses.
//! Deregistration invalidates the STag at once; the bytes live on only while
//! an in-flight placement still holds them. Dropping the last handle of a
//! region deregisters it (as [`MemoryRegion::deregister`] does), so a
//! forgotten region never stays reachable by the peer.

use std::sync::Arc;

use ddp::memory::{Access, PdId, STag};
use ddp::untagged::Sge;

use crate::engine::Region;
use crate::mr_buffer::RegionBuffer;
use crate::types::VerbsError;

pub use crate::engine::{Registry, RegistryView, INDEX_BATCH, MAX_REGIONS};

/// A registered memory region: its STag serves as both lkey and rkey.
/// Cloning gives another handle to the same registration, which ends when
/// the last handle drops or at [`MemoryRegion::deregister`].
#[derive(Debug, Clone)]
pub struct MemoryRegion {
    reg: Arc<Registration>,
}

/// One registration, shared by a region's handles; removed from the table
/// when the last handle lets go.
#[derive(Debug)]
struct Registration {
    region: Arc<Region>,
    registry: Arc<Registry>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // A no-op after `deregister`: the slot no longer holds this region.
        self.registry.remove(&self.region);
    }
}

impl MemoryRegion {
    /// The local key, used in scatter/gather entries of local work requests.
    pub fn lkey(&self) -> STag {
        self.reg.region.stag()
    }

    /// The remote key a peer names in RDMA Write and Read.
    pub fn rkey(&self) -> STag {
        self.reg.region.stag()
    }

    /// Tagged offset (virtual address) of the first byte.
    pub fn addr(&self) -> u64 {
        self.reg.region.info.base
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.reg.region.info.len as usize
    }

    /// Whether the region has no bytes.
    pub fn is_empty(&self) -> bool {
        self.reg.region.info.len == 0
    }

    /// The rights it was registered with.
    pub fn access(&self) -> Access {
        self.reg.region.info.access
    }

    /// The protection domain it belongs to.
    pub fn pd(&self) -> PdId {
        self.reg.region.info.pd
    }

    /// Whether the STag is still valid (not deregistered or invalidated).
    pub fn is_valid(&self) -> bool {
        self.reg.region.is_valid()
    }

    /// Makes the region valid again under a fresh STag, as
    /// `ibv_rereg_mr` does with no change of translation, domain or
    /// access: after a local invalidate or a peer's Send with Invalidate,
    /// or to revoke the STag peers hold. The old STag is refused from
    /// then on; [`lkey`](Self::lkey) and [`rkey`](Self::rkey) give the
    /// new one (to every handle). The bytes stay as they are.
    ///
    /// [`VerbsError::Deregistered`] once the region was deregistered.
    pub fn reregister(&self) -> Result<STag, VerbsError> {
        self.reg
            .registry
            .reregister(&self.reg.region)
            .ok_or(VerbsError::Deregistered)
    }

    /// A scatter/gather entry covering `len` bytes from `offset`.
    pub fn sge(&self, offset: usize, len: usize) -> Result<Sge, VerbsError> {
        let range = self
            .reg
            .region
            .range(offset as u64, len)
            .ok_or(VerbsError::OutOfBounds {
                offset,
                len,
                region_len: self.len(),
            })?;
        Ok(Sge {
            stag: self.reg.region.stag(),
            to: self.addr() + range.start as u64,
            len: u32::try_from(len).map_err(|_| VerbsError::TooLong(len))?,
        })
    }

    /// A scatter/gather entry covering the whole region.
    pub fn sge_all(&self) -> Sge {
        Sge {
            stag: self.reg.region.stag(),
            to: self.addr(),
            len: self.len().min(u32::MAX as usize) as u32,
        }
    }

    /// Copies `out.len()` bytes from `offset` into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), VerbsError> {
        let range = self.checked(offset, out.len())?;
        let bytes = self
            .reg
            .region
            .bytes
            .read()
            .unwrap_or_else(|e| e.into_inner());
        out.copy_from_slice(
            bytes
                .bytes()
                .get(range)
                .ok_or(self.out_of(offset, out.len()))?,
        );
        Ok(())
    }

    /// Copies `data` into the region at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), VerbsError> {
        let range = self.checked(offset, data.len())?;
        let mut bytes = self
            .reg
            .region
            .bytes
            .write()
            .unwrap_or_else(|e| e.into_inner());
        bytes
            .bytes_mut()
            .get_mut(range)
            .ok_or(self.out_of(offset, data.len()))?
            .copy_from_slice(data);
        Ok(())
    }

    /// Runs `f` over a copy of the bytes, taken whole between placements.
    ///
    /// `f` runs without the region's lock: it may take as long as it
    /// likes and call into the device (post, poll, wait) while placement
    /// goes on. It costs a copy of the region; to read a few bytes, use
    /// [`read`](Self::read), and to own the bytes without a copy, take the
    /// buffer back with [`deregister_into`](Self::deregister_into).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&self.to_vec())
    }

    /// Runs `f` over a copy of the bytes and writes back, in one step
    /// between placements, the bytes `f` changed. What placement wrote
    /// meanwhile stays, except where `f` changed the same bytes (a race
    /// the program must avoid, as with any buffer a peer writes into).
    ///
    /// Like [`with_bytes`](Self::with_bytes), `f` runs without the
    /// region's lock. It costs two copies of the region and a comparison;
    /// to write a few bytes, use [`write`](Self::write).
    pub fn with_bytes_mut<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        let before = self.to_vec();
        let mut after = before.clone();
        let out = f(&mut after);
        let mut bytes = self
            .reg
            .region
            .bytes
            .write()
            .unwrap_or_else(|e| e.into_inner());
        for run in changed_runs(&before, &after) {
            if let Some(to) = bytes.bytes_mut().get_mut(run.clone()) {
                to.copy_from_slice(&after[run]);
            }
        }
        out
    }

    /// A copy of the whole region.
    pub fn to_vec(&self) -> Vec<u8> {
        self.reg
            .region
            .bytes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .bytes()
            .to_vec()
    }

    /// Invalidates the STag and removes the registration at once, for
    /// every handle of it. Work requests that still name it complete with
    /// a protection error. (Dropping the last handle does the same.)
    pub fn deregister(self) {
        self.reg.registry.remove(&self.reg.region);
    }

    /// Deregisters the region and hands back the buffer it was registered
    /// over, as the `B` it was given as: the same allocation, with what
    /// placement wrote into it.
    ///
    /// Only the last handle can take the buffer (`Err(self)` while other
    /// handles exist, or if the buffer is not a `B`); the region is then
    /// deregistered as [`deregister`](Self::deregister) does, and a
    /// placement still under way finishes before the buffer leaves.
    pub fn deregister_into<B: RegionBuffer>(self) -> Result<B, MemoryRegion> {
        let region = &self.reg.region;
        let is_b = region
            .bytes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_a(core::any::TypeId::of::<B>());
        if !is_b || Arc::strong_count(&self.reg) != 1 {
            return Err(self);
        }
        self.reg.registry.remove(region);
        // No view reaches an invalid region's bytes, so none will miss them.
        let buffer = core::mem::replace(
            &mut *region.bytes.write().unwrap_or_else(|e| e.into_inner()),
            Box::new(Vec::new()),
        );
        match buffer.into_any().downcast::<B>() {
            Ok(b) => Ok(*b),
            // Checked above; nothing to give back otherwise.
            Err(_) => Err(self),
        }
    }

    fn out_of(&self, offset: usize, len: usize) -> VerbsError {
        VerbsError::OutOfBounds {
            offset,
            len,
            region_len: self.len(),
        }
    }

    fn checked(&self, offset: usize, len: usize) -> Result<core::ops::Range<usize>, VerbsError> {
        self.reg
            .region
            .range(offset as u64, len)
            .ok_or(VerbsError::OutOfBounds {
                offset,
                len,
                region_len: self.len(),
            })
    }
}

/// The ranges where `after` differs from `before` (same length), each as
/// long as it runs.
fn changed_runs<'a>(
    before: &'a [u8],
    after: &'a [u8],
) -> impl Iterator<Item = core::ops::Range<usize>> + 'a {
    let mut i = 0;
    core::iter::from_fn(move || {
        let start = i + before[i..]
            .iter()
            .zip(&after[i..])
            .position(|(a, b)| a != b)?;
        let len = before[start..]
            .iter()
            .zip(&after[start..])
            .position(|(a, b)| a == b)
            .unwrap_or(before.len() - start);
        i = start + len;
        Some(start..i)
    })
}

/// Registration hands out [`MemoryRegion`] handles. It is written here,
/// beside the handle, so that the table itself (owned by the engine) knows
/// nothing of handles.
impl Registry {
    /// Registers a zero-filled region of `len` bytes.
    pub fn register(
        self: &Arc<Self>,
        pd: PdId,
        len: usize,
        access: Access,
    ) -> Result<MemoryRegion, VerbsError> {
        self.register_vec(pd, vec![0; len], access)
    }

    /// Registers `bytes` in place (no copy, no reallocation), taking
    /// ownership of them.
    pub fn register_vec(
        self: &Arc<Self>,
        pd: PdId,
        bytes: Vec<u8>,
        access: Access,
    ) -> Result<MemoryRegion, VerbsError> {
        self.register_buffer(pd, bytes, access)
    }

    /// Registers `buffer` in place, taking ownership of it until
    /// [`MemoryRegion::deregister_into`] hands it back.
    pub fn register_buffer<B: RegionBuffer>(
        self: &Arc<Self>,
        pd: PdId,
        buffer: B,
        access: Access,
    ) -> Result<MemoryRegion, VerbsError> {
        let region = self.insert(pd, Box::new(buffer), access)?;
        Ok(MemoryRegion {
            reg: Arc::new(Registration {
                region,
                registry: self.clone(),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RegionCache;
    use ddp::memory::{InvalidateError, Memory};

    const PD: PdId = PdId(1);

    #[test]
    fn stags_are_never_zero_and_a_reused_slot_refuses_its_old_stag() {
        let reg = Registry::with_seed(7);
        let a = reg.register(PD, 8, Access::ALL).unwrap();
        assert_ne!(a.rkey().0, 0);
        assert_ne!(a.rkey().index(), 0);
        let old = a.rkey();
        a.deregister();
        // Fill every free slot: one of them is the old one, with a new key.
        let all: Vec<_> = (0..INDEX_BATCH)
            .map(|_| reg.register(PD, 8, Access::ALL).unwrap())
            .collect();
        let reused = all
            .iter()
            .find(|m| m.rkey().index() == old.index())
            .expect("the slot is reused");
        assert_ne!(reused.rkey(), old, "a reused slot gets a new key");
        assert!(reg.view().region(old).is_none(), "stale STag refused");
        assert!(reg.view().region(reused.rkey()).is_some());
        assert!(all.iter().all(|m| m.rkey().0 != 0 && m.rkey().index() != 0));
    }

    /// The keys one slot hands out over `n` reuses, every other slot taken.
    fn keys_of_one_slot(seed: u64, n: usize) -> Vec<u8> {
        let reg = Registry::with_seed(seed);
        let mut held: Vec<_> = (0..INDEX_BATCH)
            .map(|_| reg.register(PD, 8, Access::ALL).unwrap())
            .collect();
        let mut mr = held.pop().unwrap();
        let index = mr.rkey().index();
        let mut keys = Vec::new();
        for _ in 0..n {
            assert_eq!(mr.rkey().index(), index, "the one free slot");
            keys.push(mr.rkey().key());
            let stale = mr.rkey();
            mr.deregister();
            mr = reg.register(PD, 8, Access::ALL).unwrap();
            assert!(reg.view().region(stale).is_none(), "stale STag refused");
        }
        keys
    }

    #[test]
    fn a_reused_slot_never_repeats_its_last_key() {
        let keys = keys_of_one_slot(3, 2000);
        assert!(keys.windows(2).all(|w| w[0] != w[1]), "{keys:?}");
    }

    #[test]
    fn each_reuse_draws_a_fresh_key_that_past_keys_do_not_predict() {
        // Two consecutive keys of a slot must not give away the next: the
        // steps between keys vary, and every key turns up (no short cycle).
        let keys = keys_of_one_slot(3, 2000);
        let steps: std::collections::HashSet<u8> =
            keys.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
        assert!(steps.len() > 64, "{} distinct steps", steps.len());
        let seen: std::collections::HashSet<u8> = keys.iter().copied().collect();
        assert_eq!(seen.len(), 256, "every key is drawn sooner or later");
        // A key comes back after a random number of reuses, not a fixed one.
        let gaps: std::collections::HashSet<usize> = keys
            .iter()
            .enumerate()
            .filter_map(|(i, k)| keys[i + 1..].iter().position(|x| x == k))
            .collect();
        assert!(gaps.len() > 16, "{gaps:?}");
    }

    #[test]
    fn a_stale_handle_never_reaches_the_region_that_reuses_its_slot() {
        let reg = Registry::with_seed(9);
        let held: Vec<_> = (0..INDEX_BATCH - 1)
            .map(|_| reg.register(PD, 8, Access::ALL).unwrap())
            .collect();
        let mr = reg.register(PD, 8, Access::ALL).unwrap();
        let stale_handle = mr.clone();
        let stale = mr.rkey();
        mr.deregister();
        // Reuse the slot until a region there draws the stale key again.
        let mut newer = reg.register(PD, 8, Access::ALL).unwrap();
        for _ in 0..100_000 {
            if newer.rkey() == stale {
                break;
            }
            newer.deregister();
            newer = reg.register(PD, 8, Access::ALL).unwrap();
        }
        assert_eq!(newer.rkey(), stale, "the key comes round again");
        newer.write(0, &[7]).unwrap();
        // The old handle's bytes are its own region's, and dropping it
        // leaves the newer registration alone.
        assert!(!stale_handle.is_valid());
        assert_eq!(stale_handle.to_vec()[0], 0);
        assert!(stale_handle.reregister().is_err(), "deregistered for good");
        drop(stale_handle);
        assert!(newer.is_valid());
        assert!(reg.view().region(stale).is_some());
        assert_eq!(reg.len(), held.len() + 1);
    }

    #[test]
    fn indexes_and_keys_are_not_sequential() {
        let reg = Registry::with_seed(11);
        let held: Vec<MemoryRegion> = (0..INDEX_BATCH)
            .map(|_| reg.register(PD, 8, Access::ALL).unwrap())
            .collect();
        let stags: Vec<STag> = held.iter().map(MemoryRegion::rkey).collect();
        let mut indexes: Vec<u32> = stags.iter().map(|s| s.index()).collect();
        let in_order = indexes.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(in_order < INDEX_BATCH / 4, "{indexes:?}");
        indexes.sort_unstable();
        assert_eq!(indexes, (1..=INDEX_BATCH as u32).collect::<Vec<_>>());
        let zero_keys = stags.iter().filter(|s| s.key() == 0).count();
        assert!(zero_keys < INDEX_BATCH / 4, "{stags:?}");
    }

    #[test]
    fn two_devices_hand_out_different_stags() {
        // Each device's registry seeds itself: the same registrations get
        // different STags.
        let stags = || {
            let reg = Registry::new();
            let held: Vec<MemoryRegion> = (0..8)
                .map(|_| reg.register(PD, 8, Access::ALL).unwrap())
                .collect();
            held.iter().map(MemoryRegion::rkey).collect::<Vec<STag>>()
        };
        assert_ne!(stags(), stags());
        // And seeded ones repeat exactly.
        let seeded = |seed| {
            let reg = Registry::with_seed(seed);
            reg.register(PD, 8, Access::ALL).unwrap().rkey()
        };
        assert_eq!(seeded(5), seeded(5));
    }

    #[test]
    fn base_is_the_buffer_address_and_sge_checks_bounds() {
        let reg = Registry::new();
        let mr = reg.register(PD, 100, Access::LOCAL_WRITE).unwrap();
        assert_ne!(mr.addr(), 0);
        let sge = mr.sge(10, 20).unwrap();
        assert_eq!(sge.to, mr.addr() + 10);
        assert_eq!(sge.len, 20);
        assert!(mr.sge(90, 11).is_err());
        assert!(mr.sge(usize::MAX, 1).is_err());
    }

    #[test]
    fn copy_accessors() {
        let reg = Registry::new();
        let mr = reg.register_vec(PD, vec![1, 2, 3, 4], Access::ALL).unwrap();
        let mut out = [0; 2];
        mr.read(1, &mut out).unwrap();
        assert_eq!(out, [2, 3]);
        mr.write(2, &[9, 9]).unwrap();
        assert_eq!(mr.to_vec(), vec![1, 2, 9, 9]);
        assert!(mr.write(3, &[0, 0]).is_err());
        assert!(mr.read(5, &mut []).is_err());
        mr.with_bytes_mut(|b| b[0] = 7);
        assert_eq!(mr.with_bytes(|b| b[0]), 7);
    }

    #[test]
    fn view_places_inside_only() {
        let reg = Registry::new();
        let mr = reg.register(PD, 16, Access::ALL).unwrap();
        let mut v = reg.view();
        v.write(mr.rkey(), 12, &[1, 2, 3, 4]).unwrap();
        assert!(v.write(mr.rkey(), 13, &[1, 2, 3, 4]).is_err());
        assert!(v.write(mr.rkey(), u64::MAX, &[1]).is_err());
        assert_eq!(&mr.to_vec()[12..], &[1, 2, 3, 4]);
        let mut out = [0; 4];
        v.read(mr.rkey(), 12, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
    }

    #[test]
    fn deregistered_region_is_not_placed_into() {
        let reg = Registry::new();
        let mr = reg.register(PD, 16, Access::ALL).unwrap();
        let keep = mr.clone();
        let stag = mr.rkey();
        let mut v = reg.view();
        v.write(stag, 0, &[1]).unwrap(); // caches the region
        mr.deregister();
        assert!(v.write(stag, 0, &[2]).is_err());
        assert!(v.region(stag).is_none());
        assert_eq!(keep.to_vec()[0], 1);
        assert!(!keep.is_valid());
    }

    #[test]
    fn reads_go_through_the_cache_and_still_see_deregistration() {
        let reg = Registry::new();
        let a = reg.register_vec(PD, vec![1, 2, 3, 4], Access::ALL).unwrap();
        let b = reg.register_vec(PD, vec![5, 6], Access::ALL).unwrap();
        let v = reg.view();
        let mut out = [0; 2];
        for _ in 0..3 {
            v.read(a.rkey(), 2, &mut out).unwrap();
            assert_eq!(out, [3, 4]);
            v.read(b.rkey(), 0, &mut out).unwrap();
            assert_eq!(out, [5, 6]);
        }
        assert_eq!(v.region(a.rkey()).map(|i| i.len), Some(4));
        assert!(v.read(a.rkey(), 3, &mut out).is_err(), "past the end");
        let stale = b.rkey();
        b.deregister();
        assert!(
            v.read(stale, 0, &mut out).is_err(),
            "cached, then deregistered"
        );
        assert!(v.region(stale).is_none());
        assert!(
            v.read(STag::new(77, 0), 0, &mut out).is_err(),
            "never registered"
        );
    }

    #[test]
    fn a_kept_cache_carries_over_and_forgets_deregistered_regions() {
        let reg = Registry::new();
        let a = reg.register_vec(PD, vec![1, 2, 3], Access::ALL).unwrap();
        let mut cache = RegionCache::default();
        let mut out = [0; 3];
        reg.with_cached_view(&mut cache, |v| v.read(a.rkey(), 0, &mut out))
            .unwrap();
        assert_eq!(out, [1, 2, 3]);
        assert!(cache.cached() == Some(a.rkey()), "kept");
        // The next view starts from it and still checks it.
        a.write(0, &[7]).unwrap();
        reg.with_cached_view(&mut cache, |v| v.read(a.rkey(), 0, &mut out))
            .unwrap();
        assert_eq!(out, [7, 2, 3]);
        let stale = a.rkey();
        a.deregister();
        reg.with_cached_view(&mut cache, |v| {
            assert!(v.read(stale, 0, &mut out).is_err(), "deregistered");
        });
        assert!(cache.cached().is_none(), "not kept once deregistered");
    }

    #[test]
    fn the_home_region_is_locked_once_per_view_and_released_after() {
        let reg = Registry::new();
        let a = reg.register_vec(PD, vec![0; 8], Access::ALL).unwrap();
        let b = reg.register_vec(PD, vec![5; 8], Access::ALL).unwrap();
        let mut cache = RegionCache::default();
        reg.with_cached_view(&mut cache, |v| v.write(a.rkey(), 0, &[1]))
            .unwrap();
        // `a` is home now: reads and writes share one hold, a switch to
        // `b` and back releases and retakes it.
        let mut out = [0; 2];
        reg.with_cached_view(&mut cache, |v| {
            v.read(a.rkey(), 0, &mut out).unwrap();
            assert_eq!(out, [1, 0]);
            v.write(a.rkey(), 1, &[2]).unwrap();
            v.read(a.rkey(), 0, &mut out).unwrap();
            assert_eq!(out, [1, 2]);
            v.read(b.rkey(), 0, &mut out).unwrap();
            assert_eq!(out, [5, 5]);
            v.write(b.rkey(), 0, &[6]).unwrap();
            assert_eq!(v.update_u64(a.rkey(), 0, &mut |x| x + 1).unwrap(), 0x0201);
            assert!(v.write(a.rkey(), 7, &[0, 0]).is_err(), "past the end");
        });
        // Released: the program's own accesses do not block.
        assert_eq!(&a.to_vec()[..3], &[2, 2, 0]);
        assert_eq!(b.to_vec()[0], 6);
        // The region used last is home for the next view.
        assert!(cache.cached() == Some(b.rkey()));
        // Deregistered while home and held: refused at the next use.
        let stale = b.rkey();
        reg.with_cached_view(&mut cache, |v| {
            v.write(stale, 0, &[9]).unwrap();
            b.clone().deregister();
            assert!(v.write(stale, 0, &[8]).is_err());
            assert!(v.region(stale).is_none());
        });
        assert_eq!(b.to_vec()[0], 9);
        assert!(cache.cached().is_none());
    }

    #[test]
    fn remote_invalidate_rules() {
        let reg = Registry::new();
        let local_only = reg.register(PD, 4, Access::LOCAL_WRITE).unwrap();
        let remote = reg.register(PD, 4, Access::ALL).unwrap();
        let permitted = reg
            .register(PD, 4, Access::REMOTE_WRITE | Access::REMOTE_INVALIDATE)
            .unwrap();
        let mut v = reg.view();
        assert_eq!(
            v.invalidate(local_only.rkey(), PD),
            Err(InvalidateError::NotAllowed)
        );
        assert_eq!(
            v.invalidate(remote.rkey(), PD),
            Err(InvalidateError::NotAllowed),
            "remote access alone does not let the peer invalidate"
        );
        assert!(remote.is_valid());
        assert_eq!(
            v.invalidate(permitted.rkey(), PdId(9)),
            Err(InvalidateError::WrongPd)
        );
        assert_eq!(v.invalidate(permitted.rkey(), PD), Ok(()));
        assert!(!permitted.is_valid());
        assert_eq!(
            v.invalidate(permitted.rkey(), PD),
            Err(InvalidateError::Invalid)
        );
    }

    #[test]
    fn an_invalidated_stag_keeps_its_slot_until_deregistered() {
        let reg = Registry::with_seed(4);
        // Every slot of the first batch taken but one, which the
        // invalidated region holds.
        let held: Vec<_> = (0..INDEX_BATCH - 1)
            .map(|_| reg.register(PD, 8, Access::ALL).unwrap())
            .collect();
        let access = Access::REMOTE_WRITE | Access::REMOTE_INVALIDATE;
        let mr = reg.register_vec(PD, vec![1, 2, 3], access).unwrap();
        let stale = mr.rkey();
        assert_eq!(reg.view().invalidate(stale, PD), Ok(()));
        assert!(!mr.is_valid());
        assert_eq!(reg.len(), INDEX_BATCH, "still registered");
        let next = reg.register(PD, 8, Access::ALL).unwrap();
        assert_ne!(next.rkey().index(), stale.index(), "the slot is not free");
        assert!(reg.view().region(stale).is_none());
        drop(held);
        // Valid again under a fresh key, bytes untouched.
        let fresh = mr.reregister().unwrap();
        assert_eq!((fresh.index(), mr.rkey()), (stale.index(), fresh));
        assert_ne!(fresh, stale);
        assert!(
            reg.view().region(stale).is_none(),
            "the old key stays refused"
        );
        let mut out = [0; 3];
        reg.view().read(fresh, 0, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3]);
        // Deregistration frees the slot and ends re-registration.
        let keep = mr.clone();
        mr.deregister();
        assert!(keep.reregister().is_err());
        assert!(reg.view().region(fresh).is_none());
    }

    #[test]
    fn reregistering_a_valid_region_revokes_its_old_stag() {
        let reg = Registry::new();
        let mr = reg.register(PD, 8, Access::ALL).unwrap();
        let old = mr.rkey();
        let new = mr.reregister().unwrap();
        assert_ne!(new, old);
        assert!(mr.is_valid());
        assert!(reg.view().region(old).is_none());
        assert!(reg.view().region(new).is_some());
        assert_eq!(reg.len(), 1);
    }

    #[test]
    fn the_last_handle_dropped_deregisters() {
        let reg = Registry::new();
        let mr = reg.register(PD, 16, Access::ALL).unwrap();
        let stag = mr.rkey();
        let clone = mr.clone();
        drop(mr);
        assert!(reg.view().region(stag).is_some(), "a clone still holds it");
        assert_eq!(reg.len(), 1);
        drop(clone);
        assert!(
            reg.view().region(stag).is_none(),
            "gone with the last handle"
        );
        assert_eq!(reg.len(), 0);
        // After an explicit deregister, the drop of a remaining clone does
        // not touch a newer registration in the reused slot.
        let mr = reg.register(PD, 16, Access::ALL).unwrap();
        let keep = mr.clone();
        mr.deregister();
        let newer = reg.register(PD, 16, Access::ALL).unwrap();
        drop(keep);
        assert!(reg.view().region(newer.rkey()).is_some());
    }

    #[test]
    fn a_vec_is_registered_in_place_and_handed_back() {
        let reg = Registry::new();
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(&[1, 2, 3, 4]);
        let at = v.as_ptr();
        let mr = reg.register_vec(PD, v, Access::ALL).unwrap();
        assert_eq!(mr.addr(), at as u64, "no copy, no reallocation");
        reg.view().write(mr.rkey(), 1, &[9]).unwrap();
        let stag = mr.rkey();
        let back: Vec<u8> = mr.deregister_into().unwrap();
        assert_eq!((back.as_ptr(), back.capacity()), (at, 64));
        assert_eq!(back, [1, 9, 3, 4], "placement went into it");
        assert!(reg.view().region(stag).is_none(), "deregistered");
        assert!(reg.is_empty());
    }

    #[test]
    fn a_bytes_mut_comes_back_as_itself() {
        let reg = Registry::new();
        let buf = bytes::BytesMut::zeroed(4096);
        let at = buf.as_ptr();
        let mr = reg.register_buffer(PD, buf, Access::ALL).unwrap();
        assert_eq!(mr.addr(), at as u64);
        reg.view().write(mr.rkey(), 4000, b"placed").unwrap();
        let back: bytes::BytesMut = mr.deregister_into().unwrap();
        assert_eq!(back.as_ptr(), at);
        assert_eq!(&back[4000..4006], b"placed");
    }

    /// A buffer type of the program's own, standing for mmap'd or
    /// huge-page memory.
    #[derive(Debug)]
    struct Pages(Box<[u8; 8192]>);

    impl AsRef<[u8]> for Pages {
        fn as_ref(&self) -> &[u8] {
            &self.0[..]
        }
    }

    impl AsMut<[u8]> for Pages {
        fn as_mut(&mut self) -> &mut [u8] {
            &mut self.0[..]
        }
    }

    #[test]
    fn a_buffer_of_its_own_type_is_handed_back_only_whole_and_as_itself() {
        let reg = Registry::new();
        let mr = reg
            .register_buffer(PD, Pages(Box::new([0; 8192])), Access::ALL)
            .unwrap();
        assert_eq!(mr.len(), 8192);
        let mr = mr.deregister_into::<Vec<u8>>().unwrap_err();
        assert!(mr.is_valid(), "the wrong type leaves it registered");
        let clone = mr.clone();
        let mr = mr.deregister_into::<Pages>().unwrap_err();
        assert!(mr.is_valid(), "another handle leaves it registered");
        drop(clone);
        mr.write(8191, &[5]).unwrap();
        let pages: Pages = mr.deregister_into().unwrap();
        assert_eq!(pages.0[8191], 5);
        assert!(reg.is_empty());
    }

    #[test]
    fn changed_runs_cover_exactly_the_changed_bytes() {
        let before = [0u8, 1, 2, 3, 4, 5, 6, 7];
        let mut after = before;
        assert_eq!(changed_runs(&before, &after).count(), 0);
        after[0] = 9;
        after[3] = 9;
        after[4] = 9;
        after[7] = 9;
        let runs: Vec<_> = changed_runs(&before, &after).collect();
        assert_eq!(runs, [0..1, 3..5, 7..8]);
        assert_eq!(changed_runs(&[], &[]).count(), 0);
    }

    #[test]
    fn a_closure_holds_no_lock_and_keeps_what_placement_wrote_meanwhile() {
        let reg = Registry::new();
        let mr = reg.register_vec(PD, vec![0; 8], Access::ALL).unwrap();
        let stag = mr.rkey();
        mr.with_bytes_mut(|b| {
            b[0] = 1;
            // Placement while the closure runs: it would wait forever on a
            // lock the closure held.
            reg.view().write(stag, 4, &[7, 7]).unwrap();
            assert_eq!(mr.to_vec()[4..6], [7, 7]);
            b[7] = 2;
        });
        assert_eq!(mr.to_vec(), [1, 0, 0, 0, 7, 7, 0, 2]);
        let seen = mr.with_bytes(|b| {
            reg.view().write(stag, 0, &[5]).unwrap();
            b[0]
        });
        assert_eq!((seen, mr.to_vec()[0]), (1, 5), "a copy from before");
    }

    #[test]
    fn concurrent_readers_see_whole_writes() {
        let reg = Registry::new();
        let mr = reg.register(PD, 4096, Access::ALL).unwrap();
        let stag = mr.rkey();
        let writer = {
            let reg = reg.clone();
            std::thread::spawn(move || {
                let mut v = reg.view();
                for i in 0..200u32 {
                    v.write(stag, 0, &[(i % 251) as u8; 4096]).unwrap();
                }
            })
        };
        for _ in 0..200 {
            mr.with_bytes(|b| assert!(b.iter().all(|&x| x == b[0]), "torn write observed"));
        }
        writer.join().unwrap();
    }
}
