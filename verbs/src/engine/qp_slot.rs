//! One queue pair inside the engine: its phase, pre-connection receives,
//! completion routing and connection events.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ddp::memory::PdId;
use ddp::untagged::SharedBuffers;
use rdmap::connection::{Connection, ConnectionConfig, Event, State};
use rdmap::work_request::{RecvWr, SendWr};
use rdmap::{WcOpcode, WcStatus};

use super::completions::CqShared;
use super::registry::{RegionCache, Registry};
use super::startup::{Startup, StartupOutcome};
use crate::qp_stats::{MpaPhase, QpStats};
use crate::trace::Span;
use crate::transport::{StreamId, StreamState, Transport};
use crate::types::{
    CmEvent, ConnectError, ConnectionInfo, DisconnectReason, QpLimits, QpState, VerbsError,
    WorkCompletion,
};

pub(super) enum Phase {
    /// Not connected; receives collect in `early_recvs`.
    Idle,
    /// MPA start-up on `stream`.
    Starting {
        stream: StreamId,
        startup: Box<Startup>,
    },
    /// Carrying RDMA traffic.
    Connected {
        stream: StreamId,
        conn: Box<Connection>,
        peer_closed: bool,
    },
    /// Over: the connection (if any) is kept so late posts flush at once.
    Closed {
        stream: Option<StreamId>,
        conn: Option<Box<Connection>>,
    },
}

pub(super) struct QpSlot {
    num: u32,
    pd: PdId,
    send_cq: Arc<CqShared>,
    recv_cq: Arc<CqShared>,
    init: QpLimits,
    /// The shared receive queue its queue 0 draws on, if any.
    pub(super) srq: Option<u32>,
    pub(super) phase: Phase,
    early_recvs: VecDeque<RecvWr>,
    pub(super) events: VecDeque<CmEvent>,
    /// The stream ended in a reset, not a FIN: the close is reported so.
    reset: bool,
    /// Initiator: hold the first FPDU this long after start-up.
    first_fpdu_delay: Duration,
    /// Responder: give up on the initiator's first FPDU this long after
    /// start-up.
    first_fpdu_timeout: Option<Duration>,
    responder_sends_first: bool,
    /// Both sides' applications agreed to RFC 7306.
    rfc7306: bool,
    /// Nothing is sent before this instant (see `first_fpdu_delay`).
    hold_until: Option<Instant>,
    /// Regions placed into and sent from last, kept between calls so a
    /// small message does not cost a registry lookup each way.
    rx_regions: RegionCache,
    tx_regions: RegionCache,
    /// See [`Staged`].
    staged: Staged,
    /// The queue pair's span, and its connection's once it has one.
    span: Span,
    conn_span: Option<Span>,
    /// The phase last reported in a trace event.
    #[cfg(feature = "tracing")]
    traced_phase: MpaPhase,
}

impl QpSlot {
    pub(super) fn new(
        num: u32,
        pd: PdId,
        send_cq: Arc<CqShared>,
        recv_cq: Arc<CqShared>,
        init: QpLimits,
    ) -> Self {
        QpSlot {
            num,
            pd,
            send_cq,
            recv_cq,
            init,
            srq: None,
            phase: Phase::Idle,
            early_recvs: VecDeque::new(),
            events: VecDeque::new(),
            reset: false,
            first_fpdu_delay: Duration::ZERO,
            first_fpdu_timeout: None,
            responder_sends_first: false,
            rfc7306: false,
            hold_until: None,
            rx_regions: RegionCache::default(),
            tx_regions: RegionCache::default(),
            staged: Staged::default(),
            span: trace_span!("qp", num),
            conn_span: None,
            #[cfg(feature = "tracing")]
            traced_phase: MpaPhase::Idle,
        }
    }

    /// The queue pair's span, parent of its connection's.
    #[cfg(feature = "tracing")]
    pub(super) fn span(&self) -> &Span {
        &self.span
    }

    /// From now on the queue pair's work is traced in `span`.
    pub(super) fn set_conn_span(&mut self, span: Span) {
        self.conn_span = Some(span);
    }

