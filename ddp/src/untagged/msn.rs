//! Outbound message sequence numbers.

use super::queue::INITIAL_MSN;

/// The MSN the next outbound message of one queue carries: 1, 2, ...,
/// wrapping after 2^32 - 1 to 0 (RFC 5041 section 5.3: MSN arithmetic is
/// modulo 2^32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsnCounter {
    next: u32,
}

impl Default for MsnCounter {
    fn default() -> Self {
        MsnCounter { next: INITIAL_MSN }
    }
}

impl MsnCounter {
    /// A counter at the first MSN, 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// The MSN the next message will carry.
    pub fn peek(&self) -> u32 {
        self.next
    }

    /// Takes the next MSN.
    pub fn take(&mut self) -> u32 {
        let msn = self.next;
        self.next = msn.wrapping_add(1);
        msn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_one_and_counts() {
        let mut c = MsnCounter::new();
        assert_eq!(c.peek(), 1);
        assert_eq!((c.take(), c.take(), c.take()), (1, 2, 3));
        assert_eq!(c.peek(), 4);
    }

    #[test]
    fn wraps_modulo_two_to_the_32() {
        let mut c = MsnCounter { next: u32::MAX };
        assert_eq!(c.take(), u32::MAX);
        assert_eq!(c.take(), 0);
        assert_eq!(c.take(), 1);
    }
}
