//! MPA start-up as the engine drives it: the verbs-level options turned
//! into `mpa` configuration, and the start-up events folded into the two
//! things the engine asks about — a connect request to offer, an outcome.

use std::time::Instant;

use mpa::{InitiatorConfig, Negotiated, ReplyParams, ResponderConfig, StartupEvent};
use rdmap::connection::startup_terminate;
use rdmap::{Layer, TermCode};

use crate::transport::{StreamId, Transport};
use crate::types::{
    AcceptParams, ConnectError, ConnectParams, ListenOptions, MpaSettingsError, VerbsError,
};

/// The RTR kinds a listener grants: the ones named, or, when none are,
/// any the initiator offers (WRITE, else READ, else SEND), as every siw
/// build does. A listener that refused peer-to-peer by default would turn
/// away Chelsio-style and peer-to-peer siw clients.
fn granted_rtrs(named: mpa::RtrSet) -> mpa::RtrSet {
    if named.is_empty() {
        mpa::RtrSet::ALL
    } else {
        named
    }
}

/// A connect request as the listener offers it.
#[derive(Debug, Clone)]
pub(crate) struct RequestInfo {
    pub(crate) private_data: Vec<u8>,
    pub(crate) revision: u8,
    pub(crate) crc: bool,
    pub(crate) markers: bool,
    pub(crate) ird: Option<u16>,
    pub(crate) ord: Option<u16>,
    pub(crate) p2p: Vec<mpa::Rtr>,
}

#[derive(Debug)]
pub(crate) enum StartupOutcome {
    Established(Box<Negotiated>),
    Rejected(Vec<u8>),
    Failed(ConnectError),
}

#[derive(Debug)]
pub(crate) struct Startup {
    inner: mpa::Startup,
    request: Option<RequestInfo>,
    outcome: Option<StartupOutcome>,
    /// The TERMINATE FPDU a failure with an RFC 6581 code sends after
    /// whatever start-up bytes are still queued.
    terminate: Vec<u8>,
    /// Start-up failed with such a TERMINATE: the stream closes after it
    /// rather than being reset.
    terminates: bool,
    /// Whether the TCP connection is up. An Initiator is built at connect
    /// time; its Reply timer runs from the TCP connection on (see
    /// [`Startup::tcp_connected`]).
    tcp_up: bool,
}

impl Startup {
    pub(crate) fn initiator(p: &ConnectParams, now: Instant) -> Result<Self, VerbsError> {
        let cfg = InitiatorConfig {
            rev: p.mpa.revision,
            crc: p.mpa.crc,
            markers_rx: p.mpa.markers,
            markers_tx: true,
            ird: p.ird,
            ord: p.ord,
            peer_to_peer: (!p.mpa.p2p.is_empty()).then_some(p.mpa.p2p),
            private_data: p.private_data.clone(),
            reply_timeout: p.mpa.timeout,
            accept_rev1_reply: p.mpa.revision == 1,
        };
        // The connection is still being made.
        Self::new(mpa::Startup::initiator(cfg, now), false)
    }

    pub(crate) fn responder(opts: &ListenOptions, now: Instant) -> Result<Self, VerbsError> {
        let cfg = ResponderConfig {
            max_rev: opts.mpa.revision,
            crc: opts.mpa.crc,
            markers_rx: opts.mpa.markers,
            markers_tx: true,
            rtr: granted_rtrs(opts.mpa.p2p),
            request_timeout: opts.mpa.timeout,
        };
        // An accepted connection is up.
        Self::new(mpa::Startup::responder(cfg, now), true)
    }

    /// A start-up that has exchanged nothing yet; refused settings are the
    /// caller's error.
    fn new(
        inner: Result<mpa::Startup, mpa::ConfigError>,
        tcp_up: bool,
    ) -> Result<Self, VerbsError> {
        Ok(Startup {
            inner: inner.map_err(|e| VerbsError::from(MpaSettingsError::new(e)))?,
            request: None,
            outcome: None,
            terminate: Vec::new(),
            terminates: false,
            tcp_up,
        })
    }

    pub(crate) fn is_initiator(&self) -> bool {
        self.inner.role() == mpa::Role::Initiator
    }

