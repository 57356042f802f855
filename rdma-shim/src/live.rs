//! The handles this library has given out and not yet taken back.
//!
//! rdma-core trusts every pointer a program hands it; a program that uses
//! an id or channel after destroying it (perftest 4.5's client does, when
//! it retries a refused connection) then reads freed memory. The library
//! looks such handles up here first and fails the call with EINVAL, so
//! a stale handle is an error return, not a write through a dangling
//! pointer. Lookup is by address, so a handle whose memory was reused
//! for a new object of the same kind names the new one, as in rdma-core.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

/// A set of live handle addresses.
pub(crate) struct Live(Mutex<BTreeSet<usize>>);

impl Live {
    pub(crate) const fn new() -> Self {
        Self(Mutex::new(BTreeSet::new()))
    }

    fn set(&self) -> MutexGuard<'_, BTreeSet<usize>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lists a handle just made.
    pub(crate) fn insert<T>(&self, p: *mut T) {
        self.set().insert(p as usize);
    }

    /// Unlists a handle; false when it was not listed (destroyed already,
    /// or never ours), so the caller must not free it.
    pub(crate) fn remove<T>(&self, p: *mut T) -> bool {
        self.set().remove(&(p as usize))
    }

    /// Whether `p` is listed.
    pub(crate) fn contains<T>(&self, p: *mut T) -> bool {
        !p.is_null() && self.set().contains(&(p as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_is_live_from_insert_to_its_one_remove() {
        let live = Live::new();
        let mut a = 1u8;
        let mut b = 2u8;
        let (pa, pb) = (&mut a as *mut u8, &mut b as *mut u8);
        assert!(!live.contains(pa));
        live.insert(pa);
        assert!(live.contains(pa));
        assert!(!live.contains(pb));
        assert!(!live.contains(std::ptr::null_mut::<u8>()));
        assert!(live.remove(pa));
        assert!(!live.contains(pa));
        assert!(!live.remove(pa), "a second destroy finds nothing");
        live.insert(pb);
        assert!(live.contains(pb));
    }
}
