//! The rping server over the verbs facade: accept connections and run the
//! ping loop of [`Server`] on each.
//!
//! One thread serves every connection: completions of all of them arrive
//! on one completion queue and are routed by queue pair number, so a
//! persistent server (`-P`) serves clients one after another or at once
//! without a thread per client. A plain server serves the first client
//! only, as rping does.

use std::time::{Duration, Instant};

use verbs::{
    AcceptParams, CmEvent, CompletionQueue, ConnectRequest, Device, Listener, WcOpcode, WcStatus,
    WorkCompletion,
};

use super::conn::{Conn, RQ_DEPTH, SQ_DEPTH};
use super::error::{describe, Phase, RpingError};
use super::log::Log;
use super::pattern::as_c_str;
use super::server::{Server, ServerStep};
use super::{linger, WAIT_SLICE};

/// Connections a persistent server keeps open at once; requests beyond
/// this wait in the listener until one ends.
pub const MAX_CONCURRENT: usize = 64;

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub size: usize,
    pub verbose: bool,
    /// Serve connections until killed (or `max_clients` have been served).
    pub persistent: bool,
    /// A persistent server stops after this many connections ended.
    pub max_clients: Option<u32>,
    /// Longest wait for any one step of a ping once connected (None:
    /// forever, like rping).
    pub timeout: Option<Duration>,
}

/// What a server run saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerReport {
    /// Connections that ended cleanly (the client closed between pings).
    pub served: u32,
    /// Connections that ended with an error.
    pub failed: u32,
    /// Pings served, over all connections.
    pub pings: u64,
}

struct Session {
    conn: Conn,
    server: Server,
    established: bool,
    last_activity: Instant,
    /// Set once the connection is over: its result.
    outcome: Option<Result<(), RpingError>>,
}

/// Serves connections arriving on `listener`. `accept` chooses the accept
/// parameters of each request. Ok when every connection ended cleanly.
pub fn run_server(
    device: &Device,
    listener: Listener,
    accept: &dyn Fn(&ConnectRequest) -> AcceptParams,
    cfg: &ServerConfig,
    log: &Log,
) -> Result<ServerReport, RpingError> {
    let cq = device.create_cq(MAX_CONCURRENT * (SQ_DEPTH + RQ_DEPTH));
    let mut listener = Some(listener);
    let mut sessions: Vec<Session> = Vec::new();
    let mut report = ServerReport::default();
    let mut ended = 0u32;
    let mut last_error = None;
    let mut wcs = [WorkCompletion::FILLER; 16];
    loop {
        if sessions.len() < MAX_CONCURRENT {
            if let Some(req) = listener.as_ref().and_then(|l| l.try_request()) {
                match start_session(device, &cq, req, accept, cfg, log) {
                    Ok(s) => sessions.push(s),
                    Err(e) => log.err(&format!("connect error: {e}")),
                }
                if !cfg.persistent {
                    // rping serves its first client only.
                    listener = None;
                }
            }
        }
        let n = cq.wait(&mut wcs, WAIT_SLICE)?;
        for wc in &wcs[..n] {
            if let Some(s) = sessions
                .iter_mut()
                .find(|s| s.conn.qp.num() == wc.qp_num && s.outcome.is_none())
            {
                s.last_activity = Instant::now();
                if let Err(e) = on_completion(s, wc, cfg, log) {
                    s.outcome = Some(Err(e));
                }
            }
        }
        for s in sessions.iter_mut().filter(|s| s.outcome.is_none()) {
            while let Some(ev) = s.conn.qp.try_event() {
                s.last_activity = Instant::now();
                on_event(s, ev, log);
                if s.outcome.is_some() {
                    break;
                }
            }
            if let (Some(t), None) = (cfg.timeout, &s.outcome) {
                let idle = s.last_activity.elapsed();
                if idle >= t {
                    let phase = if s.established {
                        s.server.phase()
                    } else {
                        Phase::Connecting
                    };
                    s.outcome = Some(Err(RpingError::Timeout {
                        secs: idle.as_secs_f64(),
                        phase,
                    }));
                }
            }
        }
        let mut i = 0;
        while i < sessions.len() {
            if sessions[i].outcome.is_none() {
                i += 1;
                continue;
            }
            let s = sessions.swap_remove(i);
            ended += 1;
            report.pings += s.server.pings();
            if cfg.verbose {
                super::conn::print_stats(&s.conn.qp, log);
            }
            s.conn.qp.disconnect();
            log.err("server DISCONNECT EVENT...");
            match s.outcome {
                Some(Ok(())) => report.served += 1,
                Some(Err(e)) => {
                    report.failed += 1;
                    log.err(&format!("rping server failed: {e}"));
                    last_error = Some(e);
                }
                None => {}
            }
        }
        let done = if cfg.persistent {
            cfg.max_clients.is_some_and(|m| ended >= m)
        } else {
            listener.is_none() && sessions.is_empty()
        };
        if done {
            linger(device);
            return match last_error {
                Some(e) if !cfg.persistent => Err(e),
                _ => Ok(report),
            };
        }
    }
}

