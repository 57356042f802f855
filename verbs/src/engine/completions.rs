//! The storage behind a completion queue: a bounded FIFO the engine fills
//! and the queue's handles drain.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::cq_notify::CqNotify;
use crate::types::{VerbsError, WorkCompletion};

#[derive(Debug)]
pub(crate) struct CqState {
    entries: VecDeque<WorkCompletion>,
    capacity: usize,
    /// Completions that arrived while the queue was full. They are kept (no
    /// completion is ever lost) and the overflow is reported once by `poll`.
    overflowed: bool,
}

/// The completion-queue storage, shared between the queue's handles and the
/// device's engine that fills it.
#[derive(Debug)]
pub(crate) struct CqShared {
    state: Mutex<CqState>,
    /// How many entries `state` holds, written under its lock: asking
    /// whether anything waits (once per completion in a polling loop)
    /// takes no lock.
    queued: AtomicUsize,
    /// The completion channel and its arm (`req_notify`).
    pub(crate) notify: CqNotify,
    /// When a send-queue post last went to a queue pair completing into
    /// this queue, in microseconds after [`epoch`] (0: never).
    last_send_post: AtomicU64,
}

/// The origin of [`CqShared`]'s post times.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn micros_since_epoch() -> u64 {
    u64::try_from(epoch().elapsed().as_micros())
        .unwrap_or(u64::MAX)
        .max(1)
}

