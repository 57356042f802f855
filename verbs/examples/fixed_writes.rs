//! A fixed number of RDMA Writes spread over N queue pairs on one memory
//! link, one thread driving both ends: the same work whatever N, so a
//! cache simulator's counts (or CPU time) divided by the Writes give the
//! cost of one operation at N queue pairs. Run it twice with different
//! totals and subtract to leave out connecting and teardown.
//!
//! `cargo run --release -p iwarp-verbs --example fixed_writes [QPS] [WRITES] [SIZE_KIB] [DEPTH]`
//! (defaults 256 queue pairs, 4096 Writes of 4 KiB, 1 outstanding per
//! queue pair)

use std::time::{Duration, Instant};

use verbs::{wr, Access};

mod common;
use common::{connect_pairs, Error, LinkedPairs};

const PORT: u16 = 7177;
/// Generous: under a cache simulator the run is fifty times slower.
const STALL: Duration = Duration::from_secs(600);

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let qps: usize = args.next().map_or(Ok(256), |a| a.parse())?;
    let writes: u64 = args.next().map_or(Ok(4096), |a| a.parse())?;
    let size: usize = args.next().map_or(Ok(4), |a: String| a.parse())? * 1024;
    let depth: usize = args.next().map_or(Ok(1), |a| a.parse())?;
    let qps = qps.max(1);
    let depth = depth.max(1);

    let LinkedPairs {
        client,
        server,
        client_pd: cpd,
        server_pd: spd,
        client_cq: ccq,
        // Held to the end, as the server's queue pairs complete into it.
        server_cq: _scq,
        pairs,
    } = connect_pairs(qps, depth, PORT, STALL)?;

    let src = cpd.register_vec((0..size).map(|i| i as u8).collect(), Access::NONE)?;
    let dst = spd.register(size, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    let post = |qp: usize| {
        pairs[qp].0.post_send(wr::write(
            qp as u64,
            vec![src.sge_all()],
            dst.rkey(),
            dst.addr(),
        ))
    };
    let cpu0 = cpu_time();
    let (mut posted, mut done, start) = (0u64, 0u64, Instant::now());
    'fill: for _ in 0..depth {
        for qp in 0..qps {
            if posted == writes {
                break 'fill;
            }
            post(qp)?;
            posted += 1;
        }
    }
    let mut last = Instant::now();
    while done < writes {
        client.progress();
        server.progress();
        while let Some(wc) = ccq.poll_one()? {
            if !wc.is_success() {
                let (c, s) = &pairs[wc.wr_id as usize];
                return Err(format!(
                    "write failed: {:?} (client {:?}, server {:?})",
                    wc.status,
                    c.try_event(),
                    s.try_event()
                )
                .into());
            }
            done += 1;
            last = Instant::now();
            if posted < writes {
                post(wc.wr_id as usize)?;
                posted += 1;
            }
        }
        if last.elapsed() > STALL {
            return Err("no completion for 600 s".into());
        }
    }
    let cpu = cpu_time() - cpu0;
    let bytes = writes * size as u64;
    println!(
        "{qps} queue pairs, {writes} Writes of {} KiB, {depth} outstanding each: \
         {:.3} s wall, {:.3} s CPU, {:.2} us CPU per Write, {:.3} CPU s/GB",
        size >> 10,
        start.elapsed().as_secs_f64(),
        cpu,
        cpu * 1e6 / writes as f64,
        cpu * 1e9 / bytes as f64
    );
    Ok(())
}

/// CPU seconds this thread has run (the only thread: the devices have no
/// progress threads here).
fn cpu_time() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}
