//! Raw TCP goodput over the in-memory smoltcp link: the baseline an RDMA
//! benchmark over the same link is divided by.
//!
//! `cargo run --release -p iwarp-bench --example raw_goodput [MiB]`

use std::time::Duration;

use iwarp_bench::{raw_tcp_goodput_with, Dispatch};
use transport::memory::{FaultConfig, MemoryLinkConfig};
use transport::TcpTuning;

fn main() {
    let mib: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(256);
    let limit = Duration::from_secs(60);
    println!("raw TCP goodput, {mib} MiB one way, memory link, one thread");
    for mtu in [1500, 9000, 65535] {
        for dispatch in [Dispatch::Static, Dispatch::Dynamic] {
            let cfg = MemoryLinkConfig::default().mtu(mtu);
            match raw_tcp_goodput_with(&cfg, mib << 20, limit, dispatch) {
                Ok(m) => println!("  MTU {mtu:>5} {dispatch:?}: {m}"),
                Err(e) => println!("  MTU {mtu:>5} {dispatch:?}: failed: {e}"),
            }
        }
    }
    println!("with loss (MTU 1500, 16 MiB, receive window varied)");
    for loss in [0.001, 0.01] {
        for window in [64 << 10, 256 << 10, 1 << 20] {
            let cfg = MemoryLinkConfig::default()
                .faults(FaultConfig::default().loss(loss))
                .tuning(TcpTuning::default().rx_buffer(window).tx_buffer(window));
            match raw_tcp_goodput_with(&cfg, 16 << 20, limit, Dispatch::Static) {
                Ok(m) => println!(
                    "  loss {:.1}% window {:>4} KiB: {m}",
                    loss * 100.0,
                    window >> 10
                ),
                Err(e) => println!("  loss {loss}: failed: {e}"),
            }
        }
    }
}
