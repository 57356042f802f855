//! Both ends of one connection, and driving them: one round of progress on
//! each device per step, on the real clock or on virtual time (the clock
//! jumps to the next deadline when both devices are idle).

use std::cell::Cell;
use std::time::{Duration, Instant};

use verbs::{
    AcceptParams, CmEvent, CompletionQueue, ConnectParams, ConnectionInfo, Device,
    DisconnectReason, ListenOptions, Listener, ProtectionDomain, QpInit, QueuePair,
    SharedReceiveQueue, SrqInit, WorkCompletion,
};

use super::capture::Capture;
use super::net::{Net, Side};
use super::{LIMIT, VIRTUAL_LIMIT};

/// How a pair is connected.
#[derive(Debug, Clone)]
pub struct Opts {
    pub connect: ConnectParams,
    pub listen: ListenOptions,
    pub accept: AcceptParams,
    pub sq_depth: usize,
    pub rq_depth: usize,
    pub cq_capacity: usize,
    /// The server's queue pair receives from a shared receive queue of
    /// these sizes (in the server's protection domain).
    pub server_srq: Option<SrqInit>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            connect: ConnectParams::default(),
            listen: ListenOptions::default(),
            accept: AcceptParams::default(),
            sq_depth: 128,
            rq_depth: 128,
            cq_capacity: 1 << 16,
            server_srq: None,
        }
    }
}

impl Opts {
    /// CRC required on both sides.
    pub fn crc() -> Self {
        let mut o = Opts::default();
        o.connect.mpa.crc = verbs::CrcPolicy::Required;
        o.listen.mpa.crc = verbs::CrcPolicy::Required;
        o
    }
}

/// Both ends of one connection.
pub struct Pair {
    pub client: Device,
    pub server: Device,
    pub client_pd: ProtectionDomain,
    pub server_pd: ProtectionDomain,
    pub client_cq: CompletionQueue,
    pub server_cq: CompletionQueue,
    pub client_qp: QueuePair,
    pub server_qp: QueuePair,
    pub client_info: ConnectionInfo,
    pub server_info: ConnectionInfo,
    /// What the client's transport saw, if recorded.
    pub capture: Option<Capture>,
    pub name: String,
    pub listener: Option<Listener>,
    /// Where the client connected.
    pub server_addr: std::net::SocketAddr,
    /// The server queue pair's shared receive queue (`Opts::server_srq`).
    pub server_srq: Option<SharedReceiveQueue>,
    /// Virtual time, when the devices run on it.
    clock: Cell<Option<Instant>>,
    start: Instant,
}

impl Pair {
    pub fn device(&self, side: Side) -> &Device {
        match side {
            Side::Client => &self.client,
            Side::Server => &self.server,
        }
    }

    pub fn qp(&self, side: Side) -> &QueuePair {
        match side {
            Side::Client => &self.client_qp,
            Side::Server => &self.server_qp,
        }
    }

    pub fn cq(&self, side: Side) -> &CompletionQueue {
        match side {
            Side::Client => &self.client_cq,
            Side::Server => &self.server_cq,
        }
    }

    pub fn pd(&self, side: Side) -> &ProtectionDomain {
        match side {
            Side::Client => &self.client_pd,
            Side::Server => &self.server_pd,
        }
    }

    /// Simulated time so far (zero on the real clock).
    pub fn virtual_elapsed(&self) -> Duration {
        self.clock.get().map_or(Duration::ZERO, |now| {
            now.saturating_duration_since(self.start)
        })
    }

    /// One round of progress on both devices.
    pub fn progress(&self) -> bool {
        progress(&self.client, &self.server, &self.clock)
    }

    /// A round of progress; when nothing moved, virtual time jumps to the
    /// next deadline (or the thread yields on the real clock).
    pub fn step(&self) -> bool {
        step(&self.client, &self.server, &self.clock)
    }

    /// Drives both devices until `done` or the limit.
    pub fn drive_until(&self, mut done: impl FnMut(&Self) -> bool) {
        let start = Instant::now();
        while !done(self) {
            self.check_limits(start, "condition not reached");
            self.step();
        }
    }

    fn check_limits(&self, start: Instant, what: &str) {
        assert!(
            start.elapsed() < LIMIT,
            "{}: {what} within {LIMIT:?}",
            self.name
        );
        assert!(
            self.virtual_elapsed() < VIRTUAL_LIMIT,
            "{}: {what} within {VIRTUAL_LIMIT:?} of virtual time",
            self.name
        );
    }

    /// Drives until `n` completions arrived on `cq`, returning them.
    pub fn completions(&self, cq: &CompletionQueue, n: usize) -> Vec<WorkCompletion> {
        let mut out = Vec::new();
        let start = Instant::now();
        while out.len() < n {
            if start.elapsed() >= LIMIT || self.virtual_elapsed() >= VIRTUAL_LIMIT {
                panic!(
                    "{}: only {} of {n} completions: {out:?}",
                    self.name,
                    out.len()
                );
            }
            while let Some(wc) = cq.poll_one().expect("cq poll") {
                out.push(wc);
            }
            if out.len() < n {
                self.step();
            }
        }
        out
    }

