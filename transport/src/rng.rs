//! The workspace's one small seeded generator: fault injection on the
//! memory link, STag keys, the hostile peer's mutants and random FPDUs,
//! the fuzz seeds' mutator and the randomized tests all draw from it, so
//! a printed seed replays the same run everywhere.
//!
//! SplitMix64: one add and three xor-multiplies per draw, every seed
//! (including 0) gives a full-period, well-mixed sequence. Not for secrets.

/// Deterministic pseudo-random numbers from a 64-bit seed.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 bits of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// In `0..n` by remainder (0 when `n` is 0, and then no draw is
    /// taken). Slightly biased for large `n`; the mutators' recorded seeds
    /// replay through it, so it stays beside [`below`](Self::below).
    pub fn below_by_remainder(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `p` (clamped to 0..=1).
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        // 53 random bits as a float in [0, 1).
        let unit = (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        unit < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn different_seeds_differ() {
        let mut a = SplitMix64::new(1);
        let mut b = SplitMix64::new(2);
        let same = (0..100).filter(|_| a.next_u64() == b.next_u64()).count();
        assert_eq!(same, 0);
    }

    #[test]
    fn known_first_output_for_seed_zero() {
        // Reference value of SplitMix64 (Vigna) for seed 0.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn remainder_draws_are_the_remainder_of_the_next_draw() {
        let (mut a, mut b) = (SplitMix64::new(5), SplitMix64::new(5));
        for n in 1..200 {
            assert_eq!(a.below_by_remainder(n), b.next_u64() % n);
        }
        // No draw for an empty range: the sequences stay in step.
        assert_eq!(a.below_by_remainder(0), 0);
        assert_eq!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = SplitMix64::new(7);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn chance_matches_probability_roughly() {
        let mut r = SplitMix64::new(99);
        let hits = (0..100_000).filter(|_| r.chance(0.05)).count();
        assert!((4_500..5_500).contains(&hits), "{hits}");
        assert!(!(0..1000).any(|_| r.chance(0.0)));
        assert!((0..1000).all(|_| r.chance(1.0)));
    }
}
