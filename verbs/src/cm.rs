//! The connection manager, shaped like rdma_cm: listen, connect with private
//! data, accept or reject a connect request, and the events of a queue
//! pair's connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::device::DeviceShared;
use crate::engine::PendingRequest;
use crate::error::VerbsError;
use crate::qp::QueuePair;

pub use mpa::{CrcPolicy, Rtr, RtrSet};

/// MPA options of one side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpaOptions {
    /// MPA revision to offer: 1 (RFC 5044) or 2 (RFC 6581, with IRD/ORD).
    pub revision: u8,
    pub crc: CrcPolicy,
    /// Ask the peer to send markers to us.
    pub markers: bool,
    /// Peer-to-peer mode (RFC 6581): the ready-to-receive messages this side
    /// offers (initiator; empty = off) or grants (responder; empty grants
    /// whichever the initiator offers, preferring WRITE, then READ, then
    /// SEND, as siw does; a set narrows it, and an initiator offering none
    /// of its kinds is rejected).
    pub p2p: RtrSet,
    /// How long start-up may take before it fails.
    pub timeout: Duration,
    /// Initiator: how long after the MPA Reply the first FPDU (a peer-to-peer
    /// RTR included) is held back. Linux siw as responder sends its Reply
    /// before it attaches the socket to the queue pair, and an FPDU landing
    /// in between sits unread until more bytes arrive: a few milliseconds
    /// here avoid that race. Zero sends at once.
    pub first_fpdu_delay: Duration,
    /// Responder: how long after accepting the initiator has to send its
    /// first FPDU (its RTR in peer-to-peer mode). Past it the queue pair
    /// goes to error, its work requests flushed, and reports
    /// [`DisconnectReason::FirstFpduTimeout`]; a peer that completes MPA
    /// and then says nothing cannot hold a queue pair until TCP gives up.
    pub first_fpdu_timeout: Duration,
    /// Responder: send at once instead of waiting for the initiator's first
    /// FPDU (RFC 5044 section 7.1.2 says wait; siw does not, and perftest's
    /// write latency test needs it). Off by default.
    pub responder_sends_first: bool,
}

impl Default for MpaOptions {
    fn default() -> Self {
        MpaOptions {
            revision: 2,
            crc: CrcPolicy::Preferred,
            markers: false,
            p2p: RtrSet::EMPTY,
            timeout: Duration::from_secs(10),
            first_fpdu_delay: Duration::ZERO,
            first_fpdu_timeout: Duration::from_secs(10),
            responder_sends_first: false,
        }
    }
}

/// What the active side sends with its connect request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectParams {
    /// Private data for the peer (at most 255 bytes keeps siw peers happy;
    /// at most 508 with MPA revision 2, 512 with revision 1).
    pub private_data: Vec<u8>,
    /// RDMA Reads the peer may have outstanding towards us.
    pub ird: u16,
    /// RDMA Reads we want to have outstanding towards the peer.
    pub ord: u16,
    pub mpa: MpaOptions,
}

impl Default for ConnectParams {
    fn default() -> Self {
        ConnectParams {
            private_data: Vec::new(),
            ird: 16,
            ord: 16,
            mpa: MpaOptions::default(),
        }
    }
}

/// What the passive side answers with when it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptParams {
    pub private_data: Vec<u8>,
    pub ird: u16,
    pub ord: u16,
}

impl Default for AcceptParams {
    fn default() -> Self {
        AcceptParams {
            private_data: Vec::new(),
            ird: 16,
            ord: 16,
        }
    }
}

/// Options of a listening endpoint: the MPA policy applied to every
/// request it receives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListenOptions {
    pub mpa: MpaOptions,
    /// Connections that may be in MPA start-up at once, offered requests
    /// included. Default 8. When it is full, the oldest start-up still
    /// waiting for its Request is reset to make room (so idle connections
    /// cannot lock a client out); only when all hold offered requests is a
    /// newcomer refused. A start-up whose peer closed frees its slot at
    /// once. (On smoltcp the transport's own `TcpTuning::backlog` bounds
    /// the sockets in the TCP handshake.)
    pub backlog: Option<usize>,
}