    pub fn client_completions(&self, n: usize) -> Vec<WorkCompletion> {
        self.completions(&self.client_cq, n)
    }

    pub fn server_completions(&self, n: usize) -> Vec<WorkCompletion> {
        self.completions(&self.server_cq, n)
    }

    /// Drives a little longer and returns whatever completions arrived;
    /// used to show that nothing more comes.
    pub fn settle(&self, cq: &CompletionQueue, rounds: usize) -> Vec<WorkCompletion> {
        let mut out = Vec::new();
        for _ in 0..rounds {
            self.step();
            while let Some(wc) = cq.poll_one().expect("cq poll") {
                out.push(wc);
            }
        }
        out
    }

    /// A round of progress on one device only (the other has gone
    /// silent); virtual time jumps by that device's own deadlines.
    pub fn step_only(&self, side: Side) -> bool {
        let dev = self.device(side);
        let busy = match self.clock.get() {
            None => dev.progress(),
            Some(now) => dev.progress_at(now),
        };
        if !busy {
            match self.clock.get() {
                None => std::thread::yield_now(),
                Some(now) => {
                    let jump = match dev.poll_delay_at(now) {
                        Some(d) if d.is_zero() => Duration::from_micros(100),
                        Some(d) => d,
                        None => Duration::from_millis(1),
                    };
                    self.clock.set(Some(now + jump));
                }
            }
        }
        busy
    }

    /// Drives only `side` until it reports a connection event.
    pub fn event_alone(&self, side: Side) -> CmEvent {
        let start = Instant::now();
        loop {
            if let Some(ev) = self.qp(side).try_event() {
                return ev;
            }
            self.check_limits(start, &format!("no event on the lone {side:?}"));
            self.step_only(side);
        }
    }

    /// Drives until `side`'s queue pair reports a connection event.
    pub fn event(&self, side: Side) -> CmEvent {
        let start = Instant::now();
        loop {
            if let Some(ev) = self.qp(side).try_event() {
                return ev;
            }
            self.check_limits(start, &format!("no event on the {side:?}"));
            self.step();
        }
    }

    /// Drives until `side` reports its disconnection; returns why.
    pub fn disconnected(&self, side: Side) -> DisconnectReason {
        match self.event(side) {
            CmEvent::Disconnected { reason } => reason,
            other => panic!(
                "{}: {side:?} expected a disconnect, got {other:?}",
                self.name
            ),
        }
    }
}

/// The server of a pair whose client is gone, with the pair's clock.
pub struct Lone {
    pub device: Device,
    pub qp: QueuePair,
    pub cq: CompletionQueue,
    pub name: String,
    clock: Cell<Option<Instant>>,
    start: Instant,
}

impl Pair {
    /// Drops everything of the client (its process ends) and keeps the
    /// server, to be driven alone.
    pub fn end_client(self) -> Lone {
        let Pair {
            client,
            client_pd,
            client_cq,
            client_qp,
            server,
            server_cq,
            server_qp,
            name,
            clock,
            start,
            ..
        } = self;
        drop((client_qp, client_cq, client_pd, client));
        Lone {
            device: server,
            qp: server_qp,
            cq: server_cq,
            name,
            clock,
            start,
        }
    }
}

impl Lone {
    pub fn virtual_elapsed(&self) -> Duration {
        self.clock.get().map_or(Duration::ZERO, |now| {
            now.saturating_duration_since(self.start)
        })
    }

    /// Drives until the queue pair reports a connection event.
    pub fn event(&self) -> CmEvent {
        let start = Instant::now();
        loop {
            if let Some(ev) = self.qp.try_event() {
                return ev;
            }
            assert!(start.elapsed() < LIMIT, "{}: no event", self.name);
            assert!(
                self.virtual_elapsed() < VIRTUAL_LIMIT,
                "{}: no event",
                self.name
            );
            let busy = match self.clock.get() {
                None => self.device.progress(),
                Some(now) => self.device.progress_at(now),
            };
            if let (false, Some(now)) = (busy, self.clock.get()) {
                let jump = match self.device.poll_delay_at(now) {
                    Some(d) if d.is_zero() => Duration::from_micros(100),
                    Some(d) => d,
                    None => Duration::from_millis(1),
                };
                self.clock.set(Some(now + jump));
            }
        }
    }
}

/// One round of progress on both devices, at the virtual clock if set.
pub fn progress(client: &Device, server: &Device, clock: &Cell<Option<Instant>>) -> bool {
    match clock.get() {
        None => {
            let a = client.progress();
            let b = server.progress();
            a | b
        }
        Some(now) => {
            let a = client.progress_at(now);
            let b = server.progress_at(now);
            a | b
        }
    }
}

