//! `iwarp perf` as a perftest peer: the programs ib_write_bw, ib_read_bw,
//! ib_send_bw, ib_write_lat, ib_read_lat and ib_send_lat run with `-R`
//! (rdma_cm), message for message.
//!
//! A run is two rdma_cm connections to the server's port: a control
//! connection first ([`control`]: versions, page and cache line sizes,
//! MTU, then handshakes of [`wire::PingpongDest`]), and once both sides
//! have traded an empty handshake, the test connection. The number and
//! order of handshakes differs per program; each is a lock-step exchange,
//! so both sides must make the same ones (see [`run`]). Messages are laid
//! out in [`wire`].

pub mod bw;
pub mod control;
pub mod lat;
pub mod phase;
pub mod report;
pub mod resources;
pub mod wire;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use verbs::{AcceptParams, ConnectParams, ConnectRequest, Device, Listener};

use super::error::PerfError;
use super::op::Op;
use crate::commands::wire_count::WireCounter;
use bw::{BwParams, Limit};
use control::{Control, Side};
use lat::LatParams;
use report::{Outcome, Row, Unit};
use resources::{Shape, TestQp, CACHE_LINE, OUT_READS, PAGE_SIZE};
use wire::{BwReport, PingpongDest};

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub op: Op,
    /// Message sizes, one result row each (`-a`: 2 to 8 MiB).
    pub sizes: Vec<usize>,
    /// perftest's `-a`: the handshakes between sizes of ib_send_bw.
    pub all: bool,
    pub limit: Limit,
    pub tx_depth: usize,
    pub rx_depth: usize,
    pub stall: Duration,
    pub unit: Unit,
    pub connect_timeout: Duration,
}

impl Config {
    /// perftest's `-a`: every power of two from 2 bytes to 8 MiB.
    pub fn all_sizes() -> Vec<usize> {
        (1..24).map(|i| 1usize << i).collect()
    }

    /// perftest's adjustments (`force_dependecies`): depths no larger than
    /// an iteration count, an even receive depth for SEND.
    fn effective(&self) -> Config {
        let mut c = self.clone();
        if let Limit::Iters(n) = c.limit {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            c.tx_depth = c.tx_depth.min(n).max(1);
            if c.op == Op::Send {
                c.rx_depth = c.rx_depth.min(n).max(1);
            }
        }
        if c.op == Op::Send && c.rx_depth % 2 == 1 && !c.all {
            c.rx_depth += 1;
        }
        if c.op.is_latency() {
            c.tx_depth = 1;
        }
        c
    }

    fn shape(&self) -> Shape {
        Shape {
            max_size: self.sizes.iter().copied().max().unwrap_or(1),
            sq_depth: self.tx_depth + 8,
            recv_slots: match self.op {
                Op::Send => self.rx_depth,
                Op::SendLat => 16,
                _ => 0,
            },
        }
    }

    /// How long one side may wait on the control connection while the
    /// other runs a data phase.
    fn phase_wait(&self) -> Duration {
        let run = match self.limit {
            Limit::For(d) => d * self.sizes.len() as u32,
            Limit::Iters(_) => Duration::from_secs(300),
        };
        self.stall + run
    }
}

/// How this side reaches the peer.
pub enum Role<'a> {
    Client {
        remote: SocketAddr,
        params: &'a dyn Fn(u16, u16) -> ConnectParams,
    },
    Server {
        listener: &'a Listener,
        params: &'a dyn Fn(&ConnectRequest) -> AcceptParams,
        /// None: wait for a client forever, as perftest does.
        wait: Option<Duration>,
    },
}

impl Role<'_> {
    fn side(&self) -> Side {
        match self {
            Role::Client { .. } => Side::Client,
            Role::Server { .. } => Side::Server,
        }
    }
}

fn next_request(
    listener: &Listener,
    wait: Option<Duration>,
    what: &str,
) -> Result<ConnectRequest, PerfError> {
    let start = Instant::now();
    loop {
        let slice = Duration::from_millis(200);
        if let Some(r) = listener.request(slice) {
            return Ok(r);
        }
        if wait.is_some_and(|w| start.elapsed() >= w) {
            return Err(if what == "control" {
                PerfError::NoClient(start.elapsed().as_secs_f64())
            } else {
                PerfError::Connect(format!("no {what} connection came"))
            });
        }
    }
}

