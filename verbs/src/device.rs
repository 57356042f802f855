//! The device: one transport, its registrations, queue pairs and the
//! progress engine that moves their bytes.
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

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ddp::memory::PdId;

use crate::cm::{ListenOptions, Listener};
use crate::cq::{CompletionQueue, CqShared};
use crate::engine::Engine;
use crate::error::VerbsError;
use crate::mr::Registry;
use crate::pd::ProtectionDomain;
use crate::qp::{QpInit, QueuePair};
use crate::transport::Transport;

/// Longest a blocked caller sleeps in one transport wait, so that another
/// thread posting to the same device is never held up for longer.
const WAIT_SLICE: Duration = Duration::from_millis(2);

#[derive(Debug)]
pub(crate) struct DeviceShared {
    pub(crate) registry: Arc<Registry>,
    engine: Mutex<Engine>,
    /// Signalled by the progress thread after a turn that changed anything.
    changed: Condvar,
    threaded: AtomicBool,
    stop: AtomicBool,
    next_pd: AtomicU32,
}

impl DeviceShared {
    fn lock(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        f(&mut self.lock())
    }

    /// Runs `f`, then pushes whatever it queued onto the wire at once, so a
    /// post does not wait for the next progress turn.
    pub(crate) fn with_engine_now<R>(&self, f: impl FnOnce(&mut Engine, Instant) -> R) -> R {
        let mut e = self.lock();
        let now = Instant::now();
        let r = f(&mut e, now);
        e.flush(now);
        r
    }

    pub(crate) fn progress_if_caller_driven(&self) {
        if !self.threaded.load(Ordering::Acquire) {
            self.lock().turn(Instant::now());
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
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            if self.threaded.load(Ordering::Acquire) {
                e = self
                    .changed
                    .wait_timeout(e, deadline - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                continue;
            }
            if e.turn(now) || ready(&e) {
                continue;
            }
            let delay = e
                .poll_delay(now)
                .unwrap_or(WAIT_SLICE)
                .min(deadline - now)
                .min(WAIT_SLICE);
            e.wait(delay);
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
        Device {
            shared: Arc::new(DeviceShared {
                registry: registry.clone(),
                engine: Mutex::new(Engine::new(transport, registry)),
                changed: Condvar::new(),
                threaded: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                next_pd: AtomicU32::new(1),
            }),
        }
    }

    pub fn alloc_pd(&self) -> ProtectionDomain {
        let id = PdId(self.shared.next_pd.fetch_add(1, Ordering::Relaxed));
        ProtectionDomain {
            id,
            device: self.shared.clone(),
        }
    }

    /// A completion queue holding up to `capacity` completions before it
    /// reports an overflow (nothing is dropped).
    pub fn create_cq(&self, capacity: usize) -> CompletionQueue {
        CompletionQueue {
            shared: CqShared::new(capacity.max(1)),
            device: self.shared.clone(),
        }
    }

    pub fn create_qp(&self, pd: &ProtectionDomain, init: QpInit) -> Result<QueuePair, VerbsError> {
        if !Arc::ptr_eq(&pd.device, &self.shared) {
            return Err(VerbsError::WrongDevice);
        }
        let num = self.shared.with_engine(|e| e.create_qp(pd.id, &init));
        Ok(QueuePair {
            num,
            pd: pd.clone(),
            device: self.shared.clone(),
        })
    }

    /// Listens for connect requests on `port`.
    pub fn listen(&self, port: u16, opts: ListenOptions) -> Result<Listener, VerbsError> {
        let (id, port) = self.shared.with_engine(|e| e.listen(port, opts))?;
        Ok(Listener {
            id,
            port,
            device: self.shared.clone(),
        })
    }

    /// Runs one round of progress: moves packets, feeds received bytes to
    /// the connections, sends what they have. True if anything happened.
    pub fn progress(&self) -> bool {
        self.shared.lock().turn(Instant::now())
    }

    /// Runs progress on a thread of its own until the returned handle is
    /// dropped. While it runs, blocking calls sleep instead of driving.
    pub fn spawn_progress_thread(&self) -> ProgressThread {
        self.shared.threaded.store(true, Ordering::Release);
        self.shared.stop.store(false, Ordering::Release);
        let shared = self.shared.clone();
        let handle = std::thread::Builder::new()
            .name("iwarp-progress".into())
            .spawn(move || {
                while !shared.stop.load(Ordering::Acquire) {
                    let mut e = shared.lock();
                    let now = Instant::now();
                    let busy = e.turn(now);
                    if e.take_changed() {
                        shared.changed.notify_all();
                    }
                    if !busy {
                        let delay = e.poll_delay(now).unwrap_or(WAIT_SLICE).min(WAIT_SLICE);
                        e.wait(delay);
                    }
                }
            })
            .expect("spawning the progress thread");
        ProgressThread {
            shared: self.shared.clone(),
            handle: Some(handle),
        }
    }

    /// Registered memory regions.
    pub fn region_count(&self) -> usize {
        self.shared.registry.len()
    }

    /// Runs `f` on the transport (for statistics or a pcap writer).
    pub fn with_transport<R>(&self, f: impl FnOnce(&mut dyn Transport) -> R) -> R {
        self.shared.with_engine(|e| f(e.transport_mut()))
    }
}

/// A running progress thread; dropping it stops and joins the thread.
#[derive(Debug)]
pub struct ProgressThread {
    shared: Arc<DeviceShared>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for ProgressThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.shared.threaded.store(false, Ordering::Release);
    }
}