/// A round of progress on both devices; when nothing moved, virtual time
/// jumps to the next deadline (or the thread yields on the real clock).
pub fn step(client: &Device, server: &Device, clock: &Cell<Option<Instant>>) -> bool {
    let busy = progress(client, server, clock);
    if busy {
        return true;
    }
    match clock.get() {
        None => std::thread::yield_now(),
        Some(now) => {
            let delay = match (client.poll_delay_at(now), server.poll_delay_at(now)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let jump = match delay {
                // Due now but nothing moved: nudge past smoltcp's
                // millisecond timer granularity.
                Some(d) if d.is_zero() => Duration::from_micros(100),
                Some(d) => d,
                None => Duration::from_millis(1),
            };
            clock.set(Some(now + jump));
        }
    }
    false
}

/// Connects the two devices of `net` (client initiates).
pub fn connect(net: Net, opts: Opts) -> Pair {
    try_connect(net, opts).unwrap_or_else(|e| panic!("{}: {:?}", e.0, e.1))
}

/// Connects, or returns the net's name and the first event that was not
/// `Established`.
pub fn try_connect(net: Net, opts: Opts) -> Result<Pair, Box<(String, CmEvent)>> {
    let Net {
        client,
        server,
        server_ip,
        listen_port,
        capture,
        virtual_start,
        name,
    } = net;
    let clock = Cell::new(virtual_start);
    let client_pd = client.alloc_pd();
    let server_pd = server.alloc_pd();
    let client_cq = client.create_cq(opts.cq_capacity);
    let server_cq = server.create_cq(opts.cq_capacity);
    let init = |cq: &CompletionQueue| QpInit::new(cq).with_depths(opts.sq_depth, opts.rq_depth);
    let server_srq = opts
        .server_srq
        .map(|i| server.create_srq(&server_pd, i).unwrap());
    let client_qp = client.create_qp(&client_pd, init(&client_cq)).unwrap();
    let server_init = match &server_srq {
        Some(srq) => init(&server_cq).with_srq(srq),
        None => init(&server_cq),
    };
    let server_qp = server.create_qp(&server_pd, server_init).unwrap();
    let listener = server.listen(listen_port, opts.listen.clone()).unwrap();
    let addr = std::net::SocketAddr::new(server_ip, listener.port());
    client_qp.connect(addr, opts.connect.clone()).unwrap();
    let start = Instant::now();
    let mut accepted = false;
    let mut client_info = None;
    let mut server_info = None;
    while client_info.is_none() || server_info.is_none() {
        assert!(
            start.elapsed() < LIMIT,
            "{name}: connection not established"
        );
        step(&client, &server, &clock);
        if !accepted {
            if let Some(req) = listener.try_request() {
                req.accept(&server_qp, opts.accept.clone()).unwrap();
                accepted = true;
            }
        }
        if client_info.is_none() {
            match client_qp.try_event() {
                Some(CmEvent::Established(i)) => client_info = Some(i),
                Some(other) => return Err(Box::new((name, other))),
                None => {}
            }
        }
        if server_info.is_none() {
            match server_qp.try_event() {
                Some(CmEvent::Established(i)) => server_info = Some(i),
                Some(other) => return Err(Box::new((name, other))),
                None => {}
            }
        }
    }
    Ok(Pair {
        client,
        server,
        client_pd,
        server_pd,
        client_cq,
        server_cq,
        client_qp,
        server_qp,
        client_info: client_info.unwrap_or_else(|| unreachable!()),
        server_info: server_info.unwrap_or_else(|| unreachable!()),
        capture,
        name,
        listener: Some(listener),
        server_addr: addr,
        server_srq,
        clock,
        start: virtual_start.unwrap_or(start),
    })
}

impl Pair {
    /// One more connection between the same two devices through the
    /// pair's listener, on new queue pairs reporting into the pair's
    /// completion queues; the server's receives from the pair's shared
    /// receive queue if it has one. Returns (client, server) queue pairs.
    pub fn another_connection(&self, opts: &Opts) -> (QueuePair, QueuePair) {
        let init = |cq: &CompletionQueue| QpInit::new(cq).with_depths(opts.sq_depth, opts.rq_depth);
        let client_qp = self
            .client
            .create_qp(&self.client_pd, init(&self.client_cq))
            .unwrap();
        let server_init = match &self.server_srq {
            Some(srq) => init(&self.server_cq).with_srq(srq),
            None => init(&self.server_cq),
        };
        let server_qp = self.server.create_qp(&self.server_pd, server_init).unwrap();
        let listener = self.listener.as_ref().expect("the pair's listener");
        client_qp
            .connect(self.server_addr, opts.connect.clone())
            .unwrap();
        let start = Instant::now();
        let (mut accepted, mut up) = (false, [false, false]);
        while !(up[0] && up[1]) {
            self.check_limits(start, "another connection established");
            self.step();
            if !accepted {
                if let Some(req) = listener.try_request() {
                    req.accept(&server_qp, opts.accept.clone()).unwrap();
                    accepted = true;
                }
            }
            for (i, qp) in [&client_qp, &server_qp].into_iter().enumerate() {
                match qp.try_event() {
                    Some(CmEvent::Established(_)) => up[i] = true,
                    Some(other) => panic!("{}: another connection: {other:?}", self.name),
                    None => {}
                }
            }
        }
        (client_qp, server_qp)
    }
}

/// A connected pair on a default in-memory link.
pub fn memory_pair() -> Pair {
    connect(
        Net::memory(&super::MemoryLinkConfig::default()),
        Opts::default(),
    )
}
