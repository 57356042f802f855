//! A first-in, first-out queue of small `Copy` records (the connection's
//! events, the Read Requests waiting for their response).
//!
//! A `Vec` read from a moving head rather than a `VecDeque`: the push
//! inlines into its callers, so a record built field by field is stored
//! straight into its slot, instead of going through the stack and being
//! read back in wider loads than it was written with (a load that stalls
//! on the narrower stores).

/// First in, first out. Space freed at the front is reclaimed when the
/// buffer is full and at least half of it is freed space, and all of it
/// when the queue empties, so the buffer stays within about four times
/// the most records ever held at once.
#[derive(Debug, Clone)]
pub(crate) struct Fifo<T> {
    buf: Vec<T>,
    /// Index of the oldest record in `buf`.
    head: usize,
    /// Records moved by compaction, for the tests of its cost.
    #[cfg(test)]
    moved: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo {
            buf: Vec::new(),
            head: 0,
            #[cfg(test)]
            moved: 0,
        }
    }
}

impl<T: Copy> Fifo<T> {
    /// Records waiting.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.buf.len() - self.head
    }

    /// Whether none waits.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `x` after every record waiting. Always inlined: the point is
    /// that the record's fields go straight into its slot. A full buffer
    /// is compacted when at least half of it is freed space, and grows
    /// otherwise, so each record is moved O(1) times on average even
    /// when the queue stays near its capacity (a full pipeline of Read
    /// Requests pops one and pushes one at a time).
    #[inline(always)]
    pub(crate) fn push(&mut self, x: T) {
        if self.buf.len() == self.buf.capacity() && self.head > 0 && 2 * self.head >= self.buf.len()
        {
            self.compact();
        }
        self.buf.push(x);
    }

    /// The oldest record.
    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        self.buf.get(self.head)
    }

    /// The oldest record, to update in place.
    #[inline]
    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        self.buf.get_mut(self.head)
    }

    /// The oldest record, taken out.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        let x = *self.buf.get(self.head)?;
        self.head += 1;
        if self.head == self.buf.len() {
            self.clear();
        }
        Some(x)
    }

    /// Drops every record; the space stays.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.head = 0;
    }

    #[cold]
    fn compact(&mut self) {
        #[cfg(test)]
        {
            self.moved += self.buf.len() - self.head;
        }
        self.buf.drain(..self.head);
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_first_out_across_partial_drains() {
        let mut q = Fifo::default();
        let mut model = std::collections::VecDeque::new();
        let (mut next, mut most) = (0u64, 0usize);
        // Pushes and pops in uneven runs, never draining fully for a
        // while, then draining: order, length and bounded space hold.
        for round in 0..200u64 {
            for _ in 0..(round % 7 + 1) {
                q.push((next, next as u32));
                model.push_back((next, next as u32));
                next += 1;
                most = most.max(model.len());
            }
            for _ in 0..(round % 5) {
                assert_eq!(q.front().copied(), model.front().copied());
                assert_eq!(q.pop(), model.pop_front());
            }
            if let (Some(a), Some(b)) = (q.front_mut(), model.front_mut()) {
                a.1 += 1;
                b.1 += 1;
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(q.is_empty(), model.is_empty());
            assert!(
                q.buf.capacity() <= 4 * most.max(4),
                "space reclaimed: capacity {} for at most {} held",
                q.buf.capacity(),
                most
            );
        }
        while let Some(e) = model.pop_front() {
            assert_eq!(q.pop(), Some(e));
        }
        assert_eq!(q.pop(), None);
        assert!(q.is_empty() && q.front().is_none());
        assert_eq!((q.buf.len(), q.head), (0, 0), "emptied in full");
        q.push((1, 1));
        q.push((2, 2));
        q.clear();
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn a_queue_kept_full_moves_each_record_a_bounded_number_of_times() {
        // A full pipeline: as many Read Requests outstanding as IRD
        // allows, one answered and one posted at a time, in a queue that
        // grew to hold them.
        let n = 65;
        let mut q = Fifo::default();
        for i in 0..n as u64 {
            q.push(i);
        }
        let rounds = 10_000u64;
        for i in 0..rounds {
            assert_eq!(q.pop(), Some(i));
            q.push(n as u64 + i);
        }
        assert_eq!(q.len(), n);
        assert!(
            q.moved as u64 <= 2 * rounds,
            "{} records moved for {rounds} pushes",
            q.moved
        );
        assert!(q.buf.capacity() <= 4 * n, "capacity {}", q.buf.capacity());
    }
}
