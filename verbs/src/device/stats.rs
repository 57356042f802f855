//! Counters of how a device made progress: turns of its progress thread
//! and what ended each wait in the transport. They let a program (and the
//! tests) tell a thread that sleeps until something happens from one that
//! spins, and a post that woke a sleeper from one left for a timer, by
//! counting rather than by timing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A snapshot of a device's progress counters (see [`Device::stats`]).
///
/// Every wait in the transport, by the progress thread or by a blocked
/// caller driving the device, ends for exactly one of four reasons and is
/// counted under the first that applies: its time ran out (`woken_by_timer`),
/// a post woke it to send (`woken_by_post`), a call that needs the transport
/// woke it (`woken_by_call`), or else the transport had something to do
/// (`woken_by_io`).
///
/// [`Device::stats`]: crate::Device::stats
/// Counters may be added, so it is not built outside this crate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceStats {
    /// Turns of the progress thread: each busy turn or idle wait counts once.
    pub thread_turns: u64,
    /// Waits that ran to their timeout: a timer of the transport or of
    /// start-up was due, or the idle wait's upper bound passed.
    pub woken_by_timer: u64,
    /// Waits cut short by a post that had work for the wire.
    pub woken_by_post: u64,
    /// Waits cut short by a call that needs the transport itself (connect,
    /// listen, accept, `with_transport`) or by stopping the progress thread.
    pub woken_by_call: u64,
    /// Waits cut short by the transport: bytes, a connection, a close.
    pub woken_by_io: u64,
    /// Calls that took the device lock while another thread was waiting in
    /// the transport or on its readiness descriptor: the waiter does not
    /// hold the lock while it sleeps.
    pub calls_during_wait: u64,
    /// Send-queue posts flushed onto the transport by the posting thread
    /// itself (the transport was in the device, not lent out to a thread
    /// sleeping in it): nothing had to be woken to send them.
    pub sent_by_poster: u64,
    /// Receive work requests still posted to a shared receive queue when
    /// it went with its handle (dropped, not destroyed) and its last queue
    /// pair: they never complete. `SharedReceiveQueue::destroy` hands
    /// them back instead.
    pub srq_wrs_discarded: u64,
    /// Sleeps of the progress thread that left the sockets to a program
    /// spinning on its completion queues (many poller turns since the
    /// thread's last sleep): bytes arriving then wake nobody.
    pub poller_watches: u64,
}

impl DeviceStats {
    /// What the counters moved by since `earlier`, a snapshot of the same
    /// device.
    pub fn since(&self, earlier: &DeviceStats) -> DeviceStats {
        DeviceStats {
            thread_turns: self.thread_turns.saturating_sub(earlier.thread_turns),
            woken_by_timer: self.woken_by_timer.saturating_sub(earlier.woken_by_timer),
            woken_by_post: self.woken_by_post.saturating_sub(earlier.woken_by_post),
            woken_by_call: self.woken_by_call.saturating_sub(earlier.woken_by_call),
            woken_by_io: self.woken_by_io.saturating_sub(earlier.woken_by_io),
            calls_during_wait: self
                .calls_during_wait
                .saturating_sub(earlier.calls_during_wait),
            sent_by_poster: self.sent_by_poster.saturating_sub(earlier.sent_by_poster),
            srq_wrs_discarded: self
                .srq_wrs_discarded
                .saturating_sub(earlier.srq_wrs_discarded),
            poller_watches: self.poller_watches.saturating_sub(earlier.poller_watches),
        }
    }

    /// Waits in the transport that have ended, for whatever reason.
    pub fn waits(&self) -> u64 {
        self.woken_by_timer + self.woken_by_post + self.woken_by_call + self.woken_by_io
    }
}

/// Who asked for a transport wait in progress to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakeCause {
    Post,
    Call,
}

/// The live counters behind [`DeviceStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    thread_turns: AtomicU64,
    post_wakes: AtomicU64,
    call_wakes: AtomicU64,
    woken_by_timer: AtomicU64,
    woken_by_post: AtomicU64,
    woken_by_call: AtomicU64,
    woken_by_io: AtomicU64,
    calls_during_wait: AtomicU64,
    sent_by_poster: AtomicU64,
    srq_wrs_discarded: AtomicU64,
    poller_watches: AtomicU64,
}

