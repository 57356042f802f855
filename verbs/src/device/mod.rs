//! The device: one transport, its registrations, queue pairs and the
//! progress engine that moves their bytes.
//!
//! This module knows the engine, not the handles: the constructors of
//! handles (`alloc_pd`, `create_cq`, `create_qp`, `listen`) are written in
//! the handle's own module, as further `impl Device` blocks.
//!
//! Progress model. A userspace stack has no NIC moving bytes behind the
//! program's back, so something must drive it:
//! * caller-driven (the default): every polling or blocking call
//!   ([`CompletionQueue::poll`](crate::CompletionQueue::poll), `wait`,
//!   [`Device::progress`]) runs the engine, and a blocking call with nothing
//!   to do sleeps in the transport's readiness wait. No thread, no locks
//!   handed between threads: the fastest when one thread owns the device.
//! * a progress thread ([`Device::spawn_progress_thread`]): the engine runs
//!   on its own thread and blocked callers sleep on a condition variable it
//!   signals. Use it when the program does not call into the device often.
//!   A program that does (posting, or polling a completion queue in a
//!   loop) still moves its own bytes while the thread sleeps on the
//!   transport's readiness descriptor, so the thread costs it no hand-off;
//!   while a program spins in polls, the thread stops watching the
//!   sockets, so arriving bytes do not wake it onto the spinner's core.
//! * virtual time ([`Device::use_virtual_clock`], [`Device::progress_at`]):
//!   the caller supplies every instant, for deterministic simulation over
//!   the memory link.
//!
//! Waiting without the lock. Whoever sleeps in the transport's readiness
//! wait (the progress thread, or a blocked caller) takes the transport out
//! of the engine and releases the engine lock first, so other threads keep
//! posting meanwhile. A post that finds the transport away queues its work
//! and wakes the sleeper ([`Transport::waker`]), which sends it at once; a
//! call that needs the transport itself (connect, listen, accept) wakes the
//! sleeper and waits for the transport's return. Wakes are sticky, so none
//! is lost between a sleeper's last look and its sleep. A transport that
//! cannot be woken is waited on in slices of a few milliseconds instead.

mod stats;
mod watchers;

use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ddp::memory::PdId;

use crate::engine::{Engine, Registry};
use crate::transport::{Transport, Waker};

pub use stats::DeviceStats;
use stats::{Counters, WakeCause};
use transport::EventFd;
pub(crate) use watchers::Watched;
use watchers::Watchers;

/// Longest one transport wait lasts when the transport cannot be woken
/// from another thread, so that a poster is never held up for longer.
const WAIT_SLICE: Duration = Duration::from_millis(2);
/// Longest one transport wait lasts when it can be woken: only a bound on
/// how stale an unforeseen deadline can get, not a polling interval.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// Longest a thread waits for the transport (or a change) before looking
/// again, in case a wake or signal went to another thread.
const RECHECK: Duration = Duration::from_millis(10);
/// `parked_until` while no progress thread sleeps on the readiness
/// descriptor.
const NOT_PARKED: u64 = u64::MAX;
/// Longest a progress thread sleeps on the readiness descriptor while
/// callers drive turns from their polls: a poller that stops polling
/// leaves at most this long whatever its last turn left for later. The
/// thread is not woken for such work (the poller's next turn does it).
const POLLER_WATCH: Duration = Duration::from_millis(1);
/// Poller turns between two sleeps of the progress thread that show a
/// program spinning on its completion queues: the thread then leaves the
/// sockets to those turns and sleeps [`SPINNING_WATCH`] without watching
/// them, so arriving bytes wake nobody (a program that polls until empty
/// and then blocks turns once or twice per event, not this often).
const SPINNING_POLLER_TURNS: u32 = 16;
/// How long the progress thread sleeps blind while a poller spins: the
/// longest a spinner that stops (or is descheduled) leaves bytes unread.
/// Short, since the spinner's core may go to another process for a whole
/// scheduler slice; sleeping 1 ms made perftest's Read latency tail
/// several times longer.
const SPINNING_WATCH: Duration = Duration::from_micros(200);

