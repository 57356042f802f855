//! The registration table placement writes through: STag -> region.
//!
//! The engine owns it (every placement looks a region up here); the
//! [`MemoryRegion`](crate::MemoryRegion) handles of `crate::mr` hold a
//! region and the table to deregister from.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ddp::memory::{
    place_in_two_steps, Access, CopyHook, InvalidateError, Memory, OutOfRange, PdId, RegionInfo,
    STag,
};
use ddp::tagged::check;
use ddp::TaggedError;
use transport::SplitMix64;

use crate::mr_buffer::RegionBuffer;
use crate::types::VerbsError;

/// One registered region.
///
/// Its STag and validity are one atomic word, so a view checks both in
/// one load: invalidation clears the valid bit and leaves the region in
/// its slot (the slot is not free until deregistration), and
/// re-registration gives it a fresh key and sets the bit again.
pub(crate) struct Region {
    /// The STag in the low 32 bits, [`VALID`] above them.
    state: AtomicU64,
    pub(crate) info: RegionInfo,
    /// The program's buffer, placed into in place.
    pub(crate) bytes: RwLock<Box<dyn RegionBuffer>>,
}

impl core::fmt::Debug for Region {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Region")
            .field("stag", &self.stag())
            .field("valid", &self.is_valid())
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The valid bit of [`Region::state`].
const VALID: u64 = 1 << 32;

impl Region {
    /// The STag the region has now (valid or not).
    pub(crate) fn stag(&self) -> STag {
        STag(self.state.load(Ordering::Acquire) as u32)
    }

    pub(crate) fn is_valid(&self) -> bool {
        self.state.load(Ordering::Acquire) & VALID != 0
    }

    /// Whether `stag` names this region and the region is valid.
    #[inline]
    pub(crate) fn answers_to(&self, stag: STag) -> bool {
        self.state.load(Ordering::Acquire) == VALID | u64::from(stag.0)
    }

    /// Whether a peer's Send with Invalidate may invalidate it.
    fn remote_invalidate(&self) -> bool {
        self.info.access.contains(Access::REMOTE_INVALIDATE)
    }

    /// Marks the STag invalid; true if it was valid.
    fn invalidate(&self) -> bool {
        self.state.fetch_and(!VALID, Ordering::AcqRel) & VALID != 0
    }

    pub(crate) fn range(&self, offset: u64, len: usize) -> Option<core::ops::Range<usize>> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(len)?;
        (end as u64 <= self.info.len).then_some(start..end)
    }
}

/// The device-wide registration table: STag index -> region.
///
/// STag = 24-bit index << 8 | 8-bit key. Index 0 is never used, so no STag is
/// 0 on the wire (hardware peers refuse STag 0). STags are hard to guess
/// (RFC 5042 section 5): each registry draws from its own seeded generator
/// the key of every fresh slot and the order in which slots are handed out
/// (the table grows [`INDEX_BATCH`] slots at a time, taken in random
/// order). Each reuse of a slot, and each re-registration of a region,
/// draws a fresh key from the generator, never the key the slot had last:
/// the keys one slot gives out tell nothing about its next one, and a stale
/// STag is refused at once (and after that as often as a guess is).
///
/// Handles find their region by identity ([`Arc`]), never by STag value: a
/// stale handle cannot reach a region that reuses its slot, whatever key
/// that region drew.
#[derive(Debug)]
pub struct Registry {
    slots: RwLock<Slots>,
    /// Serialises registration.
    register_lock: Mutex<()>,
}

#[derive(Debug)]
struct Slots {
    regions: Vec<Option<Arc<Region>>>,
    /// Per slot, the key its next region or re-registration must not take.
    keys: Vec<u8>,
    free: Vec<u32>,
    /// The registry's own generator for STag keys and index order:
    /// unpredictable enough to make a blind guess fail, not a secret.
    rng: SplitMix64,
}