    /// No MPA deadline while TCP connects: the transport bounds the
    /// handshake (its user timeout), however many SYNs a lossy link eats.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout().filter(|_| self.tcp_up)
    }

    /// TCP connected at `now`: the MPA timer starts over from here.
    pub(crate) fn tcp_connected(&mut self, now: Instant) {
        if !self.tcp_up {
            trace_event!(
                tracing::Level::DEBUG,
                "MPA initiator: TCP connected, sending the Request"
            );
            self.tcp_up = true;
            self.inner.restart_timer(now);
        }
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
        self.collect();
    }

    pub(crate) fn handle_peer_closed(&mut self) {
        trace_event!(
            tracing::Level::DEBUG,
            "MPA: the peer closed during start-up"
        );
        self.inner.handle_peer_closed();
        self.collect();
    }

    /// Whether start-up still reads from the stream (not after the frame
    /// arrived: what follows it belongs to the connection).
    pub(crate) fn wants_input(&self) -> bool {
        !self.inner.is_finished() && !self.inner.is_awaiting_decision()
    }

    pub(crate) fn has_transmit(&self) -> bool {
        self.inner.has_transmit() || !self.terminate.is_empty()
    }

    /// Queues pending start-up bytes (then a failure's TERMINATE) into the
    /// stream. True if any went.
    pub(crate) fn transmit(&mut self, transport: &mut dyn Transport, stream: StreamId) -> bool {
        let mut sent = 0;
        if self.inner.has_transmit() {
            let inner = &mut self.inner;
            sent += transport
                .send_with(stream, &mut |buf| inner.transmit_into(buf))
                .unwrap_or(0);
            if !self.inner.has_transmit() {
                trace_event!(
                    tracing::Level::DEBUG,
                    role = ?self.inner.role(),
                    "MPA: {} queued whole",
                    if self.is_initiator() { "Request" } else { "Reply" }
                );
            }
        }
        if !self.inner.has_transmit() && !self.terminate.is_empty() {
            let term = &self.terminate;
            let mut taken = 0;
            let n = transport
                .send_with(stream, &mut |buf| {
                    let rest = term.get(taken..).unwrap_or_default();
                    let n = rest.len().min(buf.len());
                    buf[..n].copy_from_slice(&rest[..n]);
                    taken += n;
                    n
                })
                .unwrap_or(0);
            self.terminate.drain(..n.min(self.terminate.len()));
            if n > 0 && self.terminate.is_empty() {
                trace_event!(tracing::Level::DEBUG, "MPA: start-up TERMINATE queued");
            }
            sent += n;
        }
        sent > 0
    }

    /// Whether any of the peer's frame has arrived.
    pub(crate) fn has_input(&self) -> bool {
        self.inner.has_input()
    }

    /// Whether start-up failed with a TERMINATE to send (then close).
    pub(crate) fn terminates(&self) -> bool {
        self.terminates
    }

    /// Reads start-up bytes (and no more) from the stream. True if any came.
    pub(crate) fn receive(
        &mut self,
        transport: &mut dyn Transport,
        stream: StreamId,
        now: Instant,
    ) -> bool {
        if !self.wants_input() {
            return false;
        }
        let inner = &mut self.inner;
        let got = transport
            .recv_with(stream, &mut |buf| inner.handle_bytes(buf, now).unwrap_or(0))
            .unwrap_or(0);
        self.collect();
        got > 0
    }

    pub(crate) fn request(&mut self) -> Option<RequestInfo> {
        self.request.take()
    }

    pub(crate) fn outcome(&mut self) -> Option<StartupOutcome> {
        self.outcome.take()
    }

    pub(crate) fn accept(&mut self, p: &AcceptParams, now: Instant) -> Result<(), VerbsError> {
        let params = ReplyParams {
            ird: p.ird,
            ord: p.ord,
            private_data: p.private_data.clone(),
        };
        self.inner
            .accept(params, now)
            .map_err(|e| VerbsError::from(MpaSettingsError::new(e)))?;
        trace_event!(
            tracing::Level::DEBUG,
            ird = p.ird,
            ord = p.ord,
            "MPA responder: Request accepted"
        );
        self.collect();
        Ok(())
    }

    pub(crate) fn reject(&mut self, private_data: &[u8], now: Instant) -> Result<(), VerbsError> {
        self.inner
            .reject(private_data, now)
            .map_err(|e| VerbsError::from(MpaSettingsError::new(e)))?;
        trace_event!(tracing::Level::DEBUG, "MPA responder: Request rejected");
        self.collect();
        Ok(())
    }

    fn collect(&mut self) {
        while let Some(ev) = self.inner.poll_event() {
            match ev {
                StartupEvent::RequestReceived {
                    rev,
                    crc,
                    markers,
                    ird_ord,
                    rtr: _,
                    private_data,
                } => {
                    trace_event!(
                        tracing::Level::DEBUG,
                        rev,
                        crc,
                        markers,
                        ird_ord = ?ird_ord,
                        private_data_len = private_data.len(),
                        "MPA responder: Request received"
                    );
                    let p2p = ird_ord
                        .filter(|b| b.peer_to_peer)
                        .map(|b| {
                            mpa::Rtr::PREFERENCE
                                .into_iter()
                                .filter(|r| b.rtr.contains(*r))
                                .collect()
                        })
                        .unwrap_or_default();
                    self.request = Some(RequestInfo {
                        private_data,
                        revision: rev,
                        crc,
                        markers,
                        ird: ird_ord.map(|b| b.ird),
                        ord: ird_ord.map(|b| b.ord),
                        p2p,
                    });
                }
                StartupEvent::Established(n) => {
                    trace_event!(
                        tracing::Level::DEBUG,
                        rev = n.rev,
                        crc = n.crc,
                        markers_tx = n.markers_tx,
                        markers_rx = n.markers_rx,
                        ird = n.ird,
                        ord = n.ord,
                        rtr = ?n.rtr,
                        "MPA: start-up complete"
                    );
                    self.outcome = Some(StartupOutcome::Established(Box::new(n)))
                }
                StartupEvent::Rejected { private_data } => {
                    trace_event!(
                        tracing::Level::DEBUG,
                        "MPA initiator: the Responder rejected"
                    );
                    self.outcome = Some(StartupOutcome::Rejected(private_data))
                }
                StartupEvent::Failed(e) => {
                    trace_event!(tracing::Level::INFO, error = %e, "MPA: start-up failed");
                    if let Some(t) = self.inner.terminate() {
                        let code = TermCode::new(Layer::Llp, t.etype, t.code);
                        trace_event!(
                            tracing::Level::WARN,
                            by_peer = false,
                            layer = ?code.layer,
                            etype = code.etype,
                            code = code.code,
                            "TERMINATE sent (MPA start-up)"
                        );
                        self.terminate = startup_terminate(code, t.crc, t.markers);
                        self.terminates = true;
                    }
                    self.outcome = Some(StartupOutcome::Failed(ConnectError::from_startup(e)))
                }
            }
        }
    }
}