pub(crate) struct DeviceShared {
    pub(crate) registry: Arc<Registry>,
    engine: Mutex<Engine>,
    /// Signalled when a turn changed something a blocked caller may wait
    /// for, and when the transport comes back from a wait.
    signal: Condvar,
    /// Ends a transport wait in progress (taken once from the transport).
    waker: Option<Waker>,
    /// Threads that need the transport while it is lent out to a waiter.
    wanting: AtomicUsize,
    /// Threads sleeping on `signal`.
    signal_waiters: AtomicUsize,
    /// Threads queued on (or about to take) the engine lock.
    contenders: AtomicUsize,
    /// Progress threads running (normally 0 or 1).
    threads: AtomicUsize,
    /// When a progress thread sleeping on the readiness descriptor (with
    /// the transport at home) wakes by itself, in nanoseconds after
    /// `epoch`; [`NOT_PARKED`] while none sleeps so.
    parked_until: AtomicU64,
    /// The origin of `parked_until`.
    epoch: Instant,
    /// Turns callers drove from their polls since the progress thread
    /// last went to sleep.
    poller_turns: AtomicU32,
    next_pd: AtomicU32,
    /// Progress turns and what ended each transport wait (`Device::stats`).
    counters: Counters,
    /// Event channels watching connection events (`watch_events`).
    watchers: Watchers,
}

