//! The passive side: accepts one client run (all of its connections, as
//! named by the session id in their connect requests), serves it, reports
//! what it saw and exits, as perftest's servers do.

use std::time::{Duration, Instant};

use verbs::{
    AcceptParams, CmEvent, CompletionQueue, ConnectRequest, Device, DisconnectReason, Listener,
    WcOpcode, WcStatus, WorkCompletion,
};

use super::buffers::{lat_value, Conn, Layout, RecvLayout, WrKind};
use super::credit::CreditReturn;
use super::error::PerfError;
use super::op::Op;
use super::stats::Report;
use super::wire::{pattern, Ctrl, Hello, Status, Verdict, Welcome, CTRL_LEN};

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The test this server runs; a client asking for another is refused.
    pub op: Op,
    /// Receives kept posted per connection for SEND bandwidth.
    pub rx_depth: usize,
    /// Give up when a started run makes no progress for this long.
    pub stall: Duration,
    /// Largest message size a client may ask for.
    pub max_size: usize,
    /// Give up if no client run starts within this long (None: wait
    /// forever, as perftest does).
    pub wait: Option<Duration>,
}

/// Receives for control messages and ping-pong echoes.
const SMALL_RECVS: usize = 4;
/// Control SENDs in flight per connection.
const CTRL_SLOTS: usize = 8;

struct ServerQp {
    conn: Conn,
    hello: Hello,
    credit: CreditReturn,
    msgs: u64,
    bytes: u64,
    first_rx: Option<Instant>,
    last_rx: Option<Instant>,
    /// write_lat: iterations echoed.
    echoed: u64,
    /// send_lat: the slot of the latest data message.
    last_slot: Option<usize>,
    /// The client's totals, once they arrived.
    done: Option<(u64, u64, u64)>,
    acked: bool,
    verdict: Verdict,
    finished: bool,
    seq: u64,
}

/// The session being served.
struct Session {
    id: u64,
    hello: Hello,
    accepted: usize,
}

