//! What the connection manager takes and reports: MPA options, connect,
//! accept and listen parameters, connection events and their outcomes.

use std::net::SocketAddr;
use std::time::Duration;

pub use mpa::{CrcPolicy, Rtr, RtrSet};

use super::connect_error::ConnectError;

/// MPA options of one side. Start from `MpaOptions::default()` and set
/// fields (the struct may grow).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MpaOptions {
    /// MPA revision to offer: 1 (RFC 5044) or 2 (RFC 6581, with IRD/ORD).
    pub revision: u8,
    /// Whether to use, offer or refuse the MPA CRC.
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
    /// Use RFC 7306 (immediate data, atomics) on this connection. MPA
    /// carries no field for it and neither siw nor iw_cxgb4 offers it, so
    /// it is agreed by the applications: set it on both sides (the
    /// listener's options and the connector's). Off by default, and a
    /// queue pair without it refuses RFC 7306 work requests at posting
    /// and answers RFC 7306 messages with a TERMINATE.
    pub rfc7306: bool,
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
            rfc7306: false,
        }
    }
}

/// What the active side sends with its connect request.
///
/// Start from `ConnectParams::default()` and change what you need with the
/// setters (`.private_data(..)`, `.ird(..)`, `.ord(..)`, `.mpa(..)`,
/// `.rfc7306(..)`): fields may be added, so it cannot be built as a
/// literal outside this crate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectParams {
    /// Private data for the peer (at most 255 bytes keeps siw peers happy;
    /// at most 508 with MPA revision 2, 512 with revision 1).
    pub private_data: Vec<u8>,
    /// RDMA Reads the peer may have outstanding towards us.
    pub ird: u16,
    /// RDMA Reads we want to have outstanding towards the peer.
    pub ord: u16,
    /// The MPA options of this side.
    pub mpa: MpaOptions,
}

impl ConnectParams {
    /// With `data` as the MPA Request's private data.
    pub fn private_data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.private_data = data.into();
        self
    }

    /// With `ird` RDMA Reads the peer may have outstanding towards us.
    pub fn ird(mut self, ird: u16) -> Self {
        self.ird = ird;
        self
    }

    /// With `ord` RDMA Reads we want outstanding towards the peer.
    pub fn ord(mut self, ord: u16) -> Self {
        self.ord = ord;
        self
    }

    /// With `mpa` as this side's MPA options.
    pub fn mpa(mut self, mpa: MpaOptions) -> Self {
        self.mpa = mpa;
        self
    }

    /// With RFC 7306 used (or not); the listener must say the same.
    pub fn rfc7306(mut self, on: bool) -> Self {
        self.mpa.rfc7306 = on;
        self
    }
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
///
/// Start from `AcceptParams::default()` and use the setters
/// (`.private_data(..)`, `.ird(..)`, `.ord(..)`): fields may be added, so
/// it cannot be built as a literal outside this crate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AcceptParams {
    /// Private data for the peer (or received from it).
    pub private_data: Vec<u8>,
    /// RDMA Reads the peer may have outstanding towards us.
    pub ird: u16,
    /// RDMA Reads we may have outstanding towards the peer.
    pub ord: u16,
}

impl AcceptParams {
    /// With `data` as the MPA Reply's private data.
    pub fn private_data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.private_data = data.into();
        self
    }

    /// With `ird` RDMA Reads the peer may have outstanding towards us.
    pub fn ird(mut self, ird: u16) -> Self {
        self.ird = ird;
        self
    }

    /// With `ord` RDMA Reads we may have outstanding towards the peer.
    pub fn ord(mut self, ord: u16) -> Self {
        self.ord = ord;
        self
    }
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
#[non_exhaustive]
pub struct ListenOptions {
    /// The MPA options of this side.
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

impl ListenOptions {
    /// With `mpa` as the policy for every request.
    pub fn with_mpa(mut self, mpa: MpaOptions) -> Self {
        self.mpa = mpa;
        self
    }

    /// With RFC 7306 used (or not) on every connection it accepts; the
    /// connectors must say the same.
    pub fn with_rfc7306(mut self, on: bool) -> Self {
        self.mpa.rfc7306 = on;
        self
    }

    /// With room for `backlog` connections in start-up.
    pub fn with_backlog(mut self, backlog: usize) -> Self {
        self.backlog = Some(backlog);
        self
    }
}

/// A connection event of one queue pair.
///
/// More kinds of event may be added: a `match` needs a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmEvent {
    /// MPA start-up finished; the connection carries RDMA traffic.
    Established(ConnectionInfo),
    /// The peer rejected the connect request, with its private data.
    Rejected {
        /// The private data of the peer's MPA Reply.
        private_data: Vec<u8>,
    },
    /// TCP or MPA start-up failed: refused, timed out, the peer broke
    /// the protocol, or the two sides' settings do not agree.
    ConnectFailed(ConnectError),
    /// The connection ended (peer close, local disconnect or TERMINATE).
    Disconnected {
        /// Why it ended.
        reason: DisconnectReason,
    },
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// [`QueuePair::disconnect`](crate::QueuePair::disconnect) was called.
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
        /// True if the peer sent it, false if this side did.
        by_peer: bool,
        /// TERMINATE layer (0 RDMAP, 1 DDP, 2 LLP/MPA).
        layer: u8,
        /// TERMINATE error type.
        etype: u8,
        /// TERMINATE error code.
        code: u8,
    },
}

/// What start-up settled on, as the application sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// The peer's address, if the transport knows.
    pub peer_addr: Option<SocketAddr>,
    /// This side's address, if the transport knows.
    pub local_addr: Option<SocketAddr>,
    /// Private data for the peer (or received from it).
    pub private_data: Vec<u8>,
    /// MPA revision: offered (1 or 2; RFC 5044 or RFC 6581 with IRD/ORD), or settled on.
    pub revision: u8,
    /// Whether FPDUs carry a CRC.
    pub crc: bool,
    /// Whether this side sends markers.
    pub markers_tx: bool,
    /// Whether the peer sends markers.
    pub markers_rx: bool,
    /// RDMA Reads the peer may have outstanding towards us.
    pub ird: u16,
    /// RDMA Reads we may have outstanding towards the peer.
    pub ord: u16,
    /// The peer-to-peer ready-to-receive message used, if any.
    pub rtr: Option<Rtr>,
}
