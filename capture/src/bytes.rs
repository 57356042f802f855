//! Bounds-checked big-endian reads: `None` past the end, never a panic.

pub fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(array(b, at)?))
}

pub fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(array(b, at)?))
}

/// `N` bytes at `at`, or `None` if `b` is too short.
pub fn array<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_refuses_past_the_end() {
        let b = [1, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(be16(&b, 0), Some(0x0102));
        assert_eq!(be16(&b, 7), Some(0x0809));
        assert_eq!(be16(&b, 8), None);
        assert_eq!(be32(&b, 5), Some(0x0607_0809));
        assert_eq!(be32(&b, 6), None);
        assert_eq!(be16(&b, usize::MAX), None);
    }
}
