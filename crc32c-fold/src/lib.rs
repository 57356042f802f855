//! CRC32c (Castagnoli; the MPA FPDU checksum of RFC 5044) by carry-less
//! multiplication folding with AVX-512 VPCLMULQDQ, and the `crc-fast` crate
//! on CPUs without it.
//!
//! Why a crate of its own: the protocol crates forbid `unsafe`, and the
//! SIMD path needs it: the call into the `#[target_feature]` functions
//! once the CPU is known to have the features, and the unaligned 64-byte
//! load (and, for [`copy_update`], store), each of a slice checked to be
//! long enough. It exists because an MPA FPDU is short (about 1.4 KB at
//! Ethernet's MSS) and each one's CRC is computed on its own, between the
//! copy and the protocol work: four 512-bit accumulators folding 256 bytes
//! a round, and the `crc32` instruction for the last few bytes worked out
//! beside the folding, take half the time `crc-fast` takes for one such
//! call, at the same rate over many overlapping calls (`cargo run
//! --release -p iwarp-mpa --example crc_bench`, figures in docs/performance.md).
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

/// Copies `src` into `dst` and advances the CRC register `crc` over the
/// copied bytes, in one pass: each 64-byte block is loaded once, stored
/// and folded, so the CRC reads no byte a second time. Same result as
/// `dst.copy_from_slice(src); update(crc, dst)`.
///
/// # Panics
///
/// If the two slices differ in length (as `copy_from_slice` does).
#[inline]
pub fn copy_update(crc: u32, dst: &mut [u8], src: &[u8]) -> u32 {
    assert_eq!(dst.len(), src.len(), "copy_update: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if x86::available() {
        // SAFETY: `available` has just confirmed at run time that this CPU
        // has every feature `x86::copy_update` is compiled for.
        return unsafe { x86::copy_update(crc, dst, src) };
    }
    dst.copy_from_slice(src);
    portable(crc, dst)
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
    /// Always inlined: after the first call it is one load and compare at
    /// each CRC, of which there are two per FPDU and more.
    #[inline(always)]
    pub(crate) fn available() -> bool {
        match HAVE.load(Ordering::Relaxed) {
            0 => detect(),
            v => v == 2,
        }
    }

    /// The first call's feature check, kept out of line.
    #[cold]
    #[inline(never)]
    fn detect() -> bool {
        let yes = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("vpclmulqdq")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
            && std::arch::is_x86_feature_detected!("sse4.2");
        HAVE.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
        yes
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

    /// The 64 bytes of `src` at `at`, also stored at `at` in `dst` when
    /// `COPY` (`dst` is as long as `src` then, and ignored otherwise).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn take<const COPY: bool>(src: &[u8], dst: &mut [u8], at: usize) -> __m512i {
        let from = &src[at..at + 64];
        // SAFETY: the 64 bytes read lie inside `src` (the slice above is
        // bounds-checked); the load has no alignment requirement.
        let v = unsafe { _mm512_loadu_si512(from.as_ptr().cast()) };
        if COPY {
            let to = &mut dst[at..at + 64];
            // SAFETY: the 64 bytes written lie inside `dst` (the slice
            // above is bounds-checked), which is borrowed mutably, so
            // nothing else sees them; no alignment requirement.
            unsafe { _mm512_storeu_si512(to.as_mut_ptr().cast(), v) };
        }
        v
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
        // At most 7 bytes left: one step each of 4, 2 and 1 bytes rather
        // than up to seven dependent byte steps.
        let mut rest = words.remainder();
        if let Some((w, r)) = rest.split_first_chunk::<4>() {
            crc = _mm_crc32_u32(crc, u32::from_le_bytes(*w));
            rest = r;
        }
        if let Some((w, r)) = rest.split_first_chunk::<2>() {
            crc = _mm_crc32_u16(crc, u16::from_le_bytes(*w));
            rest = r;
        }
        if let Some(&b) = rest.first() {
            crc = _mm_crc32_u8(crc, b);
        }
        crc
    }

    /// The register advanced over `data`.
    #[target_feature(enable = "avx512f,avx512vl,vpclmulqdq,pclmulqdq,sse4.2")]
    pub(crate) fn update(crc: u32, data: &[u8]) -> u32 {
        run::<false>(crc, data, &mut [])
    }

    /// `data` copied into `dst` (as long as `data`) and the register
    /// advanced over it, each byte read once.
    #[target_feature(enable = "avx512f,avx512vl,vpclmulqdq,pclmulqdq,sse4.2")]
    pub(crate) fn copy_update(crc: u32, dst: &mut [u8], data: &[u8]) -> u32 {
        run::<true>(crc, data, dst)
    }

    /// The register advanced over `data`; when `COPY`, `data` is also
    /// copied into `dst` (as long as `data`) as it is read.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,vpclmulqdq,pclmulqdq,sse4.2")]
    fn run<const COPY: bool>(crc: u32, data: &[u8], dst: &mut [u8]) -> u32 {
        let len = data.len();
        if len < MIN_FOLD_LEN {
            if COPY {
                dst.copy_from_slice(data);
            }
            return tail(crc, data);
        }
        // Four accumulators over the first 256 bytes, the register folded
        // into the first four (it stands for the bytes before them).
        let seed = _mm512_zextsi128_si512(_mm_cvtsi32_si128(crc as i32));
        let mut x0 = _mm512_xor_si512(take::<COPY>(data, dst, 0), seed);
        let mut x1 = take::<COPY>(data, dst, 64);
        let mut x2 = take::<COPY>(data, dst, 128);
        let mut x3 = take::<COPY>(data, dst, 192);
        let mut at = 256;
        let k2048 = k512(F2048);
        while len - at >= 256 {
            x0 = _mm512_ternarylogic_epi64(
                _mm512_clmulepi64_epi128(x0, k2048, 0x00),
                _mm512_clmulepi64_epi128(x0, k2048, 0x11),
                take::<COPY>(data, dst, at),
                0x96,
            );
            x1 = _mm512_ternarylogic_epi64(
                _mm512_clmulepi64_epi128(x1, k2048, 0x00),
                _mm512_clmulepi64_epi128(x1, k2048, 0x11),
                take::<COPY>(data, dst, at + 64),
                0x96,
            );
            x2 = _mm512_ternarylogic_epi64(
                _mm512_clmulepi64_epi128(x2, k2048, 0x00),
                _mm512_clmulepi64_epi128(x2, k2048, 0x11),
                take::<COPY>(data, dst, at + 128),
                0x96,
            );
            x3 = _mm512_ternarylogic_epi64(
                _mm512_clmulepi64_epi128(x3, k2048, 0x00),
                _mm512_clmulepi64_epi128(x3, k2048, 0x11),
                take::<COPY>(data, dst, at + 192),
                0x96,
            );
            at += 256;
        }
        // Onto the last accumulator: 192, 128 and 64 bytes forward.
        let mut x = _mm512_ternarylogic_epi64(
            fold512(x0, k512(F1536)),
            fold512(x1, k512(F1024)),
            _mm512_xor_si512(fold512(x2, k512(F512)), x3),
            0x96,
        );
        let k512b = k512(F512);
        while len - at >= 64 {
            x = _mm512_xor_si512(fold512(x, k512b), take::<COPY>(data, dst, at));
            at += 64;
        }
        let rest = &data[at..];
        if COPY {
            dst[at..].copy_from_slice(rest);
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

    /// `copy_update` against copy-then-oracle, at `start` into `src` and
    /// `dst_start` into the destination (odd alignments of both).
    fn check_copy(src: &[u8], dst_start: usize, register: u32) {
        let mut dst = vec![0xa5u8; src.len() + dst_start + 3];
        let end = dst_start + src.len();
        let got = copy_update(register, &mut dst[dst_start..end], src);
        assert_eq!(&dst[dst_start..end], src, "copied");
        assert!(
            dst[..dst_start].iter().all(|&b| b == 0xa5),
            "before untouched"
        );
        assert!(dst[end..].iter().all(|&b| b == 0xa5), "after untouched");
        assert_eq!(got, update(register, src), "len {}", src.len());
        if register == !0 {
            assert_eq!(!got, ORACLE.checksum(src), "len {}", src.len());
        }
    }

    #[test]
    fn copy_update_every_length_up_to_2k() {
        let data: Vec<u8> = (0..2100u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        for len in 0..=2048 {
            for (start, dst_start) in [(0, 0), (1, 5), (7, 0), (3, 63)] {
                check_copy(&data[start..start + len], dst_start, !0);
            }
        }
        check_copy(&data[..1460], 0, 0x1234_5678);
    }

    #[test]
    fn copy_update_portable_fallback_agrees() {
        let data: Vec<u8> = (0..70_000u32).map(|i| (i * 13 + 1) as u8).collect();
        for len in [0, 1, 255, 256, 1460, 65536, 70_000] {
            let mut dst = vec![0u8; len];
            dst.copy_from_slice(&data[..len]);
            assert_eq!(!portable(!0, &dst), ORACLE.checksum(&data[..len]));
            check_copy(&data[..len], 1, !0);
        }
    }

    #[test]
    #[should_panic(expected = "lengths differ")]
    fn copy_update_refuses_unequal_lengths() {
        copy_update(!0, &mut [0u8; 3], &[0u8; 4]);
    }

    /// The fused folding path itself, where the CPU has it.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_fused_folding_path_agrees() {
        if !x86::available() {
            eprintln!("no AVX-512 VPCLMULQDQ here: fused path not tested");
            return;
        }
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 131 + 17) as u8).collect();
        for len in (0..5000).step_by(7) {
            let mut dst = vec![0u8; len];
            // SAFETY: `available` confirmed the CPU features.
            let got = unsafe { x86::copy_update(!0, &mut dst, &data[..len]) };
            assert_eq!(dst, &data[..len]);
            assert_eq!(!got, ORACLE.checksum(&data[..len]), "len {len}");
        }
    }

    proptest! {
        #[test]
        fn copy_update_matches_copy_then_oracle(
            data in proptest::collection::vec(any::<u8>(), 0..9000),
            start in 0usize..64,
            dst_start in 0usize..64,
            register in any::<u32>(),
        ) {
            let start = start.min(data.len());
            let src = &data[start..];
            let mut dst = vec![0x5au8; src.len() + dst_start];
            let got = copy_update(register, &mut dst[dst_start..], src);
            prop_assert_eq!(&dst[dst_start..], src);
            prop_assert!(dst[..dst_start].iter().all(|&b| b == 0x5a));
            let mut want = vec![0u8; src.len()];
            want.copy_from_slice(src);
            prop_assert_eq!(!copy_update(!0, &mut want, src), ORACLE.checksum(src));
            prop_assert_eq!(got, update(register, src));
        }

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
