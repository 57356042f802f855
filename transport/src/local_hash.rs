//! A hasher for map keys the process hands out itself (socket handles,
//! stream ids, queue pair numbers), never a peer's choice: one multiply
//! per key. SipHash, std's default, showed in profiles of small messages,
//! where every post, every poll and every turn looks such a key up. Keys
//! a peer chooses keep std's hasher.

use std::hash::{BuildHasherDefault, Hasher};

/// The multiply hash (Fibonacci hashing's constant).
#[derive(Default)]
pub struct LocalKeyHasher(u64);

/// Builds [`LocalKeyHasher`]s: `HashMap<K, V, LocalKeys>`.
pub type LocalKeys = BuildHasherDefault<LocalKeyHasher>;

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for LocalKeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(K);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn neighbouring_keys_spread_and_maps_work() {
        let hash = |n: u32| {
            let mut h = LocalKeyHasher::default();
            h.write_u32(n);
            h.finish()
        };
        assert_ne!(hash(1), hash(2));
        // Neighbours land far apart in the high bits a table uses.
        assert_ne!(hash(1) >> 57, hash(2) >> 57);
        let mut m: HashMap<u32, u32, LocalKeys> = HashMap::default();
        for i in 0..1000 {
            m.insert(i, i * 2);
        }
        assert!((0..1000).all(|i| m[&i] == i * 2));
    }
}