/// Sets up a connection's objects, posts its receive and accepts.
fn start_session(
    device: &Device,
    cq: &CompletionQueue,
    req: ConnectRequest,
    accept: &dyn Fn(&ConnectRequest) -> AcceptParams,
    cfg: &ServerConfig,
    log: &Log,
) -> Result<Session, RpingError> {
    log.debug(|| {
        format!(
            "cma_event CONNECT_REQUEST from {:?}: MPA rev {} crc {} markers {} ird {:?} ord {:?} p2p {:?}",
            req.peer_addr, req.revision, req.crc, req.markers, req.ird, req.ord, req.p2p
        )
    });
    let conn = Conn::new(device, cq, cfg.size, false)?;
    log.debug(|| format!("created pd {:?} qp {}", conn.pd.id(), conn.qp.num()));
    conn.post_recv()?;
    let params = accept(&req);
    log.debug(|| {
        format!(
            "accepting client connection request (ird {} ord {})",
            params.ird, params.ord
        )
    });
    req.accept(&conn.qp, params)?;
    Ok(Session {
        conn,
        server: Server::new(),
        established: false,
        last_activity: Instant::now(),
        outcome: None,
    })
}

fn on_event(s: &mut Session, ev: CmEvent, log: &Log) {
    match ev {
        CmEvent::Established(info) => {
            log.debug(|| {
                format!(
                    "ESTABLISHED: MPA rev {} crc {} ird {} ord {} rtr {:?}",
                    info.revision, info.crc, info.ird, info.ord, info.rtr
                )
            });
            s.established = true;
        }
        CmEvent::Disconnected { reason } => {
            log.debug(|| format!("cma_event DISCONNECTED: {}", describe(&reason)));
            s.outcome = Some(s.server.on_disconnected(reason));
        }
        CmEvent::ConnectFailed(why) => {
            s.outcome = Some(Err(RpingError::Connect(why.to_string())));
        }
        CmEvent::Rejected { .. } => {
            s.outcome = Some(Err(RpingError::Connect("rejected".into())));
        }
        other => log.debug(|| format!("cma_event {other:?}: ignored")),
    }
}

fn on_completion(
    s: &mut Session,
    wc: &WorkCompletion,
    cfg: &ServerConfig,
    log: &Log,
) -> Result<(), RpingError> {
    let step = match (wc.status, wc.opcode) {
        (WcStatus::WrFlushErr, _) => return Ok(()),
        (WcStatus::Success, WcOpcode::Send) => {
            log.debug(|| "send completion".into());
            return Ok(());
        }
        (WcStatus::Success, WcOpcode::Recv) => {
            log.debug(|| "recv completion".into());
            let msg = s.conn.received(wc.byte_len);
            let step = s.server.on_recv(&msg)?;
            s.conn.post_recv()?;
            step
        }
        (WcStatus::Success, WcOpcode::RdmaRead) => {
            log.debug(|| "server received read complete".into());
            if cfg.verbose {
                let data = s.conn.rdma.with_bytes(as_c_str);
                log.out(&format!("server ping data: {data}"));
            }
            s.server.on_read_done()?
        }
        (WcStatus::Success, WcOpcode::RdmaWrite) => {
            log.debug(|| "server rdma write complete".into());
            s.server.on_write_done()?
        }
        (status, opcode) => return Err(RpingError::Completion { opcode, status }),
    };
    match step {
        ServerStep::Read { remote } => {
            log.debug(|| {
                format!(
                    "Received rkey {:x} addr {:x} len {} from peer",
                    remote.rkey, remote.addr, remote.size
                )
            });
            s.conn.post_read(remote)?;
            log.debug(|| "server posted rdma read req".into());
        }
        ServerStep::Write { remote } => {
            log.debug(|| "server received sink adv".into());
            let len = s.conn.post_write(remote)?;
            log.debug(|| {
                format!(
                    "rdma write from lkey {:x} laddr {:x} len {len}",
                    s.conn.rdma.lkey().0,
                    s.conn.rdma.addr()
                )
            });
        }
        ServerStep::GoAhead => {
            s.conn.send_go_ahead()?;
            log.debug(|| "server posted go ahead".into());
        }
    }
    Ok(())
}
