//! Two devices on the memory link with many queue pairs between them, on
//! virtual time and without captures (so that thousands of connections
//! leave nothing behind but what the stack itself keeps): one listener,
//! one completion queue per side, queue pairs connected in batches.

use std::cell::Cell;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{
    AcceptParams, CmEvent, CompletionQueue, ConnectParams, Device, ListenOptions, Listener,
    ProtectionDomain, QpInit, QueuePair, WorkCompletion,
};

use super::pair::step;
use super::{LIMIT, PORT, VIRTUAL_LIMIT};

/// One connected queue pair of the fabric.
pub struct Link {
    pub client: QueuePair,
    pub server: QueuePair,
}

/// Both devices and what they share.
pub struct Fabric {
    pub client: Device,
    pub server: Device,
    pub client_pd: ProtectionDomain,
    pub server_pd: ProtectionDomain,
    pub client_cq: CompletionQueue,
    pub server_cq: CompletionQueue,
    pub listener: Listener,
    server_addr: SocketAddr,
    clock: Cell<Option<Instant>>,
    start: Instant,
}

impl Fabric {
    /// The memory link `cfg` on virtual time, the server listening with
    /// `listen`.
    pub fn memory(cfg: &MemoryLinkConfig, listen: ListenOptions, cq_capacity: usize) -> Fabric {
        let (a, b) = MemoryLink::pair(cfg).expect("memory link");
        let (client, server) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
        let start = Instant::now();
        client.use_virtual_clock(start);
        server.use_virtual_clock(start);
        let listener = server.listen(PORT, listen).unwrap();
        Fabric {
            client_pd: client.alloc_pd(),
            server_pd: server.alloc_pd(),
            client_cq: client.create_cq(cq_capacity),
            server_cq: server.create_cq(cq_capacity),
            server_addr: cfg.endpoint_b(PORT),
            listener,
            client,
            server,
            clock: Cell::new(Some(start)),
            start,
        }
    }

    /// Simulated time so far.
    pub fn virtual_elapsed(&self) -> Duration {
        self.clock.get().map_or(Duration::ZERO, |now| {
            now.saturating_duration_since(self.start)
        })
    }

    /// A round of progress on both devices (virtual time jumps when idle).
    pub fn step(&self) -> bool {
        step(&self.client, &self.server, &self.clock)
    }

    /// A round on `device` alone (the other has gone); virtual time jumps
    /// by that device's own deadlines.
    pub fn step_alone(&self, device: &Device) -> bool {
        let now = self.clock.get().unwrap_or_else(Instant::now);
        let busy = device.progress_at(now);
        if !busy {
            let jump = match device.poll_delay_at(now) {
                Some(d) if d.is_zero() => Duration::from_micros(100),
                Some(d) => d,
                None => Duration::from_millis(1),
            };
            self.clock.set(Some(now + jump));
        }
        busy
    }

    fn check(&self, start: Instant, what: &str) {
        assert!(start.elapsed() < LIMIT, "{what} within {LIMIT:?}");
        assert!(
            self.virtual_elapsed() < VIRTUAL_LIMIT,
            "{what} within {VIRTUAL_LIMIT:?} of virtual time"
        );
    }

    /// Drives both devices until `done`, within the limits.
    pub fn drive_until(&self, what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            self.check(start, what);
            self.step();
        }
    }

    /// Connects `n` queue pairs at once, all requests in flight together.
    pub fn connect(&self, n: usize, init: impl Fn(&CompletionQueue) -> QpInit) -> Vec<Link> {
        let clients: Vec<QueuePair> = (0..n)
            .map(|_| {
                let qp = self
                    .client
                    .create_qp(&self.client_pd, init(&self.client_cq))
                    .unwrap();
                qp.connect(self.server_addr, ConnectParams::default())
                    .unwrap();
                qp
            })
            .collect();
        let mut servers: Vec<(QueuePair, Option<SocketAddr>)> = Vec::with_capacity(n);
        let mut up: Vec<Option<SocketAddr>> = vec![None; n];
        let mut server_up = 0;
        let start = Instant::now();
        while servers.len() < n || server_up < n || up.iter().any(Option::is_none) {
            self.check(start, "every queue pair connected");
            self.step();
            while let Some(req) = self.listener.try_request() {
                let qp = self
                    .server
                    .create_qp(&self.server_pd, init(&self.server_cq))
                    .unwrap();
                req.accept(&qp, AcceptParams::default()).unwrap();
                servers.push((qp, None));
            }
            for (i, qp) in clients.iter().enumerate() {
                if up[i].is_none() {
                    match qp.try_event() {
                        Some(CmEvent::Established(info)) => {
                            up[i] = Some(info.local_addr.expect("a local address"))
                        }
                        Some(other) => panic!("client queue pair {i}: {other:?}"),
                        None => {}
                    }
                }
            }
            for (qp, peer) in servers.iter_mut().filter(|(_, p)| p.is_none()) {
                match qp.try_event() {
                    Some(CmEvent::Established(info)) => {
                        *peer = Some(info.peer_addr.expect("a peer address"));
                        server_up += 1;
                    }
                    Some(other) => panic!("server queue pair: {other:?}"),
                    None => {}
                }
            }
        }
        // Pair them up: a client's local address is its server's peer.
        let clients = clients.into_iter().zip(up.into_iter().flatten()).collect();
        pair_up(clients, servers)
    }

    /// Drives until `n` completions arrived on `cq`.
    pub fn completions(&self, cq: &CompletionQueue, n: usize) -> Vec<WorkCompletion> {
        let mut out = Vec::with_capacity(n);
        let start = Instant::now();
        while out.len() < n {
            self.check(start, &format!("{n} completions (have {})", out.len()));
            while let Some(wc) = cq.poll_one().expect("cq poll") {
                out.push(wc);
            }
            if out.len() < n {
                self.step();
            }
        }
        out
    }

    /// Disconnects every link from the client side and drives until both
    /// ends of each have reported the end.
    pub fn disconnect(&self, links: &[Link]) {
        for l in links {
            l.client.disconnect();
        }
        let mut ended = vec![(false, false); links.len()];
        self.drive_until("every queue pair disconnected", || {
            for (l, e) in links.iter().zip(ended.iter_mut()) {
                e.0 |= matches!(l.client.try_event(), Some(CmEvent::Disconnected { .. }));
                e.1 |= matches!(l.server.try_event(), Some(CmEvent::Disconnected { .. }));
            }
            ended.iter().all(|&(a, b)| a && b)
        });
    }
}

/// Matches client and server queue pairs of the same connections (the
/// server accepts in its own order) by their addresses.
fn pair_up(
    clients: Vec<(QueuePair, SocketAddr)>,
    servers: Vec<(QueuePair, Option<SocketAddr>)>,
) -> Vec<Link> {
    let mut servers: Vec<Option<(QueuePair, Option<SocketAddr>)>> =
        servers.into_iter().map(Some).collect();
    clients
        .into_iter()
        .map(|(c, local)| {
            let i = servers
                .iter()
                .position(|s| s.as_ref().is_some_and(|(_, peer)| *peer == Some(local)))
                .expect("a server queue pair for every client one");
            let (server, _) = servers[i].take().unwrap_or_else(|| unreachable!());
            Link { client: c, server }
        })
        .collect()
}
