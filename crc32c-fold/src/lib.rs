//! CRC32c (Castagnoli; the MPA FPDU checksum of RFC 5044) by carry-less
//! multiplication folding with AVX-512 VPCLMULQDQ, and the `crc-fast` crate
//! on CPUs without it.
//!
//! Why a crate of its own: the protocol crates forbid `unsafe`, and the
//! SIMD path needs it twice: the call into the `#[target_feature]`
//! function once the CPU is known to have the features, and the unaligned
//! 64-byte load, each of a slice checked to be long enough. It exists because an MPA FPDU is short (about 1.4 KB at
//! Ethernet's MSS) and each one's CRC is computed on its own, between the
//! copy and the protocol work: four 512-bit accumulators folding 256 bytes
//! a round, and the `crc32` instruction for the last few bytes worked out
//! beside the folding, take half the time `crc-fast` takes for one such
//! call, at the same rate over many overlapping calls (`cargo run
//! --release -p mpa --example crc_bench`, figures in the README).
//!
//! The folding follows Intel's "Fast CRC Computation for Generic
//! Polynomials Using PCLMULQDQ" (Gopal et al., 2009), in the bit-reflected
//! form: a 128-bit lane `D` bits ahead of another is moved onto it by
//! multiplying its low half by `x^(D+32) mod P` and its high half by
//! `x^(D-32) mod P` (both bit-reflected and shifted left by one), which
//! leaves the polynomial unchanged modulo P. The folded 128 bits are then
//! run through the `crc32` instruction like any other 16 bytes.

/// CRC32c of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    !update(!0, data)
}

/// Advances the CRC register `crc` (not inverted: start from `!0`, invert
/// at the end) over `data`. `update(update(r, a), b) == update(r, a ++ b)`.
#[inline]
pub fn update(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if x86::available() {
        // SAFETY: `available` has just confirmed at run time that this CPU
        // has every feature `x86::update` is compiled for.
        return unsafe { x86::update(crc, data) };
    }
    portable(crc, data)
}

/// The register update by `crc-fast` (its own run-time dispatch).
fn portable(crc: u32, data: &[u8]) -> u32 {
    // `crc-fast`'s state is the register; `finalize` inverts it.
    let mut d =
        crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, u64::from(crc));
    d.update(data);
    !(d.finalize() as u32)
}

/// Constants computed at compile time from the polynomial, so none is
/// typed in by hand.
mod consts {
    /// CRC32c's polynomial, bit-reflected.
    const POLY: u32 = 0x82F6_3B78;

    /// `x^n mod P`, bit-reflected (bit 31 is x^0).
    const fn xpow(n: u32) -> u32 {
        let mut v: u32 = 0x8000_0000;
        let mut i = 0;
        while i < n {
            v = if v & 1 == 1 { (v >> 1) ^ POLY } else { v >> 1 };
            i += 1;
        }
        v
    }

