//! Async verbs on tokio (feature `tokio`): connect, accept, completions and
//! connection events as futures, with the runtime itself driving the
//! device: no progress thread.
//!
//! [`drive`] spawns a task that runs [`Device::progress`] whenever the
//! transport's readiness descriptor ([`Device::readiness_fd`], watched with
//! `AsyncFd`) fires or the device's [`poll_delay`](Device::poll_delay)
//! passes. Everything else waits on an [`EventChannel`] through `AsyncFd`.
//! Every transport of the stack has a readiness descriptor (kernel TCP's is
//! an epoll set of its sockets); on one without, the driver starts a
//! progress thread instead and the futures work the same.
//!
//! ```no_run
//! # async fn demo(device: verbs::Device, addr: std::net::SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
//! let _driver = verbs::tokio::drive(&device)?;
//! let pd = device.alloc_pd();
//! let cq = verbs::tokio::AsyncCq::new(&device, 64)?;
//! let qp = verbs::tokio::AsyncQp::new(device.create_qp(&pd, verbs::QpInit::new(cq.cq()))?)?;
//! qp.connect(addr, verbs::ConnectParams::default()).await?;
//! let buf = pd.register_vec(b"ping".to_vec(), verbs::Access::NONE)?;
//! qp.post_send(verbs::wr::send(1, vec![buf.sge_all()]))?;
//! let wc = cq.next().await?;
//! assert!(wc.is_success());
//! # Ok(()) }
//! ```
//!
//! All futures are cancel-safe: dropping one loses no completion, event or
//! request (they stay queued for the next call).

use std::io;
use std::net::SocketAddr;
use std::ops::Deref;
use std::os::fd::AsFd;
use std::time::Duration;

use ::tokio::task::JoinHandle;
use transport::AsyncReadiness;

use crate::channel::EventChannel;
use crate::cm::{ConnectRequest, Listener};
use crate::cq::{CompletionQueue, NotifyOn};
use crate::device::{Device, ProgressThread};
use crate::qp::{connect_outcome, QueuePair};
use crate::srq::SharedReceiveQueue;
use crate::types::{CmEvent, ConnectParams, ConnectionInfo, SrqEvent, VerbsError, WorkCompletion};

/// Longest the driver sleeps with no deadline from the device: only a
/// bound on how stale an unforeseen timer can get.
const IDLE: Duration = Duration::from_millis(100);
/// Below this a deadline is not slept for (the granularity of tokio's timer).
const TIMER_RESOLUTION: Duration = Duration::from_millis(1);
/// Busy progress turns in a row before the driver yields to other tasks.
const BUSY_TURNS: usize = 64;

/// Drives a device from the current tokio runtime until dropped.
#[derive(Debug)]
pub struct Driver {
    task: Option<JoinHandle<()>>,
    /// Set instead of the task when the transport has no readiness descriptor.
    thread: Option<ProgressThread>,
}

impl Driver {
    /// Whether the runtime drives the device (false: a progress thread does,
    /// the transport having no readiness descriptor).
    pub fn on_runtime(&self) -> bool {
        self.task.is_some()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        drop(self.thread.take());
    }
}

/// Starts driving `device` on the current runtime (call from inside one).
/// Keep the returned [`Driver`] as long as the device is used.
pub fn drive(device: &Device) -> io::Result<Driver> {
    let Some(fd) = device.readiness_fd() else {
        return Ok(Driver {
            task: None,
            thread: Some(device.spawn_progress_thread()),
        });
    };
    let fd = AsyncReadiness::new(fd)?;
    let device = device.clone();
    Ok(Driver {
        task: Some(::tokio::spawn(drive_loop(device, fd))),
        thread: None,
    })
}

async fn drive_loop(device: Device, fd: AsyncReadiness) {
    loop {
        let mut turns = 0;
        while device.progress() {
            turns += 1;
            if turns == BUSY_TURNS {
                ::tokio::task::yield_now().await;
                turns = 0;
            }
        }
        let delay = device.poll_delay().unwrap_or(IDLE).min(IDLE);
        if delay < TIMER_RESOLUTION {
            // tokio's timers tick in milliseconds: a shorter deadline (a
            // frame due in microseconds) is met by yielding instead.
            ::tokio::task::yield_now().await;
            continue;
        }
        ::tokio::select! {
            // The readiness is cleared before the next progress turn, which
            // takes what made it readable; anything later makes a new edge.
            ready = fd.readable() => if ready.is_err() {
                ::tokio::time::sleep(delay).await;
            },
            _ = ::tokio::time::sleep(delay) => {}
        }
    }
}

/// An [`EventChannel`] registered with the runtime.
#[derive(Debug)]
struct AsyncChannel {
    channel: EventChannel,
    readiness: AsyncReadiness,
}

impl AsyncChannel {
    fn new() -> io::Result<Self> {
        let channel = EventChannel::new()?;
        let readiness = AsyncReadiness::new(channel.as_fd().try_clone_to_owned()?)?;
        Ok(AsyncChannel { channel, readiness })
    }

    fn channel(&self) -> &EventChannel {
        &self.channel
    }

    /// Waits for the channel to fire and acks it. The caller looks at what
    /// the channel watches afterwards, so a fire that the ack swallows
    /// (one after the readiness was cleared) is not lost.
    async fn fired(&self) -> io::Result<()> {
        self.readiness.readable().await?;
        self.channel.ack();
        Ok(())
    }
}

