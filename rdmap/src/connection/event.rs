//! What a connection reports to its driver.

use crate::completion::WorkCompletion;
use crate::term::TermCode;
use crate::wire::{TermControl, TermLayout};

/// The lifecycle of a connection after MPA start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Responder: waiting for the initiator's first FPDU. Nothing is sent
    /// before it arrives (RFC 5044; in peer-to-peer mode that
    /// FPDU is the RTR of RFC 6581).
    AwaitingFirstFpdu,
    /// Normal operation.
    Established,
    /// Terminated: a TERMINATE was received, or one was queued (and is sent
    /// before anything else). All work requests are flushed; the driver
    /// should close the TCP stream once `wants_write()` is false.
    Error,
    /// Closed locally or by the peer. Nothing more is sent except a
    /// TERMINATE queued before the close.
    Closed,
}

/// A TERMINATE as the peer sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerTerminate {
    /// The TERMINATE's control word: layer, type, code and which headers follow.
    pub control: TermControl,
    /// Which control word layout was recognised.
    pub layout: TermLayout,
}

/// Something the driver (verbs layer) should know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A work request completed (or was flushed).
    Completion(WorkCompletion),
    /// The stream was terminated. `by_peer`: the peer sent a TERMINATE (its
    /// contents in `peer`, `None` if it did not parse); otherwise we queued
    /// one with `cause`. A TERMINATE naming a layer we do not know is
    /// reported as RDMAP local catastrophic.
    Terminated {
        /// Whether the peer sent the TERMINATE (else this side did).
        by_peer: bool,
        /// The Layer/EType/Code that applies.
        cause: TermCode,
        /// The peer's TERMINATE as received, if it parsed.
        peer: Option<PeerTerminate>,
    },
    /// The peer closed its direction of the stream (TCP FIN).
    PeerClosed,
    /// Responder: the initiator's first FPDU did not come by
    /// [`ConnectionConfig::first_fpdu_deadline`](super::ConnectionConfig::first_fpdu_deadline).
    /// The connection is in error and every work request flushed; nothing
    /// is sent (no TERMINATE code fits a silent peer): close the stream.
    FirstFpduTimeout,
}
