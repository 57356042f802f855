//! The measuring side: connects `qps` queue pairs, drives the test on all
//! of them from one thread (busy polling, as perftest does), then trades
//! totals with the server and disconnects.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use verbs::{CmEvent, CompletionQueue, ConnectParams, Device, WcOpcode, WorkCompletion};

use super::buffers::{lat_value, Conn, Layout, RecvLayout, WrKind};
use super::credit::SendCredits;
use super::error::PerfError;
use super::op::Op;
use super::stats::{LatStats, Report};
use super::wire::{pattern, Buf, Ctrl, Hello, Status, Verdict, Welcome, CTRL_LEN};

/// When the data phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// After this many messages (bandwidth) or iterations (latency) per
    /// queue pair.
    Iters(u64),
    /// After this long.
    For(Duration),
}

#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub op: Op,
    pub size: usize,
    pub qps: usize,
    pub tx_depth: usize,
    pub limit: Limit,
    /// Give up when nothing completes for this long.
    pub stall: Duration,
    pub connect_timeout: Duration,
    /// Names the run (the server groups connections by it and derives the
    /// data pattern from it).
    pub session: u64,
}

/// Control receives the client keeps posted per connection.
pub const CLIENT_RECVS: usize = 16;

/// Where one connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// Totals sent; waiting for the server's answer.
    DoneSent,
    Acked,
}

struct ClientQp {
    conn: Conn,
    remote: Buf,
    credits: SendCredits,
    posted: u64,
    completed: u64,
    stop: bool,
    phase: Phase,
    /// Latency tests: the iteration under way (its start, its value).
    waiting: Option<(Instant, u8)>,
    iters: u64,
    samples: Vec<Duration>,
    last_completion: Option<Instant>,
    ack: Option<(u64, Verdict)>,
    /// When the data phase started.
    start: Instant,
}

/// Runs the test against the server at `remote`. `params` builds the
/// connect parameters from (IRD, ORD, private data).
pub fn run_client(
    device: &Device,
    remote: SocketAddr,
    params: &dyn Fn(u16, u16, Vec<u8>) -> ConnectParams,
    cfg: &ClientConfig,
) -> Result<Report, PerfError> {
    let op = cfg.op;
    let depth = if op.is_latency() { 1 } else { cfg.tx_depth };
    let slot_len = if op == Op::SendLat {
        cfg.size.max(CTRL_LEN)
    } else {
        CTRL_LEN
    };
    let layout = Layout {
        size: cfg.size,
        recvs: CLIENT_RECVS,
        recv_layout: RecvLayout::Slots,
        slot_len,
        ctrl_slots: 2,
        depth,
    };
    let cq = device.create_cq(cfg.qps * (depth + CLIENT_RECVS + 4));
    let data = pattern(cfg.session, cfg.size);
    let mut qps = Vec::with_capacity(cfg.qps);
    for i in 0..cfg.qps {
        let conn = Conn::new(device, &cq, layout, vec![0; cfg.size], data.clone())?;
        conn.post_all_recvs()?;
        let hello = Hello {
            op,
            qp_index: i as u16,
            qp_count: cfg.qps as u16,
            tx_depth: depth.min(u16::MAX as usize) as u16,
            size: cfg.size as u32,
            session: cfg.session,
            buf: conn.advert(),
            rx_slots: CLIENT_RECVS as u32,
        };
        // READ tests need an ORD; the others need no READ credit at all
        // (perftest -R connects with 0/0 for WRITE and SEND).
        let ord = if op.reads() {
            depth.min(0x3fff) as u16
        } else {
            0
        };
        conn.qp.connect(remote, params(0, ord, hello.to_vec()))?;
        qps.push(conn);
    }
    let mut runs = Vec::with_capacity(cfg.qps);
    for conn in qps {
        let info = match conn.qp.wait_event(cfg.connect_timeout) {
            Some(CmEvent::Established(info)) => info,
            Some(CmEvent::Rejected { private_data }) => {
                let status = Welcome::parse(&private_data)
                    .map(|w| w.status)
                    .unwrap_or(Status::BadRequest);
                return Err(PerfError::Refused(status));
            }
            Some(CmEvent::ConnectFailed(why)) => return Err(PerfError::Connect(why.to_string())),
            Some(CmEvent::Disconnected { reason }) => return Err(PerfError::Disconnected(reason)),
            Some(other) => return Err(PerfError::Connect(format!("unexpected {other:?}"))),
            None => return Err(PerfError::Connect("timed out".into())),
        };
        let welcome = Welcome::parse(&info.private_data)?;
        if welcome.status != Status::Ok {
            return Err(PerfError::Refused(welcome.status));
        }
        if op.reads() && info.ord == 0 {
            return Err(PerfError::Connect(
                "the server granted no RDMA READ credit (ORD 0)".into(),
            ));
        }
        if (welcome.buf.len as usize) < cfg.size && !op.sends() {
            return Err(PerfError::Protocol(format!(
                "the server's buffer holds {} bytes, the test moves {}",
                welcome.buf.len, cfg.size
            )));
        }
        runs.push(ClientQp {
            conn,
            remote: welcome.buf,
            credits: SendCredits::new(welcome.credits),
            posted: 0,
            completed: 0,
            stop: false,
            phase: Phase::Running,
            waiting: None,
            iters: 0,
            samples: Vec::new(),
            last_completion: None,
            ack: None,
            start: Instant::now(),
        });
    }
    let start = Instant::now();
    for r in &mut runs {
        r.start = start;
    }
    let deadline = match cfg.limit {
        Limit::For(d) => Some(start + d),
        Limit::Iters(_) => None,
    };
    drive(&cq, &mut runs, cfg, start, deadline)?;
    let end = runs
        .iter()
        .filter_map(|r| r.last_completion)
        .max()
        .unwrap_or(start);
    let report = summarize(&mut runs, cfg, end.saturating_duration_since(start), &data)?;
    for r in &runs {
        r.conn.qp.disconnect();
    }
    drop(runs);
    super::linger(device);
    Ok(report)
}

