//! CRC32c (Castagnoli), the MPA FPDU checksum (RFC 5044; the iSCSI
//! polynomial of RFC 3720 appendix B.4).
//!
//! The data path uses the `crc32c-fold` crate: AVX-512 VPCLMULQDQ folding
//! where the CPU has it (`crc-fast` elsewhere). At an FPDU's size it takes
//! half the time `crc-fast` takes for one call on its own
//! (`examples/crc_bench.rs`; the figures are in docs/performance.md). The
//! table-driven `crc` crate is the oracle in tests.

/// CRC32c of `data` in one call.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_fold::crc32c(data)
}

/// Streaming CRC32c for data that arrives in pieces (a split FPDU, markers
/// interleaved with payload).
///
/// `Crc32c::new().update(a).update(b).finish() == crc32c(a ++ b)`.
#[derive(Clone, Copy)]
pub struct Crc32c {
    /// The CRC register (not inverted).
    register: u32,
}

impl core::fmt::Debug for Crc32c {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Crc32c")
            .field("so_far", &format_args!("{:#010x}", self.finish()))
            .finish()
    }
}

impl Default for Crc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32c {
    /// A CRC over no bytes yet.
    #[inline]
    pub fn new() -> Self {
        Crc32c { register: !0 }
    }

    /// Adds `data` to the checksum.
    #[inline]
    pub fn update(&mut self, data: &[u8]) -> &mut Self {
        self.register = crc32c_fold::update(self.register, data);
        self
    }

    /// The checksum of everything added so far; the state stays usable.
    #[inline]
    pub fn finish(&self) -> u32 {
        !self.register
    }

    /// Starts over, as if just created.
    #[inline]
    pub fn reset(&mut self) {
        *self = Self::new();
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
    }

    #[test]
    fn empty_input() {
        assert_eq!(crc32c(&[]), 0);
        assert_eq!(Crc32c::new().finish(), 0);
    }

    // RFC 3720 appendix B.4 test vectors. The RFC prints the CRC bytes in the
    // order they go on the wire, least significant byte first.
    #[test]
    fn rfc3720_32_zero_bytes() {
        assert_eq!(crc32c(&[0u8; 32]).to_le_bytes(), [0xaa, 0x36, 0x91, 0x8a]);
    }

    #[test]
    fn rfc3720_32_ones() {
        assert_eq!(
            crc32c(&[0xffu8; 32]).to_le_bytes(),
            [0x43, 0xab, 0xa8, 0x62]
        );
    }

    #[test]
    fn rfc3720_incrementing() {
        let data: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&data).to_le_bytes(), [0x4e, 0x79, 0xdd, 0x46]);
    }

    #[test]
    fn rfc3720_decrementing() {
        let data: Vec<u8> = (0u8..32).rev().collect();
        assert_eq!(crc32c(&data).to_le_bytes(), [0x5c, 0xdb, 0x3f, 0x11]);
    }

    #[test]
    fn rfc3720_iscsi_read_pdu() {
        let mut pdu = [0u8; 48];
        pdu[0] = 0x01;
        pdu[1] = 0xc0;
        pdu[16..20].copy_from_slice(&[0x14, 0, 0, 0]);
        pdu[20..24].copy_from_slice(&[0, 0, 0x04, 0]);
        pdu[24..28].copy_from_slice(&[0, 0, 0, 0x14]);
        pdu[28..32].copy_from_slice(&[0, 0, 0, 0x18]);
        pdu[32..36].copy_from_slice(&[0x28, 0, 0, 0]);
        pdu[40] = 0x02;
        assert_eq!(crc32c(&pdu).to_le_bytes(), [0x56, 0x3a, 0x96, 0xd9]);
    }

    #[test]
    fn reset_starts_over() {
        let mut c = Crc32c::new();
        c.update(b"garbage");
        c.reset();
        c.update(b"123456789");
        assert_eq!(c.finish(), 0xE306_9283);
    }

    #[test]
    fn finish_does_not_consume() {
        let mut c = Crc32c::new();
        c.update(b"1234");
        let _ = c.finish();
        c.update(b"56789");
        assert_eq!(c.finish(), 0xE306_9283);
    }

    proptest! {
        #[test]
        fn matches_oracle(data in proptest::collection::vec(any::<u8>(), 0..5000)) {
            prop_assert_eq!(crc32c(&data), ORACLE.checksum(&data));
        }

        #[test]
        fn streaming_equals_one_shot(
            data in proptest::collection::vec(any::<u8>(), 0..3000),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (data.len() + 1)).collect();
            cuts.sort_unstable();
            let mut c = Crc32c::new();
            let mut from = 0;
            for cut in cuts {
                c.update(&data[from..cut]);
                from = cut;
            }
            c.update(&data[from..]);
            prop_assert_eq!(c.finish(), ORACLE.checksum(&data));
        }
    }
}
