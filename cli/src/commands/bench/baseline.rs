//! Raw TCP goodput over the same kind of link, measured in the same run:
//! the figure RDMA goodput is divided by.
//!
//! One thread pushes bytes from the client transport to the server
//! transport through the same seam the RDMA engine uses, copying each byte
//! once into the send buffer and once out of the receive buffer — the
//! copies RDMA Write pays too — and nothing else.

use std::time::{Duration, Instant};

use verbs::transport::{StreamId, StreamState, Transport};

use super::cpu;
use super::link::{self, LinkOptions};

const CHUNK: usize = 1 << 20;
/// Small sends before the clock starts: each is acknowledged on its own,
/// and each acknowledgement grows smoltcp's congestion window by one
/// segment, so these open it past the 1 MiB receive window.
const WARM_UP_ROUNDS: usize = 1500;
const WARM_UP_BYTES: usize = 64;

/// Raw TCP goodput over wall-clock time and over the CPU time it took.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Baseline {
    pub gbps: f64,
    /// Gbit per CPU-second; `None` where CPU time cannot be read.
    pub cpu_gbps: Option<f64>,
}

/// Payload delivered in `duration`.
pub(crate) fn measure(opts: &LinkOptions, duration: Duration) -> Result<Baseline, String> {
    let mut link = link::build_with(opts, None)?;
    let port = link.server_addr.port().wrapping_add(1).max(1024);
    let mut addr = link.server_addr;
    addr.set_port(port);
    let (a, b) = (&mut link.client, &mut link.server);
    let listener = b
        .listen(port)
        .map_err(|e| format!("baseline listen: {e}"))?;
    let client = a
        .connect(addr)
        .map_err(|e| format!("baseline connect: {e}"))?;
    let limit = Instant::now() + Duration::from_secs(30);
    let mut server = None;
    while server.is_none() || a.state(client) == StreamState::Connecting {
        if Instant::now() > limit {
            return Err("baseline: TCP did not connect".into());
        }
        poll_both(a.as_mut(), b.as_mut());
        server = server.or_else(|| b.accept(listener));
    }
    let server = server.ok_or("baseline: no connection")?;
    let mut pump = Pump {
        source: (0..CHUNK).map(|i| (i % 251) as u8).collect(),
        sink: vec![0u8; CHUNK],
        sent: 0,
        received: 0,
    };
    // Open the congestion window before the clock starts, as the RDMA
    // endpoints do (see `case::warm_up`).
    for _ in 0..WARM_UP_ROUNDS {
        pump.round(a.as_mut(), b.as_mut(), client, server, WARM_UP_BYTES)?;
    }
    let first = pump.received;
    let cpu_start = cpu::process_cpu();
    let start = Instant::now();
    while start.elapsed() < duration {
        pump.round(a.as_mut(), b.as_mut(), client, server, CHUNK)?;
    }
    let received = pump.received - first;
    let secs = start.elapsed().as_secs_f64();
    let cpu_secs = cpu::since(cpu_start).map(|d| d.as_secs_f64());
    a.abort(client);
    b.abort(server);
    drop(link);
    let bits = received as f64 * 8.0;
    Ok(Baseline {
        gbps: bits / secs / 1e9,
        cpu_gbps: cpu_secs.filter(|s| *s > 0.0).map(|s| bits / s / 1e9),
    })
}

/// Bytes moving from one end to the other through the seam.
struct Pump {
    source: Vec<u8>,
    sink: Vec<u8>,
    sent: u64,
    received: u64,
}

impl Pump {
    /// Queues up to `max` bytes at `a`, polls both ends, drains `b`.
    fn round(
        &mut self,
        a: &mut dyn Transport,
        b: &mut dyn Transport,
        client: StreamId,
        server: StreamId,
        max: usize,
    ) -> Result<(), String> {
        let Pump {
            source,
            sink,
            sent,
            received,
        } = self;
        a.send_with(client, &mut |buf| {
            let at = (*sent % CHUNK as u64) as usize;
            let n = buf.len().min(CHUNK - at).min(max);
            buf[..n].copy_from_slice(&source[at..at + n]);
            *sent += n as u64;
            n
        })
        .map_err(|e| format!("baseline send: {e}"))?;
        poll_both(a, b);
        b.recv_with(server, &mut |d| {
            let at = (*received % CHUNK as u64) as usize;
            let n = d.len().min(CHUNK - at);
            sink[at..at + n].copy_from_slice(&d[..n]);
            *received += n as u64;
            n
        })
        .map_err(|e| format!("baseline receive: {e}"))?;
        Ok(())
    }
}

fn poll_both(a: &mut dyn Transport, b: &mut dyn Transport) {
    let now = Instant::now();
    a.poll(now);
    b.poll(now);
}
