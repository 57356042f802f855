//! `iwarp perf`: perftest's ib_write_bw, ib_read_bw, ib_send_bw and
//! ib_*_lat, and a peer of them.
//!
//! `iwarp perf <op>` with no HOST is the server (`--server` says the same),
//! `iwarp perf <op> HOST` the client. By default both speak perftest's
//! rdma_cm (`-R`) protocol ([`perftest`]), so either end may be perftest
//! itself, and print perftest's table (`--report_gbits`, `--out_json`).
//!
//! Both sides account for the bytes moved (see [`perftest::report`]); when
//! the accounts cannot both be true the run exits with status 3.
//!
//! `--proto iwarp` selects this tool's own protocol instead, which adds
//! several connections (`-q`), a data check and the client's totals
//! confirmed by the server: test parameters and buffer advertisements
//! travel in the MPA private data of the connect request and reply (see
//! [`wire`]), so nothing but the test runs on the connections until the
//! client reports its totals over a SEND.
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
pub mod perftest;
mod server;
mod stats;
#[cfg(test)]
mod tests;
mod wire;

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use transport::SplitMix64;

pub use client::{run_client, ClientConfig, Limit};
pub use error::PerfError;
pub use op::{Op, OpArg};
pub use server::{run_server, ServerConfig};
pub use stats::Report;

pub(crate) use super::transport_args::linger;
use super::transport_args::{self, TransportArgs};

/// perftest's default port.
pub const DEFAULT_PORT: u16 = 18515;
/// Exit status when the two sides' byte accounts cannot both be true.
const DISAGREEMENT: u8 = 3;
/// How long a perftest client waits after each MPA Reply before its first
/// FPDU (what `iwarp rping --settle-ms` defaults to).
const FIRST_FPDU_DELAY: Duration = Duration::from_millis(20);
/// Largest message size either side accepts.
pub const MAX_SIZE: usize = 64 << 20;

/// Which protocol the two sides speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Proto {
    /// perftest's `-R` (rdma_cm) exchange: talks to ib_*_bw / ib_*_lat.
    Perftest,
    /// This tool's own: several queue pairs, data checks, server-confirmed
    /// totals.
    Iwarp,
}

/// Two-process RDMA bandwidth and latency tests, perftest's and with it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The test: write, read, send (bandwidth); lat (= write-lat),
    /// write-lat, send-lat, read-lat (latency).
    #[arg(value_enum)]
    op: OpArg,
    /// The server to test against; none: be the server.
    #[arg(value_name = "HOST")]
    peer: Option<String>,
    /// Be the server (the same as giving no HOST).
    #[arg(long, conflicts_with = "peer")]
    server: bool,
    /// Address the server binds (kernel TCP; default any).
    #[arg(long = "bind", value_name = "ADDR", conflicts_with = "peer")]
    bind: Option<IpAddr>,
    /// The protocol: perftest's (default) or this tool's own.
    #[arg(long, value_enum, default_value_t = Proto::Perftest)]
    proto: Proto,
    /// Every message size from 2 bytes to 8 MiB (perftest's -a).
    #[arg(short = 'a', long = "all", conflicts_with_all = ["size", "duration"])]
    all: bool,
    /// Use rdma_cm for the connections (perftest's -R; always so here).
    #[arg(short = 'R', long = "rdma_cm")]
    rdma_cm: bool,
    /// Report bandwidth in Gb/s (10^9 bits) instead of MB/s (2^20 bytes).
    #[arg(long = "report_gbits", alias = "report-gbits")]
    report_gbits: bool,
    /// Write the result to a JSON file (perftest_out.json unless
    /// --out_json_file names another).
    #[arg(long = "out_json", alias = "out-json")]
    out_json: bool,
    /// The file --out_json writes.
    #[arg(long = "out_json_file", alias = "out-json-file", value_name = "FILE")]
    out_json_file: Option<std::path::PathBuf>,
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
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 0.0,
        conflicts_with = "peer"
    )]
    wait: f64,
    /// Print the result as one JSON object on the last line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    transport: TransportArgs,
}

pub fn run(args: &Args) -> ExitCode {
    if args.proto == Proto::Perftest {
        return run_perftest(args);
    }
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
                if args.is_server() { "server" } else { "client" }
            );
            ExitCode::FAILURE
        }
    }
}

impl Args {
    fn is_server(&self) -> bool {
        self.server || self.peer.is_none()
    }
}

