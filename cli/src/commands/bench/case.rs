//! One measured case: an operation at one message size.
//!
//! Bandwidth phase: keep `depth` work requests outstanding for the
//! duration, counting bytes of successful completions. Latency phase: one
//! request at a time, timing post to completion.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use verbs::{
    wr, AcceptParams, Access, CmEvent, CompletionQueue, ConnectParams, CrcPolicy, Device,
    ListenOptions, MemoryRegion, MpaOptions, ProtectionDomain, QpInit, QueuePair, SendWr, Sge,
    WorkCompletion,
};

use super::{cpu, progress_both, ProgressModel};
use transport::link_model::QueueDelays;

/// Completions taken per poll of a completion queue.
const REAP_BATCH: usize = 16;

/// The work requests in flight at most, whatever `--depth` says.
const MAX_DEPTH: usize = 64;
/// Bytes the default depth aims to keep in flight.
const TARGET_IN_FLIGHT: usize = 1 << 20;
/// Messages each direction carries before anything is timed (see
/// [`warm_up`]).
const WARM_UP_MESSAGES: usize = 1500;
/// Receive queue depth of the server's queue pair (`QpInit`'s default).
const RQ_DEPTH: usize = 128;
/// No case waits longer than this for a single completion.
const STALL_LIMIT: Duration = Duration::from_secs(30);
/// Longest sleep on a completion queue while progress threads work.
const WAIT_SLICE: Duration = Duration::from_millis(1);
/// Longest sleep of a thread driving both devices of a memory link: a
/// bound, so a deadline neither device reports costs this, not a hang.
const IDLE_SLICE: Duration = Duration::from_millis(1);

/// What the bench's thread does when it drives both devices itself and a
/// turn of both moved nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Idle {
    /// Gives up the CPU and comes straight back: input may come from
    /// outside the thread (kernel TCP, TAP) at any moment.
    Yield,
    /// Sleeps until the sooner of both devices' deadlines (a frame falling
    /// due on the memory link, a TCP or start-up timer): with both hosts
    /// of a memory link in this thread nothing else can happen before it.
    /// On a loaded machine this is also what keeps a modelled path's round
    /// trip: a thread that yields in a loop stays runnable, is charged for
    /// the CPU it spins on, and gets the CPU back only after the other
    /// runnable tasks' slices (milliseconds, on a path of one millisecond);
    /// a thread asleep until its deadline is woken then and preempts them.
    UntilDue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Op {
    Write,
    Read,
    Send,
    /// RFC 7306 atomic Fetch and Add of one 8-byte word (size ignored).
    FetchAdd,
    /// RFC 7306 atomic Compare and Swap of one 8-byte word (size ignored).
    CmpSwap,
    /// RFC 7306 RDMA Write with Immediate Data.
    WriteImm,
    /// RFC 7306 Send with Immediate Data (two receives a message).
    SendImm,
}

impl Op {
    /// Atomics move one 8-byte operand whatever the size asked for.
    pub fn is_atomic(self) -> bool {
        matches!(self, Op::FetchAdd | Op::CmpSwap)
    }

    /// The message size a case of `size` really moves.
    pub fn effective_size(self, size: usize) -> usize {
        if self.is_atomic() {
            8
        } else {
            size
        }
    }

    /// Receives one message consumes at the server: Sends and Immediate
    /// Data one each, a Send with Immediate Data carrying bytes two.
    fn receives(self, size: usize) -> u64 {
        match self {
            Op::Send | Op::WriteImm => 1,
            Op::SendImm if size > 0 => 2,
            Op::SendImm => 1,
            Op::Write | Op::Read | Op::FetchAdd | Op::CmpSwap => 0,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Write => "write",
            Op::Read => "read",
            Op::Send => "send",
            Op::FetchAdd => "fetch-add",
            Op::CmpSwap => "cmp-swap",
            Op::WriteImm => "write-imm",
            Op::SendImm => "send-imm",
        })
    }
}

/// Both endpoints, connected.
pub(crate) struct Endpoints {
    pub client: Device,
    pub server: Device,
    client_pd: ProtectionDomain,
    server_pd: ProtectionDomain,
    client_cq: CompletionQueue,
    server_cq: CompletionQueue,
    client_qp: QueuePair,
    server_qp: QueuePair,
    idle: Idle,
    /// With [`Idle::UntilDue`]: how much later than asked each sleep ended.
    woke_late: Mutex<QueueDelays>,
}

