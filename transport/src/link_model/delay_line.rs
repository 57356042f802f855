//! Frames held until their delivery instant.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Instant;

/// A bounded set of frames, each with the instant it is due; frames due at
/// the same instant come out in the order they went in.
#[derive(Debug)]
pub struct DelayLine<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    next_seq: u64,
    capacity: usize,
}

#[derive(Debug)]
struct Entry<T> {
    at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

impl<T> DelayLine<T> {
    /// An empty line holding at most `capacity` frames (at least one), so
    /// a path with no rate limit cannot hold unbounded memory.
    pub fn new(capacity: usize) -> Self {
        DelayLine {
            heap: BinaryHeap::new(),
            next_seq: 0,
            capacity: capacity.max(1),
        }
    }

    /// Holds `item` until `at`; gives it back if the line is full.
    pub fn push(&mut self, at: Instant, item: T) -> Result<(), T> {
        if self.heap.len() >= self.capacity {
            return Err(item);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry { at, seq, item }));
        Ok(())
    }

    /// The earliest frame due by `now`, if any.
    pub fn pop_due(&mut self, now: Instant) -> Option<T> {
        if self.heap.peek()?.0.at > now {
            return None;
        }
        self.heap.pop().map(|Reverse(e)| e.item)
    }

    /// When the next frame is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.0.at)
    }

    /// Frames held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no frame is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn due_order_then_insertion_order_and_a_bound() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut d = DelayLine::new(4);
        for (at, tag) in [(3, 'c'), (1, 'a'), (1, 'b'), (2, 'x')] {
            d.push(t + ms(at), tag).unwrap();
        }
        assert_eq!(d.push(t, 'z'), Err('z'), "full");
        assert_eq!(d.pop_due(t), None);
        assert_eq!(d.next_due(), Some(t + ms(1)));
        let mut out = Vec::new();
        while let Some(f) = d.pop_due(t + ms(2)) {
            out.push(f);
        }
        assert_eq!(out, ['a', 'b', 'x']);
        assert_eq!(d.len(), 1);
        assert_eq!(d.pop_due(t + ms(9)), Some('c'));
        assert!(d.is_empty());
        assert_eq!(d.next_due(), None);
    }
}
