//! A fixed-capacity linear byte buffer: filled at the back, drained from
//! the front, compacted only when a caller needs the room.

#[derive(Debug)]
pub(crate) struct LinearBuf {
    data: Box<[u8]>,
    start: usize,
    end: usize,
}

impl LinearBuf {
    pub(crate) fn new(capacity: usize) -> Self {
        LinearBuf {
            data: vec![0u8; capacity.max(1)].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.end - self.start
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Total free space, at the back and (after compaction) at the front.
    pub(crate) fn free(&self) -> usize {
        self.data.len() - self.len()
    }

    /// Free space at the back, without moving anything.
    pub(crate) fn tail_room(&self) -> usize {
        self.data.len() - self.end
    }

    pub(crate) fn filled(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    pub(crate) fn tail_mut(&mut self) -> &mut [u8] {
        &mut self.data[self.end..]
    }

    /// Marks `n` bytes of the tail as filled.
    pub(crate) fn commit(&mut self, n: usize) {
        debug_assert!(n <= self.tail_room());
        self.end += n.min(self.tail_room());
    }

    /// Drops `n` bytes from the front.
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.len());
        self.start += n.min(self.len());
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Moves the filled bytes to the front so all free space is one tail.
    pub(crate) fn compact(&mut self) {
        if self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fill_drain_compact() {
        let mut b = LinearBuf::new(8);
        b.tail_mut()[..5].copy_from_slice(b"hello");
        b.commit(5);
        assert_eq!(b.filled(), b"hello");
        b.consume(2);
        assert_eq!(b.filled(), b"llo");
        assert_eq!(b.tail_room(), 3);
        assert_eq!(b.free(), 5);
        b.compact();
        assert_eq!(b.tail_room(), 5);
        assert_eq!(b.filled(), b"llo");
        b.consume(3);
        assert!(b.is_empty());
        assert_eq!(b.tail_room(), 8, "empty buffer rewinds");
    }

    proptest! {
        /// Against a VecDeque model under random fills, drains, compactions.
        #[test]
        fn behaves_like_a_queue(ops in proptest::collection::vec((0u8..3, 0usize..20), 0..100)) {
            let mut b = LinearBuf::new(16);
            let mut model = std::collections::VecDeque::new();
            let mut next = 0u8;
            for (op, n) in ops {
                match op {
                    0 => {
                        let n = n.min(b.tail_room());
                        for x in &mut b.tail_mut()[..n] {
                            *x = next;
                            model.push_back(next);
                            next = next.wrapping_add(1);
                        }
                        b.commit(n);
                    }
                    1 => {
                        let n = n.min(b.len());
                        b.consume(n);
                        model.drain(..n);
                    }
                    _ => b.compact(),
                }
                let want: Vec<u8> = model.iter().copied().collect();
                prop_assert_eq!(b.filled(), &want[..]);
                prop_assert_eq!(b.free(), 16 - model.len());
            }
        }
    }
}