impl Slots {
    /// Adds up to [`INDEX_BATCH`] free slots, each with a random key.
    fn grow(&mut self) -> Result<(), VerbsError> {
        if self.regions.is_empty() {
            self.regions.push(None); // index 0 is never handed out
            self.keys.push(0);
        }
        let room = (MAX_REGIONS + 1).saturating_sub(self.regions.len());
        if room == 0 {
            return Err(VerbsError::TooManyRegions);
        }
        for _ in 0..room.min(INDEX_BATCH) {
            self.free.push(self.regions.len() as u32);
            self.regions.push(None);
            let key = self.rng.next_u64() as u8;
            self.keys.push(key);
        }
        Ok(())
    }

    /// A random key for slot `index` other than the one it had last.
    fn fresh_key(&mut self, index: usize) -> u8 {
        let last = self.keys[index];
        // Uniform over the 255 other keys.
        let key = last.wrapping_add(1 + self.rng.below(255) as u8);
        self.keys[index] = key;
        key
    }
}

/// The most regions one device holds (24-bit STag index, index 0 unused).
pub const MAX_REGIONS: usize = (1 << 24) - 1;

/// Slots the table grows by when none is free; a new region takes one of
/// them at random.
pub const INDEX_BATCH: usize = 64;

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
    /// An empty table with a fresh random seed for its STags.
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
                free: Vec::new(),
                rng: SplitMix64::new(seed),
            }),
            register_lock: Mutex::new(()),
        }
    }

    /// Adds `bytes` as a new region under a fresh STag.
    pub(crate) fn insert(
        &self,
        pd: PdId,
        bytes: Box<dyn RegionBuffer>,
        access: Access,
    ) -> Result<Arc<Region>, VerbsError> {
        let _serial = self.register_lock.lock().unwrap_or_else(|e| e.into_inner());
        let info = RegionInfo {
            pd,
            base: bytes.bytes().as_ptr() as u64,
            len: bytes.bytes().len() as u64,
            access,
        };
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        if slots.free.is_empty() {
            slots.grow()?;
        }
        let free = slots.free.len();
        let pick = slots.rng.below(free as u64) as usize;
        let index = slots.free.swap_remove(pick);
        let key = slots.keys[index as usize];
        let stag = STag::new(index, key);
        let region = Arc::new(Region {
            state: AtomicU64::new(VALID | u64::from(stag.0)),
            info,
            bytes: RwLock::new(bytes),
        });
        slots.regions[index as usize] = Some(region.clone());
        Ok(region)
    }

    fn lookup(&self, stag: STag) -> Option<Arc<Region>> {
        let slots = self.slots.read().unwrap_or_else(|e| e.into_inner());
        let region = slots.regions.get(stag.index() as usize)?.as_ref()?;
        region.answers_to(stag).then(|| region.clone())
    }

    /// Ends `region`'s registration, if it is still registered: its STag
    /// becomes invalid and its slot free, under a fresh key. Found by
    /// identity, so a handle of a region long gone does nothing to the
    /// region that now has its slot, whatever its key.
    pub(crate) fn remove(&self, region: &Arc<Region>) -> bool {
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        let index = region.stag().index() as usize;
        match slots.regions.get(index) {
            Some(Some(r)) if Arc::ptr_eq(r, region) => {}
            _ => return false,
        }
        region.invalidate();
        slots.regions[index] = None;
        slots.fresh_key(index);
        slots.free.push(index as u32);
        true
    }

    /// Invalidates the STag (a local invalidate, or a peer's permitted
    /// Send with Invalidate): the region keeps its slot and its bytes
    /// until it is deregistered, and
    /// [`MemoryRegion::reregister`](crate::MemoryRegion::reregister) can
    /// make it valid again.
    pub(crate) fn invalidate(&self, stag: STag) -> bool {
        self.lookup(stag).is_some_and(|r| r.invalidate())
    }

    /// Gives a registered `region` a fresh key and makes it valid; the
    /// STag it had (valid or not) is refused from then on. `None` once
    /// it was deregistered.
    pub(crate) fn reregister(&self, region: &Arc<Region>) -> Option<STag> {
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        let index = region.stag().index();
        match slots.regions.get(index as usize) {
            Some(Some(r)) if Arc::ptr_eq(r, region) => {}
            _ => return None,
        }
        let stag = STag::new(index, slots.fresh_key(index as usize));
        region
            .state
            .store(VALID | u64::from(stag.0), Ordering::Release);
        Some(stag)
    }

    /// Number of live registrations.
    pub fn len(&self) -> usize {
        let slots = self.slots.read().unwrap_or_else(|e| e.into_inner());
        slots.regions.iter().filter(|r| r.is_some()).count()
    }

    /// Whether nothing is registered.
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
            hold: RefCell::new(Hold::Nothing),
        }
    }

    /// Runs `f` with a view whose home is the region `cache` keeps, and
    /// leaves the region the view used last in `cache`: a queue pair that
    /// keeps one across calls looks a region up once, not once per call (a
    /// post of a small message is one call), and locks its home region's
    /// bytes once per call, not once per segment.
    pub(crate) fn with_cached_view<R>(
        &self,
        cache: &mut RegionCache,
        f: impl FnOnce(&mut RegistryView<'_>) -> R,
    ) -> R {
        let home = cache.0.take();
        let (out, last) = {
            let mut view = RegistryView {
                registry: self,
                last: RefCell::new(None),
                home: home.as_deref(),
                hold: RefCell::new(Hold::Nothing),
            };
            let out = f(&mut view);
            (out, view.last.into_inner())
            // The view ends here, and with it any lock it held.
        };
        cache.0 = last.or(home).filter(|r| r.is_valid());
        out
    }
}

