//! Raw TCP over many connections on one memory link, one thread driving
//! both hosts: the loop of `iwarp bench --qps`'s raw yardstick, alone, so
//! it can be profiled and its ring size varied.
//!
//! `cargo run --release -p iwarp-bench --example raw_many [CONNS] [RING_KIB] [SECONDS] [CHUNK_KIB]`
//!
//! Each turn offers each sender up to CHUNK_KIB (64 by default, as the
//! bench's `--sizes 64k`): CONNS times that is what one turn moves, and
//! so what its copies pass through.
//!
//! Prints CPU seconds per GB and the frames each way per MB moved (B's
//! frames to A are nearly all pure ACKs).

use std::time::{Duration, Instant};

use transport::memory::{MemoryLinkConfig, MemoryNet, MEMORY_LINK_RING};
use transport::{StreamState, Transport};

const PORT: u16 = 5001;

fn cpu_seconds() -> f64 {
    // SAFETY: `rusage` is plain integers, for which all zeroes is valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct it is given and nothing else.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let arg = |i: usize, d: u64| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let conns = arg(1, 256).max(1) as usize;
    let ring = arg(2, (MEMORY_LINK_RING >> 10) as u64).max(1) as usize * 1024;
    let secs = arg(3, 2);
    let chunk = arg(4, 64).max(1) as usize * 1024;
    let mut cfg = MemoryLinkConfig::default();
    cfg.tuning = cfg.tuning.rx_buffer(ring).tx_buffer(ring);
    let mut net = MemoryNet::new(cfg.clone()).expect("link");
    let listener = net.b.listen(PORT).expect("listen");
    let mut pairs = Vec::new();
    let now = Instant::now();
    while pairs.len() < conns {
        let batch: Vec<_> = (0..4.min(conns - pairs.len()))
            .map(|_| net.a.connect(cfg.endpoint_b(PORT)).expect("connect"))
            .collect();
        let mut servers = Vec::new();
        while servers.len() < batch.len()
            || batch
                .iter()
                .any(|&c| net.a.state(c) == StreamState::Connecting)
        {
            net.poll(Instant::now());
            while let Some(s) = net.b.accept(listener) {
                servers.push(s);
            }
            assert!(now.elapsed() < Duration::from_secs(30), "connect");
        }
        pairs.extend(batch.into_iter().zip(servers));
    }
    let source: Vec<u8> = (0..chunk).map(|i| (i % 251) as u8).collect();
    let mut sink = vec![0u8; chunk];
    let mut at = vec![0usize; conns];
    let (fa, fb) = (net.a.device().stats(), net.b.device().stats());
    let cpu = cpu_seconds();
    let start = Instant::now();
    let mut bytes = 0u64;
    let mut turns = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        for ((c, _), at) in pairs.iter().zip(at.iter_mut()) {
            let n = net
                .a
                .send_with(*c, &mut |buf| {
                    let n = buf.len().min(chunk - *at);
                    buf[..n].copy_from_slice(&source[*at..*at + n]);
                    n
                })
                .expect("send");
            *at = (*at + n) % chunk;
        }
        let now = Instant::now();
        net.a.poll(now);
        net.b.poll(now);
        for (_, s) in &pairs {
            bytes += net
                .b
                .recv_with(*s, &mut |d| {
                    let n = d.len().min(sink.len());
                    sink[..n].copy_from_slice(&d[..n]);
                    n
                })
                .expect("recv") as u64;
        }
        turns += 1;
    }
    let cpu = cpu_seconds() - cpu;
    let el = start.elapsed().as_secs_f64();
    let (fa2, fb2) = (net.a.device().stats(), net.b.device().stats());
    let mb = bytes as f64 / 1e6;
    println!(
        "conns {conns} ring {} KiB: {:.2} Gbit/s, cpu s/GB {:.3}, A->B frames/MB {:.1}, B->A frames/MB {:.1}, bytes/turn/conn {:.0}, turns {turns}",
        ring >> 10,
        bytes as f64 * 8.0 / el / 1e9,
        cpu / (bytes as f64 / 1e9),
        (fa2.frames_sent - fa.frames_sent) as f64 / mb,
        (fb2.frames_sent - fb.frames_sent) as f64 / mb,
        bytes as f64 / turns as f64 / conns as f64,
    );
}