impl std::fmt::Debug for DeviceShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceShared")
            .field("wakeable", &self.waker.is_some())
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl DeviceShared {
    fn lock(&self) -> MutexGuard<'_, Engine> {
        // Free: one atomic operation, no count (nobody queued behind it).
        match self.engine.try_lock() {
            Ok(g) => return g,
            Err(TryLockError::Poisoned(e)) => return e.into_inner(),
            Err(TryLockError::WouldBlock) => {}
        }
        // Held: counted while queued, so a progress thread between turns
        // lets us in (see `progress_loop`).
        self.contenders.fetch_add(1, Ordering::AcqRel);
        let g = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        self.contenders.fetch_sub(1, Ordering::AcqRel);
        g
    }

    /// Sleeps on the signal (releasing the engine lock) for at most `t`.
    fn wait_signal<'a>(&'a self, e: MutexGuard<'a, Engine>, t: Duration) -> MutexGuard<'a, Engine> {
        // Counted under the engine lock, which every notifier holds too,
        // so a notifier never misses a sleeper.
        self.signal_waiters.fetch_add(1, Ordering::AcqRel);
        let e = self
            .signal
            .wait_timeout(e, t)
            .unwrap_or_else(|p| p.into_inner())
            .0;
        self.signal_waiters.fetch_sub(1, Ordering::AcqRel);
        e
    }

    /// Wakes the signal's sleepers; call with the engine lock held. Free
    /// (no system call) when nobody sleeps, which is the common case.
    fn notify(&self) {
        if self.signal_waiters.load(Ordering::Acquire) > 0 {
            self.signal.notify_all();
        }
    }

    fn threaded(&self) -> bool {
        self.threads.load(Ordering::Acquire) > 0
    }

    fn wake(&self, cause: WakeCause) {
        if let Some(w) = &self.waker {
            self.counters.wake_requested(cause);
            w();
        }
    }

    /// The next protection domain number of this device.
    pub(crate) fn next_pd(&self) -> PdId {
        PdId(self.next_pd.fetch_add(1, Ordering::Relaxed))
    }

    /// The lock for a call that does not need the transport; counts the
    /// calls that got it while a waiter had the transport.
    fn lock_for_call(&self) -> MutexGuard<'_, Engine> {
        let e = self.lock();
        if !e.has_transport() || self.parked() {
            self.counters.call_during_wait();
        }
        e
    }

    /// The engine lock with the transport at home: if a waiting thread has
    /// it, that thread is woken and we wait for its return.
    fn lock_full(&self) -> MutexGuard<'_, Engine> {
        let mut e = self.lock();
        if e.has_transport() {
            if self.parked() {
                self.counters.call_during_wait();
            }
            return e;
        }
        self.wanting.fetch_add(1, Ordering::AcqRel);
        // Bounded by the waiter's own timeout: it returns the transport
        // after at most one wait even if every wake were lost.
        while !e.has_transport() {
            self.wake(WakeCause::Call);
            e = self.wait_signal(e, RECHECK);
        }
        self.wanting.fetch_sub(1, Ordering::AcqRel);
        // The waiter stepped aside for us (see `park`): it resumes as soon
        // as we release the lock rather than at its recheck timeout.
        self.notify();
        e
    }

    /// Waits in the transport for at most `delay` without holding the
    /// engine lock: the transport is lent out, and whoever needs it in the
    /// meantime wakes us. Returns with the lock held and the transport home.
    fn park<'a>(
        &'a self,
        mut e: MutexGuard<'a, Engine>,
        delay: Duration,
    ) -> MutexGuard<'a, Engine> {
        if self.wanting.load(Ordering::Acquire) > 0 {
            // Someone is queued for the transport: let them have the lock.
            return self.wait_signal(e, RECHECK);
        }
        let delay = if self.waker.is_some() {
            delay
        } else {
            delay.min(WAIT_SLICE)
        };
        let Some(mut transport) = e.take_transport() else {
            return e;
        };
        drop(e);
        let start = self.counters.wait_started();
        let began = Instant::now();
        transport.wait(Some(delay));
        self.counters.wait_ended(start, delay, began.elapsed());
        let mut e = self.lock();
        e.put_transport(transport);
        self.notify();
        e
    }

    fn notify_if_changed(&self, e: &mut Engine) {
        if e.take_changed() {
            self.notify();
        }
        self.wake_parked_if_due(e, Duration::ZERO);
        // Not only on a change: some start-up steps queue a request or an
        // event without marking the turn as changed.
        self.watchers.signal(e);
    }

    /// Wakes a progress thread asleep on the readiness descriptor if what
    /// a call just did (bytes a post left staged, a timer it set) needs a
    /// turn more than `slack` before that thread would wake by itself.
    /// One atomic load when
    /// no thread sleeps so; call with the engine lock held, which the
    /// sleeper held when it recorded its deadline.
    fn wake_parked_if_due(&self, e: &mut Engine, slack: Duration) {
        let until = self.parked_until.load(Ordering::Acquire);
        if until == NOT_PARKED {
            return;
        }
        let now = e.now();
        let due = e
            .poll_delay(now)
            .map(|d| self.since_epoch(now).saturating_add(nanos(d.max(slack))));
        if due.is_some_and(|due| due < until) {
            // Once: the sleeper's next deadline is recorded afresh.
            self.parked_until.store(NOT_PARKED, Ordering::Release);
            self.wake(WakeCause::Post);
        }
    }

    /// Whether a progress thread sleeps on the readiness descriptor.
    fn parked(&self) -> bool {
        self.parked_until.load(Ordering::Acquire) != NOT_PARKED
    }

    fn since_epoch(&self, t: Instant) -> u64 {
        nanos(t.saturating_duration_since(self.epoch))
    }

    /// The progress thread's idle wait when the transport has a readiness
    /// descriptor: sleeps on the descriptor for at most `delay` with the
    /// engine lock released and the transport left at home, so a poster
    /// sends on its own thread instead of waking this one, and a polling
    /// caller can drive progress itself. Input, the transport's waker and
    /// [`Self::wake_parked_if_due`] end the sleep.
    fn park_on_readiness<'a>(
        &'a self,
        e: MutexGuard<'a, Engine>,
        fd: &OwnedFd,
        delay: Duration,
    ) -> MutexGuard<'a, Engine> {
        if delay.is_zero() {
            return e;
        }
        let poller_turns = self.poller_turns.swap(0, Ordering::AcqRel);
        let delay = if poller_turns > 0 {
            delay.min(POLLER_WATCH)
        } else {
            delay
        };
        let until = self.since_epoch(e.now()).saturating_add(nanos(delay));
        self.parked_until.store(until, Ordering::Release);
        drop(e);
        let start = self.counters.wait_started();
        let began = Instant::now();
        if poller_turns >= SPINNING_POLLER_TURNS {
            // A spinning poller reads the sockets: being woken by them
            // too would only take a core from it.
            self.counters.poller_watch();
            std::thread::sleep(delay.min(SPINNING_WATCH));
        } else {
            // An error (EINTR, ENOMEM) ends the wait early; the loop
            // looks again.
            let _ = transport::poll_readable(&[fd.as_fd()], Some(delay));
        }
        self.counters.wait_ended(start, delay, began.elapsed());
        self.parked_until.store(NOT_PARKED, Ordering::Release);
        self.lock()
    }

    /// Makes `channel` fire whenever `what` has an event waiting; fires at
    /// once if one waits already.
    pub(crate) fn watch(&self, what: Watched, channel: &Arc<EventFd>) {
        let e = self.lock();
        self.watchers.add(what, channel);
        self.watchers.signal(&e);
    }

    /// Counts receive work requests a shared receive queue took with it.
    pub(crate) fn note_srq_discarded(&self, n: usize) {
        if n > 0 {
            self.counters.srq_wrs_discarded(n);
        }
    }

    /// Stops every channel watching `what`.
    pub(crate) fn unwatch(&self, what: Watched) {
        self.watchers.remove(what);
    }

    pub(crate) fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let mut e = self.lock_for_call();
        let r = f(&mut e);
        self.notify_if_changed(&mut e);
        r
    }

    /// Like [`Self::with_engine`], with the transport at home.
    pub(crate) fn with_transport_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let mut e = self.lock_full();
        let r = f(&mut e);
        self.notify_if_changed(&mut e);
        r
    }

    /// Posts: runs `f`, then pushes whatever it queued onto the wire at
    /// once so a post does not wait for the next progress turn. If a
    /// waiting thread holds the transport, it is woken to send instead;
    /// the poster never waits for it.
    pub(crate) fn post<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let mut e = self.lock_for_call();
        let r = f(&mut e);
        if e.flush_lazy() {
            self.counters.sent_by_poster();
        } else {
            self.wake(WakeCause::Post);
        }
        self.notify_if_changed(&mut e);
        r
    }

    /// Connection management: like [`Self::post`] with the transport at home.
    pub(crate) fn with_engine_now<R>(&self, f: impl FnOnce(&mut Engine, Instant) -> R) -> R {
        let mut e = self.lock_full();
        let now = e.now();
        let r = f(&mut e, now);
        e.flush(now);
        self.notify_if_changed(&mut e);
        r
    }

    /// A poller that found its completion queue empty drives one turn on
    /// its own thread: always when no progress thread runs; with one, only
    /// if `assist` (its queue awaits the wire), the engine is free and the transport at home (the thread is
    /// asleep on the readiness descriptor, not in the transport), never
    /// waiting for either. A program spinning in `poll` then takes its
    /// completions as soon as their bytes arrive, with no hand-off from
    /// the progress thread.
    pub(crate) fn progress_for_poller(&self, assist: bool) {
        if !self.threaded() {
            self.progress_if_caller_driven();
            return;
        }
        // A queue that expects nothing turns only while the thread
        // sleeps: a program spinning on such a queue (perftest's server
        // on its control connection) then serves the wire itself.
        if !assist && !self.parked() {
            return;
        }
        let mut e = match self.engine.try_lock() {
            Ok(e) => e,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        if !e.has_transport() {
            return;
        }
        let now = e.now();
        e.turn(now);
        self.poller_turns.fetch_add(1, Ordering::AcqRel);
        // Event channels are signalled on a change only: a poller turns
        // far more often than anything changes, and a channel whose event
        // waits untaken would be written on every turn. The progress
        // thread's own turns (at least every POLLER_WATCH) signal the
        // rest.
        if e.take_changed() {
            self.notify();
            self.watchers.signal(&e);
        }
        // What the turn left due at once (bytes read that the layer above
        // may still want, say) is this poller's next turn's: the sleeping
        // thread is only held to POLLER_WATCH, not woken.
        self.wake_parked_if_due(&mut e, POLLER_WATCH);
    }

    pub(crate) fn progress_if_caller_driven(&self) {
        if !self.threaded() {
            let mut e = self.lock_full();
            let now = e.now();
            e.turn(now);
            self.notify_if_changed(&mut e);
        }
    }

    /// What `take` finds in the engine, blocking until `ready` says there is
    /// something to take or `timeout` passes (`None`): the shape of every
    /// `wait_event`.
    pub(crate) fn wait_take<T>(
        &self,
        timeout: Duration,
        take: impl Fn(&mut Engine) -> Option<T>,
        ready: &dyn Fn(&Engine) -> bool,
    ) -> Option<T> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(t) = self.with_engine(&take) {
                return Some(t);
            }
            if Instant::now() >= deadline {
                return None;
            }
            self.block_until_engine(deadline, ready);
        }
    }

    /// Blocks until `ready` or `deadline`, driving progress meanwhile when
    /// no progress thread does.
    pub(crate) fn block_until(&self, deadline: Instant, ready: &dyn Fn() -> bool) {
        self.block_until_engine(deadline, &|_| ready())
    }

    pub(crate) fn block_until_engine(&self, deadline: Instant, ready: &dyn Fn(&Engine) -> bool) {
        let mut e = self.lock();
        loop {
            if ready(&e) {
                return;
            }
            let real = Instant::now();
            if real >= deadline {
                return;
            }
            let left = deadline - real;
            if self.threaded() || !e.has_transport() {
                // The progress thread (or another blocked caller, which has
                // the transport) drives and signals what changes.
                e = self.wait_signal(e, left.min(RECHECK));
                continue;
            }
            let now = e.now();
            let busy = e.turn(now);
            self.notify_if_changed(&mut e);
            if busy || ready(&e) {
                continue;
            }
            let delay = e.poll_delay(now).unwrap_or(IDLE_WAIT).min(left);
            e = self.park(e, delay.min(IDLE_WAIT));
        }
    }
}