    /// Traces a change of phase since the last one traced.
    #[inline(always)]
    fn note_phase(&mut self, transport: &dyn Transport) {
        #[cfg(feature = "tracing")]
        {
            let now = self.mpa_phase(Some(transport));
            if now != self.traced_phase {
                trace_event!(
                    tracing::Level::DEBUG,
                    qp = self.num,
                    from = %self.traced_phase,
                    to = %now,
                    state = ?self.state(),
                    "queue pair phase"
                );
                self.traced_phase = now;
            }
        }
        #[cfg(not(feature = "tracing"))]
        let _ = transport;
    }

    pub(super) fn state(&self) -> QpState {
        match &self.phase {
            Phase::Idle => QpState::Init,
            Phase::Starting { .. } => QpState::Connecting,
            Phase::Connected { conn, .. }
                if matches!(conn.state(), State::Established | State::AwaitingFirstFpdu) =>
            {
                QpState::Rts
            }
            Phase::Connected { .. } | Phase::Closed { .. } => QpState::Error,
        }
    }

    pub(super) fn stats(&self, transport: Option<&dyn Transport>) -> QpStats {
        let stream = match &self.phase {
            Phase::Starting { stream, .. } | Phase::Connected { stream, .. } => Some(*stream),
            Phase::Closed { stream, .. } => *stream,
            Phase::Idle => None,
        };
        let conn = match &self.phase {
            Phase::Connected { conn, .. } => Some(conn),
            Phase::Closed { conn, .. } => conn.as_ref(),
            _ => None,
        };
        QpStats {
            state: self.state(),
            phase: self.mpa_phase(transport),
            rdma: conn.map(|c| c.stats()).unwrap_or_default(),
            tcp: stream
                .zip(transport)
                .and_then(|(s, t)| t.tcp_stream_stats(s)),
        }
    }

    fn mpa_phase(&self, transport: Option<&dyn Transport>) -> MpaPhase {
        match &self.phase {
            Phase::Idle => MpaPhase::Idle,
            Phase::Starting { stream, .. }
                if transport.is_some_and(|t| t.state(*stream) == StreamState::Connecting) =>
            {
                MpaPhase::TcpConnecting
            }
            Phase::Starting { startup, .. } if startup.is_initiator() => MpaPhase::AwaitingReply,
            Phase::Starting { .. } => MpaPhase::SendingReply,
            Phase::Connected { conn, .. } => match conn.state() {
                State::AwaitingFirstFpdu => MpaPhase::AwaitingFirstFpdu,
                State::Established => MpaPhase::Established,
                State::Error | State::Closed => MpaPhase::Closed,
            },
            Phase::Closed { .. } => MpaPhase::Closed,
        }
    }

