//! The hostile-peer catalogue against `iwarp rping -s -P` over kernel TCP
//! on 127.0.0.1: every case gets the reject or TERMINATE the RFCs assign
//! and a close in bounded time, and the server keeps serving legitimate
//! clients with bounded memory.

#[macro_use]
mod hostile_support;
mod two_process;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use hostile::catalogue;
use hostile_support::{resident_bytes, run_case, target, MPA_TIMEOUT_SECS, PINGS};
use two_process::{free_port, Proc};

/// Every run here ends well within this, or the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// Growth of the server's resident memory that still counts as flat:
/// allocator slack.
const RSS_SLACK: u64 = 16 << 20;
/// Resident memory an idle connection may hold while it waits for its MPA
/// Request: the kernel transport's send and receive buffers start at a few
/// KiB each and grow only as a stream carries more, plus the start-up state.
const PER_IDLE_CONNECTION: u64 = 64 << 10;

struct Server {
    proc: Proc,
    port: u16,
}

impl Server {
    fn start() -> Server {
        let port = free_port();
        let p = port.to_string();
        let t = MPA_TIMEOUT_SECS.to_string();
        let proc = Proc::spawn(&[
            "rping",
            "-s",
            "-P",
            "-a",
            "127.0.0.1",
            "-p",
            &p,
            "-d",
            "--mpa-timeout",
            &t,
        ]);
        assert!(
            proc.wait_line(|l| l == "rdma_listen", Duration::from_secs(20)),
            "server never listened: {}",
            proc.stderr()
        );
        Server { proc, port }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// A short legitimate rping exchange.
    fn ping(&self) -> Result<(), String> {
        let p = self.port.to_string();
        let mut c = Proc::spawn(&[
            "rping",
            "-c",
            "-a",
            "127.0.0.1",
            "-p",
            &p,
            "-C",
            PINGS,
            "-V",
        ]);
        match c.wait(LIMIT) {
            Some(0) => Ok(()),
            other => Err(format!("rping client exit {other:?}: {}", c.stderr())),
        }
    }
}

fn check(name: &str) {
    let server = Server::start();
    let case = catalogue::case(&target(), name).expect("a case of that name");
    run_case(server.addr(), &case, || server.ping());
}

/// Open file descriptors of process `pid` (0 where /proc is absent).
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

catalogue_tests!(check);

/// The whole catalogue in turn, twice, against one server: it keeps
/// serving, and its resident memory is bounded (a high-water mark set by
/// the idle flood, at most [`PER_IDLE_CONNECTION`] for each of its
/// connections) and flat (the second pass takes no more than the first
/// left). Verdicts are the per-case tests' business; this one is about
/// the server surviving all of them.
#[test]
fn one_server_survives_the_whole_catalogue_twice_with_bounded_memory() {
    let server = Server::start();
    server.ping().expect("a first legitimate client");
    let warm = resident_bytes(server.proc.pid());
    let files = open_files(server.proc.pid());
    let mut after_pass = Vec::new();
    let mut mismatches = Vec::new();
    for pass in 1..=2 {
        for case in catalogue::catalogue(&target()) {
            let report = hostile::driver::run(server.addr(), &case).expect("run a case");
            if let Some(f) = report.failure() {
                mismatches.push(f);
            }
            server
                .ping()
                .unwrap_or_else(|e| panic!("pass {pass}, after {}: {e}", case.name));
            println!(
                "  pass {pass}, after {:28} server resident {} KiB, {} open file(s)",
                case.name,
                resident_bytes(server.proc.pid()) / 1024,
                open_files(server.proc.pid())
            );
        }
        after_pass.push(resident_bytes(server.proc.pid()));
        assert_eq!(
            open_files(server.proc.pid()),
            files,
            "pass {pass}: every connection's socket closed"
        );
    }
    let (first, second) = (after_pass[0], after_pass[1]);
    println!(
        "server resident memory: {} KiB after warm-up, {} KiB after the first pass, {} KiB after the second; {} mismatch(es)",
        warm / 1024,
        first / 1024,
        second / 1024,
        mismatches.len()
    );
    for m in &mismatches {
        println!("  {m}");
    }
    let flood = target().flood as u64;
    assert!(
        first.saturating_sub(warm) < flood * PER_IDLE_CONNECTION + RSS_SLACK,
        "resident memory grew from {warm} to {first} bytes over one pass"
    );
    assert!(
        second.saturating_sub(first) < RSS_SLACK,
        "resident memory grew from {first} to {second} bytes over the second pass"
    );
}