/// An RDMA device over one transport.
#[derive(Debug, Clone)]
pub struct Device {
    pub(crate) shared: Arc<DeviceShared>,
}

impl Device {
    /// A device over `transport` (smoltcp on a memory link or TAP, or kernel TCP).
    pub fn new(transport: Box<dyn Transport + Send>) -> Device {
        let registry = Registry::new();
        let waker = transport.waker();
        Device {
            shared: Arc::new(DeviceShared {
                registry: registry.clone(),
                engine: Mutex::new(Engine::new(transport, registry)),
                signal: Condvar::new(),
                waker,
                wanting: AtomicUsize::new(0),
                signal_waiters: AtomicUsize::new(0),
                contenders: AtomicUsize::new(0),
                threads: AtomicUsize::new(0),
                parked_until: AtomicU64::new(NOT_PARKED),
                epoch: Instant::now(),
                poller_turns: AtomicU32::new(0),
                next_pd: AtomicU32::new(1),
                counters: Counters::default(),
                watchers: Watchers::default(),
            }),
        }
    }

    /// Runs one round of progress: moves packets, feeds received bytes to
    /// the connections, sends what they have. True if anything happened.
    pub fn progress(&self) -> bool {
        let mut e = self.shared.lock_full();
        let now = e.now();
        let busy = e.turn(now);
        self.shared.notify_if_changed(&mut e);
        busy
    }