    pub(super) fn deadline(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Starting { startup, .. } => startup.poll_timeout(),
            Phase::Connected { conn, .. } => match (conn.poll_timeout(), self.hold_until) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            _ => self.hold_until,
        }
    }

    pub(super) fn set_first_fpdu_timeout(&mut self, timeout: Duration) {
        self.first_fpdu_timeout = Some(timeout);
    }

    pub(super) fn set_responder_sends_first(&mut self, on: bool) {
        self.responder_sends_first = on;
    }

    pub(super) fn set_rfc7306(&mut self, on: bool) {
        self.rfc7306 = on;
    }

    pub(super) fn set_first_fpdu_delay(&mut self, delay: Duration) {
        self.first_fpdu_delay = delay;
    }

    /// Whether sending is held back at `now`; clears an expired hold.
    fn held(&mut self, now: Instant) -> bool {
        match self.hold_until {
            Some(t) if now < t => true,
            Some(_) => {
                self.hold_until = None;
                false
            }
            None => false,
        }
    }

    /// Posts a send work request. `Ok(true)` if a completion was produced
    /// at once (a flush on a closed queue pair).
    pub(super) fn post_send(&mut self, wr: SendWr) -> Result<bool, VerbsError> {
        self.post_send_list(std::iter::once(wr), &mut 0)
    }

    /// Posts `wrs` in order, counting each posted in `posted`, and stops at
    /// the first one refused (neither it nor those after it are posted).
    /// The completions the posts produced are routed once, after the last.
    /// `Ok(true)` as for [`Self::post_send`].
    pub(super) fn post_send_list(
        &mut self,
        wrs: impl IntoIterator<Item = SendWr>,
        posted: &mut usize,
    ) -> Result<bool, VerbsError> {
        self.send_cq.note_send_posted();
        match &mut self.phase {
            Phase::Connected { conn, .. }
            | Phase::Closed {
                conn: Some(conn), ..
            } => {
                let refused = post_each(wrs, posted, |wr| conn.post_send(wr));
                let routed = self.route_events();
                refused.map_or(Ok(routed), Err)
            }
            Phase::Closed { conn: None, .. } => {
                let num = self.num;
                flush_each(wrs, posted, &self.send_cq, |wr| {
                    flushed(wr.wr_id, opcode_of(wr), num)
                });
                Ok(true)
            }
            Phase::Idle | Phase::Starting { .. } => Err(VerbsError::NotConnected),
        }
    }

    /// Posts a receive work request; `Ok(true)` as for [`Self::post_send`].
    pub(super) fn post_recv(&mut self, wr: RecvWr) -> Result<bool, VerbsError> {
        self.post_recv_list(std::iter::once(wr), &mut 0)
    }

    /// Receive work requests as [`Self::post_send_list`] posts send ones.
    pub(super) fn post_recv_list(
        &mut self,
        wrs: impl IntoIterator<Item = RecvWr>,
        posted: &mut usize,
    ) -> Result<bool, VerbsError> {
        match &mut self.phase {
            Phase::Connected { conn, .. }
            | Phase::Closed {
                conn: Some(conn), ..
            } => {
                let refused = post_each(wrs, posted, |wr| conn.post_recv(wr));
                let routed = self.route_events();
                refused.map_or(Ok(routed), Err)
            }
            Phase::Closed { conn: None, .. } => {
                let num = self.num;
                flush_each(wrs, posted, &self.recv_cq, |wr| {
                    flushed(wr.wr_id, WcOpcode::Recv, num)
                });
                Ok(true)
            }
            Phase::Idle | Phase::Starting { .. } => {
                for wr in wrs {
                    if self.early_recvs.len() >= self.init.rq_depth {
                        return Err(VerbsError::Post(
                            rdmap::work_request::PostError::QueueFull {
                                queue: "receive",
                                depth: self.init.rq_depth,
                            },
                        ));
                    }
                    if wr.sgl.len() > self.init.max_recv_sge {
                        return Err(VerbsError::Post(
                            rdmap::work_request::PostError::TooManySges {
                                n: wr.sgl.len(),
                                max: self.init.max_recv_sge,
                            },
                        ));
                    }
                    self.early_recvs.push_back(wr);
                    *posted += 1;
                }
                Ok(false)
            }
        }
    }

    /// Queues FPDUs into the transport. True if any byte was queued.
    pub(super) fn transmit(
        &mut self,
        transport: &mut dyn Transport,
        registry: &Registry,
        now: &mut dyn FnMut() -> Instant,
    ) -> bool {
        if self.hold_until.is_some() && self.held(now()) {
            return false;
        }
        let cache = &mut self.tx_regions;
        match &mut self.phase {
            Phase::Connected { stream, conn, .. } => {
                send_fpdus(transport, *stream, conn, registry, cache, 1)
            }
            Phase::Closed {
                stream: Some(stream),
                conn: Some(conn),
            } if conn.wants_write() => send_fpdus(transport, *stream, conn, registry, cache, 1),
            _ => false,
        }
    }

    /// Drives this queue pair. Returns (anything happened, a waiter may care).
    /// `srq`: the buffers of its shared receive queue, if it has one.
    pub(super) fn drive(
        &mut self,
        transport: &mut dyn Transport,
        registry: &Registry,
        srq: Option<&mut SharedBuffers>,
        now: Instant,
    ) -> (bool, bool) {
        let span = self.conn_span.as_ref().unwrap_or(&self.span).clone();
        let _entered = span.enter();
        let (busy, changed) = self.drive_in_span(transport, registry, srq, now);
        self.note_phase(transport);
        (busy, changed)
    }

    fn drive_in_span(
        &mut self,
        transport: &mut dyn Transport,
        registry: &Registry,
        mut srq: Option<&mut SharedBuffers>,
        now: Instant,
    ) -> (bool, bool) {
        let mut busy = false;
        let mut changed = false;
        if let Phase::Starting { .. } = self.phase {
            let (b, c) = self.drive_startup(transport, now);
            busy |= b;
            changed |= c;
        }
        let held = self.held(now);
        if let Phase::Connected {
            stream,
            conn,
            peer_closed,
        } = &mut self.phase
        {
            let stream = *stream;
            let got = registry.with_cached_view(&mut self.rx_regions, |view| {
                transport
                    .recv_with(stream, &mut |buf| {
                        conn.handle_bytes_shared(view, srq.as_deref_mut(), buf)
                    })
                    .unwrap_or(0)
            });
            busy |= got > 0;
            // After reading: a first FPDU that came in time counts.
            conn.handle_timeout(now);
            if !held {
                busy |= send_fpdus(
                    transport,
                    stream,
                    conn,
                    registry,
                    &mut self.tx_regions,
                    MAX_SEND_ROUNDS,
                );
            }
            let st = transport.state(stream);
            if !*peer_closed
                && matches!(
                    st,
                    StreamState::PeerClosed | StreamState::Closed | StreamState::Reset
                )
            {
                // Bytes received before the FIN have been handed over above.
                if transport.recv_queued(stream) == 0 {
                    *peer_closed = true;
                    self.reset = st == StreamState::Reset;
                    conn.handle_peer_close();
                    busy = true;
                }
            }
            let ended = matches!(conn.state(), State::Error | State::Closed) && !conn.wants_write();
            changed |= self.route_events();
            if ended {
                if let Phase::Connected { stream, conn, .. } =
                    std::mem::replace(&mut self.phase, Phase::Idle)
                {
                    transport.close(stream);
                    self.phase = Phase::Closed {
                        stream: Some(stream),
                        conn: Some(conn),
                    };
                    changed = true;
                }
            }
        } else if let Phase::Closed {
            stream: Some(stream),
            conn,
        } = &mut self.phase
        {
            if let Some(conn) = conn {
                if conn.wants_write() {
                    busy |= send_fpdus(
                        transport,
                        *stream,
                        conn,
                        registry,
                        &mut self.tx_regions,
                        MAX_SEND_ROUNDS,
                    );
                }
            }
            let _ = transport.recv_with(*stream, &mut |buf| buf.len());
            if transport.state(*stream).is_terminal() {
                let s = *stream;
                transport.abort(s);
                if let Phase::Closed { stream, .. } = &mut self.phase {
                    *stream = None;
                }
            }
        }
        (busy, changed)
    }

    fn drive_startup(&mut self, transport: &mut dyn Transport, now: Instant) -> (bool, bool) {
        let Phase::Starting { stream, startup } = &mut self.phase else {
            return (false, false);
        };
        let stream = *stream;
        let initiator = startup.is_initiator();
        let st = transport.state(stream);
        if st == StreamState::Connecting {
            return (false, false);
        }
        let mut busy = false;
        if st.is_terminal() {
            self.fail(transport, ConnectError::Unreachable);
            return (true, true);
        }
        startup.tcp_connected(now);
        startup.handle_timeout(now);
        busy |= startup.transmit(transport, stream);
        // Only start-up bytes are consumed here; FPDUs that follow the MPA
        // frame stay queued for the connection.
        busy |= startup.receive(transport, stream, now);
        if st == StreamState::PeerClosed
            && startup.wants_input()
            && transport.recv_queued(stream) == 0
        {
            startup.handle_peer_closed();
        }
        match startup.outcome() {
            None => (busy, false),
            Some(StartupOutcome::Established(negotiated)) => {
                if startup.has_transmit() {
                    // The Reply is not fully queued yet: finish it first,
                    // FPDUs must not overtake it.
                    busy |= startup.transmit(transport, stream);
                    if startup.has_transmit() {
                        return (busy, false);
                    }
                }
                let info = ConnectionInfo {
                    peer_addr: transport.peer_addr(stream),
                    local_addr: transport.local_addr(stream),
                    private_data: negotiated.peer_private_data.clone(),
                    revision: negotiated.rev,
                    crc: negotiated.crc,
                    markers_tx: negotiated.markers_tx,
                    markers_rx: negotiated.markers_rx,
                    ird: negotiated.ird,
                    ord: negotiated.ord,
                    rtr: negotiated.rtr,
                };
                // Segments carry whole FPDUs (RFC 5044 appendix A.1); with
                // markers, one each, as a receiver (Wireshark's dissector)
                // that finds the FPDU by the segment reads them.
                transport.set_record_packing(stream, !negotiated.markers_tx);
                let mut cfg = ConnectionConfig::new(*negotiated, self.pd, transport.mss(stream));
                cfg.sq_depth = self.init.sq_depth;
                cfg.rq_depth = self.init.rq_depth;
                cfg.max_send_sge = self.init.max_send_sge;
                cfg.max_inline_data = self.init.max_inline_data;
                cfg.max_recv_sge = self.init.max_recv_sge;
                cfg.first_fpdu_deadline = self.first_fpdu_timeout.map(|t| now + t);
                cfg.responder_sends_first = self.responder_sends_first;
                cfg.rfc7306 = self.rfc7306;
                cfg.shared_receive = self.srq.is_some();
                let mut conn = Box::new(Connection::new(cfg));
                for wr in self.early_recvs.drain(..) {
                    if let Err(e) = conn.post_recv(wr.clone()) {
                        // Checked at posting against the same limits; flush defensively.
                        let _ = e;
                        self.recv_cq
                            .push(flushed(wr.wr_id, WcOpcode::Recv, self.num));
                    }
                }
                if !self.first_fpdu_delay.is_zero() && initiator {
                    self.hold_until = Some(now + self.first_fpdu_delay);
                }
                trace_event!(
                    tracing::Level::INFO,
                    qp = self.num,
                    peer = ?info.peer_addr,
                    revision = info.revision,
                    crc = info.crc,
                    markers_tx = info.markers_tx,
                    markers_rx = info.markers_rx,
                    ird = info.ird,
                    ord = info.ord,
                    rtr = ?info.rtr,
                    "connection established"
                );
                self.phase = Phase::Connected {
                    stream,
                    conn,
                    peer_closed: false,
                };
                self.events.push_back(CmEvent::Established(info));
                self.route_events();
                (true, true)
            }
            Some(StartupOutcome::Rejected(private_data)) => {
                self.events.push_back(CmEvent::Rejected { private_data });
                self.close_without_connection(transport);
                (true, true)
            }
            Some(StartupOutcome::Failed(why)) => {
                startup.transmit(transport, stream);
                if startup.terminates() {
                    // A TERMINATE (RFC 6581) is on its way: close after it
                    // instead of resetting.
                    self.events.push_back(CmEvent::ConnectFailed(why));
                    transport.close(stream);
                    self.phase = Phase::Closed {
                        stream: Some(stream),
                        conn: None,
                    };
                    self.flush_early_recvs();
                } else {
                    self.fail(transport, why);
                }
                (true, true)
            }
        }
    }

    fn flush_early_recvs(&mut self) {
        for wr in self.early_recvs.drain(..) {
            self.recv_cq
                .push(flushed(wr.wr_id, WcOpcode::Recv, self.num));
        }
    }

    fn fail(&mut self, transport: &mut dyn Transport, why: ConnectError) {
        trace_event!(tracing::Level::INFO, qp = self.num, why = %why, "connect failed");
        self.events.push_back(CmEvent::ConnectFailed(why));
        self.close_without_connection(transport);
    }

    fn close_without_connection(&mut self, transport: &mut dyn Transport) {
        if let Phase::Starting { stream, .. } = self.phase {
            transport.abort(stream);
        }
        self.phase = Phase::Closed {
            stream: None,
            conn: None,
        };
        for wr in self.early_recvs.drain(..) {
            self.recv_cq
                .push(flushed(wr.wr_id, WcOpcode::Recv, self.num));
        }
    }

    pub(super) fn disconnect(&mut self, transport: &mut dyn Transport, _now: Instant) {
        if !matches!(self.phase, Phase::Closed { .. }) {
            trace_event!(tracing::Level::INFO, qp = self.num, "disconnect");
        }
        self.disconnect_phase(transport);
        self.note_phase(transport);
    }

    fn disconnect_phase(&mut self, transport: &mut dyn Transport) {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Connected {
                stream, mut conn, ..
            } => {
                conn.close();
                self.phase = Phase::Closed {
                    stream: Some(stream),
                    conn: Some(conn),
                };
                self.route_events();
                self.events.push_back(CmEvent::Disconnected {
                    reason: DisconnectReason::Local,
                });
                transport.close(stream);
            }
            Phase::Starting { stream, .. } => {
                transport.abort(stream);
                self.phase = Phase::Closed {
                    stream: None,
                    conn: None,
                };
                self.events.push_back(CmEvent::Disconnected {
                    reason: DisconnectReason::Local,
                });
                for wr in self.early_recvs.drain(..) {
                    self.recv_cq
                        .push(flushed(wr.wr_id, WcOpcode::Recv, self.num));
                }
            }
            Phase::Idle => {
                self.phase = Phase::Closed {
                    stream: None,
                    conn: None,
                };
                for wr in self.early_recvs.drain(..) {
                    self.recv_cq
                        .push(flushed(wr.wr_id, WcOpcode::Recv, self.num));
                }
            }
            other @ Phase::Closed { .. } => self.phase = other,
        }
    }

    /// Lets go of the transport stream for good.
    pub(super) fn release(&mut self, transport: &mut dyn Transport) {
        if let Phase::Closed {
            stream: Some(stream),
            ..
        } = self.phase
        {
            transport.close(stream);
        }
    }

    /// Moves the connection's events to the completion queues and the
    /// event queue. True if any moved.
    fn route_events(&mut self) -> bool {
        let conn = match &mut self.phase {
            Phase::Connected { conn, .. }
            | Phase::Closed {
                conn: Some(conn), ..
            } => conn,
            _ => return false,
        };
        let mut any = false;
        // Completions go to their queues together once the connection has
        // no more to give (one queue lock per queue and call); order within
        // a queue is kept, and one queue for both directions takes them in
        // the connection's order.
        let shared_cq = Arc::ptr_eq(&self.send_cq, &self.recv_cq);
        let staged = &mut self.staged;
        while let Some(ev) = conn.poll_event() {
            any = true;
            match ev {
                Event::Completion(wc) => {
                    let wc = WorkCompletion::from_rdmap(wc, self.num);
                    if wc.opcode.is_recv() && !shared_cq {
                        staged.recv.push(wc);
                    } else {
                        staged.send.push(wc);
                    }
                }
                Event::Terminated { by_peer, cause, .. } => {
                    trace_event!(
                        tracing::Level::WARN,
                        qp = self.num,
                        by_peer,
                        layer = ?cause.layer,
                        etype = cause.etype,
                        code = cause.code,
                        "{}",
                        if by_peer { "TERMINATE received" } else { "TERMINATE sent" }
                    );
                    self.events.push_back(CmEvent::Disconnected {
                        reason: DisconnectReason::Terminated {
                            by_peer,
                            layer: cause.layer as u8,
                            etype: cause.etype,
                            code: cause.code,
                        },
                    });
                }
                Event::FirstFpduTimeout => {
                    trace_event!(
                        tracing::Level::INFO,
                        qp = self.num,
                        "no first FPDU from the initiator in time"
                    );
                    self.events.push_back(CmEvent::Disconnected {
                        reason: DisconnectReason::FirstFpduTimeout,
                    });
                }
                Event::PeerClosed => {
                    trace_event!(
                        tracing::Level::INFO,
                        qp = self.num,
                        reset = self.reset,
                        "peer closed the stream"
                    );
                    let reason = if self.reset {
                        DisconnectReason::Reset
                    } else {
                        DisconnectReason::PeerClosed
                    };
                    self.events.push_back(CmEvent::Disconnected { reason });
                }
            }
        }
        if !staged.send.is_empty() {
            self.send_cq.push_all(&staged.send);
            staged.send.clear();
        }
        if !staged.recv.is_empty() {
            self.recv_cq.push_all(&staged.recv);
            staged.recv.clear();
        }
        any
    }
}

