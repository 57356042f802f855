//! A bounded linear byte buffer: filled at the back, drained from the
//! front, compacted only when a caller needs the room.
//!
//! Its memory grows on demand up to the bound: a stream that never carries
//! more than an MPA Request (or nothing, in an idle flood) holds a few KiB,
//! not the megabytes a busy stream is allowed.

/// Bytes allocated when a buffer is made: room for any MPA Request or Reply.
const INITIAL: usize = 4 << 10;

#[derive(Debug)]
pub(crate) struct LinearBuf {
    data: Vec<u8>,
    /// What `data` may grow to.
    limit: usize,
    start: usize,
    end: usize,
}

impl LinearBuf {
    pub(crate) fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        LinearBuf {
            data: vec![0u8; limit.min(INITIAL)],
            limit,
            start: 0,
            end: 0,
        }
    }

    /// Bytes allocated now, at most the bound given to [`LinearBuf::new`].
    #[cfg(test)]
    pub(crate) fn allocated(&self) -> usize {
        self.data.len()
    }

    /// Compacts, then doubles the allocation (up to the bound) if that
    /// leaves no room at the back. False if the buffer is full to its bound.
    pub(crate) fn make_room(&mut self) -> bool {
        self.compact();
        if self.tail_room() == 0 && self.data.len() < self.limit {
            let grown = (self.data.len() * 2).min(self.limit);
            self.data.resize(grown, 0);
        }
        self.tail_room() > 0
    }

    /// Grows the allocation to the whole bound, compacted, so all free
    /// space is one tail.
    pub(crate) fn grow_to_limit(&mut self) {
        self.compact();
        self.data.resize(self.limit, 0);
    }

    pub(crate) fn len(&self) -> usize {
        self.end - self.start
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Total free space up to the bound: at the back, at the front (after
    /// compaction) and not yet allocated.
    pub(crate) fn free(&self) -> usize {
        self.limit - self.len()
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

    #[test]
    fn grows_on_demand_up_to_its_bound() {
        let mut b = LinearBuf::new(64 << 10);
        assert_eq!(b.allocated(), INITIAL, "small until needed");
        assert_eq!(b.free(), 64 << 10, "free counts what it may grow to");
        let n = b.tail_room();
        b.commit(n);
        assert!(b.make_room());
        assert_eq!(b.allocated(), 2 * INITIAL);
        assert_eq!(b.len(), INITIAL, "bytes kept across growth");
        b.grow_to_limit();
        assert_eq!(b.allocated(), 64 << 10);
        let n = b.tail_room();
        b.commit(n);
        assert!(!b.make_room(), "full to its bound");
        assert_eq!(b.free(), 0);
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
                    _ => {
                        b.make_room();
                    }
                }
                let want: Vec<u8> = model.iter().copied().collect();
                prop_assert_eq!(b.filled(), &want[..]);
                prop_assert_eq!(b.free(), 16 - model.len());
            }
        }
    }
}