    /// Switches the device to a caller-driven clock starting at `start`:
    /// from now on its timers (MPA start-up, TCP retransmission on the
    /// smoltcp transports) and the instants it stamps on posts see only
    /// the instants passed to [`Device::progress_at`]. With the memory
    /// link this makes a deterministic simulator: advance `now` by
    /// [`Device::poll_delay_at`] instead of sleeping. Blocking calls still
    /// time out on the system clock; drive such a device with `poll`-style
    /// calls and `progress_at` only.
    pub fn use_virtual_clock(&self, start: Instant) {
        self.shared.with_engine(|e| e.set_clock(start));
    }

    /// One round of progress at `now` (which also advances a virtual
    /// clock; it never goes backwards). True if anything happened.
    pub fn progress_at(&self, now: Instant) -> bool {
        let mut e = self.shared.lock_full();
        let now = e.advance_clock(now);
        let busy = e.turn(now);
        self.shared.notify_if_changed(&mut e);
        busy
    }

    /// How long after `now` progress must run again without outside
    /// events: the transport's timers and start-up deadlines. `None` when
    /// only I/O can make progress.
    pub fn poll_delay_at(&self, now: Instant) -> Option<Duration> {
        self.shared.lock_full().poll_delay(now)
    }

    /// Runs progress on a thread of its own until the returned handle is
    /// dropped. While it runs, blocking calls sleep instead of driving.
    ///
    /// The thread sleeps without holding the device lock, so an idle
    /// device costs no CPU. With a transport that has a readiness
    /// descriptor and a waker (kernel TCP, TAP, the memory link) it sleeps
    /// on the descriptor and leaves the transport in the device: a post
    /// sends on the posting thread, a caller polling an empty completion
    /// queue drives a turn itself, and only a post that leaves work for
    /// later (or sets an earlier timer) wakes the thread. Otherwise it
    /// sleeps in the transport's own wait with the transport lent out, and
    /// a post or any other call that needs the transport wakes it (see
    /// [`Transport::waker`]).
    pub fn spawn_progress_thread(&self) -> ProgressThread {
        self.shared.threads.fetch_add(1, Ordering::AcqRel);
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, flag) = (self.shared.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("iwarp-progress".into())
            .spawn(move || progress_loop(&shared, &flag))
            .expect("spawning the progress thread");
        ProgressThread {
            shared: self.shared.clone(),
            stop,
            handle: Some(handle),
        }
    }