    /// The (low-half, high-half) multipliers that fold a 128-bit lane
    /// forward by `bits`.
    pub(crate) const fn fold(bits: u32) -> (u64, u64) {
        ((xpow(bits + 32) as u64) << 1, (xpow(bits - 32) as u64) << 1)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    use super::consts::fold;

    /// Below this the `crc32` instruction alone does it (the folding
    /// needs one 256-byte round to start).
    const MIN_FOLD_LEN: usize = 256;

    /// 0 = not checked yet, 1 = no, 2 = yes.
    static HAVE: AtomicU8 = AtomicU8::new(0);

    /// Whether this CPU has what [`update`] is compiled for (checked once).
    #[inline]
    pub(crate) fn available() -> bool {
        match HAVE.load(Ordering::Relaxed) {
            0 => {
                let yes = std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("vpclmulqdq")
                    && std::arch::is_x86_feature_detected!("pclmulqdq")
                    && std::arch::is_x86_feature_detected!("sse4.2");
                HAVE.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
                yes
            }
            v => v == 2,
        }
    }

    // Each fold's multipliers, evaluated at compile time.
    const F2048: (u64, u64) = fold(2048);
    const F1536: (u64, u64) = fold(1536);
    const F1024: (u64, u64) = fold(1024);
    const F512: (u64, u64) = fold(512);
    const F384: (u64, u64) = fold(384);
    const F256: (u64, u64) = fold(256);
    const F128: (u64, u64) = fold(128);

    /// Per tail length `t` (4 to 63 bytes), the multipliers that move the
    /// folded 16 bytes forward past the tail: `fold(8 * t)`.
    const TAIL: [(u64, u64); 64] = {
        let mut t = [(0, 0); 64];
        let mut i = 4;
        while i < 64 {
            t[i] = fold(8 * i as u32);
            i += 1;
        }
        t
    };

    /// A 512-bit vector of one fold's multipliers in every 128-bit lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn k512((lo, hi): (u64, u64)) -> __m512i {
        _mm512_set_epi64(
            hi as i64, lo as i64, hi as i64, lo as i64, hi as i64, lo as i64, hi as i64, lo as i64,
        )
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn k128((lo, hi): (u64, u64)) -> __m128i {
        _mm_set_epi64x(hi as i64, lo as i64)
    }

    /// Every lane of `x` moved forward by the distance `k` was made for.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn fold512(x: __m512i, k: __m512i) -> __m512i {
        _mm512_xor_si512(
            _mm512_clmulepi64_epi128(x, k, 0x00),
            _mm512_clmulepi64_epi128(x, k, 0x11),
        )
    }

    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    fn fold128(x: __m128i, k: __m128i) -> __m128i {
        _mm_xor_si128(
            _mm_clmulepi64_si128(x, k, 0x00),
            _mm_clmulepi64_si128(x, k, 0x11),
        )
    }

