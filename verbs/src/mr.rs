//! Memory regions and the registration table placement writes through.
//!
//! The memory model: a region's bytes are owned by the library, behind a
//! per-region lock. A peer's RDMA Write lands while the program runs, so the
//! program never holds a plain `&mut [u8]` that a remote write could race
//! with; it reads and writes through copy accessors ([`MemoryRegion::read`],
//! [`MemoryRegion::write`]) or short closures ([`MemoryRegion::with_bytes`],
//! [`MemoryRegion::with_bytes_mut`]) that hold the lock. Placement takes the
//! same lock per DDP segment, so every observation is of whole segments.
//!
//! The tagged offset of a region's first byte is the address of its buffer,
//! as with libibverbs, so peers such as rping see ordinary virtual addresses.
//! Deregistration invalidates the STag at once; the bytes live on only while
//! an in-flight placement still holds them.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use ddp::memory::{Access, InvalidateError, Memory, OutOfRange, PdId, RegionInfo, STag};
use ddp::untagged::Sge;

use crate::error::VerbsError;

/// One registered region.
#[derive(Debug)]
pub(crate) struct Region {
    stag: STag,
    info: RegionInfo,
    valid: AtomicBool,
    /// Whether a peer's Send with Invalidate may invalidate this STag.
    remote_invalidate: bool,
    bytes: RwLock<Box<[u8]>>,
}

impl Region {
    fn is_valid(&self) -> bool {
        self.valid.load(Ordering::Acquire)
    }

    fn range(&self, offset: u64, len: usize) -> Option<core::ops::Range<usize>> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(len)?;
        (end as u64 <= self.info.len).then_some(start..end)
    }
}

/// A registered memory region: its STag serves as both lkey and rkey.
#[derive(Debug, Clone)]
pub struct MemoryRegion {
    region: Arc<Region>,
    registry: Arc<Registry>,
}

impl MemoryRegion {
    /// The local key, used in scatter/gather entries of local work requests.
    pub fn lkey(&self) -> STag {
        self.region.stag
    }

    /// The remote key a peer names in RDMA Write and Read.
    pub fn rkey(&self) -> STag {
        self.region.stag
    }

    /// Tagged offset (virtual address) of the first byte.
    pub fn addr(&self) -> u64 {
        self.region.info.base
    }

    pub fn len(&self) -> usize {
        self.region.info.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.region.info.len == 0
    }

    pub fn access(&self) -> Access {
        self.region.info.access
    }

    pub fn pd(&self) -> PdId {
        self.region.info.pd
    }

    /// Whether the STag is still valid (not deregistered or invalidated by a peer).
    pub fn is_valid(&self) -> bool {
        self.region.is_valid()
    }

    /// A scatter/gather entry covering `len` bytes from `offset`.
    pub fn sge(&self, offset: usize, len: usize) -> Result<Sge, VerbsError> {
        let range = self
            .region
            .range(offset as u64, len)
            .ok_or(VerbsError::OutOfBounds {
                offset,
                len,
                region_len: self.len(),
            })?;
        Ok(Sge {
            stag: self.region.stag,
            to: self.addr() + range.start as u64,
            len: u32::try_from(len).map_err(|_| VerbsError::TooLong(len))?,
        })
    }

    /// A scatter/gather entry covering the whole region.
    pub fn sge_all(&self) -> Sge {
        Sge {
            stag: self.region.stag,
            to: self.addr(),
            len: self.len().min(u32::MAX as usize) as u32,
        }
    }

    /// Copies `out.len()` bytes from `offset` into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), VerbsError> {
        let range = self.checked(offset, out.len())?;
        out.copy_from_slice(&self.region.bytes.read().unwrap_or_else(|e| e.into_inner())[range]);
        Ok(())
    }

    /// Copies `data` into the region at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), VerbsError> {
        let range = self.checked(offset, data.len())?;
        self.region.bytes.write().unwrap_or_else(|e| e.into_inner())[range].copy_from_slice(data);
        Ok(())
    }

    /// Runs `f` over the bytes while holding off placement.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&self.region.bytes.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `f` over the bytes, mutably, while holding off placement.
    pub fn with_bytes_mut<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        f(&mut self.region.bytes.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// A copy of the whole region.
    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }

    /// Invalidates the STag and removes the registration. Work requests that
    /// still name it complete with a protection error.
    pub fn deregister(self) {
        self.registry.remove(self.region.stag);
    }

    fn checked(&self, offset: usize, len: usize) -> Result<core::ops::Range<usize>, VerbsError> {
        self.region
            .range(offset as u64, len)
            .ok_or(VerbsError::OutOfBounds {
                offset,
                len,
                region_len: self.len(),
            })
    }
}