/// The wake requests seen when a wait began, to tell afterwards whether
/// one came in during it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WaitStart {
    post_wakes: u64,
    call_wakes: u64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn thread_turn(&self) {
        bump(&self.thread_turns);
    }

    pub(crate) fn thread_turns(&self) -> u64 {
        self.thread_turns.load(Ordering::Relaxed)
    }

    pub(crate) fn srq_wrs_discarded(&self, n: usize) {
        self.srq_wrs_discarded
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn call_during_wait(&self) {
        bump(&self.calls_during_wait);
    }

    pub(crate) fn sent_by_poster(&self) {
        bump(&self.sent_by_poster);
    }

    pub(crate) fn poller_watch(&self) {
        bump(&self.poller_watches);
    }

    /// A wake was sent to whoever waits in the transport.
    pub(crate) fn wake_requested(&self, cause: WakeCause) {
        match cause {
            WakeCause::Post => bump(&self.post_wakes),
            WakeCause::Call => bump(&self.call_wakes),
        }
    }

    pub(crate) fn wait_started(&self) -> WaitStart {
        WaitStart {
            post_wakes: self.post_wakes.load(Ordering::Acquire),
            call_wakes: self.call_wakes.load(Ordering::Acquire),
        }
    }

    /// A wait of at most `limit` that began at `start` ended after `took`.
    pub(crate) fn wait_ended(&self, start: WaitStart, limit: Duration, took: Duration) {
        let counter = if took >= limit {
            &self.woken_by_timer
        } else if self.post_wakes.load(Ordering::Acquire) != start.post_wakes {
            &self.woken_by_post
        } else if self.call_wakes.load(Ordering::Acquire) != start.call_wakes {
            &self.woken_by_call
        } else {
            &self.woken_by_io
        };
        bump(counter);
    }

    pub(crate) fn snapshot(&self) -> DeviceStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DeviceStats {
            thread_turns: get(&self.thread_turns),
            woken_by_timer: get(&self.woken_by_timer),
            woken_by_post: get(&self.woken_by_post),
            woken_by_call: get(&self.woken_by_call),
            woken_by_io: get(&self.woken_by_io),
            calls_during_wait: get(&self.calls_during_wait),
            sent_by_poster: get(&self.sent_by_poster),
            srq_wrs_discarded: get(&self.srq_wrs_discarded),
            poller_watches: get(&self.poller_watches),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_millis(100);
    const EARLY: Duration = Duration::from_millis(1);

    #[test]
    fn each_wait_is_counted_once_under_its_first_cause() {
        let c = Counters::default();
        // Ran out: a timer, even if a wake came in meanwhile.
        let s = c.wait_started();
        c.wake_requested(WakeCause::Post);
        c.wait_ended(s, LIMIT, LIMIT);
        // Cut short after a post's wake, then after a call's.
        let s = c.wait_started();
        c.wake_requested(WakeCause::Post);
        c.wait_ended(s, LIMIT, EARLY);
        let s = c.wait_started();
        c.wake_requested(WakeCause::Call);
        c.wait_ended(s, LIMIT, EARLY);
        // Cut short with no wake: the transport had something.
        let s = c.wait_started();
        c.wait_ended(s, LIMIT, EARLY);
        // A wake sent before the wait began is not this wait's cause.
        c.wake_requested(WakeCause::Call);
        let s = c.wait_started();
        c.wait_ended(s, LIMIT, EARLY);
        let st = c.snapshot();
        assert_eq!(
            (
                st.woken_by_timer,
                st.woken_by_post,
                st.woken_by_call,
                st.woken_by_io
            ),
            (1, 1, 1, 2)
        );
        assert_eq!(st.waits(), 5);
        let later = {
            let s = c.wait_started();
            c.wake_requested(WakeCause::Post);
            c.wait_ended(s, LIMIT, EARLY);
            c.snapshot()
        };
        let moved = later.since(&st);
        assert_eq!((moved.woken_by_post, moved.waits()), (1, 1));
    }
}