/// Completions [`QpSlot::route_events`] collects before handing them to
/// their queues; kept between calls so staging allocates nothing.
#[derive(Default)]
struct Staged {
    /// For the send completion queue (and receives too when one queue
    /// takes both).
    send: Vec<WorkCompletion>,
    /// For a receive completion queue of its own.
    recv: Vec<WorkCompletion>,
}

/// Rounds of `send_with` and [`Transport::make_room`] one transmit of a
/// progress turn makes at most: the transport bounds what it writes (kernel
/// TCP: 256 KiB per stream per poll), this bounds the calls whatever it does.
/// A post's transmit makes one round: what does not fit waits for the turn.
const MAX_SEND_ROUNDS: usize = 64;

fn send_fpdus(
    transport: &mut dyn Transport,
    stream: StreamId,
    conn: &mut Connection,
    registry: &Registry,
    cache: &mut RegionCache,
    rounds: usize,
) -> bool {
    if !conn.wants_write() {
        return false;
    }
    let sent = registry.with_cached_view(cache, |view| {
        let mut sent = false;
        for _ in 0..rounds {
            sent |= transport
                .send_records_with(stream, &mut |buf, end| {
                    conn.poll_transmit_records(&*view, buf, end)
                })
                .unwrap_or(0)
                > 0;
            // Still due but out of room: the transport may free some at
            // once (kernel TCP writes its staging out) rather than leave the
            // rest to the next turn.
            if !conn.wants_write() || !transport.make_room(stream) {
                break;
            }
        }
        sent
    });
    // A local invalidate at the head of the send queue: carried out here,
    // before anything after it is sent.
    let mut invalidated = false;
    while let Some(stag) = conn.take_local_invalidate() {
        registry.invalidate(stag);
        invalidated = true;
    }
    sent || invalidated
}