/// The device-wide registration table: STag index -> region.
///
/// STag = 24-bit index << 8 | 8-bit key. Index 0 is never used, so no STag is
/// 0 on the wire (hardware peers refuse STag 0). STags are hard to guess
/// (RFC 5042 section 5): each registry draws from its own seeded generator
/// the key of every fresh slot and the order in which slots are handed out
/// (the table grows [`INDEX_BATCH`] slots at a time, taken in random
/// order). Each time a slot is reused its key moves by the slot's own
/// random odd step, so a stale STag from a deregistered region is refused
/// for the next 255 reuses of its slot.
#[derive(Debug)]
pub struct Registry {
    slots: RwLock<Slots>,
    /// Serialises registration.
    register_lock: Mutex<()>,
}

#[derive(Debug)]
struct Slots {
    regions: Vec<Option<Arc<Region>>>,
    keys: Vec<u8>,
    /// Per slot, the odd amount its key moves by on each reuse.
    steps: Vec<u8>,
    free: Vec<u32>,
    rng: StagRng,
}

impl Slots {
    /// Adds up to [`INDEX_BATCH`] free slots, each with a random key.
    fn grow(&mut self) -> Result<(), VerbsError> {
        if self.regions.is_empty() {
            self.regions.push(None); // index 0 is never handed out
            self.keys.push(0);
            self.steps.push(1);
        }
        let room = (MAX_REGIONS + 1).saturating_sub(self.regions.len());
        if room == 0 {
            return Err(VerbsError::TooManyRegions);
        }
        for _ in 0..room.min(INDEX_BATCH) {
            self.free.push(self.regions.len() as u32);
            self.regions.push(None);
            let r = self.rng.next();
            self.keys.push(r as u8);
            self.steps.push((r >> 8) as u8 | 1);
        }
        Ok(())
    }
}

/// The most regions one device holds (24-bit STag index, index 0 unused).
pub const MAX_REGIONS: usize = (1 << 24) - 1;

/// Slots the table grows by when none is free; a new region takes one of
/// them at random.
pub const INDEX_BATCH: usize = 64;

/// The registry's own generator for STag keys and index order (SplitMix64:
/// unpredictable enough to make a blind guess fail, not a secret).
#[derive(Debug)]
struct StagRng(u64);

impl StagRng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// A seed no other registry shares: the standard library's per-instance
/// hash keys (random per thread, then stepped), the time, and where this
/// registry is being built.
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let here = 0u8;
    h.write_usize(&here as *const u8 as usize);
    h.finish()
}

impl Default for Registry {
    fn default() -> Self {
        Registry::with_seed_inner(fresh_seed())
    }
}

impl Registry {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A registry whose STags follow from `seed` (for reproducible tests).
    pub fn with_seed(seed: u64) -> Arc<Self> {
        Arc::new(Self::with_seed_inner(seed))
    }

    fn with_seed_inner(seed: u64) -> Self {
        Registry {
            slots: RwLock::new(Slots {
                regions: Vec::new(),
                keys: Vec::new(),
                steps: Vec::new(),
                free: Vec::new(),
                rng: StagRng(seed),
            }),
            register_lock: Mutex::new(()),
        }
    }

    /// Registers a zero-filled region of `len` bytes.
    pub fn register(
        self: &Arc<Self>,
        pd: PdId,
        len: usize,
        access: Access,
    ) -> Result<MemoryRegion, VerbsError> {
        self.register_vec(pd, vec![0; len], access)
    }

