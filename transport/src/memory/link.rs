//! The in-process wire: one queue of frames per direction.
//!
//! Frames carry the instant they may be delivered; a queue stays sorted by
//! it so latency and jitter need no timer thread. Frame buffers travel back
//! to their sender's pool, so a steady flow allocates nothing.

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use crate::link_model::QueueDelays;
use crate::EventFd;
use std::time::{Duration, Instant};

/// A frame's bytes: the first `len` octets of a buffer that keeps its full
/// length, so reusing a buffer for a longer frame needs no zero-filling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    buf: Vec<u8>,
    len: usize,
}

impl Frame {
    /// A frame of all of `buf`.
    #[cfg(test)]
    pub(crate) fn new(buf: Vec<u8>) -> Frame {
        let len = buf.len();
        Frame { buf, len }
    }

    /// A frame of the first `len` octets of `buf`, which is grown (to at
    /// least `capacity`) only if it is shorter.
    pub(crate) fn reuse(mut buf: Vec<u8>, len: usize, capacity: usize) -> Frame {
        if buf.len() < len {
            buf.resize(len.max(capacity), 0);
        }
        Frame { buf, len }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }

    /// The buffer back, for another frame.
    pub(crate) fn into_buffer(self) -> Vec<u8> {
        self.buf
    }
}

/// A frame on the wire.
#[derive(Debug)]
pub(crate) struct InFlight {
    pub(crate) deliver_at: Instant,
    pub(crate) frame: Frame,
}

/// One direction of the link.
#[derive(Debug, Default)]
pub(crate) struct Lane {
    /// Sorted by `deliver_at`; equal instants keep sending order.
    queue: VecDeque<InFlight>,
    /// Empty buffers for the sender of this lane.
    pool: Vec<Vec<u8>>,
    /// Frames dropped because `queue` was full.
    pub(crate) overflow_drops: u64,
    /// How long after its delivery instant each frame was taken.
    taken_late: QueueDelays,
    /// Receivers asleep on this lane's condition variable. A notify is a
    /// system call even with nobody to wake, so senders skip it when this
    /// is zero (it only changes under the lane lock, as does the queue).
    sleepers: usize,
}

impl Lane {
    /// Queues `f` in delivery order, or drops it if `capacity` frames wait.
    fn push(&mut self, f: InFlight, capacity: usize) -> bool {
        if self.queue.len() >= capacity {
            self.overflow_drops += 1;
            self.pool.push(f.frame.into_buffer());
            return false;
        }
        // Usually the newest frame is due last: scan from the back.
        let at = self
            .queue
            .iter()
            .rposition(|q| q.deliver_at <= f.deliver_at)
            .map_or(0, |i| i + 1);
        self.queue.insert(at, f);
        true
    }

    fn next_due(&self) -> Option<Instant> {
        self.queue.front().map(|f| f.deliver_at)
    }
}

/// Both lanes and the condition variables receivers sleep on.
#[derive(Debug)]
pub(crate) struct Wire {
    lanes: [Mutex<Lane>; 2],
    ready: [Condvar; 2],
    /// A wake for the receiver of each lane that its next `wait` takes.
    woken: [AtomicBool; 2],
    /// Made on request for an event loop that drives a lane's receiver
    /// itself: readable once a frame was queued on the lane, cleared by
    /// the receiver before it takes frames.
    readiness: [OnceLock<EventFd>; 2],
    capacity: usize,
}

impl Wire {
    pub(crate) fn new(capacity: usize) -> Self {
        Wire {
            lanes: [Mutex::default(), Mutex::default()],
            ready: [Condvar::new(), Condvar::new()],
            woken: [AtomicBool::new(false), AtomicBool::new(false)],
            readiness: [OnceLock::new(), OnceLock::new()],
            capacity: capacity.max(1),
        }
    }

