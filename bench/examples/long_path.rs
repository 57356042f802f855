//! Raw TCP over the memory link on a long path: how much of the rate (or,
//! with no rate, of the window) it carries.
//!
//! `cargo run --release -p iwarp-bench --example long_path [MiB [ring KiB [rx batch [loss %]]]]`
//!
//! Each case runs the same transfer twice: with delay alone (the delay line
//! hands a whole window over at one instant), and with the delay behind a
//! rate limit and a queue of one bandwidth-delay product, as the named
//! profiles have. A loss share applies to the profiles only: raw smoltcp
//! across the wire `iwarp bench --profile P --loss L` gives RDMA and Linux.

use std::time::Duration;

use iwarp_bench::{raw_tcp_goodput_with, Dispatch};
use transport::link_model::{LinkModelConfig, Profile};
use transport::memory::{FaultConfig, MemoryLinkConfig};
use transport::TcpTuning;

fn main() {
    let mib: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    let ring: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse::<usize>().ok())
        .map_or(8 << 20, |k| k << 10);
    let rx_batch: usize = std::env::args()
        .nth(3)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let loss_percent: f64 = std::env::args()
        .nth(4)
        .and_then(|a| a.parse().ok())
        .filter(|p| (0.0..100.0).contains(p))
        .unwrap_or(0.0);
    let tuning = TcpTuning::default()
        .rx_buffer(ring)
        .tx_buffer(ring)
        // Sender-side silly window avoidance: with one ACK per segment,
        // congestion avoidance opens the window a few bytes at a time.
        .segment_aligned(true);
    println!(
        "{mib} MiB one way, {} KiB rings, up to {rx_batch} frames per poll, 200 ms minimum RTO, Cubic, profiles with {loss_percent}% loss",
        ring >> 10
    );
    for one_way_ms in [1u64, 10] {
        let latency = Duration::from_millis(one_way_ms);
        let cfg = MemoryLinkConfig::default()
            .faults(FaultConfig::default().latency(latency))
            .tuning(tuning.clone())
            .rx_batch(rx_batch);
        let window_gbit = ring as f64 * 8.0 / (2.0 * latency.as_secs_f64()) / 1e9;
        run(
            &format!(
                "delay {one_way_ms} ms one way, no rate (window allows {window_gbit:.1} Gbit/s)"
            ),
            &cfg,
            mib,
        );
    }
    for profile in [Profile::Lan, Profile::Wan] {
        let model = LinkModelConfig {
            loss: loss_percent / 100.0,
            ..profile.config()
        };
        let cfg = MemoryLinkConfig::default()
            .faults(FaultConfig::from_link_model(&model))
            .tuning(tuning.clone())
            .rx_batch(rx_batch);
        let rate = profile.rate_bps() as f64 / 1e9;
        run(
            &format!(
                "profile {} ({} ms RTT, {rate} Gbit/s, queue {} B)",
                profile.name(),
                profile.rtt().as_millis(),
                cfg.faults.queue_bytes.unwrap_or(0)
            ),
            &cfg,
            mib,
        );
    }
}

fn run(label: &str, cfg: &MemoryLinkConfig, mib: u64) {
    match raw_tcp_goodput_with(cfg, mib << 20, Duration::from_secs(60), Dispatch::Static) {
        Ok(m) => println!("{label}: {m}"),
        Err(e) => println!("{label}: failed: {e}"),
    }
}