/// Serves one client run arriving on `listener`. `params` chooses each
/// accept's parameters from the request and the private data to send.
pub fn run_server(
    device: &Device,
    listener: &Listener,
    params: &dyn Fn(&ConnectRequest, Vec<u8>) -> AcceptParams,
    cfg: &ServerConfig,
) -> Result<Report, PerfError> {
    let mut session: Option<Session> = None;
    let mut qps: Vec<ServerQp> = Vec::new();
    let mut cq: Option<CompletionQueue> = None;
    let mut wcs = [WorkCompletion::FILLER; 64];
    let started = Instant::now();
    let mut last_progress = started;
    let mut spins = 0u64;
    loop {
        // Requests are always taken, so one that cannot be served is
        // refused at once instead of timing out.
        if let Some(req) = listener.try_request() {
            if let Some(q) = admit(device, &mut cq, &mut session, req, params, cfg)? {
                last_progress = Instant::now();
                qps.push(q);
            }
        }
        let Some(cq) = cq.as_ref() else {
            // No client yet: wait without spinning.
            if cfg.wait.is_some_and(|w| started.elapsed() >= w) {
                return Err(PerfError::NoClient(started.elapsed().as_secs_f64()));
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let n = cq.poll(&mut wcs)?;
        let now = Instant::now();
        for wc in &wcs[..n] {
            let q = qps
                .iter_mut()
                .find(|q| q.conn.qp.num() == wc.qp_num)
                .ok_or_else(|| PerfError::Protocol(format!("completion for qp {}", wc.qp_num)))?;
            q.on_completion(wc, now)?;
        }
        let mut moved = n > 0;
        for q in qps.iter_mut() {
            moved |= q.pump()?;
        }
        if moved {
            last_progress = now;
        } else {
            std::thread::yield_now();
        }
        spins += 1;
        if n == 0 && spins.is_multiple_of(256) {
            for q in qps.iter_mut().filter(|q| !q.finished) {
                while let Some(ev) = q.conn.qp.try_event() {
                    match ev {
                        CmEvent::Established(_) => last_progress = now,
                        CmEvent::Disconnected { reason } => {
                            if !q.acked {
                                return Err(PerfError::Disconnected(reason));
                            }
                            if matches!(
                                reason,
                                DisconnectReason::Terminated { .. } | DisconnectReason::Reset
                            ) {
                                return Err(PerfError::Disconnected(reason));
                            }
                            q.finished = true;
                        }
                        CmEvent::ConnectFailed(why) => {
                            return Err(PerfError::Connect(why.to_string()))
                        }
                        CmEvent::Rejected { .. } => {
                            return Err(PerfError::Connect("rejected".into()))
                        }
                        // An event this tool does not know changes nothing.
                        _ => {}
                    }
                }
            }
            if let Some(s) = &session {
                if s.accepted == usize::from(s.hello.qp_count) && qps.iter().all(|q| q.finished) {
                    return Ok(summarize(&qps, s));
                }
            }
            let idle = now.saturating_duration_since(last_progress);
            if idle > cfg.stall {
                return Err(PerfError::Stalled(idle.as_secs_f64()));
            }
        }
    }
}

/// Checks a connect request and accepts it onto a new connection, or
/// rejects it (returning None).
fn admit(
    device: &Device,
    cq: &mut Option<CompletionQueue>,
    session: &mut Option<Session>,
    req: ConnectRequest,
    params: &dyn Fn(&ConnectRequest, Vec<u8>) -> AcceptParams,
    cfg: &ServerConfig,
) -> Result<Option<ServerQp>, PerfError> {
    let hello = match Hello::parse(&req.private_data) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("perf server: refusing a connect request: {e}");
            req.reject(&Welcome::refusal(Status::BadRequest).to_vec())?;
            return Ok(None);
        }
    };
    let refuse = |why: String, status: Status, req: ConnectRequest| {
        eprintln!("perf server: refusing a connect request: {why}");
        req.reject(&Welcome::refusal(status).to_vec())
    };
    if hello.op != cfg.op {
        refuse(
            format!(
                "the client asked for {}, this server runs {}",
                hello.op.name(),
                cfg.op.name()
            ),
            Status::BadRequest,
            req,
        )?;
        return Ok(None);
    }
    let size = hello.size as usize;
    if size == 0 || size > cfg.max_size {
        refuse(
            format!("message size {size} outside 1..={}", cfg.max_size),
            Status::BadRequest,
            req,
        )?;
        return Ok(None);
    }
    match session {
        Some(s) if s.id != hello.session || s.accepted >= usize::from(s.hello.qp_count) => {
            refuse("busy with another client".into(), Status::Busy, req)?;
            return Ok(None);
        }
        Some(s) if s.hello.size != hello.size || s.hello.qp_count != hello.qp_count => {
            refuse(
                "inconsistent with the run's first connection".into(),
                Status::BadRequest,
                req,
            )?;
            return Ok(None);
        }
        _ => {}
    }
    let qp_count = usize::from(hello.qp_count);
    let send_bw = hello.op == Op::Send;
    let recvs = if send_bw {
        cfg.rx_depth.max(1)
    } else {
        SMALL_RECVS
    };
    let layout = Layout {
        size,
        recvs,
        recv_layout: if send_bw {
            RecvLayout::Shared
        } else {
            RecvLayout::Slots
        },
        slot_len: size.max(CTRL_LEN),
        ctrl_slots: CTRL_SLOTS,
        // Latency echoes are one at a time, but their completions may lag.
        depth: usize::from(hello.tx_depth).max(16),
    };
    let cq = cq.get_or_insert_with(|| {
        device.create_cq(qp_count * (layout.depth + recvs + CTRL_SLOTS + 4))
    });
    let data = pattern(hello.session, size);
    // The READ source holds the pattern; a WRITE target starts zeroed so
    // the final check means something.
    let buf = if hello.op.reads() {
        data.clone()
    } else {
        vec![0; size]
    };
    let conn = match Conn::new(device, cq, layout, buf, data) {
        Ok(c) => c,
        Err(e) => {
            refuse(e.to_string(), Status::NoResources, req)?;
            return Ok(None);
        }
    };
    conn.post_all_recvs()?;
    let welcome = Welcome {
        status: Status::Ok,
        buf: conn.advert(),
        credits: recvs as u32,
    };
    let p = params(&req, welcome.to_vec());
    req.accept(&conn.qp, p)?;
    let s = session.get_or_insert(Session {
        id: hello.session,
        hello,
        accepted: 0,
    });
    s.accepted += 1;
    Ok(Some(ServerQp {
        conn,
        hello,
        credit: CreditReturn::new(recvs as u32),
        msgs: 0,
        bytes: 0,
        first_rx: None,
        last_rx: None,
        echoed: 0,
        last_slot: None,
        done: None,
        acked: false,
        verdict: Verdict::NotApplicable,
        finished: false,
        seq: 0,
    }))
}

impl ServerQp {
    /// Echoes write_lat iterations, returns credits. True if it did anything.
    fn pump(&mut self) -> Result<bool, PerfError> {
        let mut moved = false;
        if self.hello.op == Op::WriteLat && self.done.is_none() {
            let val = lat_value(self.echoed);
            if self.conn.last_byte() == val {
                self.conn.set_tx_last_byte(val);
                self.conn.post_write(self.seq, self.hello.buf)?;
                self.seq += 1;
                self.echoed += 1;
                moved = true;
            }
        }
        if self.hello.op == Op::Send && !self.acked {
            if let Some(returned) = self.credit.due(self.conn.can_send_ctrl()) {
                self.conn.send_ctrl(Ctrl::Credit { returned })?;
                moved = true;
            }
        }
        Ok(moved)
    }

