//! Raw TCP over the memory link with each congestion controller: on the
//! wan profile (20 ms RTT, 1 Gbit/s, a queue of one BDP) at 0, 1 and 5%
//! random loss, then on the plain memory link without loss as alternating
//! Cubic / BBR pairs, goodput per CPU-second and the sleeps (voluntary
//! context switches) per MB: a paced sender must wait for its pacing
//! clock in `poll_delay`, not spin.
//!
//! `cargo run --release -p iwarp-bench --example cc_compare [MiB [pairs]]`

use std::time::Duration;

use iwarp_bench::{raw_tcp_goodput_with, Dispatch, Measurement};
use transport::link_model::Profile;
use transport::memory::{FaultConfig, MemoryLinkConfig};
use transport::{CongestionControl, TcpTuning};

const CONTROLLERS: [CongestionControl; 3] = [
    CongestionControl::Reno,
    CongestionControl::Cubic,
    CongestionControl::Bbr,
];

/// CPU seconds and voluntary context switches of this process so far.
fn usage() -> (f64, i64) {
    // SAFETY: getrusage writes into the zeroed struct it is given and
    // reads nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime) + secs(ru.ru_stime), ru.ru_nvcsw)
}

struct Run {
    m: Measurement,
    cpu: f64,
    sleeps: i64,
}

fn run(cfg: &MemoryLinkConfig, bytes: u64, limit: Duration) -> Option<Run> {
    let (cpu0, sw0) = usage();
    let m = match raw_tcp_goodput_with(cfg, bytes, limit, Dispatch::Static) {
        Ok(m) => m,
        Err(e) => {
            println!("  failed: {e}");
            return None;
        }
    };
    let (cpu1, sw1) = usage();
    Some(Run {
        m,
        cpu: cpu1 - cpu0,
        sleeps: sw1 - sw0,
    })
}

fn tuned(congestion: CongestionControl, ring: usize) -> TcpTuning {
    TcpTuning::default()
        .congestion(congestion)
        .rx_buffer(ring)
        .tx_buffer(ring)
        .segment_aligned(true)
}

fn main() {
    let mib: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(32);
    let pairs: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let wan = Profile::Wan;
    println!(
        "wan profile ({} ms RTT, {} Gbit/s, queue 1 BDP), {mib} MiB or 15 s each, 8 MiB rings, 200 ms minimum RTO",
        wan.rtt().as_millis(),
        wan.rate_bps() as f64 / 1e9
    );
    for loss in [0.0, 0.01, 0.05] {
        for cc in CONTROLLERS {
            let mut faults = FaultConfig::from_link_model(&wan.config());
            faults.loss = loss;
            let cfg = MemoryLinkConfig::default()
                .faults(faults)
                .tuning(tuned(cc, 8 << 20));
            if let Some(r) = run(&cfg, mib << 20, Duration::from_secs(15)) {
                let tcp = r.m.sender_tcp.unwrap_or_default();
                println!(
                    "  loss {:>4.1}% {:<5}: {:7.4} Gbit/s, {} frames lost, {} timeouts, {:.4} of the bytes resent",
                    loss * 100.0,
                    cc.name(),
                    r.m.gbit_per_s(),
                    r.m.frames_lost,
                    tcp.timeouts,
                    tcp.retransmitted_bytes as f64 / tcp.sent_bytes.max(1) as f64
                );
            }
        }
    }

    println!("plain memory link, no loss, {mib} MiB x {pairs} alternating pairs:");
    let mut ratios = Vec::new();
    for pair in 0..pairs {
        let mut per_cpu = [0.0; 2];
        for (i, cc) in [CongestionControl::Cubic, CongestionControl::Bbr]
            .into_iter()
            .enumerate()
        {
            let cfg = MemoryLinkConfig::default()
                .tuning(MemoryLinkConfig::default().tuning.congestion(cc));
            let Some(r) = run(&cfg, mib << 20, Duration::from_secs(60)) else {
                return;
            };
            let gbit = r.m.bytes as f64 * 8.0 / 1e9;
            per_cpu[i] = gbit / r.cpu.max(1e-9);
            let mb = r.m.bytes as f64 / 1e6;
            println!(
                "  pair {pair} {:<5}: {:6.2} Gbit/s, {:6.2} Gbit per CPU-second, {:.2} sleeps per MB",
                cc.name(),
                r.m.gbit_per_s(),
                per_cpu[i],
                r.sleeps as f64 / mb
            );
        }
        ratios.push(per_cpu[1] / per_cpu[0]);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median BBR / Cubic goodput per CPU-second: {:.3} (pairs: {ratios:.3?})",
        ratios[ratios.len() / 2]
    );
}