fn drive(
    cq: &CompletionQueue,
    runs: &mut [ClientQp],
    cfg: &ClientConfig,
    start: Instant,
    deadline: Option<Instant>,
) -> Result<(), PerfError> {
    let mut wcs = [WorkCompletion::FILLER; 64];
    let mut last_progress = start;
    let mut spins = 0u64;
    loop {
        let now = Instant::now();
        let mut moved = false;
        for r in runs.iter_mut() {
            moved |= r.pump(cfg, now, deadline)?;
        }
        let n = cq.poll(&mut wcs)?;
        let now = Instant::now();
        for wc in &wcs[..n] {
            let r = runs
                .iter_mut()
                .find(|r| r.conn.qp.num() == wc.qp_num)
                .ok_or_else(|| PerfError::Protocol(format!("completion for qp {}", wc.qp_num)))?;
            r.on_completion(wc, cfg, now)?;
        }
        if n > 0 || moved {
            last_progress = now;
        } else {
            // Busy polling, but let the peer process have the core when
            // both run on one (a spinning waiter would otherwise hold it
            // for a whole scheduler slice).
            std::thread::yield_now();
        }
        if runs.iter().all(|r| r.phase == Phase::Acked) {
            return Ok(());
        }
        spins += 1;
        if n == 0 && spins.is_multiple_of(1024) {
            for r in runs.iter() {
                if let Some(CmEvent::Disconnected { reason }) = r.conn.qp.try_event() {
                    return Err(PerfError::Disconnected(reason));
                }
            }
            let idle = now.saturating_duration_since(last_progress);
            if idle > cfg.stall {
                return Err(PerfError::Stalled(idle.as_secs_f64()));
            }
        }
    }
}

