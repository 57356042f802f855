//! TCP sequence numbers: 32-bit values compared modulo 2^32.

use std::fmt;

/// A TCP sequence number. Arithmetic wraps; ordering is only meaningful
/// between numbers less than 2^31 apart (RFC 1982 serial arithmetic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// `self - other` as a signed distance.
    pub fn distance_from(self, other: SeqNumber) -> i64 {
        i64::from(self.0.wrapping_sub(other.0) as i32)
    }

    /// `self + n`, wrapping.
    pub fn wrapping_add(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_add(n))
    }
}

impl fmt::Display for SeqNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_wraps() {
        assert_eq!(SeqNumber(5).distance_from(SeqNumber(3)), 2);
        assert_eq!(SeqNumber(3).distance_from(SeqNumber(5)), -2);
        assert_eq!(SeqNumber(2).distance_from(SeqNumber(u32::MAX - 1)), 4);
        assert_eq!(SeqNumber(u32::MAX - 1).distance_from(SeqNumber(2)), -4);
        assert_eq!(SeqNumber(u32::MAX).wrapping_add(2), SeqNumber(1));
    }
}