impl Endpoints {
    pub(crate) fn connect(
        client: super::link::BoxedTransport,
        server: super::link::BoxedTransport,
        addr: SocketAddr,
        crc: CrcPolicy,
        markers: bool,
    ) -> Result<Self, String> {
        let client = Device::new(client);
        let server = Device::new(server);
        let client_pd = client.alloc_pd();
        let server_pd = server.alloc_pd();
        let client_cq = client.create_cq(4 * MAX_DEPTH);
        let server_cq = server.create_cq(4 * MAX_DEPTH);
        let client_qp = client
            .create_qp(&client_pd, QpInit::new(&client_cq))
            .map_err(|e| e.to_string())?;
        let server_qp = server
            .create_qp(&server_pd, QpInit::new(&server_cq))
            .map_err(|e| e.to_string())?;
        let mut mpa = MpaOptions::default();
        mpa.crc = crc;
        mpa.markers = markers;
        // Both ends are this stack: RFC 7306 is agreed for its operations.
        mpa.rfc7306 = true;
        let listener = server
            .listen(addr.port(), ListenOptions::default().with_mpa(mpa.clone()))
            .map_err(|e| format!("listen: {e}"))?;
        let depth = MAX_DEPTH as u16;
        client_qp
            .connect(
                addr,
                ConnectParams::default()
                    .private_data(Vec::new())
                    .ird(depth)
                    .ord(depth)
                    .mpa(mpa),
            )
            .map_err(|e| format!("connect: {e}"))?;
        let start = Instant::now();
        let (mut accepted, mut client_up, mut server_up) = (false, false, false);
        while !(client_up && server_up) {
            if start.elapsed() > STALL_LIMIT {
                return Err("the endpoints did not connect".into());
            }
            progress_both(&client, &server);
            if !accepted {
                if let Some(req) = listener.try_request() {
                    req.accept(
                        &server_qp,
                        AcceptParams::default()
                            .private_data(Vec::new())
                            .ird(depth)
                            .ord(depth),
                    )
                    .map_err(|e| format!("accept: {e}"))?;
                    accepted = true;
                }
            }
            for (qp, up, who) in [
                (&client_qp, &mut client_up, "client"),
                (&server_qp, &mut server_up, "server"),
            ] {
                match qp.try_event() {
                    Some(CmEvent::Established(_)) => *up = true,
                    Some(other) => return Err(format!("{who}: {other:?}")),
                    None => {}
                }
            }
        }
        Ok(Endpoints {
            client,
            server,
            client_pd,
            server_pd,
            client_cq,
            server_cq,
            client_qp,
            server_qp,
            idle: Idle::Yield,
            woke_late: Mutex::new(QueueDelays::default()),
        })
    }

    /// Sets what the bench's thread does when a turn moved nothing
    /// (from connecting on, [`Idle::Yield`]).
    pub(crate) fn set_idle(&mut self, idle: Idle) {
        self.idle = idle;
    }

    /// How much later than asked each sleep of [`Idle::UntilDue`] ended:
    /// the lateness of every deadline the thread waited for.
    pub(crate) fn woke_late(&self) -> QueueDelays {
        *self
            .woke_late
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits as [`Self::set_idle`] says, after a turn that moved nothing.
    fn idle(&self) {
        match self.idle {
            Idle::Yield => std::thread::yield_now(),
            Idle::UntilDue => {
                let delay = [self.client.poll_delay(), self.server.poll_delay()]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(IDLE_SLICE)
                    .min(IDLE_SLICE);
                if delay.is_zero() {
                    return;
                }
                let until = Instant::now() + delay;
                std::thread::sleep(delay);
                let late = Instant::now().saturating_duration_since(until);
                self.woke_late
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .record(late);
            }
        }
    }

    /// Both queue pairs' figures (`QueuePair::stats`), client first.
    pub(crate) fn qp_stats(&self) -> [verbs::QpStats; 2] {
        [self.client_qp.stats(), self.server_qp.stats()]
    }

    pub(crate) fn close(&self) {
        self.client_qp.disconnect();
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(200)
            && progress_both(&self.client, &self.server)
        {}
    }
}

/// What one case measured.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub bytes: u64,
    pub messages: u64,
    pub elapsed: Duration,
    /// CPU time the process spent over `elapsed`, where it can be read.
    pub cpu: Option<Duration>,
    /// Unloaded post-to-completion latencies, sorted.
    pub latencies: Vec<Duration>,
    /// The same for the samples during which the bench thread kept its
    /// CPU (no context switch): the stack's own tail, without the time
    /// other processes ran. `None` when switches cannot be observed, or
    /// with progress threads (the bench thread sleeps by design).
    pub undisturbed: Option<Vec<Duration>>,
}