impl ClientQp {
    /// Posts what may be posted now. True if anything was.
    fn pump(
        &mut self,
        cfg: &ClientConfig,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Result<bool, PerfError> {
        if self.phase != Phase::Running {
            return Ok(false);
        }
        let op = cfg.op;
        let mut moved = false;
        if deadline.is_some_and(|d| now >= d) {
            self.stop = true;
        }
        if op.is_latency() {
            moved |= self.pump_latency(cfg, now)?;
        } else {
            while !self.stop && self.posted - self.completed < cfg.tx_depth as u64 {
                if op == Op::Send && !self.credits.take() {
                    break;
                }
                let seq = self.posted;
                match op {
                    Op::Write => self.conn.post_write(seq, self.remote)?,
                    Op::Read => self.conn.post_read(seq, self.remote)?,
                    _ => self.conn.post_send(seq)?,
                }
                self.posted += 1;
                moved = true;
                if let Limit::Iters(n) = cfg.limit {
                    if self.posted >= n {
                        self.stop = true;
                    }
                }
            }
        }
        if self.stop && self.waiting.is_none() && self.completed == self.posted {
            // Every data request is done: report the totals. The totals
            // need a receive at the server like any SEND.
            if self.credits.available() > 0 && self.conn.can_send_ctrl() {
                let nanos = self
                    .last_completion
                    .map(|t| t.saturating_duration_since(self.start).as_nanos())
                    .unwrap_or(0);
                let msgs = self.measured(op);
                self.credits.take();
                self.conn.send_ctrl(Ctrl::Done {
                    msgs,
                    bytes: msgs * cfg.size as u64,
                    nanos: nanos as u64,
                })?;
                self.phase = Phase::DoneSent;
                moved = true;
            }
        }
        Ok(moved)
    }

    /// Messages (bandwidth) or iterations (latency) measured.
    fn measured(&self, op: Op) -> u64 {
        if op.is_latency() {
            self.iters
        } else {
            self.completed
        }
    }

    fn pump_latency(&mut self, cfg: &ClientConfig, now: Instant) -> Result<bool, PerfError> {
        let op = cfg.op;
        if let Some((t0, val)) = self.waiting {
            if op == Op::WriteLat && self.conn.last_byte() == val {
                self.iteration_done(cfg, t0, now);
                return Ok(true);
            }
            return Ok(false);
        }
        if self.stop || self.posted - self.completed >= cfg.tx_depth.max(1) as u64 {
            return Ok(false);
        }
        let seq = self.posted;
        let val = lat_value(self.iters);
        // perftest stamps before posting: the post is part of the latency.
        let t0 = Instant::now();
        match op {
            Op::WriteLat => {
                self.conn.set_tx_last_byte(val);
                self.conn.post_write(seq, self.remote)?;
            }
            Op::SendLat => {
                if !self.credits.take() {
                    return Ok(false);
                }
                self.conn.post_send(seq)?;
            }
            _ => self.conn.post_read(seq, self.remote)?,
        }
        self.posted += 1;
        self.waiting = Some((t0, val));
        Ok(true)
    }

    fn iteration_done(&mut self, cfg: &ClientConfig, t0: Instant, now: Instant) {
        self.samples.push(now.saturating_duration_since(t0));
        self.iters += 1;
        self.waiting = None;
        self.last_completion = Some(now);
        if let Limit::Iters(n) = cfg.limit {
            if self.iters >= n {
                self.stop = true;
            }
        }
    }

    fn on_completion(
        &mut self,
        wc: &WorkCompletion,
        cfg: &ClientConfig,
        now: Instant,
    ) -> Result<(), PerfError> {
        PerfError::check_completion(wc)?;
        match (WrKind::of(wc.wr_id), wc.opcode) {
            (Some(WrKind::Data(_)), _) => {
                self.completed += 1;
                match cfg.op {
                    Op::ReadLat => {
                        if let Some((t0, _)) = self.waiting {
                            self.iteration_done(cfg, t0, now);
                        }
                    }
                    op if !op.is_latency() => self.last_completion = Some(now),
                    _ => {}
                }
            }
            (Some(WrKind::CtrlSend(slot)), _) => self.conn.ctrl_sent(slot),
            (Some(WrKind::Recv(slot)), WcOpcode::Recv) => {
                if wc.solicited {
                    let bytes = self.conn.slot_bytes(slot, wc.byte_len as usize)?;
                    match Ctrl::parse(&bytes)? {
                        Ctrl::Credit { returned } => self.credits.on_report(returned),
                        Ctrl::Ack { msgs, verdict, .. } => {
                            if self.phase != Phase::DoneSent {
                                return Err(PerfError::Protocol(
                                    "an answer before the totals".into(),
                                ));
                            }
                            self.ack = Some((msgs, verdict));
                            self.phase = Phase::Acked;
                        }
                        Ctrl::Done { .. } => {
                            return Err(PerfError::Protocol("totals from the server".into()))
                        }
                    }
                } else if cfg.op == Op::SendLat {
                    if wc.byte_len as usize != cfg.size {
                        return Err(PerfError::Protocol(format!(
                            "echo of {} bytes, sent {}",
                            wc.byte_len, cfg.size
                        )));
                    }
                    if let Some((t0, _)) = self.waiting {
                        self.iteration_done(cfg, t0, now);
                    }
                    // The server reposts a receive before it echoes, so
                    // every echo gives a receive credit back.
                    self.credits.on_report(self.iters);
                } else {
                    return Err(PerfError::Protocol("a data SEND from the server".into()));
                }
                self.conn.post_recv(slot)?;
            }
            _ => {
                return Err(PerfError::Protocol(format!(
                    "unexpected completion {:?} id {:#x}",
                    wc.opcode, wc.wr_id
                )))
            }
        }
        Ok(())
    }
}

fn summarize(
    runs: &mut [ClientQp],
    cfg: &ClientConfig,
    elapsed: Duration,
    data: &[u8],
) -> Result<Report, PerfError> {
    let op = cfg.op;
    let mut verdict = Verdict::NotApplicable;
    let mut merge = |v: Verdict| {
        verdict = match (verdict, v) {
            (Verdict::Mismatch, _) | (_, Verdict::Mismatch) => Verdict::Mismatch,
            (Verdict::Match, _) | (_, Verdict::Match) => Verdict::Match,
            _ => Verdict::NotApplicable,
        }
    };
    let mut iters = 0;
    let mut peer_msgs = 0;
    let mut samples = Vec::new();
    for r in runs.iter_mut() {
        let (msgs, v) = r.ack.unwrap_or((0, Verdict::NotApplicable));
        merge(v);
        peer_msgs += msgs;
        let mine = r.measured(op);
        iters += mine;
        samples.append(&mut r.samples);
        // What landed in our buffer: READ data, or the write_lat echo (all
        // but the last byte, which carries the iteration's value).
        match op {
            Op::Read | Op::ReadLat if mine > 0 => {
                merge(check(r.conn.buf.to_vec() == data));
            }
            Op::WriteLat if mine > 0 && cfg.size > 1 => {
                let got = r.conn.buf.to_vec();
                merge(check(got[..cfg.size - 1] == data[..cfg.size - 1]));
            }
            _ => {}
        }
        if op.sends() && msgs != mine {
            return Err(PerfError::Protocol(format!(
                "the server received {msgs} messages, {mine} were sent"
            )));
        }
    }
    if verdict == Verdict::Mismatch {
        return Err(PerfError::Protocol("the data arrived damaged".into()));
    }
    let divisor = if op.halves_round_trip() { 2 } else { 1 };
    Ok(Report {
        op,
        role: "client",
        size: cfg.size,
        qps: cfg.qps,
        tx_depth: if op.is_latency() { 1 } else { cfg.tx_depth },
        iters,
        bytes: iters * cfg.size as u64,
        secs: elapsed.as_secs_f64(),
        lat: LatStats::from_samples(&mut samples, divisor),
        verdict,
        source: "local",
        peer_msgs: op.sends().then_some(peer_msgs),
    })
}

fn check(ok: bool) -> Verdict {
    if ok {
        Verdict::Match
    } else {
        Verdict::Mismatch
    }
}
