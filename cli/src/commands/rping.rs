//! `iwarp rping`: rdma-core's rping, both roles, on the userspace stack.
//!
//! Same command line (`-s`/`-c`, `-a`, `-p`, `-C`, `-S`, `-v`, `-V`, `-d`,
//! `-P`, `-q`), same connection parameters (IRD = ORD = 1), same buffers,
//! access rights, message format and order of work requests as rping.c, so
//! rdma-core's rping on a siw or Chelsio host is a peer in either role.
//!
//! Where this rping differs on purpose:
//! * the exit status is 0 only if every ping completed (and verified, with
//!   `-V`): rping exits 0 when the peer disconnects mid-run;
//! * a server connection counts as clean only if the client closed between
//!   pings; a persistent server serves clients concurrently on one thread
//!   and can stop after `--max-clients` connections;
//! * `--timeout` bounds each step of a ping, so a silent peer does not hang
//!   the run forever (rping waits forever; `--timeout 0` does too).

mod client;
mod client_driver;
mod conn;
mod error;
mod log;
mod pattern;
mod server;
mod server_driver;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use verbs::Device;

pub use client_driver::{run_client, ClientConfig};
pub use error::RpingError;
pub use log::Log;
pub use server_driver::{run_server, ServerConfig};

pub(crate) use super::transport_args::linger;
use super::transport_args::{self, TransportArgs};

/// rping's default port.
pub const DEFAULT_PORT: u16 = 7174;
/// IRD and ORD rping's client asks for (rdma_conn_param
/// responder_resources and initiator_depth).
pub const RPING_IRD_ORD: u16 = 1;

/// Longest sleep in one wait for completions, so connection events and
/// connect requests are looked at this often while idle.
const WAIT_SLICE: Duration = Duration::from_millis(2);

/// RDMA ping-pong compatible with rdma-core's rping.
///
/// Per ping the client advertises its source buffer, the server RDMA READs
/// it and says go; the client advertises its sink buffer, the server RDMA
/// WRITEs the data there and says go; the client checks the echo.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("role").required(true).args(["server", "client"])))]
pub struct Args {
    /// Server side.
    #[arg(short = 's')]
    server: bool,
    /// Client side.
    #[arg(short = 'c')]
    client: bool,
    /// Address: the server's (client), or the one to bind (server; default any).
    #[arg(short = 'a', value_name = "ADDR")]
    addr: Option<String>,
    /// Port.
    #[arg(short = 'p', value_name = "PORT", default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Ping count (0: until interrupted or something fails).
    #[arg(short = 'C', value_name = "COUNT", default_value_t = 0)]
    count: u32,
    /// Ping data size.
    #[arg(short = 'S', value_name = "SIZE", default_value_t = pattern::DEFAULT_SIZE as u32,
          value_parser = clap::value_parser!(u32).range(pattern::MIN_SIZE as i64..=pattern::MAX_SIZE as i64))]
    size: u32,
    /// Display ping data to stdout, and the queue pair's figures
    /// (`QueuePair::stats`) when a connection ends.
    #[arg(short = 'v')]
    verbose: bool,
    /// Validate ping data.
    #[arg(short = 'V')]
    validate: bool,
    /// Debug printfs.
    #[arg(short = 'd')]
    debug: bool,
    /// Persistent server mode allowing multiple connections.
    #[arg(short = 'P')]
    persistent: bool,
    /// Use a self-created, self-modified QP (rping's -q). Queue pairs here
    /// are always created by the program, so this changes nothing.
    #[arg(short = 'q')]
    self_created_qp: bool,
    /// Longest wait in seconds for any step of a ping, or for the
    /// connection to come up (0: wait forever, like rping).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    /// Client: milliseconds to wait after the connection is up before the
    /// first FPDU (the first SEND, or the peer-to-peer RTR): a siw server
    /// overlooks a first FPDU that arrives within moments of its MPA Reply
    /// until more bytes come.
    #[arg(long, value_name = "MS", default_value_t = 20)]
    settle_ms: u64,
    /// Persistent server: exit after this many connections ended (status 0
    /// only if every one was clean).
    #[arg(long, value_name = "N", requires = "persistent")]
    max_clients: Option<u32>,
    /// At exit, print how the transport's TCP recovered from loss
    /// (retransmissions, fast recoveries, timeouts, tail loss probes; the
    /// smoltcp transports keep these counters, kernel TCP does not).
    #[arg(long)]
    tcp_stats: bool,
    #[command(flatten)]
    transport: TransportArgs,
}

