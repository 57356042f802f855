//! A peer driven by hand from the protocol crates, for what the verbs API
//! will not do: break its own negotiated limits, stay silent during MPA
//! start-up, reset the TCP stream in the middle of a transfer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use ddp::memory::PdId;
use mpa::{InitiatorConfig, Negotiated, StartupEvent};
use rdmap::connection::{Connection, ConnectionConfig, Event};
use verbs::mr::Registry;
use verbs::transport::{ListenerId, StreamId, StreamState, Transport};

pub const RAW_PD: PdId = PdId(77);

enum Phase {
    /// TCP only: nothing is read or written.
    Silent,
    Mpa(Box<mpa::Startup>),
    Rdma(Box<Connection>),
}

/// One TCP stream of a raw transport, with MPA and RDMAP run by hand.
pub struct RawPeer {
    pub transport: Box<dyn Transport + Send>,
    pub stream: Option<StreamId>,
    listener: Option<ListenerId>,
    pub registry: Arc<Registry>,
    phase: Phase,
    /// What MPA start-up settled on, once it has.
    pub negotiated: Option<Negotiated>,
    pub startup_events: Vec<StartupEvent>,
    pub events: Vec<Event>,
}

impl RawPeer {
    fn new(transport: Box<dyn Transport + Send>) -> Self {
        RawPeer {
            transport,
            stream: None,
            listener: None,
            registry: Registry::new(),
            phase: Phase::Silent,
            negotiated: None,
            startup_events: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Starts a TCP connection to `addr`; stays silent until told more.
    pub fn connect(transport: Box<dyn Transport + Send>, addr: SocketAddr) -> Self {
        let mut p = RawPeer::new(transport);
        p.stream = Some(p.transport.connect(addr).expect("raw connect"));
        p
    }

    /// Listens on `port` (0: any) and accepts the first connection while
    /// being driven; never answers anything. Returns the bound port.
    pub fn listen(transport: Box<dyn Transport + Send>, port: u16) -> (Self, u16) {
        let mut p = RawPeer::new(transport);
        let l = p.transport.listen(port).expect("raw listen");
        let port = p.transport.listen_port(l).unwrap_or(port);
        p.listener = Some(l);
        (p, port)
    }

    pub fn state(&self) -> StreamState {
        self.stream
            .map_or(StreamState::Connecting, |s| self.transport.state(s))
    }

    /// Runs MPA start-up as initiator (once TCP is up).
    pub fn start_mpa(&mut self, cfg: InitiatorConfig, now: Instant) {
        self.phase = Phase::Mpa(Box::new(
            mpa::Startup::initiator(cfg, now).expect("initiator config"),
        ));
    }

    /// Opens the RDMAP connection over what start-up negotiated, after
    /// `tweak` (which may lie about limits the peer agreed to).
    pub fn open(&mut self, tweak: impl FnOnce(&mut Negotiated)) {
        let mut n = self.negotiated.clone().expect("MPA start-up finished");
        tweak(&mut n);
        let mss = self.stream.map_or(1460, |s| self.transport.mss(s));
        self.phase = Phase::Rdma(Box::new(Connection::new(ConnectionConfig::new(
            n, RAW_PD, mss,
        ))));
    }

    pub fn conn(&mut self) -> &mut Connection {
        match &mut self.phase {
            Phase::Rdma(c) => c,
            _ => panic!("no RDMAP connection yet"),
        }
    }

    /// Resets the stream (RST) and sends it out.
    pub fn abort(&mut self, now: Instant) {
        if let Some(s) = self.stream.take() {
            self.transport.abort(s);
        }
        self.transport.poll(now);
    }

    /// Moves packets and bytes as far as they go. True if anything moved.
    pub fn turn(&mut self, now: Instant) -> bool {
        let t = &mut self.transport;
        let mut busy = t.poll(now);
        if let (None, Some(l)) = (self.stream, self.listener) {
            self.stream = t.accept(l);
            busy |= self.stream.is_some();
        }
        let Some(s) = self.stream else {
            return busy;
        };
        if t.state(s) == StreamState::Connecting {
            return busy;
        }
        match &mut self.phase {
            Phase::Silent => {}
            Phase::Mpa(st) => {
                st.handle_timeout(now);
                if st.has_transmit() {
                    busy |= t.send_with(s, &mut |b| st.transmit_into(b)).unwrap_or(0) > 0;
                }
                if !st.is_finished() {
                    let got = t
                        .recv_with(s, &mut |b| st.handle_bytes(b, now).unwrap_or(0))
                        .unwrap_or(0);
                    busy |= got > 0;
                }
                while let Some(ev) = st.poll_event() {
                    if let StartupEvent::Established(n) = &ev {
                        self.negotiated = Some(n.clone());
                    }
                    self.startup_events.push(ev);
                    busy = true;
                }
            }
            Phase::Rdma(conn) => {
                let mut view = self.registry.view();
                let got = t
                    .recv_with(s, &mut |b| conn.handle_bytes(&mut view, b))
                    .unwrap_or(0);
                drop(view);
                let view = self.registry.view();
                let sent = if conn.wants_write() && t.state(s).may_send() {
                    t.send_with(s, &mut |b| conn.poll_transmit(&view, b))
                        .unwrap_or(0)
                } else {
                    0
                };
                while let Some(ev) = conn.poll_event() {
                    self.events.push(ev);
                    busy = true;
                }
                busy |= got > 0 || sent > 0;
            }
        }
        if busy {
            t.poll(now);
        }
        busy
    }
}