/// The region a queue pair used last, kept between [`RegistryView`]s.
///
/// Holding it keeps nothing alive for long: a view checks the region is
/// still registered at every use, and one that was deregistered is dropped
/// from the cache when the view ends.
#[derive(Debug, Default)]
pub(crate) struct RegionCache(Option<Arc<Region>>);

impl RegionCache {
    /// The STag of the region kept, if any.
    #[cfg(test)]
    pub(crate) fn cached(&self) -> Option<STag> {
        self.0.as_ref().map(|r| r.stag())
    }
}

/// The lock a view holds on its home region's bytes.
#[derive(Debug)]
enum Hold<'a> {
    Nothing,
    Read(RwLockReadGuard<'a, Box<dyn RegionBuffer>>),
    Write(RwLockWriteGuard<'a, Box<dyn RegionBuffer>>),
}

/// [`Memory`] over a [`Registry`], for the duration of one protocol call.
///
/// The home region (the one the queue pair used last, see
/// `Registry::with_cached_view`) is locked at its first use and stays
/// locked until the view ends: a call moving many segments to or from it
/// takes its lock once (each lock and unlock is an atomic operation that
/// waits for the segment copy's stores before it). The view holds at most
/// one region's lock at a time, so views on several threads cannot
/// deadlock; other regions are locked per access, the last one used cached
/// without reference-count traffic.
#[derive(Debug)]
pub struct RegistryView<'a> {
    registry: &'a Registry,
    last: RefCell<Option<Arc<Region>>>,
    home: Option<&'a Region>,
    hold: RefCell<Hold<'a>>,
}