impl CqShared {
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        Self::with_notify(capacity, CqNotify::default())
    }

    pub(crate) fn with_notify(capacity: usize, notify: CqNotify) -> Arc<Self> {
        Arc::new(CqShared {
            notify,
            queued: AtomicUsize::new(0),
            last_send_post: AtomicU64::new(0),
            state: Mutex::new(CqState {
                entries: VecDeque::with_capacity(capacity.min(4096)),
                capacity,
                overflowed: false,
            }),
        })
    }

    /// A send-queue post went to a queue pair completing into this queue.
    pub(crate) fn note_send_posted(&self) {
        self.last_send_post
            .store(micros_since_epoch(), Ordering::Relaxed);
    }

    /// Whether a send-queue post went to a queue pair completing into this
    /// queue within `window`: its poller is waiting for the wire.
    pub(crate) fn sent_within(&self, window: Duration) -> bool {
        let last = self.last_send_post.load(Ordering::Relaxed);
        let window = u64::try_from(window.as_micros()).unwrap_or(u64::MAX);
        last != 0 && micros_since_epoch().saturating_sub(last) <= window
    }

    pub(crate) fn push(&self, wc: WorkCompletion) {
        self.push_all(std::slice::from_ref(&wc));
    }

    /// Appends `wcs` in order under one lock: the engine hands over what
    /// one call produced at once rather than locking per completion.
    pub(crate) fn push_all(&self, wcs: &[WorkCompletion]) {
        if wcs.is_empty() {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.entries.len() + wcs.len() > s.capacity {
            s.overflowed = true;
        }
        s.entries.extend(wcs.iter().copied());
        self.queued.store(s.entries.len(), Ordering::Release);
        drop(s);
        for wc in wcs {
            self.notify.on_push(wc);
        }
    }

    pub(crate) fn pop_into(&self, out: &mut [WorkCompletion]) -> Result<usize, VerbsError> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if std::mem::take(&mut s.overflowed) {
            return Err(VerbsError::CqOverflow {
                capacity: s.capacity,
            });
        }
        let n = out.len().min(s.entries.len());
        // The two halves of the ring, copied as blocks.
        let (front, back) = s.entries.as_slices();
        let k = front.len().min(n);
        out[..k].copy_from_slice(&front[..k]);
        out[k..n].copy_from_slice(&back[..n - k]);
        s.entries.drain(..n);
        self.queued.store(s.entries.len(), Ordering::Release);
        Ok(n)
    }

    /// Entries waiting; a completion pushed by another thread shows once
    /// its push has released the lock.
    pub(crate) fn len(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::WcStatus;
    use crate::types::PLACEHOLDER;

    fn wc(id: u64) -> WorkCompletion {
        WorkCompletion {
            wr_id: id,
            status: WcStatus::Success,
            ..PLACEHOLDER
        }
    }

    #[test]
    fn fifo_and_partial_takes() {
        let cq = CqShared::new(8);
        for i in 0..5 {
            cq.push(wc(i));
        }
        let mut out = [PLACEHOLDER; 3];
        assert_eq!(cq.len(), 5);
        assert_eq!(cq.pop_into(&mut out).unwrap(), 3);
        assert_eq!(cq.len(), 2);
        assert_eq!(out.map(|w| w.wr_id), [0, 1, 2]);
        assert_eq!(cq.pop_into(&mut out).unwrap(), 2);
        assert_eq!(out[..2].iter().map(|w| w.wr_id).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(cq.pop_into(&mut out).unwrap(), 0);
        assert_eq!(cq.len(), 0);
    }

    #[test]
    fn takes_across_the_rings_seam_keep_their_order() {
        let cq = CqShared::new(8);
        let mut out = [PLACEHOLDER; 8];
        let mut taken = Vec::new();
        // Two entries always wait, so the ring never resets to its start:
        // pushes and takes walk that start round it, and some takes find
        // their entries in its two halves.
        cq.push_all(&[wc(0), wc(1)]);
        let mut next = 2;
        for round in 0..12 {
            for _ in 0..5 {
                cq.push(wc(next));
                next += 1;
            }
            let n = cq.pop_into(&mut out[..5]).unwrap();
            assert_eq!(n, 5, "round {round}");
            taken.extend(out[..n].iter().map(|w| w.wr_id));
        }
        let n = cq.pop_into(&mut out).unwrap();
        taken.extend(out[..n].iter().map(|w| w.wr_id));
        assert_eq!(taken, (0..next).collect::<Vec<_>>());
        assert_eq!(cq.len(), 0);
    }

    #[test]
    fn a_batch_keeps_its_order_after_what_was_queued() {
        let cq = CqShared::new(8);
        cq.push(wc(0));
        cq.push_all(&[]);
        assert_eq!(cq.len(), 1);
        cq.push_all(&[wc(1), wc(2), wc(3)]);
        assert_eq!(cq.len(), 4);
        let mut out = [PLACEHOLDER; 8];
        assert_eq!(cq.pop_into(&mut out).unwrap(), 4);
        assert_eq!(
            out[..4].iter().map(|w| w.wr_id).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
    }

    #[test]
    fn a_batch_that_crosses_the_capacity_overflows_and_keeps_everything() {
        let cq = CqShared::new(3);
        cq.push_all(&[wc(0), wc(1), wc(2)]);
        let mut out = [PLACEHOLDER; 8];
        assert_eq!(
            cq.pop_into(&mut out).unwrap(),
            3,
            "exactly full is no overflow"
        );
        cq.push(wc(3));
        cq.push_all(&[wc(4), wc(5), wc(6)]);
        assert!(matches!(
            cq.pop_into(&mut out),
            Err(VerbsError::CqOverflow { capacity: 3 })
        ));
        assert_eq!(cq.pop_into(&mut out).unwrap(), 4);
        assert_eq!(
            out[..4].iter().map(|w| w.wr_id).collect::<Vec<_>>(),
            [3, 4, 5, 6]
        );
    }

    #[test]
    fn overflow_is_reported_once_and_nothing_is_lost() {
        let cq = CqShared::new(2);
        for i in 0..4 {
            cq.push(wc(i));
        }
        let mut out = [PLACEHOLDER; 8];
        assert!(matches!(
            cq.pop_into(&mut out),
            Err(VerbsError::CqOverflow { capacity: 2 })
        ));
        assert_eq!(cq.pop_into(&mut out).unwrap(), 4);
        assert_eq!(
            out[..4].iter().map(|w| w.wr_id).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
    }
}
