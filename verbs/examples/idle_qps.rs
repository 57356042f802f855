//! One busy queue pair beside thousands of idle ones on the same two
//! devices (memory link, one thread driving both): the busy one's RDMA
//! Write goodput alone and beside them (per second, and per second of this
//! thread's CPU time, the figure that holds on a loaded machine), and the
//! resident memory each idle queue pair adds.
//!
//! `cargo run --release -p iwarp-verbs --example idle_qps [IDLE] [SECONDS]`
//! (defaults 4096 and 2)

use std::time::{Duration, Instant};

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{
    wr, AcceptParams, Access, CmEvent, ConnectParams, Device, ListenOptions, Listener, QpInit,
    QueuePair,
};

const PORT: u16 = 7175;
/// Queue pairs connected at once, within the listen backlog.
const BATCH: usize = 64;
const WRITE: usize = 64 * 1024;
/// Writes the busy queue pair keeps outstanding.
const DEPTH: usize = 16;
const STALL: Duration = Duration::from_secs(30);

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let idle: usize = args.next().map_or(Ok(4096), |a| a.parse())?;
    let secs: f64 = args.next().map_or(Ok(2.0), |a| a.parse())?;
    let duration = Duration::from_secs_f64(secs);
    println!(
        "RDMA Write {} KiB, {DEPTH} outstanding, memory link, one thread",
        WRITE >> 10
    );
    let alone = run(0, duration)?;
    let beside = run(idle, duration)?;
    println!(
        "busy queue pair beside {idle} idle: {:.2} of its goodput alone, {:.2} per CPU-second",
        beside.0 / alone.0,
        beside.1 / alone.1
    );
    Ok(())
}

/// The busy queue pair's goodput in Gbit/s beside `idle` idle ones, per
/// second and per CPU-second of this thread.
fn run(idle: usize, duration: Duration) -> Result<(f64, f64), Error> {
    let mut cfg = MemoryLinkConfig::default();
    cfg.tuning.backlog = BATCH;
    let (a, b) = MemoryLink::pair(&cfg)?;
    let (client, server) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let (ccq, scq) = (client.create_cq(4 * DEPTH), server.create_cq(4 * DEPTH));
    let listener = server.listen(PORT, ListenOptions::default().with_backlog(BATCH))?;
    let remote = cfg.endpoint_b(PORT);
    let devices = [&client, &server];

    let mut pairs = connect(&devices, &listener, remote, 1, |d| {
        let (pd, cq) = if std::ptr::eq(d, &client) {
            (&cpd, &ccq)
        } else {
            (&spd, &scq)
        };
        d.create_qp(pd, QpInit::new(cq))
    })?;
    let busy = pairs.pop().ok_or("no busy queue pair")?;
    let before = resident_bytes();
    let started = Instant::now();
    let mut idle_pairs = Vec::with_capacity(idle);
    while idle_pairs.len() < idle {
        let n = BATCH.min(idle - idle_pairs.len());
        idle_pairs.extend(connect(&devices, &listener, remote, n, |d| {
            let (pd, cq) = if std::ptr::eq(d, &client) {
                (&cpd, &ccq)
            } else {
                (&spd, &scq)
            };
            d.create_qp(pd, QpInit::new(cq))
        })?);
    }
    if idle > 0 {
        // Past the second after which an idle stream gives back what its
        // sending took.
        let settle = Instant::now();
        while settle.elapsed() < Duration::from_millis(1500) {
            client.progress();
            server.progress();
        }
        if let (Some(b), Some(a)) = (before, resident_bytes()) {
            println!(
                "  {idle} idle queue pairs connected in {:.1} s; {} resident bytes each",
                started.elapsed().as_secs_f64(),
                a.saturating_sub(b) / (2 * idle)
            );
        }
    }

    let src = cpd.register_vec((0..WRITE).map(|i| i as u8).collect(), Access::NONE)?;
    let dst = spd.register(WRITE, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    let post = || {
        busy.0
            .post_send(wr::write(0, vec![src.sge_all()], dst.rkey(), dst.addr()))
    };
    for _ in 0..DEPTH {
        post()?;
    }
    let (mut done, start, cpu_start) = (0u64, Instant::now(), thread_cpu());
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
            post()?;
        }
        if last.elapsed() > STALL {
            return Err("no completion for 30 s".into());
        }
    }
    let bits = (done * WRITE as u64) as f64 * 8.0;
    let gbps = bits / start.elapsed().as_secs_f64() / 1e9;
    let cpu = thread_cpu()
        .zip(cpu_start)
        .map_or(f64::NAN, |(b, a)| (b - a).as_secs_f64());
    let per_cpu = bits / cpu / 1e9;
    println!(
        "  busy queue pair beside {idle} idle: {gbps:.2} Gbit/s, {per_cpu:.2} Gbit per CPU-second"
    );
    Ok((gbps, per_cpu))
}

/// `n` connected pairs (client end, server end), made by `create`.
fn connect(
    devices: &[&Device; 2],
    listener: &Listener,
    remote: std::net::SocketAddr,
    n: usize,
    create: impl Fn(&Device) -> Result<QueuePair, verbs::VerbsError>,
) -> Result<Vec<(QueuePair, QueuePair)>, Error> {
    let [client, server] = *devices;
    let mut batch = Vec::with_capacity(n);
    for _ in 0..n {
        let c = create(client)?;
        c.connect(remote, ConnectParams::default())?;
        batch.push((c, create(server)?));
    }
    let (mut accepted, mut up) = (0, vec![[false; 2]; n]);
    let start = Instant::now();
    while up.iter().any(|u| !(u[0] && u[1])) {
        if start.elapsed() > STALL {
            return Err("queue pairs did not connect".into());
        }
        client.progress();
        server.progress();
        while accepted < n {
            let Some(req) = listener.try_request() else {
                break;
            };
            req.accept(&batch[accepted].1, AcceptParams::default())?;
            accepted += 1;
        }
        for ((c, s), u) in batch.iter().zip(up.iter_mut()) {
            for (qp, flag) in [c, s].into_iter().zip(u.iter_mut()) {
                match qp.try_event() {
                    Some(CmEvent::Established(_)) => *flag = true,
                    Some(other) => return Err(format!("connecting: {other:?}").into()),
                    None => {}
                }
            }
        }
    }
    Ok(batch)
}

/// CPU time of this thread, from `/proc/thread-self/schedstat`.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(
        text.split_whitespace().next()?.parse().ok()?,
    ))
}

/// Resident set size of the process, from `/proc/self/statm`.
fn resident_bytes() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