pub(crate) struct Case {
    pub op: Op,
    pub size: usize,
    pub duration: Duration,
    pub depth: Option<usize>,
    pub progress: ProgressModel,
}

/// The regions one case uses.
struct Buffers {
    /// Client side: source of Write/Send, sink of Read.
    local: MemoryRegion,
    /// Server side: sink of Write, source of Read, receive ring for Send.
    remote: MemoryRegion,
    /// Receive slots in `remote` (Send).
    slots: usize,
}

impl Buffers {
    /// Deregisters both regions once nothing refers to them any more, so
    /// the devices do not keep every case's memory.
    fn release(self) {
        self.local.deregister();
        self.remote.deregister();
    }
}

/// Opens both TCP congestion windows before the first case is timed.
///
/// smoltcp grows its congestion window by one segment per acknowledgement
/// however much it acknowledges, and a receiver that reads a whole turn's
/// segments acknowledges them once: from a fresh connection, the window
/// needs hundreds of round trips to reach the 1 MiB receive window, which
/// a short large-message case would spend mostly in slow start. Small
/// messages one at a time are acknowledged one by one, so a few thousand
/// of them open the window in milliseconds. Writes open the client's
/// window, Reads the server's. The raw TCP baseline warms up the same way.
pub(crate) fn warm_up(ep: &Endpoints, progress: ProgressModel) -> Result<(), String> {
    for op in [Op::Write, Op::Read] {
        let case = Case {
            op,
            size: 64,
            duration: Duration::ZERO,
            depth: Some(1),
            progress,
        };
        let buffers = case.buffers(ep, 1)?;
        let mut driver = Driver {
            ep,
            case: &case,
            buffers: &buffers,
            posted: 0,
            next_slot: 0,
            client_done: 0,
            server_done: 0,
        };
        for _ in 0..WARM_UP_MESSAGES {
            driver.post()?;
            driver.settle()?;
        }
        driver.fence()?;
        buffers.release();
    }
    Ok(())
}

impl Case {
    pub(crate) fn run(&self, ep: &Endpoints) -> Result<Measured, String> {
        let depth = self
            .depth
            .unwrap_or((TARGET_IN_FLIGHT / self.size.max(1)).clamp(2, MAX_DEPTH))
            .clamp(1, MAX_DEPTH);
        // Every message in flight, and one more, needs its receives posted
        // within the receive queue (QpInit's default depth).
        let depth = match self.op.receives(self.op.effective_size(self.size)) {
            0 => depth,
            n => depth.min((RQ_DEPTH / n as usize).saturating_sub(1).max(1)),
        };
        self.measure(ep, depth, true)
    }

    /// The bandwidth phase alone, at exactly the case's depth: a flow
    /// measured beside others, where a latency phase would leave the
    /// path to them.
    pub(crate) fn run_bandwidth(&self, ep: &Endpoints) -> Result<Measured, String> {
        self.measure(ep, self.depth.unwrap_or(2).clamp(1, MAX_DEPTH), false)
    }

    /// The bandwidth phase at `depth`, then (with `latency`) the latency
    /// phase, with the case's regions registered for the run only.
    fn measure(&self, ep: &Endpoints, depth: usize, latency: bool) -> Result<Measured, String> {
        let buffers = self.buffers(ep, depth)?;
        let mut driver = Driver {
            ep,
            case: self,
            buffers: &buffers,
            posted: 0,
            next_slot: 0,
            client_done: 0,
            server_done: 0,
        };
        driver.prime_receives()?;
        let bw = driver.bandwidth(depth)?;
        let (latencies, undisturbed) = if latency {
            driver.latency()?
        } else {
            (Vec::new(), None)
        };
        driver.drain_receives()?;
        driver.fence()?;
        buffers.release();
        Ok(Measured {
            latencies,
            undisturbed,
            ..bw
        })
    }

