//! Two devices joined by a transport, connected, driven from the test's
//! thread (or by progress threads), with bounded loops only.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{
    AcceptParams, CompletionQueue, ConnectParams, Device, ListenOptions, ProtectionDomain, QpInit,
    QueuePair, WorkCompletion,
};

pub const PORT: u16 = 7174;
/// Upper bound on any wait in these tests; a hang fails instead of stalling.
pub const LIMIT: Duration = Duration::from_secs(60);

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
}

impl Pair {
    /// One round of progress on both devices.
    pub fn progress(&self) -> bool {
        let a = self.client.progress();
        let b = self.server.progress();
        a | b
    }

    /// Drives both devices until `done` or the limit.
    pub fn drive_until(&self, mut done: impl FnMut(&Self) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(start.elapsed() < LIMIT, "no progress within {LIMIT:?}");
            if !self.progress() {
                std::thread::yield_now();
            }
        }
    }

    /// Drives until `n` completions arrived on `cq`, returning them.
    pub fn completions(&self, cq: &CompletionQueue, n: usize) -> Vec<WorkCompletion> {
        let mut out = Vec::new();
        let start = Instant::now();
        while out.len() < n {
            assert!(
                start.elapsed() < LIMIT,
                "only {} of {n} completions within {LIMIT:?}: {out:?}",
                out.len()
            );
            while let Some(wc) = cq.poll_one().expect("cq poll") {
                out.push(wc);
            }
            if out.len() < n && !self.progress() {
                std::thread::yield_now();
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
}

/// Connects `client` to `server` listening on `addr`, with receive buffers
/// posted by `before_connect` on both queue pairs first.
pub fn connect(
    client: Device,
    server: Device,
    addr: SocketAddr,
    params: ConnectParams,
    listen: ListenOptions,
    accept: AcceptParams,
) -> Pair {
    let client_pd = client.alloc_pd();
    let server_pd = server.alloc_pd();
    let client_cq = client.create_cq(4096);
    let server_cq = server.create_cq(4096);
    let client_qp = client
        .create_qp(&client_pd, QpInit::new(&client_cq))
        .unwrap();
    let server_qp = server
        .create_qp(&server_pd, QpInit::new(&server_cq))
        .unwrap();
    let listener = server.listen(addr.port(), listen).unwrap();
    client_qp.connect(addr, params).unwrap();
    let start = Instant::now();
    let mut accepted = false;
    let mut client_up = false;
    let mut server_up = false;
    while !(client_up && server_up) {
        assert!(start.elapsed() < LIMIT, "connection not established");
        client.progress();
        server.progress();
        if !accepted {
            if let Some(req) = listener.try_request() {
                req.accept(&server_qp, accept.clone()).unwrap();
                accepted = true;
            }
        }
        if let Some(ev) = client_qp.try_event() {
            match ev {
                verbs::CmEvent::Established(_) => client_up = true,
                other => panic!("client: {other:?}"),
            }
        }
        if let Some(ev) = server_qp.try_event() {
            match ev {
                verbs::CmEvent::Established(_) => server_up = true,
                other => panic!("server: {other:?}"),
            }
        }
    }
    Pair {
        client,
        server,
        client_pd,
        server_pd,
        client_cq,
        server_cq,
        client_qp,
        server_qp,
    }
}

/// Two devices on an in-memory link.
pub fn memory_devices(cfg: &MemoryLinkConfig) -> (Device, Device, SocketAddr) {
    let (a, b) = MemoryLink::pair(cfg).unwrap();
    (
        Device::new(Box::new(a)),
        Device::new(Box::new(b)),
        cfg.endpoint_b(PORT),
    )
}

/// A connected pair on a default in-memory link.
pub fn memory_pair() -> Pair {
    let cfg = MemoryLinkConfig::default();
    let (c, s, addr) = memory_devices(&cfg);
    connect(
        c,
        s,
        addr,
        ConnectParams::default(),
        ListenOptions::default(),
        AcceptParams::default(),
    )
}

/// Deterministic test data.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}