/// A connection event of one queue pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmEvent {
    /// MPA start-up finished; the connection carries RDMA traffic.
    Established(ConnectionInfo),
    /// The peer rejected the connect request, with its private data.
    Rejected { private_data: Vec<u8> },
    /// TCP or MPA start-up failed (refused, timed out, malformed reply…).
    ConnectFailed(String),
    /// The connection ended (peer close, local disconnect or TERMINATE).
    Disconnected { reason: DisconnectReason },
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisconnectReason {
    /// [`QueuePair::disconnect`] was called.
    Local,
    /// The peer closed the TCP stream.
    PeerClosed,
    /// The TCP stream was reset.
    Reset,
    /// Responder: the initiator's first FPDU did not come within
    /// [`MpaOptions::first_fpdu_timeout`] of accepting.
    FirstFpduTimeout,
    /// A TERMINATE was sent or received: the layer/etype/code it carried.
    Terminated {
        by_peer: bool,
        layer: u8,
        etype: u8,
        code: u8,
    },
}

/// What start-up settled on, as the application sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    pub peer_addr: Option<SocketAddr>,
    pub local_addr: Option<SocketAddr>,
    pub private_data: Vec<u8>,
    pub revision: u8,
    pub crc: bool,
    pub markers_tx: bool,
    pub markers_rx: bool,
    pub ird: u16,
    pub ord: u16,
    pub rtr: Option<Rtr>,
}

/// A connect request waiting for [`accept`](ConnectRequest::accept) or
/// [`reject`](ConnectRequest::reject). Dropping it rejects it.
#[derive(Debug)]
pub struct ConnectRequest {
    pub(crate) id: u64,
    pub(crate) device: Arc<DeviceShared>,
    pub(crate) answered: bool,
    pub peer_addr: Option<SocketAddr>,
    pub private_data: Vec<u8>,
    pub revision: u8,
    /// The initiator asked for CRC.
    pub crc: bool,
    /// The initiator wants markers.
    pub markers: bool,
    /// The initiator's IRD and ORD (revision 2), if sent.
    pub ird: Option<u16>,
    pub ord: Option<u16>,
    /// The initiator asked for peer-to-peer mode with these RTR kinds.
    pub p2p: Vec<Rtr>,
}

impl ConnectRequest {
    /// The application's view of a request the engine queued.
    fn new(pending: PendingRequest, device: Arc<DeviceShared>) -> Self {
        let info = pending.info;
        ConnectRequest {
            id: pending.id,
            device,
            answered: false,
            peer_addr: pending.peer_addr,
            private_data: info.private_data,
            revision: info.revision,
            crc: info.crc,
            markers: info.markers,
            ird: info.ird,
            ord: info.ord,
            p2p: info.p2p,
        }
    }

    /// Accepts on `qp`, which must not be connected yet. The queue pair
    /// reports [`CmEvent::Established`] once the initiator's first FPDU may
    /// flow.
    ///
    /// If accepting fails (the queue pair is connected already, the
    /// parameters are invalid) the request is rejected.
    pub fn accept(mut self, qp: &QueuePair, params: AcceptParams) -> Result<(), VerbsError> {
        let r = self
            .device
            .with_transport_engine(|e| e.accept(self.id, qp.num, params));
        self.answered = r.is_ok();
        r
    }

    /// Rejects with `private_data` in an MPA reply with the R bit.
    pub fn reject(mut self, private_data: &[u8]) -> Result<(), VerbsError> {
        self.answered = true;
        self.device.with_engine(|e| e.reject(self.id, private_data))
    }
}

impl Drop for ConnectRequest {
    fn drop(&mut self) {
        if !self.answered {
            let id = self.id;
            let _ = self.device.with_engine(|e| e.reject(id, &[]));
        }
    }
}

/// A listening endpoint.
#[derive(Debug)]
pub struct Listener {
    pub(crate) id: u32,
    pub(crate) port: u16,
    pub(crate) device: Arc<DeviceShared>,
}

impl Listener {
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The next connect request, if one has arrived (drives progress once
    /// when no progress thread runs).
    pub fn try_request(&self) -> Option<ConnectRequest> {
        self.device.progress_if_caller_driven();
        self.device
            .with_transport_engine(|e| e.take_request(self.id))
            .map(|r| ConnectRequest::new(r, self.device.clone()))
    }

    /// Blocks for the next connect request; `None` on timeout.
    pub fn request(&self, timeout: Duration) -> Option<ConnectRequest> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(r) = self
                .device
                .with_transport_engine(|e| e.take_request(self.id))
            {
                return Some(ConnectRequest::new(r, self.device.clone()));
            }
            if Instant::now() >= deadline {
                return None;
            }
            let id = self.id;
            self.device
                .block_until_engine(deadline, &|e| e.has_request(id));
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let id = self.id;
        self.device.with_transport_engine(|e| e.unlisten(id));
    }
}