/// A completion queue whose completions can be awaited.
#[derive(Debug)]
pub struct AsyncCq {
    cq: CompletionQueue,
    channel: AsyncChannel,
}

impl AsyncCq {
    /// A completion queue of `capacity` on `device`, with its own channel.
    pub fn new(device: &Device, capacity: usize) -> io::Result<Self> {
        let channel = AsyncChannel::new()?;
        Ok(AsyncCq {
            cq: device.create_cq_with_channel(capacity, channel.channel()),
            channel,
        })
    }

    /// The queue, to name in a [`QpInit`](crate::QpInit) or poll directly.
    pub fn cq(&self) -> &CompletionQueue {
        &self.cq
    }

    /// The next completion.
    pub async fn next(&self) -> Result<WorkCompletion, VerbsError> {
        loop {
            if let Some(wc) = self.cq.poll_one()? {
                return Ok(wc);
            }
            // Arm, then look once more: a completion pushed between the
            // poll and the arm would not fire the channel.
            self.cq.req_notify(NotifyOn::Any)?;
            if let Some(wc) = self.cq.poll_one()? {
                return Ok(wc);
            }
            self.channel.fired().await.map_err(io_error)?;
        }
    }

    /// Waits for at least one completion, then takes up to `max` (at
    /// least one) of those queued.
    pub async fn next_batch(&self, max: usize) -> Result<Vec<WorkCompletion>, VerbsError> {
        let first = self.next().await?;
        let mut out = vec![first; max.max(1)];
        let n = 1 + self.cq.poll(&mut out[1..])?;
        out.truncate(n);
        Ok(out)
    }
}

/// A queue pair whose connection events can be awaited. Derefs to the
/// [`QueuePair`] for posting.
#[derive(Debug)]
pub struct AsyncQp {
    qp: QueuePair,
    events: AsyncChannel,
}

impl AsyncQp {
    /// Wraps `qp`, watching its connection events.
    pub fn new(qp: QueuePair) -> io::Result<Self> {
        let events = AsyncChannel::new()?;
        qp.watch_events(events.channel());
        Ok(AsyncQp { qp, events })
    }

    /// The queue pair.
    pub fn into_inner(self) -> QueuePair {
        self.qp
    }

    /// Connects to `remote` and waits until the connection is established
    /// or fails. Wrap in `tokio::time::timeout` to bound it beyond the MPA
    /// start-up timeout.
    pub async fn connect(
        &self,
        remote: SocketAddr,
        params: ConnectParams,
    ) -> Result<ConnectionInfo, VerbsError> {
        self.qp.connect(remote, params)?;
        self.established().await
    }

    /// Waits for the outcome of a connect or an accept.
    pub async fn established(&self) -> Result<ConnectionInfo, VerbsError> {
        connect_outcome(self.next_event().await?)
    }

    /// The next connection event.
    pub async fn next_event(&self) -> Result<CmEvent, VerbsError> {
        loop {
            if let Some(ev) = self.qp.try_event() {
                return Ok(ev);
            }
            self.events.fired().await.map_err(io_error)?;
        }
    }
}

impl Deref for AsyncQp {
    type Target = QueuePair;
    fn deref(&self) -> &QueuePair {
        &self.qp
    }
}

/// A shared receive queue whose events (the limit) can be awaited.
/// Derefs to the [`SharedReceiveQueue`] for posting.
#[derive(Debug)]
pub struct AsyncSrq {
    srq: SharedReceiveQueue,
    events: AsyncChannel,
}

impl AsyncSrq {
    /// Wraps `srq`, watching its events.
    pub fn new(srq: SharedReceiveQueue) -> io::Result<Self> {
        let events = AsyncChannel::new()?;
        srq.watch_events(events.channel());
        Ok(AsyncSrq { srq, events })
    }

    /// The shared receive queue.
    pub fn into_inner(self) -> SharedReceiveQueue {
        self.srq
    }

    /// The next event: [`SrqEvent::LimitReached`] once per arming.
    pub async fn next_event(&self) -> Result<SrqEvent, VerbsError> {
        loop {
            if let Some(ev) = self.srq.try_event() {
                return Ok(ev);
            }
            self.events.fired().await.map_err(io_error)?;
        }
    }
}

impl Deref for AsyncSrq {
    type Target = SharedReceiveQueue;
    fn deref(&self) -> &SharedReceiveQueue {
        &self.srq
    }
}

/// A listener whose connect requests can be awaited.
#[derive(Debug)]
pub struct AsyncListener {
    listener: Listener,
    requests: AsyncChannel,
}

impl AsyncListener {
    /// Listens on `port` of `device`.
    pub fn listen(
        device: &Device,
        port: u16,
        opts: crate::cm::ListenOptions,
    ) -> Result<Self, VerbsError> {
        let listener = device.listen(port, opts)?;
        let requests = AsyncChannel::new().map_err(io_error)?;
        listener.watch_requests(requests.channel());
        Ok(AsyncListener { listener, requests })
    }

    /// The listener.
    pub fn listener(&self) -> &Listener {
        &self.listener
    }

    /// The next connect request; answer it with
    /// [`ConnectRequest::accept`] and await [`AsyncQp::established`].
    pub async fn request(&self) -> Result<ConnectRequest, VerbsError> {
        loop {
            if let Some(r) = self.listener.try_request() {
                return Ok(r);
            }
            self.requests.fired().await.map_err(io_error)?;
        }
    }
}

fn io_error(e: io::Error) -> VerbsError {
    VerbsError::Io(e)
}