pub fn run(args: &Args) -> ExitCode {
    let log = Log::stdio(args.debug);
    match run_role(args, &log) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log.err(&format!(
                "rping {} failed: {e}",
                if args.server { "server" } else { "client" }
            ));
            ExitCode::FAILURE
        }
    }
}

fn timeout_of(secs: f64) -> Option<Duration> {
    (secs > 0.0).then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

fn run_role(args: &Args, log: &Log) -> Result<(), RpingError> {
    let size = args.size as usize;
    let timeout = timeout_of(args.timeout);
    if args.server {
        let bind = match &args.addr {
            Some(a) => Some(resolve(a, args.port)?.ip()),
            None => None,
        };
        let device = open(args, bind, log)?;
        let listener = device.listen(args.port, args.transport.listen_options())?;
        log.debug(|| format!("rdma_bind_addr successful (port {})", args.port));
        log.debug(|| "rdma_listen".into());
        let cfg = ServerConfig {
            size,
            verbose: args.verbose,
            persistent: args.persistent,
            max_clients: args.max_clients,
            timeout,
        };
        let t = &args.transport;
        let accept = |req: &verbs::ConnectRequest| t.accept_params(req, RPING_IRD_ORD, Vec::new());
        let report = run_server(&device, listener, &accept, &cfg, log);
        if args.tcp_stats {
            log.err(&tcp_stats_line(&device));
        }
        let report = report?;
        log.debug(|| format!("{report:?}"));
        if report.failed > 0 {
            return Err(RpingError::Setup(format!(
                "{} of {} connections failed",
                report.failed,
                report.failed + report.served
            )));
        }
        Ok(())
    } else {
        let Some(a) = &args.addr else {
            return Err(RpingError::Setup("the client needs -a ADDR".into()));
        };
        let remote = resolve(a, args.port)?;
        let device = open(args, None, log)?;
        let cfg = ClientConfig {
            size,
            count: args.count,
            validate: args.validate,
            verbose: args.verbose,
            timeout,
            connect_timeout: timeout.unwrap_or(Duration::from_secs(3600)),
            settle: Duration::from_millis(args.settle_ms),
        };
        let mut params = args
            .transport
            .connect_params(RPING_IRD_ORD, RPING_IRD_ORD, Vec::new());
        // A peer-to-peer RTR is the first FPDU: it waits out the same race.
        params.mpa.first_fpdu_delay = cfg.settle;
        let report = run_client(&device, remote, params, &cfg, log);
        if args.tcp_stats {
            log.err(&tcp_stats_line(&device));
        }
        let report = report?;
        log.debug(|| format!("{} pings", report.pings));
        Ok(())
    }
}

/// `--tcp-stats`: the transport's loss recovery counters, one line.
fn tcp_stats_line(device: &Device) -> String {
    match device.with_transport(|t| t.tcp_loss_stats()) {
        Some(s) => format!("tcp: {s}"),
        None => "tcp: this transport keeps no loss recovery counters".into(),
    }
}

fn open(args: &Args, bind: Option<IpAddr>, log: &Log) -> Result<Device, RpingError> {
    log.debug(|| {
        format!(
            "{} (size {}, port {})",
            args.transport.describe(),
            args.size,
            args.port
        )
    });
    args.transport.open_device(bind).map_err(RpingError::Setup)
}

/// A host name or address and a port, IPv4 first (getaddrinfo's order
/// otherwise).
fn resolve(host: &str, port: u16) -> Result<SocketAddr, RpingError> {
    transport_args::resolve(host, port)
        .map_err(|e| {
            RpingError::Setup(format!(
                "getaddrinfo failed ({e}) - invalid hostname or IP address"
            ))
        })?
        .ok_or_else(|| RpingError::Setup(format!("{host}: no address")))
}