    /// Registers `bytes`, taking ownership of them.
    pub fn register_vec(
        self: &Arc<Self>,
        pd: PdId,
        bytes: Vec<u8>,
        access: Access,
    ) -> Result<MemoryRegion, VerbsError> {
        let _serial = self.register_lock.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = bytes.into_boxed_slice();
        let base = bytes.as_ptr() as u64;
        let info = RegionInfo {
            pd,
            base,
            len: bytes.len() as u64,
            access,
        };
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        if slots.free.is_empty() {
            slots.grow()?;
        }
        let free = slots.free.len();
        let pick = slots.rng.below(free);
        let index = slots.free.swap_remove(pick);
        let key = slots.keys[index as usize];
        let stag = STag::new(index, key);
        let region = Arc::new(Region {
            stag,
            info,
            valid: AtomicBool::new(true),
            remote_invalidate: access.contains(Access::REMOTE_WRITE)
                || access.contains(Access::REMOTE_READ),
            bytes: RwLock::new(bytes),
        });
        slots.regions[index as usize] = Some(region.clone());
        Ok(MemoryRegion {
            region,
            registry: self.clone(),
        })
    }

    fn lookup(&self, stag: STag) -> Option<Arc<Region>> {
        let slots = self.slots.read().unwrap_or_else(|e| e.into_inner());
        let region = slots.regions.get(stag.index() as usize)?.as_ref()?;
        (region.stag == stag && region.is_valid()).then(|| region.clone())
    }

    fn remove(&self, stag: STag) -> bool {
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        let index = stag.index() as usize;
        let Some(Some(region)) = slots.regions.get(index) else {
            return false;
        };
        if region.stag != stag {
            return false;
        }
        region.valid.store(false, Ordering::Release);
        slots.regions[index] = None;
        // The slot's own odd step: 256 reuses before a key comes back.
        let step = slots.steps[index];
        slots.keys[index] = slots.keys[index].wrapping_add(step);
        slots.free.push(index as u32);
        true
    }

    /// Number of live registrations.
    pub fn len(&self) -> usize {
        let slots = self.slots.read().unwrap_or_else(|e| e.into_inner());
        slots.regions.iter().filter(|r| r.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A view the protocol places through; caches the last region it used,
    /// so a stream of segments to one region costs one table lookup.
    pub fn view(&self) -> RegistryView<'_> {
        RegistryView {
            registry: self,
            last: RefCell::new(None),
            home: None,
        }
    }

    /// A view whose cache starts from, and is left in, `cache`: a queue
    /// pair that keeps one across calls looks a region up once, not once
    /// per call (a post of a small message is one call).
    pub(crate) fn view_cached<'a>(&'a self, cache: &'a mut RegionCache) -> RegistryView<'a> {
        RegistryView {
            registry: self,
            last: RefCell::new(cache.0.take()),
            home: Some(cache),
        }
    }
}

/// The region a queue pair used last, kept between [`RegistryView`]s.
///
/// Holding it keeps nothing alive for long: a view checks the region is
/// still registered at every use, and one that was deregistered is dropped
/// from the cache when the view ends.
#[derive(Debug, Default)]
pub(crate) struct RegionCache(Option<Arc<Region>>);

/// [`Memory`] over a [`Registry`], for the duration of one protocol call.
///
/// The last region used is cached (reads as well as writes go through the
/// cache), and a cache hit costs no reference-count traffic: per segment
/// the only shared-memory operations left are the region lock itself.
#[derive(Debug)]
pub struct RegistryView<'a> {
    registry: &'a Registry,
    last: RefCell<Option<Arc<Region>>>,
    /// Where the cache goes back to when the view ends.
    home: Option<&'a mut RegionCache>,
}

impl Drop for RegistryView<'_> {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            home.0 = self.last.get_mut().take().filter(|r| r.is_valid());
        }
    }
}

impl RegistryView<'_> {
    /// Runs `f` on the valid region `stag` names, if any.
    fn with_region<R>(&self, stag: STag, f: impl FnOnce(&Region) -> R) -> Option<R> {
        {
            let last = self.last.borrow();
            if let Some(r) = last.as_ref().filter(|r| r.stag == stag && r.is_valid()) {
                return Some(f(r));
            }
        }
        let r = self.registry.lookup(stag)?;
        let out = f(&r);
        *self.last.borrow_mut() = Some(r);
        Some(out)
    }
}

