//! The connection's events, oldest first.
//!
//! A `Vec` read from a moving head rather than a `VecDeque`: `Vec::push`
//! inlines into its callers, so a completion built field by field is
//! stored straight into its slot. An out-of-line `VecDeque::push_back`
//! took it through the stack and read it back in wider loads than it
//! was written with, which stalls on every completion.

use super::Event;

/// First in, first out. Space freed at the front is reclaimed when the
/// buffer would otherwise grow, and all of it when the queue empties, so
/// the buffer stays within twice the most events ever held at once.
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    buf: Vec<Event>,
    /// Index of the oldest event in `buf`.
    head: usize,
}

impl EventQueue {
    /// Events waiting.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.buf.len() - self.head
    }

    /// Adds `e` after every event waiting. Always inlined: the point is
    /// that the event's fields go straight into its slot.
    #[inline(always)]
    pub(super) fn push(&mut self, e: Event) {
        if self.head > 0 && self.buf.len() == self.buf.capacity() {
            self.compact();
        }
        self.buf.push(e);
    }

    /// The oldest event, taken out.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<Event> {
        let e = *self.buf.get(self.head)?;
        self.head += 1;
        if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        }
        Some(e)
    }

    #[cold]
    fn compact(&mut self) {
        self.buf.drain(..self.head);
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(i: u64) -> Event {
        use crate::completion::{WcOpcode, WcStatus, WorkCompletion};
        Event::Completion(WorkCompletion {
            wr_id: i,
            status: WcStatus::Success,
            opcode: WcOpcode::Send,
            byte_len: i as u32,
            invalidated: None,
            solicited: false,
            imm_data: None,
        })
    }

    #[test]
    fn first_in_first_out_across_partial_drains() {
        let mut q = EventQueue::default();
        let mut model = std::collections::VecDeque::new();
        let (mut next, mut most) = (0u64, 0usize);
        // Pushes and pops in uneven runs, never draining fully for a
        // while, then draining: order, length and bounded space hold.
        for round in 0..200u64 {
            for _ in 0..(round % 7 + 1) {
                q.push(ev(next));
                model.push_back(ev(next));
                next += 1;
                most = most.max(model.len());
            }
            for _ in 0..(round % 5) {
                assert_eq!(q.pop(), model.pop_front());
            }
            assert_eq!(q.len(), model.len());
            assert!(
                q.buf.capacity() <= 2 * most.max(4),
                "space reclaimed: capacity {} for at most {} held",
                q.buf.capacity(),
                most
            );
        }
        while let Some(e) = model.pop_front() {
            assert_eq!(q.pop(), Some(e));
        }
        assert_eq!(q.pop(), None);
        assert_eq!(q.len(), 0);
        assert_eq!((q.buf.len(), q.head), (0, 0), "emptied in full");
    }
}
