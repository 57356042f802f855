//! `iwarp perf`: a two-process RDMA tester in the manner of perftest's
//! ib_write_bw, ib_read_bw, ib_send_bw and ib_*_lat.
//!
//! Start `iwarp perf <op> --server` on one side and `iwarp perf <op> HOST`
//! on the other. The client measures; the server serves one client run
//! (all of its `-q` connections) and exits. Test parameters and buffer
//! advertisements travel in the MPA private data of the connect request
//! and reply (see [`wire`]), so nothing but the test runs on the
//! connections until the client reports its totals over a SEND.
//!
//! * `write`, `read`, `send`: keep `--tx-depth` requests outstanding per
//!   connection and count completions. SENDs are paced by receive credits
//!   the server returns, since an iWARP SEND that finds no receive posted
//!   ends the connection.
//! * `lat` / `write-lat`: ping-pong of RDMA WRITEs, each side polling the
//!   last byte of its buffer; `send-lat`: SEND/RECV ping-pong; `read-lat`:
//!   one RDMA READ at a time. Write and send latency are half the round
//!   trip (as perftest reports them), read latency the whole of it.
//!
//! The last line of output with `--json` is one JSON object with op, size,
//! qps, gbps, msgs_per_s, iters, bytes, secs, and for latency tests
//! lat_us_{min,avg,p50,p99,max,stdev}.

mod buffers;
mod client;
mod credit;
mod error;
mod op;
mod server;
mod stats;
#[cfg(test)]
mod tests;
mod wire;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

pub use client::{run_client, ClientConfig, Limit};
pub use error::PerfError;
pub use op::{Op, OpArg};
pub use server::{run_server, ServerConfig};
pub use stats::Report;

pub(crate) use super::transport_args::linger;
use super::transport_args::TransportArgs;

/// perftest's default port.
pub const DEFAULT_PORT: u16 = 18515;
/// Largest message size either side accepts.
pub const MAX_SIZE: usize = 64 << 20;

/// Two-process RDMA bandwidth and latency tests (perftest-like).
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("side").required(true).args(["server", "peer"])))]
pub struct Args {
    /// The test: write, read, send (bandwidth); lat (= write-lat),
    /// write-lat, send-lat, read-lat (latency).
    #[arg(value_enum)]
    op: OpArg,
    /// The server to test against.
    #[arg(value_name = "HOST")]
    peer: Option<String>,
    /// Be the server.
    #[arg(long)]
    server: bool,
    /// Address the server binds (kernel TCP; default any).
    #[arg(
        short = 'a',
        long = "bind",
        value_name = "ADDR",
        conflicts_with = "peer"
    )]
    bind: Option<IpAddr>,
    /// Port.
    #[arg(short = 'p', long, value_name = "PORT", default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Message size in bytes (default 65536 for bandwidth, 2 for latency).
    #[arg(short = 's', long, value_name = "SIZE",
          value_parser = clap::value_parser!(u64).range(1..=MAX_SIZE as u64))]
    size: Option<u64>,
    /// Messages (bandwidth) or iterations (latency) per connection
    /// (default 5000 and 1000).
    #[arg(short = 'n', long, value_name = "ITERS", conflicts_with = "duration",
          value_parser = clap::value_parser!(u64).range(1..))]
    iters: Option<u64>,
    /// Run for this many seconds instead of a number of iterations.
    #[arg(short = 'D', long = "duration", value_name = "SECS")]
    duration: Option<f64>,
    /// Connections (queue pairs) to run the test over at once.
    #[arg(short = 'q', long, value_name = "QPS", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    qps: u16,
    /// Work requests kept outstanding per connection (bandwidth tests).
    #[arg(short = 't', long, value_name = "N", default_value_t = 128,
          value_parser = clap::value_parser!(u16).range(1..=4096))]
    tx_depth: u16,
    /// Receives the server keeps posted per connection (send test).
    #[arg(short = 'r', long, value_name = "N", default_value_t = 512,
          value_parser = clap::value_parser!(u32).range(1..=16384))]
    rx_depth: u32,
    /// Fail when nothing completes for this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    stall: f64,
    /// Server: give up if no client comes within this many seconds (0:
    /// wait forever).
    #[arg(long, value_name = "SECS", default_value_t = 0.0, requires = "server")]
    wait: f64,
    /// Print the result as one JSON object on the last line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    transport: TransportArgs,
}

pub fn run(args: &Args) -> ExitCode {
    match run_side(args) {
        Ok(report) => {
            println!("{}", report.table());
            if args.json {
                println!("{}", report.json());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "iwarp perf {}: {e}",
                if args.server { "server" } else { "client" }
            );
            ExitCode::FAILURE
        }
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

fn run_side(args: &Args) -> Result<Report, PerfError> {
    let op = Op::from(args.op);
    let device = args
        .transport
        .open_device(args.bind)
        .map_err(PerfError::Setup)?;
    if args.server {
        let listener = device.listen(args.port, args.transport.listen_options())?;
        println!(
            " Waiting for client to connect... ({} test, port {}, {})",
            op.name(),
            args.port,
            args.transport.describe()
        );
        let t = &args.transport;
        let params = |req: &verbs::ConnectRequest, pd: Vec<u8>| t.accept_params(req, 0, pd);
        let cfg = ServerConfig {
            op,
            rx_depth: args.rx_depth as usize,
            stall: secs(args.stall),
            max_size: MAX_SIZE,
            wait: (args.wait > 0.0).then(|| secs(args.wait)),
        };
        let report = run_server(&device, &listener, &params, &cfg);
        drop(listener);
        linger(&device);
        return report;
    }
    let peer = args
        .peer
        .as_deref()
        .ok_or_else(|| PerfError::Setup("a client needs the server's address".into()))?;
    let remote = resolve(peer, args.port)?;
    let size = args
        .size
        .map_or(if op.is_latency() { 2 } else { 65536 }, |s| s as usize);
    let limit = match (args.duration, args.iters) {
        (Some(d), _) => Limit::For(secs(d)),
        (None, Some(n)) => Limit::Iters(n),
        (None, None) => Limit::Iters(if op.is_latency() { 1000 } else { 5000 }),
    };
    let cfg = ClientConfig {
        op,
        size,
        qps: usize::from(args.qps),
        tx_depth: usize::from(args.tx_depth),
        limit,
        stall: secs(args.stall),
        connect_timeout: args.transport.mpa_options().timeout + Duration::from_secs(5),
        session: session_id(),
    };
    let t = &args.transport;
    let params = |ird: u16, ord: u16, pd: Vec<u8>| t.connect_params(ird, ord, pd);
    run_client(&device, remote, &params, &cfg)
}

/// A session id no other run is likely to have.
fn session_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let x = (t.as_nanos() as u64) ^ (u64::from(std::process::id()) << 40);
    // splitmix64 finaliser: spread the clock's low-entropy bits.
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, PerfError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| PerfError::Setup(format!("{host}: {e}")))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| PerfError::Setup(format!("{host}: no address")))
}