impl<'a> RegistryView<'a> {
    /// The home region, if `stag` names it and it is still valid.
    fn home_for(&self, stag: STag) -> Option<&'a Region> {
        self.home.filter(|r| r.answers_to(stag))
    }

    /// Runs `f` on the valid region `stag` names, if any, other than the
    /// home region: any lock held on that is released first.
    fn with_region<R>(&self, stag: STag, f: impl FnOnce(&Region) -> R) -> Option<R> {
        *self.hold.borrow_mut() = Hold::Nothing;
        {
            let last = self.last.borrow();
            if let Some(r) = last.as_ref().filter(|r| r.answers_to(stag)) {
                return Some(f(r));
            }
        }
        let r = self.registry.lookup(stag)?;
        let out = f(&r);
        *self.last.borrow_mut() = Some(r);
        Some(out)
    }

    /// The home region's bytes, write-locked (kept locked).
    #[inline]
    fn home_bytes_mut<'h>(hold: &'h mut Hold<'a>, home: &'a Region) -> &'h mut [u8] {
        if !matches!(hold, Hold::Write(_)) {
            // A read lock goes before the write lock is taken.
            *hold = Hold::Nothing;
            *hold = Hold::Write(home.bytes.write().unwrap_or_else(|e| e.into_inner()));
        }
        match hold {
            Hold::Write(g) => g.bytes_mut(),
            // Just taken above.
            Hold::Read(_) | Hold::Nothing => &mut [],
        }
    }

    /// Writes `data` at `offset` of the home region `home` (named by
    /// `stag`): the one path of [`Memory::write`] and
    /// [`Memory::place_checked`] there.
    #[inline]
    fn write_home(
        &mut self,
        home: &'a Region,
        stag: STag,
        offset: u64,
        data: &[u8],
    ) -> Result<(), OutOfRange> {
        let err = OutOfRange {
            stag: stag.0,
            offset,
            len: data.len(),
        };
        let range = home.range(offset, data.len()).ok_or(err)?;
        let bytes = Self::home_bytes_mut(self.hold.get_mut(), home);
        bytes.get_mut(range).ok_or(err)?.copy_from_slice(data);
        Ok(())
    }

    /// Runs `copy(out, bytes)` with the region's `out.len()` bytes at
    /// `offset`: the one path of [`Memory::read`] and
    /// [`Memory::read_via`].
    #[inline]
    fn read_with<R>(
        &self,
        stag: STag,
        offset: u64,
        out: &mut [u8],
        copy: impl FnOnce(&mut [u8], &[u8]) -> R,
    ) -> Result<R, OutOfRange> {
        let err = OutOfRange {
            stag: stag.0,
            offset,
            len: out.len(),
        };
        if let Some(home) = self.home_for(stag) {
            let range = home.range(offset, out.len()).ok_or(err)?;
            let mut hold = self.hold.borrow_mut();
            if matches!(*hold, Hold::Nothing) {
                *hold = Hold::Read(home.bytes.read().unwrap_or_else(|e| e.into_inner()));
            }
            let bytes: &[u8] = match &*hold {
                Hold::Read(g) => g.bytes(),
                Hold::Write(g) => g.bytes(),
                Hold::Nothing => &[],
            };
            return Ok(copy(out, bytes.get(range).ok_or(err)?));
        }
        self.with_region(stag, |region| {
            let range = region.range(offset, out.len()).ok_or(err)?;
            let bytes = region.bytes.read().unwrap_or_else(|e| e.into_inner());
            Ok(copy(out, bytes.bytes().get(range).ok_or(err)?))
        })
        .unwrap_or(Err(err))
    }
}

