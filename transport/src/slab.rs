//! Slot storage whose keys are never reused.
//!
//! A key is `generation << 32 | slot`: lookups are one index and one compare,
//! and a key kept after its entry was removed finds nothing instead of the
//! entry that later took its slot.

#[derive(Debug)]
pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Stores `value`; `None` only after 2^32 live entries.
    pub(crate) fn insert(&mut self, value: T) -> Option<u64> {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.slots.len()).ok()?;
                self.slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                i
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.value = Some(value);
        self.len += 1;
        Some((u64::from(slot.generation) << 32) | u64::from(index))
    }

    fn slot_of(&self, key: u64) -> Option<usize> {
        let index = (key & 0xffff_ffff) as usize;
        let slot = self.slots.get(index)?;
        (u64::from(slot.generation) == key >> 32 && slot.value.is_some()).then_some(index)
    }

    pub(crate) fn get(&self, key: u64) -> Option<&T> {
        let i = self.slot_of(key)?;
        self.slots[i].value.as_ref()
    }

    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut T> {
        let i = self.slot_of(key)?;
        self.slots[i].value.as_mut()
    }

    pub(crate) fn remove(&mut self, key: u64) -> Option<T> {
        let i = self.slot_of(key)?;
        let slot = &mut self.slots[i];
        let value = slot.value.take();
        // A slot whose generation would wrap is retired rather than reused.
        if let Some(next) = slot.generation.checked_add(1) {
            slot.generation = next;
            self.free.push(i as u32);
        }
        self.len -= 1;
        value
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Keys of live entries, in slot order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.value
                .as_ref()
                .map(|_| (u64::from(s.generation) << 32) | i as u64)
        })
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            let key = (u64::from(s.generation) << 32) | i as u64;
            s.value.as_ref().map(|v| (key, v))
        })
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (u64, &mut T)> {
        self.slots.iter_mut().enumerate().filter_map(|(i, s)| {
            let key = (u64::from(s.generation) << 32) | i as u64;
            s.value.as_mut().map(|v| (key, v))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn insert_get_remove() {
        let mut s = Slab::default();
        let a = s.insert("a").unwrap();
        let b = s.insert("b").unwrap();
        assert_eq!(s.get(a), Some(&"a"));
        assert_eq!(s.get(b), Some(&"b"));
        assert_eq!(s.len(), 2);
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.get(a), None);
        assert_eq!(s.remove(a), None);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn stale_key_does_not_alias_reused_slot() {
        let mut s = Slab::default();
        let a = s.insert(1).unwrap();
        s.remove(a);
        let b = s.insert(2).unwrap();
        assert_ne!(a, b);
        assert_eq!(a & 0xffff_ffff, b & 0xffff_ffff, "slot reused");
        assert_eq!(s.get(a), None);
        assert_eq!(s.get(b), Some(&2));
    }

    #[test]
    fn unknown_keys_find_nothing() {
        let mut s: Slab<u8> = Slab::default();
        assert_eq!(s.get(0), None);
        assert_eq!(s.get_mut(u64::MAX), None);
        assert_eq!(s.remove(12345), None);
    }

    #[test]
    fn keys_and_iter_mut_list_live_entries() {
        let mut s = Slab::default();
        let k: Vec<u64> = (0..5).map(|i| s.insert(i).unwrap()).collect();
        s.remove(k[1]);
        s.remove(k[3]);
        let live: Vec<u64> = s.keys().collect();
        assert_eq!(live, vec![k[0], k[2], k[4]]);
        for (_, v) in s.iter_mut() {
            *v *= 10;
        }
        assert_eq!(s.get(k[4]), Some(&40));
    }

    proptest! {
        /// Against a model: every key ever issued is unique and finds exactly
        /// the value the model holds for it.
        #[test]
        fn matches_model(ops in proptest::collection::vec((any::<bool>(), any::<u8>()), 0..200)) {
            let mut s = Slab::default();
            let mut model: Vec<(u64, u8, bool)> = Vec::new();
            for (insert, v) in ops {
                if insert || model.iter().all(|m| !m.2) {
                    let k = s.insert(v).unwrap();
                    prop_assert!(model.iter().all(|m| m.0 != k));
                    model.push((k, v, true));
                } else {
                    let live: Vec<usize> = (0..model.len()).filter(|&i| model[i].2).collect();
                    let pick = live[v as usize % live.len()];
                    prop_assert_eq!(s.remove(model[pick].0), Some(model[pick].1));
                    model[pick].2 = false;
                }
                for &(k, v, alive) in &model {
                    prop_assert_eq!(s.get(k).copied(), alive.then_some(v));
                }
                prop_assert_eq!(s.len(), model.iter().filter(|m| m.2).count());
            }
        }
    }
}
