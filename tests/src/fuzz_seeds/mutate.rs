//! A small deterministic mutator in the spirit of libFuzzer's: bit flips,
//! interesting values, truncation, erasure, insertion, duplication and
//! splicing, stacked a few at a time. Seeded, so a failure found in CI
//! replays exactly from the printed seed.

use verbs::transport::SplitMix64;

/// The mutator's draws (the workspace's SplitMix64); a seed replays the
/// same mutations.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// In `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below_by_remainder(n as u64) as usize
    }

    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

/// Values that sit on boundaries parsers get wrong.
const INTERESTING_8: [u8; 9] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x7f, 0x80, 0xfe, 0xff];
const INTERESTING_16: [u16; 8] = [0, 1, 0x3fff, 0x4000, 0x7fff, 0x8000, 0xfffe, 0xffff];
const INTERESTING_32: [u32; 7] = [
    0,
    1,
    0x100,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0xffff_ffff,
];

/// One mutation of `data` in place. `other` is another input of the same
/// target to splice from. `data` never grows past `max_len`.
pub fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8], max_len: usize) {
    let len = data.len();
    match rng.below(10) {
        // Flip one bit.
        0 | 1 if len > 0 => {
            let i = rng.below(len);
            data[i] ^= 1 << rng.below(8);
        }
        // A random or interesting byte.
        2 if len > 0 => {
            let i = rng.below(len);
            data[i] = if rng.below(2) == 0 {
                rng.byte()
            } else {
                INTERESTING_8[rng.below(INTERESTING_8.len())]
            };
        }
        // An interesting 16- or 32-bit big-endian value (lengths, MSNs,
        // STags and offsets are all big-endian on the wire).
        3 if len >= 2 => {
            if len >= 4 && rng.below(2) == 0 {
                let i = rng.below(len - 3);
                let v = INTERESTING_32[rng.below(INTERESTING_32.len())];
                data[i..i + 4].copy_from_slice(&v.to_be_bytes());
            } else {
                let i = rng.below(len - 1);
                let v = INTERESTING_16[rng.below(INTERESTING_16.len())];
                data[i..i + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
        // Add or subtract a little from a byte (lengths off by a few).
        4 if len > 0 => {
            let i = rng.below(len);
            let d = rng.below(9) as u8;
            data[i] = data[i].wrapping_add(d).wrapping_sub(4);
        }
        // Truncate.
        5 if len > 0 => data.truncate(rng.below(len)),
        // Erase a range.
        6 if len > 1 => {
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(64));
            data.drain(at..at + n);
        }
        // Insert random bytes.
        7 if len < max_len => {
            let at = rng.below(len + 1);
            let n = (1 + rng.below(16)).min(max_len - len);
            let bytes: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
            data.splice(at..at, bytes);
        }
        // Duplicate a range of itself somewhere else.
        8 if len > 0 && len < max_len => {
            let from = rng.below(len);
            let n = (1 + rng.below((len - from).min(256))).min(max_len - len);
            let chunk = data[from..from + n].to_vec();
            let at = rng.below(len + 1);
            data.splice(at..at, chunk);
        }
        // Splice: our head, the other input's tail.
        9 if !other.is_empty() => {
            let cut = rng.below(len + 1);
            let from = rng.below(other.len());
            data.truncate(cut);
            let n = (other.len() - from).min(max_len.saturating_sub(cut));
            data.extend_from_slice(&other[from..from + n]);
        }
        // The chosen mutation does not apply to this input: flip a bit of
        // a byte, or grow an empty input.
        _ => {
            if len == 0 {
                data.push(rng.byte());
            } else {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
        }
    }
    data.truncate(max_len);
}

/// `seed` with one to four stacked mutations.
pub fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8], max_len: usize) -> Vec<u8> {
    let mut data = seed[..seed.len().min(max_len)].to_vec();
    for _ in 0..1 + rng.below(4) {
        mutate_once(rng, &mut data, other, max_len);
    }
    data
}