impl Memory for RegistryView<'_> {
    fn region(&self, stag: STag) -> Option<RegionInfo> {
        if let Some(home) = self.home_for(stag) {
            return Some(home.info);
        }
        self.with_region(stag, |r| r.info)
    }

    fn write(&mut self, stag: STag, offset: u64, data: &[u8]) -> Result<(), OutOfRange> {
        if let Some(home) = self.home_for(stag) {
            return self.write_home(home, stag, offset, data);
        }
        let err = OutOfRange {
            stag: stag.0,
            offset,
            len: data.len(),
        };
        self.with_region(stag, |region| {
            let range = region.range(offset, data.len()).ok_or(err)?;
            let mut bytes = region.bytes.write().unwrap_or_else(|e| e.into_inner());
            bytes
                .bytes_mut()
                .get_mut(range)
                .ok_or(err)?
                .copy_from_slice(data);
            Ok(())
        })
        .unwrap_or(Err(err))
    }

    #[inline]
    fn read(&self, stag: STag, offset: u64, out: &mut [u8]) -> Result<(), OutOfRange> {
        self.read_with(stag, offset, out, |out, from| out.copy_from_slice(from))
    }

    fn update_u64(
        &mut self,
        stag: STag,
        offset: u64,
        f: &mut dyn FnMut(u64) -> u64,
    ) -> Result<u64, OutOfRange> {
        let err = OutOfRange {
            stag: stag.0,
            offset,
            len: 8,
        };
        let mut update = |bytes: &mut [u8], range: core::ops::Range<usize>| {
            let word = bytes.get_mut(range).ok_or(err)?;
            let mut old = [0u8; 8];
            old.copy_from_slice(word);
            let old = u64::from_ne_bytes(old);
            word.copy_from_slice(&f(old).to_ne_bytes());
            Ok(old)
        };
        if let Some(home) = self.home_for(stag) {
            let range = home.range(offset, 8).ok_or(err)?;
            return update(Self::home_bytes_mut(self.hold.get_mut(), home), range);
        }
        self.with_region(stag, |region| {
            let range = region.range(offset, 8).ok_or(err)?;
            // One hold of the region's lock for the read and the write:
            // atomics from any queue pair, and the program's own writes,
            // see the update whole.
            let mut bytes = region.bytes.write().unwrap_or_else(|e| e.into_inner());
            update(bytes.bytes_mut(), range)
        })
        .unwrap_or(Err(err))
    }

    fn invalidate(&mut self, stag: STag, pd: PdId) -> Result<(), InvalidateError> {
        let region = self.registry.lookup(stag).ok_or(InvalidateError::Invalid)?;
        if region.info.pd != pd {
            return Err(InvalidateError::WrongPd);
        }
        if !region.remote_invalidate() {
            return Err(InvalidateError::NotAllowed);
        }
        *self.hold.get_mut() = Hold::Nothing;
        region.invalidate();
        Ok(())
    }

    #[inline]
    fn read_via<H: CopyHook>(
        &self,
        stag: STag,
        offset: u64,
        out: &mut [u8],
        hook: &mut H,
    ) -> Result<(), OutOfRange> {
        // One pass: each byte is read once, stored and shown to the hook.
        self.read_with(stag, offset, out, |out, from| hook.copy(out, from))
    }

    /// The home region (nearly every segment of a transfer) is looked up
    /// once for the check and the write; any other takes the two steps.
    fn place_checked(
        &mut self,
        stag: STag,
        pd: PdId,
        to: u64,
        data: &[u8],
        need: Access,
    ) -> Result<(), TaggedError> {
        let Some(home) = self.home_for(stag) else {
            return place_in_two_steps(self, stag, pd, to, data, need);
        };
        let offset = check(Some(home.info), pd, stag, to, data.len(), need)?;
        self.write_home(home, stag, offset, data)
            .map_err(TaggedError::Memory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_via_through_home_and_other_regions() {
        let registry = Registry::with_seed(7);
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 29 + 3) as u8).collect();
        let home = registry
            .insert(PdId(1), Box::new(bytes.clone()), Access::LOCAL_WRITE)
            .expect("registers");
        let other = registry
            .insert(PdId(1), Box::new(bytes[1000..].to_vec()), Access::NONE)
            .expect("registers");
        let mut cache = RegionCache(Some(home.clone()));
        registry.with_cached_view(&mut cache, |view| {
            for (stag, src) in [(home.stag(), &bytes[..]), (other.stag(), &bytes[1000..])] {
                for (offset, len) in [(0usize, 0usize), (1, 1), (3, 257), (100, 1460)] {
                    let want = src[offset..offset + len].to_vec();
                    let mut out = vec![0u8; len];
                    let mut seen = Seen::default();
                    let got = view.read_via(stag, offset as u64, &mut out, &mut seen);
                    assert_eq!(got, Ok(()));
                    assert_eq!((&out, &seen.0), (&want, &want));
                    let mut plain = vec![0u8; len];
                    view.read(stag, offset as u64, &mut plain).expect("reads");
                    assert_eq!(plain, want);
                }
                let mut out = vec![0u8; 8];
                let end = src.len() as u64 - 4;
                assert!(view
                    .read_via(stag, end, &mut out, &mut Seen::default())
                    .is_err());
                assert_eq!(out, [0; 8], "nothing copied out of range");
            }
            let mut seen = Seen::default();
            assert!(view
                .read_via(STag(0x100), 0, &mut [0; 4], &mut seen)
                .is_err());
        });
    }

    /// Copies as the CRC hook does and keeps what it was shown.
    #[derive(Default)]
    struct Seen(Vec<u8>);

    impl CopyHook for Seen {
        fn copy(&mut self, out: &mut [u8], src: &[u8]) {
            out.copy_from_slice(src);
            self.0.extend_from_slice(src);
        }
        fn copied(&mut self, bytes: &[u8]) {
            self.0.extend_from_slice(bytes);
        }
    }

    const PD: PdId = PdId(1);

    #[test]
    fn place_checked_answers_as_the_two_steps_do() {
        let reg = Registry::with_seed(5);
        let home = reg
            .insert(PD, Box::new(vec![0; 32]), Access::REMOTE_WRITE)
            .unwrap();
        let other = reg
            .insert(PD, Box::new(vec![0; 32]), Access::LOCAL_WRITE)
            .unwrap();
        let gone = reg.insert(PD, Box::new(vec![0; 32]), Access::ALL).unwrap();
        reg.remove(&gone);
        let (hb, ob) = (home.info.base, other.info.base);
        let stale = STag::new(home.stag().index(), home.stag().key().wrapping_add(1));
        let cases = [
            (home.stag(), PD, hb, 32, Access::REMOTE_WRITE),
            (home.stag(), PD, hb + 31, 1, Access::REMOTE_WRITE),
            (home.stag(), PD, hb + 31, 2, Access::REMOTE_WRITE),
            (home.stag(), PD, hb - 1, 1, Access::REMOTE_WRITE),
            (home.stag(), PD, u64::MAX, 2, Access::REMOTE_WRITE),
            (home.stag(), PdId(2), hb, 4, Access::REMOTE_WRITE),
            (home.stag(), PD, hb, 4, Access::LOCAL_WRITE),
            (home.stag(), PD, hb, 0, Access::REMOTE_READ),
            (stale, PD, hb, 4, Access::REMOTE_WRITE),
            (other.stag(), PD, ob + 8, 8, Access::LOCAL_WRITE),
            (other.stag(), PD, ob + 30, 4, Access::LOCAL_WRITE),
            (other.stag(), PD, ob, 4, Access::REMOTE_WRITE),
            (gone.stag(), PD, gone.info.base, 4, Access::REMOTE_WRITE),
        ];
        for (i, &(stag, pd, to, len, need)) in cases.iter().enumerate() {
            let data = vec![i as u8 + 1; len];
            let mut cache = RegionCache(Some(home.clone()));
            let fast =
                reg.with_cached_view(&mut cache, |v| v.place_checked(stag, pd, to, &data, need));
            let after_fast = (
                home.bytes.read().unwrap().bytes().to_vec(),
                other.bytes.read().unwrap().bytes().to_vec(),
            );
            let mut cache = RegionCache(Some(home.clone()));
            let slow = reg.with_cached_view(&mut cache, |v| {
                place_in_two_steps(v, stag, pd, to, &data, need)
            });
            let after_slow = (
                home.bytes.read().unwrap().bytes().to_vec(),
                other.bytes.read().unwrap().bytes().to_vec(),
            );
            assert_eq!(fast, slow, "case {i}");
            assert_eq!(after_fast, after_slow, "case {i}: the same bytes written");
            if fast.is_ok() && len > 0 {
                let r = if stag == home.stag() { &home } else { &other };
                let at = (to - r.info.base) as usize;
                assert_eq!(
                    r.bytes.read().unwrap().bytes()[at..at + len],
                    data[..],
                    "case {i}"
                );
            }
        }
        // Only the accepted cases wrote: 0 (all of `home`), 1 (its last
        // byte) and 9 (`other`'s bytes 8..16).
        let mut want = [1u8; 32];
        want[31] = 2;
        assert_eq!(home.bytes.read().unwrap().bytes()[..], want[..]);
        let mut want = [0u8; 32];
        want[8..16].fill(10);
        assert_eq!(other.bytes.read().unwrap().bytes()[..], want[..]);
    }

    #[test]
    fn place_checked_refuses_a_home_region_deregistered_mid_view() {
        let reg = Registry::with_seed(9);
        let home = reg
            .insert(PD, Box::new(vec![0; 8]), Access::REMOTE_WRITE)
            .unwrap();
        let mut cache = RegionCache(Some(home.clone()));
        let base = home.info.base;
        reg.with_cached_view(&mut cache, |v| {
            v.place_checked(home.stag(), PD, base, &[1], Access::REMOTE_WRITE)
                .unwrap();
            reg.remove(&home);
            assert_eq!(
                v.place_checked(home.stag(), PD, base, &[2], Access::REMOTE_WRITE),
                Err(TaggedError::InvalidStag(home.stag().0))
            );
        });
        assert_eq!(home.bytes.read().unwrap().bytes()[0], 1);
    }
}
