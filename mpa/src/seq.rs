//! Positions in the TCP byte stream, for marker placement.
//!
//! MPA places a marker every 512 octets of the stream counted from the first
//! octet of the first FPDU (RFC 5044), so both ends keep a
//! position that wraps modulo 2^32 exactly like a TCP sequence number. 2^32 is
//! a multiple of 512, so the marker grid is seamless across the wrap.

use core::fmt;
use core::ops::{Add, AddAssign};

/// Spacing of MPA markers in the TCP stream, in octets.
pub const MARKER_INTERVAL: usize = 512;

/// Size of one MPA marker (16 bits reserved, 16-bit FPDUPTR).
pub const MARKER_LEN: usize = 4;

/// A position in the TCP byte stream, relative to the first octet of the
/// first FPDU (position 0). Arithmetic wraps modulo 2^32, as TCP sequence
/// numbers do; compare positions only through [`StreamOffset::wrapping_sub`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamOffset(pub u32);

impl StreamOffset {
    /// The first octet of the first FPDU.
    pub const ZERO: StreamOffset = StreamOffset(0);

    /// `self - earlier` modulo 2^32: the number of octets from `earlier` up
    /// to `self`, assuming `earlier` is not more than 2^32 - 1 octets behind.
    #[inline]
    pub fn wrapping_sub(self, earlier: StreamOffset) -> u32 {
        self.0.wrapping_sub(earlier.0)
    }

    /// True when a marker starts at this position.
    #[inline]
    pub fn is_marker_slot(self) -> bool {
        (self.0 as usize).is_multiple_of(MARKER_INTERVAL)
    }

    /// Octets from here to the next marker slot; 0 when a marker starts
    /// here.
    #[inline]
    pub fn until_marker(self) -> usize {
        (MARKER_INTERVAL - self.0 as usize % MARKER_INTERVAL) % MARKER_INTERVAL
    }
}

impl Add<usize> for StreamOffset {
    type Output = StreamOffset;

    /// Advances by `n` octets modulo 2^32 (`n` is taken modulo 2^32).
    #[inline]
    fn add(self, n: usize) -> StreamOffset {
        StreamOffset(self.0.wrapping_add(n as u32))
    }
}

impl AddAssign<usize> for StreamOffset {
    #[inline]
    fn add_assign(&mut self, n: usize) {
        *self = *self + n;
    }
}

impl fmt::Display for StreamOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn zero_is_a_marker_slot() {
        assert!(StreamOffset::ZERO.is_marker_slot());
        assert_eq!(StreamOffset::ZERO.until_marker(), 0);
    }

    #[test]
    fn until_marker_counts_down() {
        assert_eq!(StreamOffset(1).until_marker(), 511);
        assert_eq!(StreamOffset(508).until_marker(), 4);
        assert_eq!(StreamOffset(512).until_marker(), 0);
        assert_eq!(StreamOffset(513).until_marker(), 511);
    }

    #[test]
    fn add_wraps_like_a_sequence_number() {
        let near_end = StreamOffset(u32::MAX - 1);
        assert_eq!(near_end + 3, StreamOffset(1));
        let mut p = near_end;
        p += 2;
        assert_eq!(p, StreamOffset::ZERO);
    }

    #[test]
    fn marker_grid_is_seamless_across_the_wrap() {
        // The last slot before the wrap is 2^32 - 512; the next one is 0.
        let last = StreamOffset(u32::MAX - 511);
        assert!(last.is_marker_slot());
        assert_eq!((last + 1).until_marker(), 511);
        assert!((last + 512).is_marker_slot());
        assert_eq!(last + 512, StreamOffset::ZERO);
    }

    #[test]
    fn wrapping_sub_across_the_wrap() {
        assert_eq!(StreamOffset(4).wrapping_sub(StreamOffset(u32::MAX - 3)), 8);
    }

    proptest! {
        #[test]
        fn add_then_sub_is_identity(start in any::<u32>(), n in 0u32..=u32::MAX) {
            let p = StreamOffset(start);
            prop_assert_eq!((p + n as usize).wrapping_sub(p), n);
        }

        #[test]
        fn until_marker_lands_on_a_slot(start in any::<u32>()) {
            let p = StreamOffset(start);
            let q = p + p.until_marker();
            prop_assert!(q.is_marker_slot());
            prop_assert!(p.until_marker() < MARKER_INTERVAL);
        }
    }
}
