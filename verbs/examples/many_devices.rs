//! More than one core: several device pairs, each on its own memory link
//! and driven by its own thread, sharing nothing. A device and its
//! transport belong to one thread at a time, so the way to use more cores
//! is more devices: give each thread its own, and its own connections.
//! Prints the total RDMA Write goodput with 1 thread and with N.
//!
//! `cargo run --release -p iwarp-verbs --example many_devices [N] [QPS] [SECONDS]`
//! (defaults 2, 8 queue pairs per device pair, 2 s)

use std::time::{Duration, Instant};

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{wr, AcceptParams, Access, CmEvent, ConnectParams, Device, ListenOptions, QpInit};

const PORT: u16 = 7176;
const WRITE: usize = 64 * 1024;
/// Writes outstanding per queue pair.
const DEPTH: usize = 4;
const STALL: Duration = Duration::from_secs(30);

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(Ok(2), |a| a.parse())?;
    let qps: usize = args.next().map_or(Ok(8), |a| a.parse())?;
    let secs: f64 = args.next().map_or(Ok(2.0), |a| a.parse())?;
    let duration = Duration::from_secs_f64(secs);
    println!(
        "RDMA Write {} KiB, {qps} queue pairs per device pair, memory link",
        WRITE >> 10
    );
    let mut one = None;
    for n in [1, threads.max(1)] {
        let total: f64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|_| s.spawn(move || device_pair(qps, duration)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().map_err(|_| Error::from("thread panicked"))?)
                .sum::<Result<f64, Error>>()
        })?;
        let base = *one.get_or_insert(total);
        println!(
            "  {n} thread(s), {n} device pair(s): {total:.2} Gbit/s ({:.2}x one thread)",
            total / base
        );
    }
    Ok(())
}

/// One device pair on its own link, `qps` queue pairs writing for
/// `duration` on this thread; its goodput in Gbit/s.
fn device_pair(qps: usize, duration: Duration) -> Result<f64, Error> {
    let mut cfg = MemoryLinkConfig::default();
    // smoltcp has no accept queue: keep a socket armed for every SYN.
    cfg.tuning.backlog = qps;
    let (a, b) = MemoryLink::pair(&cfg)?;
    let (client, server) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let (ccq, scq) = (client.create_cq(qps * DEPTH), server.create_cq(qps));
    let listener = server.listen(PORT, ListenOptions::default().with_backlog(qps))?;
    let mut pairs = Vec::with_capacity(qps);
    for _ in 0..qps {
        let c = client.create_qp(&cpd, QpInit::new(&ccq))?;
        c.connect(cfg.endpoint_b(PORT), ConnectParams::default())?;
        pairs.push((c, server.create_qp(&spd, QpInit::new(&scq))?));
    }
    let (mut accepted, mut up, start) = (0, 0, Instant::now());
    while up < 2 * qps {
        if start.elapsed() > STALL {
            return Err("queue pairs did not connect".into());
        }
        client.progress();
        server.progress();
        while let Some(req) = listener.try_request() {
            req.accept(&pairs[accepted].1, AcceptParams::default())?;
            accepted += 1;
        }
        for (c, s) in &pairs {
            for qp in [c, s] {
                match qp.try_event() {
                    Some(CmEvent::Established(_)) => up += 1,
                    Some(other) => return Err(format!("connecting: {other:?}").into()),
                    None => {}
                }
            }
        }
    }
    let src = cpd.register_vec((0..WRITE).map(|i| i as u8).collect(), Access::NONE)?;
    let dst = spd.register(WRITE, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    let post = |i: u64| {
        pairs[i as usize]
            .0
            .post_send(wr::write(i, vec![src.sge_all()], dst.rkey(), dst.addr()))
    };
    for i in 0..qps as u64 {
        for _ in 0..DEPTH {
            post(i)?;
        }
    }
    let (mut done, start) = (0u64, Instant::now());
    let mut last = start;
    while start.elapsed() < duration {
        client.progress();
        server.progress();
        while let Some(wc) = ccq.poll_one()? {
            if !wc.is_success() {
                return Err(format!("write failed: {:?}", wc.status).into());
            }
            done += 1;
            last = Instant::now();
            post(wc.wr_id)?;
        }
        if last.elapsed() > STALL {
            return Err("no completion for 30 s".into());
        }
    }
    Ok((done * WRITE as u64) as f64 * 8.0 / start.elapsed().as_secs_f64() / 1e9)
}