    /// A poisoned lock only means another thread panicked mid-test; the
    /// queues themselves are always consistent, so keep going.
    fn lane(&self, i: usize) -> MutexGuard<'_, Lane> {
        self.lanes[i].lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `frames` on lane `i` and takes back up to `want` spare buffers.
    /// Returns how many frames were queued (the rest overflowed).
    pub(crate) fn send(
        &self,
        i: usize,
        frames: &mut Vec<InFlight>,
        spares: &mut Vec<Vec<u8>>,
        want: usize,
    ) -> usize {
        let mut queued = 0;
        let asleep = {
            let mut lane = self.lane(i);
            for f in frames.drain(..) {
                queued += usize::from(lane.push(f, self.capacity));
            }
            let take = want.min(lane.pool.len());
            let from = lane.pool.len() - take;
            spares.extend(lane.pool.drain(from..));
            lane.sleepers > 0
        };
        if queued > 0 && asleep {
            self.ready[i].notify_all();
        }
        if queued > 0 {
            // After the frames are in the lane: a receiver that clears the
            // descriptor before taking frames never misses one.
            if let Some(fd) = self.readiness[i].get() {
                fd.notify();
            }
        }
        queued
    }

    /// Moves the frames of lane `i` that arrive at the earliest instant,
    /// if it is due by `now`, into `out`, and hands `used` buffers back to
    /// the lane's sender.
    ///
    /// One arrival instant per call: a receiver polled once per call then
    /// answers frames that a rate limit spread out one by one, as a host
    /// does when each arrives, instead of all the frames of a round trip
    /// with one stretch ACK. Frames sent in one poll on an unlimited link
    /// share their instant and still come as one batch.
    pub(crate) fn receive(
        &self,
        i: usize,
        now: Instant,
        out: &mut VecDeque<Frame>,
        used: &mut Vec<Vec<u8>>,
    ) {
        self.receive_batch(i, now, 1, out, used);
    }

    /// [`Wire::receive`], and then more frames already due by `now`, up to
    /// `batch` frames in all: a receiver that fell behind the clock (a
    /// driving thread the scheduler kept off the CPU) catches up in a few
    /// polls, as NAPI polls a budget of frames per interrupt, instead of
    /// paying a whole poll per frame and falling further behind. A
    /// receiver that keeps up sees one instant per call all the same.
    pub(crate) fn receive_batch(
        &self,
        i: usize,
        now: Instant,
        batch: usize,
        out: &mut VecDeque<Frame>,
        used: &mut Vec<Vec<u8>>,
    ) {
        if let Some(fd) = self.readiness[i].get() {
            fd.clear();
        }
        let mut lane = self.lane(i);
        lane.pool.append(used);
        let Some(first) = lane.next_due().filter(|&d| d <= now) else {
            return;
        };
        let mut taken = 0;
        while lane
            .queue
            .front()
            .is_some_and(|f| f.deliver_at == first || (taken < batch && f.deliver_at <= now))
        {
            if let Some(f) = lane.queue.pop_front() {
                lane.taken_late.record(now - f.deliver_at);
                out.push_back(f.frame);
                taken += 1;
            }
        }
    }

    /// How late the receiver of lane `i` took each frame after it fell
    /// due (see [`LinkCounters::taken_late`](crate::link_model::LinkCounters::taken_late)).
    pub(crate) fn taken_late(&self, i: usize) -> QueueDelays {
        self.lane(i).taken_late
    }

    /// A duplicate of lane `i`'s readiness descriptor, made on first use
    /// (`None` if no eventfd could be made). Readable from the next frame
    /// queued, or at once if frames are queued already.
    pub(crate) fn readiness_fd(&self, i: usize) -> Option<OwnedFd> {
        let fd = match self.readiness[i].get() {
            Some(fd) => fd,
            None => {
                let fresh = EventFd::new().ok()?;
                let fd = self.readiness[i].get_or_init(|| fresh);
                // Frames queued before it existed would not show.
                if self.lane(i).next_due().is_some() {
                    fd.notify();
                }
                fd
            }
        };
        fd.as_fd().try_clone_to_owned().ok()
    }

    /// When the next frame of lane `i` is due, if any is queued.
    pub(crate) fn next_due(&self, i: usize) -> Option<Instant> {
        self.lane(i).next_due()
    }

    pub(crate) fn overflow_drops(&self, i: usize) -> u64 {
        self.lane(i).overflow_drops
    }