impl Memory for RegistryView<'_> {
    fn region(&self, stag: STag) -> Option<RegionInfo> {
        self.with_region(stag, |r| r.info)
    }

    fn write(&mut self, stag: STag, offset: u64, data: &[u8]) -> Result<(), OutOfRange> {
        let err = OutOfRange {
            stag: stag.0,
            offset,
            len: data.len(),
        };
        self.with_region(stag, |region| {
            let range = region.range(offset, data.len()).ok_or(err)?;
            region.bytes.write().unwrap_or_else(|e| e.into_inner())[range].copy_from_slice(data);
            Ok(())
        })
        .unwrap_or(Err(err))
    }

    fn read(&self, stag: STag, offset: u64, out: &mut [u8]) -> Result<(), OutOfRange> {
        let err = OutOfRange {
            stag: stag.0,
            offset,
            len: out.len(),
        };
        self.with_region(stag, |region| {
            let range = region.range(offset, out.len()).ok_or(err)?;
            out.copy_from_slice(&region.bytes.read().unwrap_or_else(|e| e.into_inner())[range]);
            Ok(())
        })
        .unwrap_or(Err(err))
    }

    fn invalidate(&mut self, stag: STag, pd: PdId) -> Result<(), InvalidateError> {
        let region = self.registry.lookup(stag).ok_or(InvalidateError::Invalid)?;
        if region.info.pd != pd {
            return Err(InvalidateError::WrongPd);
        }
        if !region.remote_invalidate {
            return Err(InvalidateError::NotAllowed);
        }
        *self.last.get_mut() = None;
        self.registry.remove(stag);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_slot_gives_no_key_twice_in_256_reuses() {
        let reg = Registry::with_seed(3);
        // With every other slot taken, each registration reuses the same one.
        let mut held: Vec<_> = (0..INDEX_BATCH)
            .map(|_| reg.register(PD, 8, Access::ALL).unwrap())
            .collect();
        let mut mr = held.pop().unwrap();
        let index = mr.rkey().index();
        let mut keys = std::collections::HashSet::new();
        for _ in 0..256 {
            assert_eq!(mr.rkey().index(), index);
            assert!(
                keys.insert(mr.rkey().key()),
                "key {} again",
                mr.rkey().key()
            );
            let stale = mr.rkey();
            mr.deregister();
            mr = reg.register(PD, 8, Access::ALL).unwrap();
            assert!(reg.view().region(stale).is_none());
        }
        assert_eq!(keys.len(), 256);
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
        reg.view_cached(&mut cache)
            .read(a.rkey(), 0, &mut out)
            .unwrap();
        assert_eq!(out, [1, 2, 3]);
        assert!(cache.0.as_ref().is_some_and(|r| r.stag == a.rkey()), "kept");
        // The next view starts from it and still checks it.
        a.write(0, &[7]).unwrap();
        reg.view_cached(&mut cache)
            .read(a.rkey(), 0, &mut out)
            .unwrap();
        assert_eq!(out, [7, 2, 3]);
        let stale = a.rkey();
        a.deregister();
        {
            let v = reg.view_cached(&mut cache);
            assert!(v.read(stale, 0, &mut out).is_err(), "deregistered");
        }
        assert!(cache.0.is_none(), "not kept once deregistered");
    }

    #[test]
    fn remote_invalidate_rules() {
        let reg = Registry::new();
        let local_only = reg.register(PD, 4, Access::LOCAL_WRITE).unwrap();
        let remote = reg.register(PD, 4, Access::REMOTE_WRITE).unwrap();
        let mut v = reg.view();
        assert_eq!(
            v.invalidate(local_only.rkey(), PD),
            Err(InvalidateError::NotAllowed)
        );
        assert_eq!(
            v.invalidate(remote.rkey(), PdId(9)),
            Err(InvalidateError::WrongPd)
        );
        assert_eq!(v.invalidate(remote.rkey(), PD), Ok(()));
        assert!(!remote.is_valid());
        assert_eq!(
            v.invalidate(remote.rkey(), PD),
            Err(InvalidateError::Invalid)
        );
        assert_eq!(reg.len(), 1);
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
