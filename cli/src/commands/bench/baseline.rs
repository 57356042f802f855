//! Raw TCP goodput over the same kind of link, measured in the same run:
//! the figure RDMA goodput is divided by.
//!
//! One thread pushes bytes from the client transport to the server
//! transport through the same seam the RDMA engine uses, copying each byte
//! once into the send buffer and once out of the receive buffer — the
//! copies RDMA Write pays too — and nothing else.

use std::time::{Duration, Instant};

use verbs::transport::{StreamId, StreamState, TcpLossStats, Transport};

use super::cpu;
use super::link::{self, BoxedTransport, LinkOptions};

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
    /// The TCP loss counters of both ends, warm-up included; `None` for a
    /// transport without them (kernel TCP).
    pub tcp: Option<TcpLossStats>,
    /// Gbit per CPU-second of each raw run this figure was taken from
    /// (see [`Baseline::better_of`]); the second is `None` for one run.
    pub runs_cpu_gbps: [Option<f64>; 2],
}

impl Baseline {
    /// The better of two raw runs, one before the RDMA cases and one
    /// after: the ratios divide by it, so other load that slowed one raw
    /// run cannot make RDMA look closer to raw TCP than it is (one slowed
    /// run moved cpu ratios by up to 0.1, past 1.0). Goodput and goodput
    /// per CPU-second are each the higher of the two; the loss counters
    /// add up.
    pub(crate) fn better_of(first: Baseline, second: Baseline) -> Baseline {
        let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let tcp = match (first.tcp, second.tcp) {
            (Some(mut a), Some(b)) => {
                a.merge(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        Baseline {
            gbps: first.gbps.max(second.gbps),
            cpu_gbps: max(first.cpu_gbps, second.cpu_gbps),
            tcp,
            runs_cpu_gbps: [first.cpu_gbps, second.cpu_gbps],
        }
    }
}

/// Payload delivered in `duration`.
pub(crate) fn measure(opts: &LinkOptions, duration: Duration) -> Result<Baseline, String> {
    let mut pair = RawPair::connect(opts)?;
    let (a, b) = (&mut pair.link.client, &mut pair.link.server);
    let (client, server) = (pair.client, pair.server);
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
    let tcp = [&pair.link.client, &pair.link.server]
        .iter()
        .filter_map(|t| t.tcp_loss_stats())
        .reduce(|mut sum, s| {
            sum.merge(&s);
            sum
        });
    pair.close();
    let bits = received as f64 * 8.0;
    Ok(Baseline {
        gbps: bits / secs / 1e9,
        cpu_gbps: cpu_secs.filter(|s| *s > 0.0).map(|s| bits / s / 1e9),
        tcp,
        runs_cpu_gbps: [cpu_secs.filter(|s| *s > 0.0).map(|s| bits / s / 1e9), None],
    })
}

/// Raw TCP carrying fixed-size records: the yardstick for small messages,
/// where bulk goodput says nothing about what a message costs.
#[derive(Debug, Clone)]
pub(crate) struct SmallBaseline {
    /// Bytes per record.
    pub record: usize,
    /// Records delivered per second, at most [`RECORDS_IN_FLIGHT`] queued.
    pub msgs_per_s: f64,
    /// The same per CPU-second of the process.
    pub cpu_msgs_per_s: Option<f64>,
    /// One record there and one back, post to arrival, median.
    pub rtt_us_p50: f64,
    /// For each message size of the run: that many bytes there and one
    /// record back, median microseconds (the raw curve of `--plot`).
    pub latency: Vec<(usize, f64)>,
}

/// Records queued at once in the rate phase: the bench's deepest queue
/// of work requests, so both sides may batch alike.
pub(crate) const RECORDS_IN_FLIGHT: usize = 64;
/// Bytes of the small-message records.
pub(crate) const RECORD: usize = 64;

/// Records of [`RECORD`] bytes: the rate with [`RECORDS_IN_FLIGHT`]
/// outstanding for `duration`, then round trips one at a time for a
/// quarter of it: one record each way, then each of `sizes` there and a
/// record back. Each record is its own `send_with`, as each RDMA message
/// is its own FPDU.
pub(crate) fn measure_small(
    opts: &LinkOptions,
    duration: Duration,
    sizes: &[usize],
) -> Result<SmallBaseline, String> {
    let mut pair = RawPair::connect(opts)?;
    let (a, b) = (&mut pair.link.client, &mut pair.link.server);
    let (client, server) = (pair.client, pair.server);
    let record = [0x5au8; RECORD];
    // Bytes queued and bytes delivered: a record may be split where the
    // send ring wraps, as a stream allows.
    let (mut sent, mut received) = (0u64, 0u64);
    let window = (RECORDS_IN_FLIGHT * RECORD) as u64;
    let mut rate =
        |a: &mut BoxedTransport, b: &mut BoxedTransport, until: Instant| -> Result<u64, String> {
            let first = received / RECORD as u64;
            while Instant::now() < until {
                while sent - received < window {
                    // One record (or what is left of it) per call.
                    let at = (sent % RECORD as u64) as usize;
                    let n = a
                        .send_with(client, &mut |buf| {
                            let n = buf.len().min(RECORD - at);
                            buf[..n].copy_from_slice(&record[at..at + n]);
                            n
                        })
                        .map_err(|e| format!("small baseline send: {e}"))?;
                    if n == 0 {
                        break;
                    }
                    sent += n as u64;
                }
                poll_both(a.as_mut(), b.as_mut());
                b.recv_with(server, &mut |d| {
                    received += d.len() as u64;
                    d.len()
                })
                .map_err(|e| format!("small baseline receive: {e}"))?;
            }
            Ok(received / RECORD as u64 - first)
        };
    rate(a, b, Instant::now() + Duration::from_millis(50))?;
    let cpu_start = cpu::process_cpu();
    let start = Instant::now();
    let records = rate(a, b, start + duration)?;
    let secs = start.elapsed().as_secs_f64();
    let cpu_secs = cpu::since(cpu_start).map(|d| d.as_secs_f64());
    // Let the last records arrive before timing round trips.
    let limit = Instant::now() + Duration::from_secs(5);
    while received < sent && Instant::now() < limit {
        poll_both(a.as_mut(), b.as_mut());
        b.recv_with(server, &mut |d| {
            received += d.len() as u64;
            d.len()
        })
        .map_err(|e| format!("small baseline receive: {e}"))?;
    }
    if received < sent {
        return Err("small baseline: records did not all arrive".into());
    }
    let budget = (duration / 4).max(Duration::from_millis(100));
    let rtts = round_trips(a, b, client, server, RECORD, budget)?;
    let mut latency = Vec::new();
    let per_size = (budget / sizes.len().max(1) as u32).max(Duration::from_millis(20));
    for &size in sizes {
        let t = round_trips(a, b, client, server, size, per_size)?;
        latency.push((size, super::percentile::percentile(&t, 50.0)));
    }
    pair.close();
    Ok(SmallBaseline {
        record: RECORD,
        msgs_per_s: records as f64 / secs.max(1e-9),
        cpu_msgs_per_s: cpu_secs.filter(|s| *s > 0.0).map(|s| records as f64 / s),
        rtt_us_p50: super::percentile::percentile(&rtts, 50.0),
        latency,
    })
}

/// Ping-pong of `len` bytes there and one record back; sorted round-trip
/// times, as many as `budget` allows (at least 10).
fn round_trips(
    a: &mut BoxedTransport,
    b: &mut BoxedTransport,
    client: StreamId,
    server: StreamId,
    len: usize,
    budget: Duration,
) -> Result<Vec<Duration>, String> {
    let payload: Vec<u8> = (0..len.max(RECORD)).map(|i| (i % 251) as u8).collect();
    let mut out = Vec::new();
    let start = Instant::now();
    while (start.elapsed() < budget || out.len() < 10) && out.len() < 1_000_000 {
        let t = Instant::now();
        one_way(a, b, client, server, &payload[..len])?;
        one_way(b, a, server, client, &payload[..RECORD])?;
        out.push(t.elapsed());
    }
    out.sort_unstable();
    Ok(out)
}

/// `bytes` from `from` (stream `tx`) until they have all arrived at `to`
/// (stream `rx`).
fn one_way(
    from: &mut BoxedTransport,
    to: &mut BoxedTransport,
    tx: StreamId,
    rx: StreamId,
    bytes: &[u8],
) -> Result<(), String> {
    let len = bytes.len();
    let (mut queued, mut got) = (0, 0);
    let mut last = Instant::now();
    while got < len {
        if last.elapsed() > Duration::from_secs(5) {
            return Err("raw TCP round trip: the bytes did not arrive".into());
        }
        if queued < len {
            queued += from
                .send_with(tx, &mut |buf| {
                    let n = buf.len().min(len - queued);
                    buf[..n].copy_from_slice(&bytes[queued..queued + n]);
                    n
                })
                .map_err(|e| format!("raw TCP round trip send: {e}"))?;
        }
        poll_both(from.as_mut(), to.as_mut());
        let n = to
            .recv_with(rx, &mut |d| {
                let n = d.len().min(len - got);
                got += n;
                n
            })
            .map_err(|e| format!("raw TCP round trip receive: {e}"))?;
        if n > 0 {
            last = Instant::now();
        }
    }
    Ok(())
}

/// A raw TCP connection between the two transports of a fresh link.
struct RawPair {
    link: link::Link,
    client: StreamId,
    server: StreamId,
}

impl RawPair {
    fn connect(opts: &LinkOptions) -> Result<RawPair, String> {
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
        Ok(RawPair {
            link,
            client,
            server,
        })
    }

    fn close(mut self) {
        self.link.client.abort(self.client);
        self.link.server.abort(self.server);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(gbps: f64, cpu_gbps: Option<f64>, resent: u64) -> Baseline {
        let mut tcp = TcpLossStats::default();
        tcp.retransmitted_bytes = resent;
        Baseline {
            gbps,
            cpu_gbps,
            tcp: Some(tcp),
            runs_cpu_gbps: [cpu_gbps, None],
        }
    }

    #[test]
    fn the_better_of_two_runs_divides_the_ratios() {
        let b = Baseline::better_of(run(30.0, Some(29.5), 1), run(28.0, Some(32.5), 2));
        assert_eq!(b.gbps, 30.0);
        assert_eq!(b.cpu_gbps, Some(32.5));
        assert_eq!(b.runs_cpu_gbps, [Some(29.5), Some(32.5)]);
        assert_eq!(b.tcp.map(|t| t.retransmitted_bytes), Some(3));
    }

    #[test]
    fn a_run_without_cpu_time_leaves_the_other() {
        let b = Baseline::better_of(run(30.0, None, 0), run(31.0, Some(30.0), 0));
        assert_eq!(b.cpu_gbps, Some(30.0));
        assert_eq!(b.gbps, 31.0);
    }
}
