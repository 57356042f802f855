//! The rping client over the verbs facade: connect with IRD = ORD = 1,
//! run the ping loop of [`Client`], disconnect.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use verbs::{CmEvent, CompletionQueue, ConnectParams, Device, WcOpcode, WcStatus};

use super::client::{Client, ClientStep};
use super::conn::Conn;
use super::error::{describe, Phase, RpingError};
use super::log::Log;
use super::{linger, WAIT_SLICE};

/// How the client runs.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub size: usize,
    /// Pings to run; 0 = until something fails.
    pub count: u32,
    pub validate: bool,
    pub verbose: bool,
    /// Longest wait for any one step of a ping (None: forever, like rping).
    pub timeout: Option<Duration>,
    /// Longest wait for the connection to come up.
    pub connect_timeout: Duration,
    /// Pause between the connection coming up and the first SEND.
    ///
    /// siw as responder sends its MPA Reply before it hands the socket's
    /// receive upcall to the queue pair (siw_accept: siw_send_mpareqrep,
    /// then siw_qp_socket_assoc). An FPDU arriving in between is left
    /// unread until more bytes come, and rping's first SEND is the only
    /// FPDU until the server answers it: the run stalls. rping itself
    /// never hits this, its first post comes milliseconds after the event;
    /// a userspace stack answers in microseconds, so it waits on purpose.
    pub settle: Duration,
}

/// What a finished client run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientReport {
    pub pings: u32,
}

/// Connects to `remote` and pings. Ok only if every ping asked for
/// completed (and verified, with validation).
pub fn run_client(
    device: &Device,
    remote: SocketAddr,
    params: ConnectParams,
    cfg: &ClientConfig,
    log: &Log,
) -> Result<ClientReport, RpingError> {
    let cq = device.create_cq(conn_cq_depth());
    let conn = Conn::new(device, &cq, cfg.size, true)?;
    log.debug(|| format!("created pd {:?} qp {}", conn.pd.id(), conn.qp.num()));
    log.debug(|| "allocated & registered buffers...".into());
    conn.post_recv()?;
    log.debug(|| format!("connecting to {remote}"));
    conn.qp.connect(remote, params)?;
    let info = conn
        .qp
        .wait_established(cfg.connect_timeout)
        .map_err(|e| RpingError::Connect(e.to_string()))?;
    log.debug(|| {
        format!(
            "ESTABLISHED: MPA rev {} crc {} markers {}/{} ird {} ord {} rtr {:?}",
            info.revision, info.crc, info.markers_tx, info.markers_rx, info.ird, info.ord, info.rtr
        )
    });
    if !cfg.settle.is_zero() {
        std::thread::sleep(cfg.settle);
    }
    let mut client = Client::new(cfg.size, cfg.count, cfg.validate, cfg.verbose);
    let result = ping_loop(&conn, &cq, &mut client, cfg, log);
    if cfg.verbose {
        super::conn::print_stats(&conn.qp, log);
    }
    conn.qp.disconnect();
    log.err("client DISCONNECT EVENT...");
    drop(conn);
    linger(device);
    result.map(|()| ClientReport {
        pings: client.completed(),
    })
}

fn conn_cq_depth() -> usize {
    super::conn::SQ_DEPTH * 2
}

fn ping_loop(
    conn: &Conn,
    cq: &CompletionQueue,
    client: &mut Client,
    cfg: &ClientConfig,
    log: &Log,
) -> Result<(), RpingError> {
    let start = conn
        .start
        .as_ref()
        .ok_or_else(|| RpingError::Setup("client without a start buffer".into()))?;
    let mut step = client.next_ping()?;
    loop {
        match step {
            ClientStep::Ping { data } => {
                start.write(0, &data)?;
                let info = conn.info_of(start);
                log.debug(|| {
                    format!(
                        "RDMA addr {:x} rkey {:x} len {}",
                        info.addr, info.rkey, info.size
                    )
                });
                conn.send_info(info)?;
            }
            ClientStep::AdvertiseSink => {
                let info = conn.info_of(&conn.rdma);
                log.debug(|| {
                    format!(
                        "RDMA addr {:x} rkey {:x} len {}",
                        info.addr, info.rkey, info.size
                    )
                });
                conn.send_info(info)?;
            }
            ClientStep::CheckEcho => {
                let (src, sink) = (start.to_vec(), conn.rdma.to_vec());
                if let Some(line) = client.finish_ping(&src, &sink)? {
                    log.out(&line);
                }
                step = client.next_ping()?;
                continue;
            }
            ClientStep::Done => {
                debug_assert!(client.is_finished());
                return Ok(());
            }
        }
        let byte_len = wait_recv(conn, cq, client.phase(), cfg.timeout, log)?;
        conn.post_recv()?;
        step = client.on_recv(byte_len)?;
    }
}

/// Waits for the server's next message, handling send completions,
/// flushes and connection events meanwhile; returns its length.
fn wait_recv(
    conn: &Conn,
    cq: &CompletionQueue,
    phase: Phase,
    timeout: Option<Duration>,
    log: &Log,
) -> Result<u32, RpingError> {
    let started = Instant::now();
    loop {
        if let Some(wc) = cq.wait_one(WAIT_SLICE)? {
            match (wc.status, wc.opcode) {
                (WcStatus::Success, WcOpcode::Recv) => {
                    log.debug(|| "recv completion".into());
                    return Ok(wc.byte_len);
                }
                (WcStatus::Success, WcOpcode::Send) => {
                    log.debug(|| "send completion".into());
                }
                // rping ignores flushed requests; the connection event
                // that caused them says what happened.
                (WcStatus::WrFlushErr, _) => {}
                (WcStatus::Success, _) => {
                    return Err(RpingError::Unexpected {
                        what: "RDMA completion on the client",
                        phase,
                    })
                }
                (status, opcode) => return Err(RpingError::Completion { opcode, status }),
            }
            continue;
        }
        if let Some(ev) = conn.qp.try_event() {
            match ev {
                CmEvent::Disconnected { reason } => {
                    log.debug(|| format!("cma_event DISCONNECTED: {}", describe(&reason)));
                    return Err(RpingError::Disconnected { reason, phase });
                }
                other => log.debug(|| format!("cma_event {other:?}")),
            }
        }
        if let Some(t) = timeout {
            let waited = started.elapsed();
            if waited >= t {
                return Err(RpingError::Timeout {
                    secs: waited.as_secs_f64(),
                    phase,
                });
            }
        }
    }
}
