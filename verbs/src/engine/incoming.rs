//! Connections accepted at the TCP level, in MPA start-up as responder,
//! until the application accepts one onto a queue pair or rejects it.

use std::net::SocketAddr;
use std::time::Instant;

use super::startup::{RequestInfo, Startup, StartupOutcome};
use crate::trace::Span;
use crate::transport::{StreamId, StreamState, Transport};

pub(crate) enum IncomingState {
    /// Waiting for the initiator's MPA request.
    AwaitingRequest,
    /// The request is waiting in the listener's queue for the application.
    Offered(RequestInfo),
    /// Refused or failed: a reject reply (if any) is being sent, and the
    /// stream closes after it.
    Rejecting,
    /// Moved onto a queue pair.
    Handed,
}

pub(crate) struct Incoming {
    pub(crate) listener: u32,
    pub(crate) stream: StreamId,
    pub(crate) startup: Startup,
    pub(crate) state: IncomingState,
    /// The connection's span, handed to the queue pair that accepts it.
    pub(crate) span: Span,
}

/// What one drive of an incoming connection did.
pub(crate) struct Step {
    pub(crate) busy: bool,
    /// The request just became available to the application.
    pub(crate) offered: bool,
    /// The entry is done (failed, timed out or rejected) and can go.
    pub(crate) finished: bool,
}

impl Incoming {
    pub(crate) fn new(listener: u32, stream: StreamId, startup: Startup, span: Span) -> Self {
        Incoming {
            listener,
            stream,
            startup,
            state: IncomingState::AwaitingRequest,
            span,
        }
    }

    /// Still waiting for the Request (not yet offered to the application).
    pub(crate) fn awaits_request(&self) -> bool {
        matches!(self.state, IncomingState::AwaitingRequest)
    }

    /// Nothing of the Request has arrived: a slot an idle peer holds.
    pub(crate) fn is_silent(&self) -> bool {
        self.awaits_request() && !self.startup.has_input()
    }

    pub(crate) fn drive(&mut self, transport: &mut dyn Transport, now: Instant) -> Step {
        let span = self.span.clone();
        let _entered = span.enter();
        let mut step = Step {
            busy: false,
            offered: false,
            finished: false,
        };
        if transport.state(self.stream).is_terminal() {
            step.finished = true;
            return step;
        }
        self.startup.handle_timeout(now);
        if matches!(self.state, IncomingState::AwaitingRequest) {
            step.busy |= self.startup.receive(transport, self.stream, now);
            if transport.state(self.stream) == StreamState::PeerClosed
                && self.startup.wants_input()
                && transport.recv_queued(self.stream) == 0
            {
                // The peer left before its Request was whole: free the slot
                // now rather than at the start-up timeout.
                self.startup.handle_peer_closed();
            }
            if let Some(info) = self.startup.request() {
                self.state = IncomingState::Offered(info);
                step.offered = true;
            }
        }
        if let Some(StartupOutcome::Failed(_)) = self.startup.outcome() {
            // A refusal may have queued a reject reply: it goes out before
            // the stream closes.
            self.state = IncomingState::Rejecting;
        }
        step.busy |= self.startup.transmit(transport, self.stream);
        if matches!(self.state, IncomingState::Rejecting) && !self.startup.has_transmit() {
            step.finished = true;
        }
        step
    }
}

/// A request taken off a listener's queue; the connection manager makes
/// the application's `ConnectRequest` of it.
pub(crate) struct PendingRequest {
    pub(crate) id: u64,
    pub(crate) peer_addr: Option<SocketAddr>,
    pub(crate) info: RequestInfo,
}
