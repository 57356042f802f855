//! More than one core: several device pairs, each on its own memory link
//! and driven by its own thread, sharing nothing. A device and its
//! transport belong to one thread at a time, so the way to use more cores
//! is more devices: give each thread its own, and its own connections.
//! Prints the total RDMA Write goodput with 1 thread and with N.
//!
//! `cargo run --release -p iwarp-verbs --example many_devices [N] [QPS] [SECONDS]`
//! (defaults 2, 8 queue pairs per device pair, 2 s)

use std::time::{Duration, Instant};

use verbs::{wr, Access};

mod common;
use common::{connect_pairs, Error, LinkedPairs};

const PORT: u16 = 7176;
const WRITE: usize = 64 * 1024;
/// Writes outstanding per queue pair.
const DEPTH: usize = 4;
const STALL: Duration = Duration::from_secs(30);

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
    let LinkedPairs {
        client,
        server,
        client_pd: cpd,
        server_pd: spd,
        client_cq: ccq,
        // Held to the end, as the server's queue pairs complete into it.
        server_cq: _scq,
        pairs,
    } = connect_pairs(qps, DEPTH, PORT, STALL)?;
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