/// Connects the control connection, retrying while the server is not up
/// yet.
fn connect_control(
    device: &Device,
    remote: SocketAddr,
    params: &dyn Fn(u16, u16) -> ConnectParams,
    timeout: Duration,
) -> Result<Control, PerfError> {
    let deadline = Instant::now() + timeout;
    loop {
        match Control::connect(device, remote, params(0, 0), timeout) {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Prints what perftest prints before its table.
fn banner(cfg: &Config, side: Side) {
    let name = report::test_name(cfg.op).replace('_', " ");
    println!("{}", report::RESULT_LINE);
    println!("                    {name}");
    println!(" Connection type : RC\t\tUsing SRQ      : OFF");
    println!(
        " TX depth        : {}\t\tRX depth       : {}",
        cfg.tx_depth, cfg.rx_depth
    );
    println!(" Number of qps   : 1\t\tTransport type : IW");
    println!(" rdma_cm QPs\t : ON");
    println!(" Data ex. method : rdma_cm");
    if side == Side::Server && matches!(cfg.op, Op::Write | Op::Read) {
        println!(" (the client's figures, as it reports them at the end)");
    }
}

fn header(cfg: &Config) -> String {
    if cfg.op.is_latency() {
        match cfg.limit {
            Limit::Iters(_) => report::lat_header(),
            Limit::For(_) => report::lat_dur_header(),
        }
    } else {
        report::bw_header(cfg.unit)
    }
}

fn print_row(row: &Row, unit: Unit) {
    match row {
        Row::Bw(r) => println!("{}", report::bw_line(r, unit)),
        Row::Lat(r) => println!("{}", report::lat_line(r)),
        Row::LatDur(r) => println!("{}", report::lat_dur_line(r)),
    }
}

/// Runs one perftest exchange in `role` and returns this side's outcome.
pub fn run(
    device: &Device,
    counter: &WireCounter,
    role: &Role<'_>,
    cfg: &Config,
) -> Result<Outcome, PerfError> {
    let cfg = cfg.effective();
    let side = role.side();
    let short = cfg.connect_timeout;
    let control = match role {
        Role::Client { remote, params } => connect_control(device, *remote, *params, short)?,
        Role::Server { listener, wait, .. } => {
            println!();
            println!("************************************");
            println!("* Waiting for client to connect... *");
            println!("************************************");
            let req = next_request(listener, *wait, "control")?;
            Control::accept(device, req, short)?
        }
    };
    let mut control = control;
    // exchange_versions, check_sys_data, check_mtu.
    wire::parse_version(&control.exchange(&wire::version_message())?)?;
    let page = wire::parse_int(
        "page size",
        &control.exchange(&wire::int_message(PAGE_SIZE))?,
    )?;
    wire::parse_int(
        "cache line",
        &control.exchange(&wire::int_message(CACHE_LINE))?,
    )?;
    wire::parse_mtu(&control.exchange(&wire::mtu_message(wire::MTU_CODE))?)?;
    if page > 64 << 20 {
        return Err(PerfError::Protocol(format!("peer page size {page}")));
    }

    // create_rdma_cm_connection: a handshake, the test connection, another.
    let zero = PingpongDest::default();
    control.hand_shake(&zero)?;
    let shape = cfg.shape();
    let reads = cfg.op.reads();
    let test = match role {
        Role::Client { remote, params } => {
            let (ird, ord) = if reads {
                (OUT_READS, OUT_READS)
            } else {
                (0, 0)
            };
            TestQp::connect(device, shape, *remote, &|| params(ird, ord), short)?
        }
        Role::Server {
            listener, params, ..
        } => {
            let req = next_request(listener, Some(short), "test")?;
            let p = params(&req);
            TestQp::accept(device, shape, req, p, short)?
        }
    };
    control.hand_shake(&zero)?;

    banner(&cfg, side);
    let my = test.dest(cfg.op == Op::Send);
    let mut peer = zero;
    let handshakes = match cfg.op {
        Op::Write | Op::Read | Op::Send | Op::SendLat => 3,
        Op::WriteLat | Op::ReadLat => 4,
    };
    for _ in 0..handshakes {
        peer = control.hand_shake(&my)?;
    }
    println!(
        " local address: QPN {:#06x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}",
        my.qpn, my.psn, my.rkey, my.vaddr
    );
    println!(
        " remote address: QPN {:#06x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}",
        peer.qpn, peer.psn, peer.rkey, peer.vaddr
    );

    let wire_start = (counter.received(), counter.sent());
    let mut outcome = Outcome {
        op: cfg.op,
        role: match side {
            Side::Client => "client",
            Side::Server => "server",
        },
        unit: cfg.unit,
        rows: Vec::new(),
        payload_bytes: None,
        peer_bytes: None,
        wire_rx: 0,
        wire_tx: 0,
        disagreement: None,
    };
    let bwp = |size: usize| BwParams {
        op: cfg.op,
        size,
        limit: cfg.limit,
        tx_depth: cfg.tx_depth,
        rx_depth: cfg.rx_depth,
        stall: cfg.stall,
        unit: cfg.unit,
    };
    let latp = |size: usize| LatParams {
        size,
        limit: cfg.limit,
        stall: cfg.stall,
        side,
    };
    match (cfg.op, side) {
        (Op::Write | Op::Read, Side::Client) => {
            println!("{}", header(&cfg));
            let mut moved = 0u64;
            for &size in &cfg.sizes {
                let r = bw::sender(&test, &peer, &bwp(size))?;
                moved += r.total * size as u64;
                print_row(&Row::Bw(r.row.clone()), cfg.unit);
                outcome.rows.push(Row::Bw(r.row));
            }
            println!("{}", report::RESULT_LINE);
            outcome.payload_bytes = Some(moved);
            control.set_timeout(cfg.phase_wait());
            control.hand_shake(&my)?;
            let mine = match outcome.rows.last() {
                Some(Row::Bw(r)) => BwReport {
                    size: r.size,
                    iters: r.iters,
                    bw_peak: r.bw_peak,
                    bw_avg: r.bw_avg,
                    msg_rate: r.msg_rate,
                },
                _ => BwReport::default(),
            };
            let theirs = exchange_reports(&control, &mine)?;
            // Our own server answers with the TCP payload it saw, in
            // messages of the last size; perftest's sends whatever its
            // report held (uninitialised on a server), so only a report
            // naming our size is taken at its word.
            let last = cfg.sizes.last().copied().unwrap_or(1) as u64;
            if theirs.size == last && theirs.iters < 1 << 48 {
                let seen = theirs.iters.saturating_add(1).saturating_mul(last);
                outcome.peer_bytes = Some(seen);
                outcome.disagreement = report::check_accounts("this client", moved, seen);
            }
            control.hand_shake(&my)?;
        }
        (Op::Write | Op::Read, Side::Server) => {
            control.set_timeout(cfg.phase_wait());
            control.hand_shake(&my)?;
            // The control SEND travels on its own TCP connection and may
            // overtake the last of the data: count once the data is in.
            settle(&test, counter);
            let carried = if cfg.op == Op::Write {
                counter.received() - wire_start.0
            } else {
                counter.sent() - wire_start.1
            };
            let last = cfg.sizes.last().copied().unwrap_or(1) as u64;
            let mine = BwReport {
                size: last,
                iters: carried / last.max(1),
                ..BwReport::default()
            };
            let theirs = exchange_reports(&control, &mine)?;
            println!("{}", header(&cfg));
            let row = report::BwRow {
                size: theirs.size,
                iters: theirs.iters,
                bw_peak: theirs.bw_peak,
                bw_avg: theirs.bw_avg,
                msg_rate: theirs.msg_rate,
            };
            print_row(&Row::Bw(row.clone()), cfg.unit);
            println!("{}", report::RESULT_LINE);
            outcome.rows.push(Row::Bw(row));
            // The report's iterations count the client's sample window in
            // duration mode, not its run: the figure stays the report's
            // (`report_bytes`), and is held to the TCP payload, which
            // covers the whole run.
            if let Some(claimed) = theirs.bytes() {
                outcome.disagreement = report::check_accounts("the client", claimed, carried);
            }
            control.hand_shake(&my)?;
        }
        (Op::Send, _) => {
            println!("{}", header(&cfg));
            let mut moved = 0u64;
            for &size in &cfg.sizes {
                control.set_timeout(short.max(cfg.stall));
                control.hand_shake(&my)?;
                let r = match side {
                    Side::Client => {
                        test.credit.write(0, &[0; 4])?;
                        bw::sender(&test, &peer, &bwp(size))?
                    }
                    Side::Server => bw::receiver(&test, &peer, &bwp(size))?,
                };
                moved += r.total * size as u64;
                print_row(&Row::Bw(r.row.clone()), cfg.unit);
                outcome.rows.push(Row::Bw(r.row));
                if cfg.all {
                    control.set_timeout(cfg.phase_wait());
                    control.hand_shake(&my)?;
                }
            }
            println!("{}", report::RESULT_LINE);
            outcome.payload_bytes = Some(moved);
            control.set_timeout(cfg.phase_wait());
            control.hand_shake(&my)?;
        }
        (Op::WriteLat, _) => {
            println!("{}", header(&cfg));
            for &size in &cfg.sizes {
                let row = lat::write_lat(&test, &peer, latp(size))?;
                print_row(&row, cfg.unit);
                outcome.rows.push(row);
            }
            println!("{}", report::RESULT_LINE);
        }
        (Op::ReadLat, Side::Client) => {
            println!("{}", header(&cfg));
            for &size in &cfg.sizes {
                let row = lat::read_lat(&test, &peer, latp(size))?;
                print_row(&row, cfg.unit);
                outcome.rows.push(row);
            }
            println!("{}", report::RESULT_LINE);
            control.set_timeout(cfg.phase_wait());
            control.hand_shake(&my)?;
        }
        (Op::ReadLat, Side::Server) => {
            control.set_timeout(cfg.phase_wait());
            control.hand_shake(&my)?;
        }
        (Op::SendLat, _) => {
            println!("{}", header(&cfg));
            for &size in &cfg.sizes {
                control.set_timeout(cfg.phase_wait());
                control.hand_shake(&my)?;
                let row = lat::send_lat(&test, latp(size))?;
                print_row(&row, cfg.unit);
                outcome.rows.push(row);
            }
            println!("{}", report::RESULT_LINE);
            control.set_timeout(cfg.phase_wait());
            control.hand_shake(&my)?;
        }
    }
    outcome.wire_rx = counter.received() - wire_start.0;
    outcome.wire_tx = counter.sent() - wire_start.1;
    // perftest's client closes first; a server that closes at once may
    // flush the client's last SEND or WRITE before it completes there.
    let grace = match side {
        Side::Server => Duration::from_secs(3),
        Side::Client => Duration::from_millis(300),
    };
    control.wait_peer_close(&test.qp, &test.cq, grace);
    test.qp.disconnect();
    control.disconnect();
    Ok(outcome)
}

/// Drives the test connection until no byte has moved for 100 ms (2 s at
/// most).
fn settle(test: &TestQp, counter: &WireCounter) {
    let mut wcs = [verbs::WorkCompletion::FILLER; 8];
    let start = Instant::now();
    let mut seen = (counter.received(), counter.sent());
    let mut quiet_since = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        let _ = test.cq.poll(&mut wcs);
        let now = (counter.received(), counter.sent());
        if now != seen {
            seen = now;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= Duration::from_millis(100) {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `xchg_bw_reports`: five lock-step exchanges of eight bytes.
fn exchange_reports(control: &Control, mine: &BwReport) -> Result<BwReport, PerfError> {
    let mut got = Vec::with_capacity(5);
    for m in mine.messages() {
        got.push(control.exchange(&m)?);
    }
    Ok(BwReport::parse(&got)?)
}