    /// 64 bytes from the front of `chunk` (which holds at least 64).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load(chunk: &[u8]) -> __m512i {
        assert!(chunk.len() >= 64);
        // SAFETY: the 64 bytes read lie inside `chunk` (checked above); the
        // load has no alignment requirement.
        unsafe { _mm512_loadu_si512(chunk.as_ptr().cast()) }
    }

    /// The register advanced over `data` by the `crc32` instruction.
    #[inline]
    #[target_feature(enable = "sse4.2")]
    fn tail(mut crc: u32, data: &[u8]) -> u32 {
        let mut words = data.chunks_exact(8);
        let mut c = u64::from(crc);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            c = _mm_crc32_u64(c, u64::from_le_bytes(b));
        }
        crc = c as u32;
        for &b in words.remainder() {
            crc = _mm_crc32_u8(crc, b);
        }
        crc
    }

    /// The register advanced over `data` (at least [`MIN_FOLD_LEN`] bytes).
    #[target_feature(enable = "avx512f,avx512vl,vpclmulqdq,pclmulqdq,sse4.2")]
    pub(crate) fn update(crc: u32, data: &[u8]) -> u32 {
        if data.len() < MIN_FOLD_LEN {
            return tail(crc, data);
        }
        // Four accumulators over the first 256 bytes, the register folded
        // into the first four (it stands for the bytes before them).
        let (head, mut rest) = data.split_at(256);
        let seed = _mm512_zextsi128_si512(_mm_cvtsi32_si128(crc as i32));
        let mut x0 = _mm512_xor_si512(load(head), seed);
        let mut x1 = load(&head[64..]);
        let mut x2 = load(&head[128..]);
        let mut x3 = load(&head[192..]);
        let k2048 = k512(F2048);
        while rest.len() >= 256 {
            x0 = _mm512_ternarylogic_epi64(
                _mm512_clmulepi64_epi128(x0, k2048, 0x00),
                _mm512_clmulepi64_epi128(x0, k2048, 0x11),
                load(rest),
                0x96,
            );
            x1 = _mm512_ternarylogic_epi64(
                _mm512_clmulepi64_epi128(x1, k2048, 0x00),
                _mm512_clmulepi64_epi128(x1, k2048, 0x11),
                load(&rest[64..]),
                0x96,
            );
            x2 = _mm512_ternarylogic_epi64(
                _mm512_clmulepi64_epi128(x2, k2048, 0x00),
                _mm512_clmulepi64_epi128(x2, k2048, 0x11),
                load(&rest[128..]),
                0x96,
            );
            x3 = _mm512_ternarylogic_epi64(
                _mm512_clmulepi64_epi128(x3, k2048, 0x00),
                _mm512_clmulepi64_epi128(x3, k2048, 0x11),
                load(&rest[192..]),
                0x96,
            );
            rest = &rest[256..];
        }
        // Onto the last accumulator: 192, 128 and 64 bytes forward.
        let mut x = _mm512_ternarylogic_epi64(
            fold512(x0, k512(F1536)),
            fold512(x1, k512(F1024)),
            _mm512_xor_si512(fold512(x2, k512(F512)), x3),
            0x96,
        );
        let k512b = k512(F512);
        while rest.len() >= 64 {
            x = _mm512_xor_si512(fold512(x, k512b), load(rest));
            rest = &rest[64..];
        }
        // Four lanes onto the last: 48, 32 and 16 bytes forward.
        let l0 = _mm512_extracti32x4_epi32::<0>(x);
        let l1 = _mm512_extracti32x4_epi32::<1>(x);
        let l2 = _mm512_extracti32x4_epi32::<2>(x);
        let l3 = _mm512_extracti32x4_epi32::<3>(x);
        let v = _mm_ternarylogic_epi64(
            fold128(l0, k128(F384)),
            fold128(l1, k128(F256)),
            _mm_xor_si128(fold128(l2, k128(F128)), l3),
            0x96,
        );
        // The 16 folded bytes stand for everything before the tail. The
        // tail's register (from zero) is worked out beside the folding
        // rather than after it; the folded bytes are moved forward past
        // the tail instead, and the two registers added.
        let (v, tail_crc) = match rest.len() {
            t @ 4.. => (fold128(v, k128(TAIL[t])), tail(0, rest)),
            _ => (v, 0),
        };
        let lo = _mm_cvtsi128_si64(v) as u64;
        let hi = _mm_extract_epi64::<1>(v) as u64;
        let c = _mm_crc32_u64(_mm_crc32_u64(0, lo), hi) as u32;
        if rest.len() >= 4 {
            c ^ tail_crc
        } else {
            tail(c, rest)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ORACLE: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

    #[test]
    fn check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[]), 0);
    }

    #[test]
    fn every_length_up_to_2k_matches_the_oracle() {
        let data: Vec<u8> = (0..2100u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in 0..=data.len() {
            for start in [0, 1, 7] {
                let d = &data[start.min(len)..len];
                assert_eq!(
                    crc32c(d),
                    ORACLE.checksum(d),
                    "len {} start {start}",
                    d.len()
                );
            }
        }
    }

    #[test]
    fn all_ones_and_zeros_at_fold_boundaries() {
        for len in [
            255, 256, 257, 319, 320, 511, 512, 513, 1460, 1464, 4096, 65536,
        ] {
            for byte in [0u8, 0xff] {
                let d = vec![byte; len];
                assert_eq!(crc32c(&d), ORACLE.checksum(&d), "len {len} byte {byte:#x}");
            }
        }
    }

    #[test]
    fn the_portable_path_agrees() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in [0, 1, 63, 255, 256, 1460, 3000] {
            assert_eq!(!portable(!0, &data[..len]), ORACLE.checksum(&data[..len]));
        }
    }

    /// The folding path itself, where the CPU has it (the tests above go
    /// through the dispatch, which may pick `crc-fast`).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_folding_path_agrees() {
        if !x86::available() {
            eprintln!("no AVX-512 VPCLMULQDQ here: folding path not tested");
            return;
        }
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 131 + 17) as u8).collect();
        for len in (0..5000).step_by(7) {
            // SAFETY: `available` confirmed the CPU features.
            let got = unsafe { x86::update(!0, &data[..len]) };
            assert_eq!(!got, ORACLE.checksum(&data[..len]), "len {len}");
        }
    }

    proptest! {
        #[test]
        fn matches_oracle(data in proptest::collection::vec(any::<u8>(), 0..9000)) {
            prop_assert_eq!(crc32c(&data), ORACLE.checksum(&data));
        }

        #[test]
        fn updates_chain(data in proptest::collection::vec(any::<u8>(), 0..3000), cut in any::<usize>()) {
            let cut = cut % (data.len() + 1);
            let r = update(update(!0, &data[..cut]), &data[cut..]);
            prop_assert_eq!(!r, ORACLE.checksum(&data));
        }
    }
}
