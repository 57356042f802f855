//! Where a connection stands after MPA start-up, each phase holding only
//! the data valid in it: the first-FPDU deadline exists only while the
//! responder waits, the RTR to send only until it is sent.

use std::time::Instant;

use super::super::config::{ConnectionConfig, Role};
use super::super::event::State;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Responder: nothing goes out until the initiator's first FPDU
    /// arrives (RFC 5044 section 7.1.2), which must come by `deadline`.
    /// In peer-to-peer mode (`rtr`) that FPDU may be the RTR of RFC 6581.
    AwaitingFirstFpdu {
        deadline: Option<Instant>,
        rtr: bool,
    },
    /// Initiator in peer-to-peer mode: this RTR goes out before anything
    /// else.
    RtrToSend(mpa::Rtr),
    /// Responder that sends at once in peer-to-peer mode: sending is
    /// open, and the first message to arrive may be the initiator's RTR.
    RtrMayArrive,
    /// Normal operation.
    Established,
    /// Terminated; every work request flushed.
    Error,
    /// Closed locally or by the peer.
    Closed,
}

impl Phase {
    /// The phase a new connection starts in.
    pub fn initial(cfg: &ConnectionConfig) -> Phase {
        let n = &cfg.negotiated;
        match (n.role, n.rtr) {
            (Role::Initiator, Some(kind)) => Phase::RtrToSend(kind),
            (Role::Initiator, None) => Phase::Established,
            (Role::Responder, rtr) if cfg.responder_sends_first => {
                if rtr.is_some() {
                    Phase::RtrMayArrive
                } else {
                    Phase::Established
                }
            }
            (Role::Responder, rtr) => Phase::AwaitingFirstFpdu {
                deadline: cfg.first_fpdu_deadline,
                rtr: rtr.is_some(),
            },
        }
    }

    /// The public view of the phase.
    pub fn state(self) -> State {
        match self {
            Phase::AwaitingFirstFpdu { .. } => State::AwaitingFirstFpdu,
            Phase::RtrToSend(_) | Phase::RtrMayArrive | Phase::Established => State::Established,
            Phase::Error => State::Error,
            Phase::Closed => State::Closed,
        }
    }

    /// Neither terminated nor closed: posts queue, input is read.
    pub fn is_live(self) -> bool {
        matches!(self.state(), State::AwaitingFirstFpdu | State::Established)
    }

    /// Whether messages may go on the wire (a TERMINATE aside).
    pub fn may_send(self) -> bool {
        self.state() == State::Established
    }

    /// A ULPDU arrived: leaves the start-up phases. Returns whether it is
    /// the first inbound message of a peer-to-peer responder (which may be
    /// an RTR), or `None` when input is no longer accepted.
    pub fn on_inbound(&mut self) -> Option<bool> {
        let first_may_be_rtr = match *self {
            Phase::AwaitingFirstFpdu { rtr, .. } => rtr,
            Phase::RtrMayArrive => true,
            Phase::RtrToSend(_) | Phase::Established => return Some(false),
            Phase::Error | Phase::Closed => return None,
        };
        *self = Phase::Established;
        Some(first_may_be_rtr)
    }
}