    fn on_completion(&mut self, wc: &WorkCompletion, now: Instant) -> Result<(), PerfError> {
        if wc.status == WcStatus::WrFlushErr && self.acked {
            return Ok(());
        }
        PerfError::check_completion(wc)?;
        match (WrKind::of(wc.wr_id), wc.opcode) {
            (Some(WrKind::Data(_)), _) => {}
            (Some(WrKind::CtrlSend(slot)), _) => self.conn.ctrl_sent(slot),
            (Some(WrKind::Recv(slot)), WcOpcode::Recv) if wc.solicited => {
                let bytes = self.conn.slot_bytes(slot, wc.byte_len as usize)?;
                let Ctrl::Done { msgs, bytes, nanos } = Ctrl::parse(&bytes)? else {
                    return Err(PerfError::Protocol(
                        "a control message other than the totals".into(),
                    ));
                };
                self.done = Some((msgs, bytes, nanos));
                self.verdict = self.check();
                self.conn.post_recv(slot)?;
                let local = match self.hello.op {
                    Op::Send | Op::SendLat => self.msgs,
                    Op::WriteLat => self.echoed,
                    _ => 0,
                };
                let span = match (self.first_rx, self.last_rx) {
                    (Some(a), Some(b)) => b.saturating_duration_since(a).as_nanos() as u64,
                    _ => 0,
                };
                // A control slot is free: the client sends its totals only
                // after every data request completed.
                self.conn.send_ctrl(Ctrl::Ack {
                    msgs: local,
                    bytes: self.bytes,
                    nanos: span,
                    verdict: self.verdict,
                })?;
                self.acked = true;
            }
            (Some(WrKind::Recv(slot)), WcOpcode::Recv) => {
                self.msgs += 1;
                self.bytes += u64::from(wc.byte_len);
                self.first_rx.get_or_insert(now);
                self.last_rx = Some(now);
                self.conn.post_recv(slot)?;
                match self.hello.op {
                    Op::Send => self.credit.reposted(),
                    Op::SendLat => {
                        self.last_slot = Some(slot);
                        self.conn.post_send(self.seq)?;
                        self.seq += 1;
                    }
                    op => {
                        return Err(PerfError::Protocol(format!(
                            "a data SEND in a {} test",
                            op.name()
                        )))
                    }
                }
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

    /// What arrived, checked against the run's pattern.
    fn check(&self) -> Verdict {
        let size = self.hello.size as usize;
        let want = pattern(self.hello.session, size);
        let verdict = |ok: bool| {
            if ok {
                Verdict::Match
            } else {
                Verdict::Mismatch
            }
        };
        match self.hello.op {
            _ if self.msgs == 0 && self.done.is_some_and(|d| d.0 == 0) => Verdict::NotApplicable,
            Op::Write => verdict(self.conn.buf.to_vec() == want),
            Op::WriteLat if size > 1 => {
                let got = self.conn.buf.to_vec();
                verdict(got[..size - 1] == want[..size - 1])
            }
            // The totals landed at the start of the shared buffer; the
            // rest still holds the last data message.
            Op::Send if size > CTRL_LEN => match self.conn.slot_bytes(0, size) {
                Ok(got) => verdict(got[CTRL_LEN..] == want[CTRL_LEN..]),
                Err(_) => Verdict::Mismatch,
            },
            Op::SendLat => match self.last_slot.map(|s| self.conn.slot_bytes(s, size)) {
                Some(Ok(got)) => verdict(got == want),
                Some(Err(_)) => Verdict::Mismatch,
                None => Verdict::NotApplicable,
            },
            _ => Verdict::NotApplicable,
        }
    }
}

fn summarize(qps: &[ServerQp], s: &Session) -> Report {
    let op = s.hello.op;
    let mut verdict = Verdict::NotApplicable;
    for q in qps {
        verdict = match (verdict, q.verdict) {
            (Verdict::Mismatch, _) | (_, Verdict::Mismatch) => Verdict::Mismatch,
            (Verdict::Match, _) | (_, Verdict::Match) => Verdict::Match,
            _ => Verdict::NotApplicable,
        };
    }
    let (iters, bytes, secs, source) = if op == Op::Send {
        let first = qps.iter().filter_map(|q| q.first_rx).min();
        let last = qps.iter().filter_map(|q| q.last_rx).max();
        let secs = match (first, last) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        (
            qps.iter().map(|q| q.msgs).sum(),
            qps.iter().map(|q| q.bytes).sum(),
            secs,
            "local",
        )
    } else {
        let done = qps.iter().filter_map(|q| q.done);
        let (mut m, mut b, mut n) = (0, 0, 0);
        for (msgs, bytes, nanos) in done {
            m += msgs;
            b += bytes;
            n = n.max(nanos);
        }
        (m, b, n as f64 / 1e9, "peer")
    };
    Report {
        op,
        role: "server",
        size: s.hello.size as usize,
        qps: usize::from(s.hello.qp_count),
        tx_depth: usize::from(s.hello.tx_depth),
        iters,
        bytes,
        secs,
        lat: None,
        verdict,
        source,
        peer_msgs: None,
    }
}