    /// Turns the progress thread has run (each busy turn or idle wait
    /// counts once): an idle device's count grows by a few per second.
    pub fn progress_thread_turns(&self) -> u64 {
        self.shared.counters.thread_turns()
    }

    /// The device's progress counters: thread turns and what ended each
    /// wait in the transport (see [`DeviceStats`]).
    pub fn stats(&self) -> DeviceStats {
        self.shared.counters.snapshot()
    }

    /// The transport's readiness descriptor (a duplicate the caller owns):
    /// readable when received bytes, a connection or staged bytes the
    /// socket can now take wait for [`Device::progress`], or another
    /// thread woke the device. With [`Device::poll_delay`] it lets an
    /// event loop drive the device with no progress thread (see
    /// [`EventChannel`](crate::EventChannel)). Every transport of the stack
    /// has one (kernel TCP's is an epoll set of its sockets, made on the
    /// first call); `None` from a transport that does not.
    pub fn readiness_fd(&self) -> Option<OwnedFd> {
        self.with_transport(|t| t.readiness_fd())
    }

    /// How long until [`Device::progress`] must run again with nothing
    /// arriving (timers, delayed frames): the timeout an event loop that
    /// drives the device waits with. `None` when only input can make
    /// progress.
    pub fn poll_delay(&self) -> Option<Duration> {
        let mut e = self.shared.lock_full();
        let now = e.now();
        e.poll_delay(now)
    }

    /// Registered memory regions.
    pub fn region_count(&self) -> usize {
        self.shared.registry.len()
    }

    /// Runs `f` on the transport (for statistics or a pcap writer).
    pub fn with_transport<R>(&self, f: impl FnOnce(&mut dyn Transport) -> R) -> R {
        let mut f = Some(f);
        // lock_full returns with the transport at home, so one pass does.
        loop {
            let mut e = self.shared.lock_full();
            if let (Some(t), Some(f)) = (e.transport_mut(), f.take()) {
                return f(t);
            }
        }
    }
}

fn progress_loop(shared: &DeviceShared, stop: &AtomicBool) {
    // Without a waker nothing could end a sleep on the descriptor early.
    let readiness = match shared.waker {
        Some(_) => {
            let mut e = shared.lock_full();
            e.transport_mut().and_then(|t| t.readiness_fd())
        }
        None => None,
    };
    while !stop.load(Ordering::Acquire) {
        shared.counters.thread_turn();
        let mut e = shared.lock_full();
        let now = e.now();
        let busy = e.turn(now);
        shared.notify_if_changed(&mut e);
        if busy {
            drop(e);
            if shared.contenders.load(Ordering::Acquire) > 0 {
                // A poster is queued on the lock: let it in before the
                // next turn takes the lock again.
                std::thread::yield_now();
            }
            continue;
        }
        let delay = e.poll_delay(now).unwrap_or(IDLE_WAIT).min(IDLE_WAIT);
        if stop.load(Ordering::Acquire) {
            break;
        }
        match &readiness {
            Some(fd) => drop(shared.park_on_readiness(e, fd, delay)),
            None => drop(shared.park(e, delay)),
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1)
}

/// A running progress thread; dropping it stops and joins the thread.
#[derive(Debug)]
pub struct ProgressThread {
    shared: Arc<DeviceShared>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for ProgressThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.shared.wake(WakeCause::Call);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.shared.threads.fetch_sub(1, Ordering::AcqRel);
    }
}