    /// Ends the current or next `wait` on lane `i` (sticky: see
    /// [`Waker`](crate::Waker)).
    pub(crate) fn wake(&self, i: usize) {
        self.woken[i].store(true, Ordering::Release);
        // Taking the lane lock orders the flag before a waiter's check, so
        // the notify cannot fall between its check and its sleep.
        let asleep = self.lane(i).sleepers > 0;
        if asleep {
            self.ready[i].notify_all();
        }
        // An event loop driving this end waits on the readiness descriptor.
        if let Some(fd) = self.readiness[i].get() {
            fd.notify();
        }
    }

    /// Sleeps until a frame on lane `i` is due (by the real clock), a
    /// [`Wire::wake`], or `timeout` passes.
    pub(crate) fn wait(&self, i: usize, timeout: Option<Duration>) {
        let start = Instant::now();
        let deadline = timeout.map(|t| start + t);
        let mut lane = self.lane(i);
        // Bounded: each turn either returns or sleeps until a deadline/notify.
        for _ in 0..1_000_000 {
            if self.woken[i].swap(false, Ordering::AcqRel) {
                return;
            }
            let now = Instant::now();
            if lane.next_due().is_some_and(|d| d <= now) {
                return;
            }
            let until = match (lane.next_due(), deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if until.is_some_and(|u| u <= now) {
                return;
            }
            lane.sleepers += 1;
            lane = match until {
                Some(u) => {
                    self.ready[i]
                        .wait_timeout(lane, u - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self.ready[i]
                    .wait(lane)
                    .unwrap_or_else(PoisonError::into_inner),
            };
            lane.sleepers -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn frame(at: Instant, tag: u8) -> InFlight {
        InFlight {
            deliver_at: at,
            frame: Frame::new(vec![tag]),
        }
    }

    #[test]
    fn frames_come_out_in_delivery_order() {
        let w = Wire::new(16);
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut batch = vec![
            frame(t + ms(3), 3),
            frame(t + ms(1), 1),
            frame(t + ms(2), 2),
            frame(t + ms(1), 4),
        ];
        assert_eq!(w.send(0, &mut batch, &mut Vec::new(), 0), 4);
        let mut out = VecDeque::new();
        w.receive(0, t, &mut out, &mut Vec::new());
        assert!(out.is_empty(), "nothing due yet");
        assert_eq!(w.next_due(0), Some(t + ms(1)));
        w.receive(0, t + ms(2), &mut out, &mut Vec::new());
        assert_eq!(out, [1, 4].map(|t| Frame::new(vec![t])), "one instant");
        out.clear();
        w.receive(0, t + ms(2), &mut out, &mut Vec::new());
        assert_eq!(out, [Frame::new(vec![2])]);
        out.clear();
        w.receive(0, t + ms(10), &mut out, &mut Vec::new());
        assert_eq!(out, [Frame::new(vec![3])]);
        assert_eq!(w.next_due(0), None);
        assert_eq!(w.next_due(1), None);
    }

    #[test]
    fn a_late_receiver_takes_a_batch_of_due_frames() {
        let w = Wire::new(16);
        let t = Instant::now();
        let us = Duration::from_micros;
        let mut batch: Vec<_> = (1..=5).map(|k| frame(t + us(k), k as u8)).collect();
        batch.push(frame(t + us(100), 9));
        assert_eq!(w.send(0, &mut batch, &mut Vec::new(), 0), 6);
        let mut out = VecDeque::new();
        w.receive_batch(0, t + us(50), 3, &mut out, &mut Vec::new());
        assert_eq!(
            out,
            [1, 2, 3].map(|k| Frame::new(vec![k])),
            "three of five due"
        );
        out.clear();
        w.receive_batch(0, t + us(50), 3, &mut out, &mut Vec::new());
        assert_eq!(
            out,
            [4, 5].map(|k| Frame::new(vec![k])),
            "not the one due later"
        );
        out.clear();
        w.receive_batch(0, t + us(50), 3, &mut out, &mut Vec::new());
        assert!(out.is_empty());
        w.receive_batch(0, t + us(100), 3, &mut out, &mut Vec::new());
        assert_eq!(out, [Frame::new(vec![9])]);
    }

    #[test]
    fn each_frame_taken_counts_how_late_it_was_taken() {
        let w = Wire::new(16);
        let t = Instant::now();
        let us = Duration::from_micros;
        let mut batch = vec![frame(t, 1), frame(t + us(100), 2), frame(t + us(900), 3)];
        w.send(0, &mut batch, &mut Vec::new(), 0);
        let mut out = VecDeque::new();
        // Taken 1 ms after the first fell due, in one batch.
        w.receive_batch(0, t + us(1000), 8, &mut out, &mut Vec::new());
        assert_eq!(out.len(), 3);
        let late = w.taken_late(0);
        assert_eq!(late.count(), 3);
        let near = |d: Duration, want: u64| {
            let got = d.as_micros() as f64;
            (got - want as f64).abs() <= 0.07 * want as f64
        };
        assert!(near(late.quantile(0.0).unwrap(), 100), "{late:?}");
        assert!(near(late.median().unwrap(), 900));
        assert!(near(late.quantile(1.0).unwrap(), 1000));
        assert_eq!(w.taken_late(1).count(), 0, "lanes apart");
        // A frame taken the instant it falls due was not late.
        w.send(1, &mut vec![frame(t + us(5), 4)], &mut Vec::new(), 0);
        w.receive(1, t + us(5), &mut out, &mut Vec::new());
        assert_eq!(w.taken_late(1).median(), Some(Duration::ZERO));
    }

    #[test]
    fn a_reused_buffer_keeps_its_length_and_shows_only_the_frame() {
        let f = Frame::reuse(Vec::new(), 60, 1514);
        assert_eq!(f.bytes().len(), 60);
        let mut buf = f.into_buffer();
        assert_eq!(buf.len(), 1514, "grown once to the full frame size");
        buf[..4].copy_from_slice(&[1, 2, 3, 4]);
        let mut f = Frame::reuse(buf, 3, 1514);
        assert_eq!(f.bytes(), &[1, 2, 3]);
        f.bytes_mut()[0] = 9;
        let f = Frame::reuse(f.into_buffer(), 1514, 1514);
        assert_eq!(&f.bytes()[..4], &[9, 2, 3, 4], "no zero-filling on reuse");
        let big = Frame::reuse(f.into_buffer(), 9014, 1514);
        assert_eq!(big.bytes().len(), 9014);
    }

    #[test]
    fn full_lane_drops_and_counts() {
        let w = Wire::new(2);
        let t = Instant::now();
        let mut batch = vec![frame(t, 1), frame(t, 2), frame(t, 3)];
        assert_eq!(w.send(1, &mut batch, &mut Vec::new(), 0), 2);
        assert_eq!(w.overflow_drops(1), 1);
        assert_eq!(w.overflow_drops(0), 0);
    }

    #[test]
    fn the_readiness_descriptor_shows_queued_frames_until_they_are_taken() {
        use crate::kernel::sys::poll;
        use std::os::fd::AsRawFd;
        let readable = |fd: &OwnedFd| {
            let mut fds = [libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            poll(&mut fds, Some(Duration::ZERO)).unwrap() == 1
        };
        let w = Wire::new(8);
        let t = Instant::now();
        // A frame queued before the descriptor exists still shows.
        w.send(0, &mut vec![frame(t, 1)], &mut Vec::new(), 0);
        let fd = w.readiness_fd(0).unwrap();
        assert!(readable(&fd));
        assert!(
            w.readiness_fd(1).is_some_and(|fd| !readable(&fd)),
            "lanes apart"
        );
        let mut out = VecDeque::new();
        w.receive(0, t, &mut out, &mut Vec::new());
        assert_eq!(out.len(), 1);
        assert!(!readable(&fd), "taking frames clears it");
        w.send(0, &mut vec![frame(t, 2)], &mut Vec::new(), 0);
        assert!(readable(&fd), "the next frame sets it again");
        // An empty send (buffers handed back only) does not.
        w.receive(0, t, &mut out, &mut Vec::new());
        w.send(0, &mut Vec::new(), &mut Vec::new(), 0);
        assert!(!readable(&fd));
    }

    #[test]
    fn buffers_return_to_the_sender() {
        let w = Wire::new(8);
        let t = Instant::now();
        let mut out = VecDeque::new();
        let mut used = vec![Vec::with_capacity(1500), Vec::with_capacity(1500)];
        w.receive(0, t, &mut out, &mut used);
        assert!(used.is_empty());
        let mut spares = Vec::new();
        w.send(0, &mut Vec::new(), &mut spares, 8);
        assert_eq!(spares.len(), 2);
        assert!(spares.iter().all(|b| b.capacity() >= 1500));
    }

    #[test]
    fn wait_returns_on_timeout_and_on_a_frame_from_another_thread() {
        let w = Arc::new(Wire::new(8));
        let start = Instant::now();
        w.wait(0, Some(Duration::from_millis(20)));
        assert!(start.elapsed() >= Duration::from_millis(20));

        let w2 = Arc::clone(&w);
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            let mut b = vec![frame(Instant::now(), 9)];
            w2.send(0, &mut b, &mut Vec::new(), 0);
        });
        let start = Instant::now();
        w.wait(0, Some(Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(5));
        sender.join().unwrap();
        let mut out = VecDeque::new();
        w.receive(0, Instant::now(), &mut out, &mut Vec::new());
        assert_eq!(out, [Frame::new(vec![9])]);
    }

    #[test]
    fn no_wakeup_is_lost_when_idle_lanes_skip_the_notify() {
        // Ping-pong across two threads: each side sleeps with no timeout
        // until the other sends; a lost notify would hang the test, the
        // bounded waits turn that into a failure.
        let w = Arc::new(Wire::new(8));
        let w2 = Arc::clone(&w);
        let rounds = 300;
        let echo = std::thread::spawn(move || {
            let mut out = VecDeque::new();
            for k in 0..rounds {
                let start = Instant::now();
                while out.is_empty() {
                    w2.wait(0, Some(Duration::from_secs(10)));
                    w2.receive(0, Instant::now(), &mut out, &mut Vec::new());
                    assert!(start.elapsed() < Duration::from_secs(5), "round {k}");
                }
                out.clear();
                w2.send(
                    1,
                    &mut vec![frame(Instant::now(), k as u8)],
                    &mut Vec::new(),
                    0,
                );
            }
        });
        let mut out = VecDeque::new();
        for k in 0..rounds {
            w.send(
                0,
                &mut vec![frame(Instant::now(), k as u8)],
                &mut Vec::new(),
                0,
            );
            let start = Instant::now();
            while out.is_empty() {
                w.wait(1, Some(Duration::from_secs(10)));
                w.receive(1, Instant::now(), &mut out, &mut Vec::new());
                assert!(start.elapsed() < Duration::from_secs(5), "round {k}");
            }
            assert_eq!(out.pop_front(), Some(Frame::new(vec![k as u8])));
        }
        echo.join().unwrap();
        assert_eq!(w.lane(0).sleepers + w.lane(1).sleepers, 0);
    }

    #[test]
    fn wait_wakes_when_a_delayed_frame_falls_due() {
        let w = Wire::new(8);
        let due = Instant::now() + Duration::from_millis(25);
        w.send(0, &mut vec![frame(due, 1)], &mut Vec::new(), 0);
        w.wait(0, None);
        assert!(Instant::now() >= due);
    }

    #[test]
    fn a_wake_ends_the_wait_and_is_sticky() {
        let w = Arc::new(Wire::new(8));
        // Before the wait: the next wait returns at once, once.
        w.wake(1);
        let start = Instant::now();
        w.wait(1, Some(Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(1));
        let start = Instant::now();
        w.wait(1, Some(Duration::from_millis(20)));
        assert!(
            start.elapsed() >= Duration::from_millis(20),
            "wake consumed"
        );
        // During the wait, from another thread; the other lane is untouched.
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            w2.wake(1);
        });
        let start = Instant::now();
        w.wait(1, None);
        assert!(start.elapsed() < Duration::from_secs(5));
        t.join().unwrap();
        let start = Instant::now();
        w.wait(0, Some(Duration::from_millis(10)));
        assert!(start.elapsed() >= Duration::from_millis(10));
    }
}
