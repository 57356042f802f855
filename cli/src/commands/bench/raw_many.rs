//! Raw TCP with as many connections as a `--qps` row has queue pairs: the
//! yardstick that row's CPU cost per byte is set beside.
//!
//! On the smoltcp transports (memory link, TAP) the connections share one
//! interface per end, as the queue pairs do, and one thread pushes bytes
//! through the same seam the RDMA engine uses: each byte copied once into
//! a send ring and once out of a receive ring, as in the one-connection
//! baseline. On kernel TCP the yardstick is Linux itself: loopback
//! sockets driven by one epoll set, each touched only when it is ready.

use std::time::{Duration, Instant};

use verbs::transport::kernel::epoll_pump;
use verbs::transport::{StreamId, StreamState};

use super::cpu;
use super::link::{self, BoxedTransport, LinkOptions, TransportKind};

/// Connections started at once on smoltcp, within its listen backlog.
const CONNECT_BATCH: usize = 4;
/// No handshake is waited for longer than this.
const CONNECT_LIMIT: Duration = Duration::from_secs(30);

/// What raw TCP moved over `connections` connections at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawMany {
    pub gbps: f64,
    /// CPU seconds of the process per GB (1e9 bytes) moved.
    pub cpu_s_per_gb: Option<f64>,
}

/// Raw TCP over `connections` connections for `duration`, `chunk` bytes
/// offered to each sender at a time (the `--qps` message size).
pub(crate) fn measure(
    opts: &LinkOptions,
    connections: usize,
    chunk: usize,
    duration: Duration,
) -> Result<RawMany, String> {
    let chunk = chunk.max(1);
    if opts.kind == TransportKind::Kernel {
        let cpu_start = cpu::process_cpu();
        let run = epoll_pump(connections, chunk, duration)
            .map_err(|e| format!("raw TCP over {connections} connections: {e}"))?;
        return Ok(figures(run.bytes, run.elapsed, cpu::since(cpu_start)));
    }
    let mut link = link::build_with(opts, None)?;
    let port = link.server_addr.port().wrapping_add(2).max(1024);
    let mut addr = link.server_addr;
    addr.set_port(port);
    let (a, b) = (&mut link.client, &mut link.server);
    let pairs = connect(a, b, addr, connections)?;
    let source: Vec<u8> = (0..chunk).map(|i| (i % 251) as u8).collect();
    let mut sink = vec![0u8; chunk];
    // Where each sender is in its chunk.
    let mut offsets = vec![0usize; pairs.len()];
    let mut bytes = 0u64;
    let cpu_start = cpu::process_cpu();
    let start = Instant::now();
    while start.elapsed() < duration {
        for ((client, _), at) in pairs.iter().zip(offsets.iter_mut()) {
            let n = a
                .send_with(*client, &mut |buf| {
                    let n = buf.len().min(chunk - *at);
                    buf[..n].copy_from_slice(&source[*at..*at + n]);
                    n
                })
                .map_err(|e| format!("raw send: {e}"))?;
            *at = (*at + n) % chunk;
        }
        poll_both(a, b);
        for (_, server) in &pairs {
            bytes += b
                .recv_with(*server, &mut |d| {
                    let n = d.len().min(sink.len());
                    sink[..n].copy_from_slice(&d[..n]);
                    n
                })
                .map_err(|e| format!("raw receive: {e}"))? as u64;
        }
    }
    let elapsed = start.elapsed();
    let cpu_used = cpu::since(cpu_start);
    for (c, s) in pairs {
        link.client.abort(c);
        link.server.abort(s);
    }
    let now = Instant::now();
    link.client.poll(now);
    link.server.poll(now);
    drop(link.guard);
    Ok(figures(bytes, elapsed, cpu_used))
}

fn figures(bytes: u64, elapsed: Duration, cpu_used: Option<Duration>) -> RawMany {
    let bytes = bytes as f64;
    RawMany {
        gbps: bytes * 8.0 / elapsed.as_secs_f64().max(1e-9) / 1e9,
        cpu_s_per_gb: cpu_used
            .filter(|_| bytes > 0.0)
            .map(|c| c.as_secs_f64() / (bytes / 1e9)),
    }
}

/// `connections` established streams from `a` to `b`, a few at a time.
fn connect(
    a: &mut BoxedTransport,
    b: &mut BoxedTransport,
    addr: std::net::SocketAddr,
    connections: usize,
) -> Result<Vec<(StreamId, StreamId)>, String> {
    let listener = b
        .listen(addr.port())
        .map_err(|e| format!("raw listen: {e}"))?;
    let mut pairs = Vec::with_capacity(connections);
    let start = Instant::now();
    while pairs.len() < connections {
        let n = CONNECT_BATCH.min(connections - pairs.len());
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            clients.push(a.connect(addr).map_err(|e| format!("raw connect: {e}"))?);
        }
        let mut servers = Vec::with_capacity(n);
        while servers.len() < n
            || clients
                .iter()
                .any(|&c| a.state(c) == StreamState::Connecting)
        {
            if start.elapsed() > CONNECT_LIMIT {
                return Err(format!(
                    "raw TCP: {connections} connections did not connect"
                ));
            }
            poll_both(a, b);
            while let Some(s) = b.accept(listener) {
                servers.push(s);
            }
        }
        if let Some(c) = clients
            .iter()
            .find(|&&c| a.state(c) != StreamState::Established)
        {
            return Err(format!("raw TCP: connection ended as {:?}", a.state(*c)));
        }
        // Accepted in the order the handshakes finished; which server end
        // pairs with which client does not matter to a byte count.
        pairs.extend(clients.into_iter().zip(servers));
    }
    b.unlisten(listener);
    Ok(pairs)
}

fn poll_both(a: &mut BoxedTransport, b: &mut BoxedTransport) {
    let now = Instant::now();
    a.poll(now);
    b.poll(now);
}