/// Runs one side of a perftest run and prints its result.
fn run_perftest(args: &Args) -> ExitCode {
    let side = if args.is_server() { "server" } else { "client" };
    match perftest_side(args) {
        Ok(outcome) => {
            let opt = |b: Option<u64>| b.map_or("-".to_string(), |b| b.to_string());
            println!(
                " Bytes: payload {} here over the run, {} in the report's iterations, {} by the peer's account; TCP payload {} in, {} out",
                opt(outcome.payload_bytes),
                opt(outcome.report_bytes()),
                opt(outcome.peer_bytes),
                outcome.wire_rx,
                outcome.wire_tx
            );
            if let Some(why) = &outcome.disagreement {
                println!(" Disagreement: {why}");
            }
            let json = outcome.json();
            if args.out_json || args.out_json_file.is_some() {
                let path = args
                    .out_json_file
                    .clone()
                    .unwrap_or_else(|| "perftest_out.json".into());
                if let Err(e) = std::fs::write(&path, format!("{json}\n")) {
                    eprintln!("iwarp perf {side}: {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
            if args.json {
                println!("{json}");
            }
            if outcome.disagreement.is_some() {
                ExitCode::from(DISAGREEMENT)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("iwarp perf {side}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn perftest_side(args: &Args) -> Result<perftest::report::Outcome, PerfError> {
    use perftest::bw::Limit as PtLimit;
    let op = Op::from(args.op);
    if args.qps != 1 {
        return Err(PerfError::Setup(
            "perftest's protocol runs one queue pair here (-q 1); --proto iwarp runs several"
                .into(),
        ));
    }
    let (device, counter) = args
        .transport
        .open_counted_device(args.bind)
        .map_err(PerfError::Setup)?;
    let sizes = if args.all {
        perftest::Config::all_sizes()
    } else {
        vec![args
            .size
            .map_or(if op.is_latency() { 2 } else { 65536 }, |s| s as usize)]
    };
    let limit = match (args.duration, args.iters) {
        (Some(d), _) => PtLimit::For(secs(d.floor().max(1.0))),
        (None, Some(n)) => PtLimit::Iters(n),
        (None, None) => PtLimit::Iters(if op == Op::Write { 5000 } else { 1000 }),
    };
    let cfg = perftest::Config {
        op,
        sizes,
        all: args.all,
        limit,
        tx_depth: usize::from(args.tx_depth),
        rx_depth: args.rx_depth as usize,
        stall: secs(args.stall),
        unit: if args.report_gbits {
            perftest::report::Unit::Gbps
        } else {
            perftest::report::Unit::MiBps
        },
        connect_timeout: args.transport.mpa_options().timeout + Duration::from_secs(5),
    };
    let t = &args.transport;
    let outcome = if args.is_server() {
        let mut opts = t.listen_options();
        // ib_write_lat's server writes first, before its client has sent
        // anything on the test connection.
        opts.mpa.responder_sends_first = op == Op::WriteLat;
        let listener = device.listen(args.port, opts)?;
        let params = |req: &verbs::ConnectRequest| t.accept_params(req, 0, Vec::new());
        let role = perftest::Role::Server {
            listener: &listener,
            params: &params,
            wait: (args.wait > 0.0).then(|| secs(args.wait)),
        };
        let r = perftest::run(&device, &counter, &role, &cfg);
        drop(listener);
        linger(&device);
        r?
    } else {
        let peer = args.peer.as_deref().unwrap_or_default();
        let remote = resolve(peer, args.port)?;
        let params = |ird: u16, ord: u16| {
            let mut p = t.connect_params(ird, ord, Vec::new());
            // siw, responding, attaches the socket to its queue pair only
            // after sending the MPA Reply: a first FPDU that lands in
            // between waits unread (see the interop README).
            p.mpa.first_fpdu_delay = FIRST_FPDU_DELAY;
            p
        };
        let role = perftest::Role::Client {
            remote,
            params: &params,
        };
        let r = perftest::run(&device, &counter, &role, &cfg);
        linger(&device);
        r?
    };
    Ok(outcome)
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
    if args.is_server() {
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
    // One SplitMix64 draw spreads the clock's low-entropy bits.
    SplitMix64::new(x).next_u64()
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, PerfError> {
    transport_args::resolve(host, port)
        .map_err(|e| PerfError::Setup(format!("{host}: {e}")))?
        .ok_or_else(|| PerfError::Setup(format!("{host}: no address")))
}