/// Posts `wrs` in order through `post`, counting each posted in `posted`;
/// stops at the first one refused and returns its error.
fn post_each<W>(
    wrs: impl IntoIterator<Item = W>,
    posted: &mut usize,
    mut post: impl FnMut(W) -> Result<(), rdmap::work_request::PostError>,
) -> Option<VerbsError> {
    for wr in wrs {
        if let Err(e) = post(wr) {
            return Some(VerbsError::Post(e));
        }
        *posted += 1;
    }
    None
}

/// Completes each of `wrs` at once with a flush status (the queue pair
/// has no connection left to carry them), counting each in `posted`.
fn flush_each<W>(
    wrs: impl IntoIterator<Item = W>,
    posted: &mut usize,
    cq: &CqShared,
    flushed: impl Fn(&W) -> WorkCompletion,
) {
    for wr in wrs {
        cq.push(flushed(&wr));
        *posted += 1;
    }
}

fn opcode_of(wr: &SendWr) -> WcOpcode {
    wr.op.wc_opcode()
}

fn flushed(wr_id: u64, opcode: WcOpcode, qp_num: u32) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        status: WcStatus::WrFlushErr,
        opcode,
        byte_len: 0,
        qp_num,
        invalidated: None,
        solicited: false,
        imm_data: None,
    }
}