    fn buffers(&self, ep: &Endpoints, depth: usize) -> Result<Buffers, String> {
        let access = Access::LOCAL_WRITE
            | Access::REMOTE_WRITE
            | Access::REMOTE_READ
            | Access::REMOTE_ATOMIC;
        let size = self.op.effective_size(self.size);
        let local = ep
            .client_pd
            .register_vec((0..size).map(|i| (i % 251) as u8).collect(), access)
            .map_err(|e| e.to_string())?;
        let slots = match self.op.receives(size) {
            0 => 1,
            n => (depth + 1) * n as usize,
        };
        // Room to align an atomic's 8-byte target.
        let remote = ep
            .server_pd
            .register(size.max(1) * slots + 8, access)
            .map_err(|e| e.to_string())?;
        Ok(Buffers {
            local,
            remote,
            slots,
        })
    }
}

struct Driver<'a> {
    ep: &'a Endpoints,
    case: &'a Case,
    buffers: &'a Buffers,
    posted: u64,
    next_slot: usize,
    /// Successful completions at the client (its send queue).
    client_done: u64,
    /// Messages received at the server (Send only).
    server_done: u64,
}

impl Driver<'_> {
    /// What counts as a finished message: for Send, its arrival at the
    /// server (a Send completes locally once handed to TCP, and only the
    /// receiver's completions say a receive buffer was used up); for Write
    /// and Read, the client's completion.
    fn finished(&self) -> u64 {
        match self.case.op.receives(self.size()) {
            0 => self.client_done,
            n => self.server_done / n,
        }
    }

    fn size(&self) -> usize {
        self.case.op.effective_size(self.case.size)
    }

    fn uses_receives(&self) -> bool {
        self.case.op.receives(self.size()) > 0
    }

    fn post(&mut self) -> Result<(), String> {
        self.post_many(1)
    }

    /// Posts the next `n` requests as one list (one verbs call, as an
    /// application refilling its send queue posts a linked list).
    fn post_many(&mut self, n: u64) -> Result<(), String> {
        let b = self.buffers;
        let sge = b.local.sge(0, self.size()).map_err(|e| e.to_string())?;
        let first = self.posted;
        let me = &*self;
        let result = self
            .ep
            .client_qp
            .post_send_list((first..first + n).map(|id| me.request(id, sge)));
        match result {
            Ok(()) => {
                self.posted += n;
                Ok(())
            }
            Err(e) => {
                self.posted += e.posted as u64;
                Err(format!("post: {}", e.error))
            }
        }
    }

    /// The case's work request number `id`, from `sge`.
    fn request(&self, id: u64, sge: Sge) -> SendWr {
        let b = self.buffers;
        let size = self.size();
        let (rkey, addr) = (b.remote.rkey(), b.remote.addr());
        let aligned = (addr + 7) & !7;
        match self.case.op {
            Op::Write => wr::write(id, vec![sge], rkey, addr),
            Op::Read => wr::read(id, sge, rkey, addr),
            Op::Send => wr::send(id, vec![sge]),
            Op::FetchAdd => wr::fetch_add(id, sge, rkey, aligned, 1),
            // Flips the word between 0 and 1; atomics run in order, so
            // every compare matches.
            Op::CmpSwap => wr::cmp_swap(id, sge, rkey, aligned, id & 1, (id + 1) & 1),
            Op::WriteImm => wr::write_imm(id, vec![sge], rkey, addr, id as u32),
            Op::SendImm if size == 0 => wr::send_imm(id, vec![], id as u32),
            Op::SendImm => wr::send_imm(id, vec![sge], id as u32),
        }
    }

    fn post_receive(&mut self) -> Result<(), String> {
        self.post_receives(1)
    }

    /// Posts the next `n` receive slots as one list.
    fn post_receives(&mut self, n: usize) -> Result<(), String> {
        let b = self.buffers;
        let size = self.size().max(1);
        // The slots lie end to end from the region's start: the last one
        // in bounds means every one is.
        b.remote
            .sge((b.slots - 1) * size, size)
            .map_err(|e| e.to_string())?;
        let base = b.remote.sge(0, size).map_err(|e| e.to_string())?;
        let first = self.next_slot;
        self.next_slot += n;
        self.ep
            .server_qp
            .post_recv_list((first..first + n).map(|i| {
                let slot = i % b.slots;
                let sge = Sge {
                    to: base.to + (slot * size) as u64,
                    ..base
                };
                wr::recv(slot as u64, vec![sge])
            }))
            .map_err(|e| format!("post receive: {e}"))
    }

    /// Send needs a receive posted ahead of every message in flight.
    fn prime_receives(&mut self) -> Result<(), String> {
        if self.uses_receives() {
            for _ in 0..self.buffers.slots {
                self.post_receive()?;
            }
        }
        Ok(())
    }

    /// Drives progress and takes completions on both sides, reposting a
    /// receive for every message the server took (when `repost`).
    /// Returns how many messages finished.
    fn reap(&mut self, repost: bool) -> Result<u64, String> {
        let before = self.finished();
        let taken = self.server_done + self.client_done;
        let moved = match self.case.progress {
            ProgressModel::Caller => progress_both(&self.ep.client, &self.ep.server),
            ProgressModel::Thread => false,
        };
        // Take only what is queued: polling an empty queue runs another
        // turn of caller-driven progress, and the turns above just ran.
        // In batches, as an application polls: one queue lock per batch.
        let mut wcs = [WorkCompletion::FILLER; REAP_BATCH];
        if self.uses_receives() {
            while !self.ep.server_cq.is_empty() {
                let n = self
                    .ep
                    .server_cq
                    .poll(&mut wcs)
                    .map_err(|e| e.to_string())?;
                if n == 0 {
                    break;
                }
                for wc in &wcs[..n] {
                    self.on_server(wc)?;
                }
                // A receive for every message taken, as one list.
                if repost {
                    self.post_receives(n)?;
                }
            }
        }
        while !self.ep.client_cq.is_empty() {
            let n = self
                .ep
                .client_cq
                .poll(&mut wcs)
                .map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            for wc in &wcs[..n] {
                self.on_client(wc)?;
            }
        }
        // Sleep only when this call took nothing: a Send's own completion
        // does not count as a finished message, but having taken it, the
        // caller may already have all it waits for.
        let took = self.server_done + self.client_done > taken;
        if !took && !moved {
            match self.case.progress {
                // The progress threads move the bytes: sleep on the queue
                // whose completion is still missing (a Send's own completion
                // may come after its arrival at the server; waiting on the
                // server then would sleep the whole slice for nothing).
                ProgressModel::Thread if self.uses_receives() && self.finished() < self.posted => {
                    if let Some(wc) = self
                        .ep
                        .server_cq
                        .wait_one(WAIT_SLICE)
                        .map_err(|e| e.to_string())?
                    {
                        self.on_server(&wc)?;
                        if repost {
                            self.post_receive()?;
                        }
                    }
                }
                ProgressModel::Thread => {
                    if let Some(wc) = self
                        .ep
                        .client_cq
                        .wait_one(WAIT_SLICE)
                        .map_err(|e| e.to_string())?
                    {
                        self.on_client(&wc)?;
                    }
                }
                ProgressModel::Caller => self.ep.idle(),
            }
        }
        Ok(self.finished() - before)
    }

    fn on_server(&mut self, wc: &WorkCompletion) -> Result<(), String> {
        check(wc, "server")?;
        self.server_done += 1;
        Ok(())
    }

    fn on_client(&mut self, wc: &WorkCompletion) -> Result<(), String> {
        check(wc, "client")?;
        self.client_done += 1;
        Ok(())
    }

    fn bandwidth(&mut self, depth: usize) -> Result<Measured, String> {
        let size = self.size() as u64;
        let first = self.finished();
        let cpu_start = cpu::process_cpu();
        let start = Instant::now();
        // When the rounds stopped finishing anything (the clock is read
        // only then: a productive round costs no clock read for this).
        let mut idle_since: Option<Instant> = None;
        while start.elapsed() < self.case.duration {
            let room = (depth as u64).saturating_sub(self.posted - self.finished());
            if room > 0 {
                self.post_many(room)?;
            }
            if self.reap(true)? == 0 {
                let since = *idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() > STALL_LIMIT {
                    return Err(format!(
                        "{} {} B: no completion for {STALL_LIMIT:?}",
                        self.case.op, size
                    ));
                }
            } else {
                idle_since = None;
            }
        }
        // What finishes after the clock stopped does not count.
        let elapsed = start.elapsed();
        let cpu = cpu::since(cpu_start);
        let messages = self.finished() - first;
        self.settle()?;
        Ok(Measured {
            bytes: messages * size,
            messages,
            elapsed,
            cpu,
            latencies: Vec::new(),
            undisturbed: None,
        })
    }

    /// Every sample, and those the scheduler did not interrupt (see
    /// [`Measured::undisturbed`]); the switch counter is read outside the
    /// timed span, so a switch during a read only discards a sample.
    fn latency(&mut self) -> Result<(Vec<Duration>, Option<Vec<Duration>>), String> {
        let budget = (self.case.duration / 4).max(Duration::from_millis(100));
        let observe = self.case.progress == ProgressModel::Caller;
        let mut lat = Vec::new();
        let mut undisturbed = Vec::new();
        let mut seen = true;
        let start = Instant::now();
        while (start.elapsed() < budget || lat.len() < 10) && lat.len() < 1_000_000 {
            let before = if observe {
                cpu::thread_switches()
            } else {
                None
            };
            let t = Instant::now();
            self.post()?;
            self.settle()?;
            let d = t.elapsed();
            lat.push(d);
            match (before, before.and_then(|_| cpu::thread_switches())) {
                (Some(a), Some(b)) if a == b => undisturbed.push(d),
                (Some(_), Some(_)) => {}
                _ => seen = false,
            }
        }
        lat.sort_unstable();
        undisturbed.sort_unstable();
        Ok((lat, seen.then_some(undisturbed)))
    }

    /// Waits until every posted request finished at both ends.
    fn settle(&mut self) -> Result<(), String> {
        let mut last = Instant::now();
        let mut arrived = self.arrived();
        while self.finished() < self.posted || self.client_done < self.posted {
            if self.reap(true)? == 0 {
                // A slow path draining a full send ring (a long, lossy
                // wire) is no stall while bytes keep arriving.
                let now_arrived = self.arrived();
                if now_arrived != arrived {
                    arrived = now_arrived;
                    last = Instant::now();
                } else if last.elapsed() > STALL_LIMIT {
                    let missing = self.posted - self.finished();
                    return Err(format!(
                        "{} {} B: {missing} completions missing",
                        self.case.op,
                        self.size()
                    ));
                }
            } else {
                last = Instant::now();
            }
        }
        Ok(())
    }

    /// Stream bytes that have reached either end so far.
    fn arrived(&self) -> u64 {
        self.ep
            .qp_stats()
            .iter()
            .map(|s| s.rdma.bytes_received)
            .sum()
    }

    /// Waits until the server has placed every Write: a Write completes
    /// once it is handed to TCP, so its last bytes may still be on their
    /// way when the client sees the completion, and deregistering the sink
    /// then would make them a protection error. A Read is answered only
    /// after everything sent before it was placed, so its completion is the
    /// fence. (Sends and Reads complete only once placed.)
    fn fence(&mut self) -> Result<(), String> {
        if self.case.op != Op::Write {
            return Ok(());
        }
        let b = self.buffers;
        let n = self.case.size.min(1);
        let sge = b.local.sge(0, n).map_err(|e| e.to_string())?;
        self.ep
            .client_qp
            .post_send(wr::read(self.posted, sge, b.remote.rkey(), b.remote.addr()))
            .map_err(|e| format!("post: {e}"))?;
        self.posted += 1;
        self.settle()
    }

    /// Consumes the receives still posted, so the next case starts clean.
    fn drain_receives(&mut self) -> Result<(), String> {
        let per_message = self.case.op.receives(self.size());
        if per_message == 0 {
            return Ok(());
        }
        // Exactly as many messages as receives remain posted, not reposted.
        for _ in 0..self.buffers.slots as u64 / per_message {
            self.post()?;
        }
        let mut last = Instant::now();
        while self.server_done < self.posted * per_message || self.client_done < self.posted {
            if self.reap(false)? > 0 {
                last = Instant::now();
            } else if last.elapsed() > STALL_LIMIT {
                return Err(format!("{}: receives could not be drained", self.case.op));
            }
        }
        Ok(())
    }
}

fn check(wc: &WorkCompletion, who: &str) -> Result<(), String> {
    if wc.is_success() {
        Ok(())
    } else {
        Err(format!(
            "{who} completion failed: {:?} ({:?}, wr_id {})",
            wc.status, wc.opcode, wc.wr_id
        ))
    }
}
