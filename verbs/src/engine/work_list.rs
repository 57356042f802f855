//! Which queue pairs a progress turn visits: those with news from their
//! stream, with something posted, still busy from the last turn, or whose
//! deadline came, instead of every queue pair on the device. A turn's cost
//! then follows the work, not the number of connections.
//!
//! A post, apart from queueing its queue pair for the next turn, files it
//! for the flush that follows the post: that flush transmits for the
//! queue pairs posted to since the last one, not for every queued one (at
//! N busy queue pairs that would cost O(N) per post).
//!
//! Where the transport cannot say which streams have news
//! ([`Transport::drain_ready`](crate::transport::Transport::drain_ready)
//! returns false), every queue pair is queued each turn.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::transport::LocalKeys;

/// How often every queue pair is visited even without news: a bound on
/// how long one could wait if some cause of work were not reported (a
/// shared receive queue refilled while it stalled is one that is, see
/// `Engine::post_srq_recv`).
pub(super) const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub(super) struct WorkList {
    /// Queue pairs the next turn visits, each once.
    queued: Vec<u32>,
    members: HashSet<u32, LocalKeys>,
    /// Queue pairs posted to since the last flush, each once.
    posted: Vec<u32>,
    posted_members: HashSet<u32, LocalKeys>,
    /// Deadlines of queue pairs, earliest first, and each one's entry.
    timers: BTreeSet<(Instant, u32)>,
    timer_of: HashMap<u32, Instant, LocalKeys>,
    /// The last time every queue pair was queued.
    last_sweep: Option<Instant>,
}

impl WorkList {
    /// Queue pair `num` has something to do.
    pub(super) fn mark(&mut self, num: u32) {
        if self.members.insert(num) {
            self.queued.push(num);
        }
    }

    /// Something was posted to queue pair `num`: the next turn visits it,
    /// and so does the next flush.
    pub(super) fn mark_posted(&mut self, num: u32) {
        self.mark(num);
        if self.posted_members.insert(num) {
            self.posted.push(num);
        }
    }

    /// The queue pairs posted to since the last call, in order; none are
    /// filed afterwards.
    pub(super) fn drain_posted(&mut self) -> std::vec::Drain<'_, u32> {
        self.posted_members.clear();
        self.posted.drain(..)
    }

    /// Queue pair `num` is gone.
    pub(super) fn forget(&mut self, num: u32) {
        if self.members.remove(&num) {
            self.queued.retain(|&n| n != num);
        }
        if self.posted_members.remove(&num) {
            self.posted.retain(|&n| n != num);
        }
        if let Some(at) = self.timer_of.remove(&num) {
            self.timers.remove(&(at, num));
        }
    }

    /// Sets (or clears) the deadline at which `num` must be visited.
    pub(super) fn set_deadline(&mut self, num: u32, deadline: Option<Instant>) {
        if self.timer_of.get(&num).copied() == deadline {
            return;
        }
        if let Some(at) = self.timer_of.remove(&num) {
            self.timers.remove(&(at, num));
        }
        if let Some(at) = deadline {
            self.timer_of.insert(num, at);
            self.timers.insert((at, num));
        }
    }

    /// Whether a sweep of every queue pair is due at `now` (and if so,
    /// counts it as done).
    pub(super) fn sweep_due(&mut self, now: Instant) -> bool {
        match self.last_sweep {
            Some(at) if now.saturating_duration_since(at) < SWEEP_INTERVAL => false,
            _ => {
                self.last_sweep = Some(now);
                true
            }
        }
    }

    /// The queue pairs a turn at `now` visits: those queued and those
    /// whose deadline came. The list is empty afterwards.
    pub(super) fn take(&mut self, now: Instant) -> Vec<u32> {
        while let Some(&(at, num)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.remove(&(at, num));
            self.timer_of.remove(&num);
            self.mark(num);
        }
        self.members.clear();
        std::mem::take(&mut self.queued)
    }

    /// Gives back the list [`Self::take`] returned, for its allocation,
    /// once nothing is queued yet.
    pub(super) fn recycle(&mut self, mut list: Vec<u32>) {
        if self.queued.is_empty() {
            list.clear();
            self.queued = list;
        }
    }

    /// Queued now, in order.
    pub(super) fn queued(&self) -> &[u32] {
        &self.queued
    }

    /// The earliest deadline filed.
    pub(super) fn first_deadline(&self) -> Option<Instant> {
        self.timers.first().map(|&(at, _)| at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_queue_pair_is_taken_once_with_those_whose_deadline_came() {
        let t0 = Instant::now();
        let mut w = WorkList::default();
        w.mark(3);
        w.mark(1);
        w.mark(3);
        w.set_deadline(7, Some(t0 + Duration::from_millis(5)));
        w.set_deadline(8, Some(t0 + Duration::from_millis(50)));
        assert_eq!(w.take(t0), [3, 1]);
        assert!(w.queued().is_empty());
        assert_eq!(w.take(t0 + Duration::from_millis(10)), [7]);
        assert_eq!(w.first_deadline(), Some(t0 + Duration::from_millis(50)));
        // Taken once: the deadline is spent.
        assert!(w.take(t0 + Duration::from_millis(20)).is_empty());
    }

    #[test]
    fn a_new_deadline_replaces_the_old_and_forgetting_clears_all() {
        let t0 = Instant::now();
        let mut w = WorkList::default();
        w.set_deadline(2, Some(t0 + Duration::from_millis(50)));
        w.set_deadline(2, Some(t0 + Duration::from_millis(40)));
        assert_eq!(w.first_deadline(), Some(t0 + Duration::from_millis(40)));
        w.set_deadline(2, None);
        assert_eq!(w.first_deadline(), None);
        w.set_deadline(2, Some(t0));
        w.mark(2);
        w.forget(2);
        assert!(w.take(t0 + Duration::from_secs(1)).is_empty());
    }

    #[test]
    fn a_flush_visits_only_the_queue_pairs_posted_to_since_the_last() {
        let t0 = Instant::now();
        let mut w = WorkList::default();
        // Busy from the last turn: queued, but nothing new to send.
        w.mark(1);
        w.mark(2);
        w.mark_posted(3);
        w.mark_posted(2);
        w.mark_posted(3);
        w.mark_posted(4);
        w.forget(4);
        assert_eq!(w.drain_posted().collect::<Vec<_>>(), [3, 2]);
        assert_eq!(w.drain_posted().count(), 0);
        // The turn still visits every one of them.
        assert_eq!(w.take(t0), [1, 2, 3]);
        w.mark_posted(2);
        assert_eq!(w.drain_posted().collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn sweeps_come_at_most_once_an_interval() {
        let t0 = Instant::now();
        let mut w = WorkList::default();
        assert!(w.sweep_due(t0));
        assert!(!w.sweep_due(t0 + SWEEP_INTERVAL / 2));
        assert!(w.sweep_due(t0 + SWEEP_INTERVAL));
    }
}
