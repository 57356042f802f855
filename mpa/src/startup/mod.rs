//! The MPA start-up exchange as a sans-IO state machine, for both roles.
//!
//! Bytes from the TCP stream go in through [`Startup::handle_bytes`], which
//! never takes a byte past the end of the peer's frame: whatever follows is
//! FPDU stream for a [`crate::Deframer`]. Bytes to send come out of
//! [`Startup::poll_transmit`], deadlines out of [`Startup::poll_timeout`],
//! and what happened out of [`Startup::poll_event`].
//!
//! ```text
//! Initiator: AwaitingReply --Reply--> Established | Rejected | Failed
//! Responder: AwaitingRequest --Request--> RequestReceived
//!            RequestReceived --accept()--> Established
//!            RequestReceived --reject()--> Rejected
//! ```

mod reader;

use std::collections::VecDeque;
use std::time::Instant;

use crate::error::{ConfigError, StartupError};
use crate::negotiate::{
    self, InitiatorConfig, Negotiated, ReplyOutcome, ReplyParams, RequestDecision, ResponderConfig,
    Role,
};
use crate::wire::{self, FrameKind, FrameRepr, IrdOrd, Rtr};
use reader::FrameReader;

/// What start-up reports to the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartupEvent {
    /// Responder: a Request passed the policy; answer with
    /// [`Startup::accept`] or [`Startup::reject`].
    RequestReceived {
        /// The Request's revision.
        rev: u8,
        /// The Request's C bit (CRC is on either way if our policy asks).
        crc: bool,
        /// The Request's M bit: the Initiator wants markers from us.
        markers: bool,
        /// The Initiator's IRD/ORD block, when rev 2 carried one.
        ird_ord: Option<IrdOrd>,
        /// The RTR the Reply will grant in peer-to-peer mode.
        rtr: Option<Rtr>,
        /// The Initiator's private data (without the IRD/ORD block).
        private_data: Vec<u8>,
    },
    /// Start-up is complete; FPDUs may flow as negotiated.
    Established(Negotiated),
    /// Initiator: the Responder set R.
    Rejected {
        /// The Responder's private data (without any IRD/ORD block).
        private_data: Vec<u8>,
    },
    /// Start-up failed; close the connection after sending anything
    /// [`Startup::poll_transmit`] still has, and then the TERMINATE of
    /// [`Startup::terminate`], if any.
    Failed(StartupError),
}

/// The TERMINATE a failed start-up calls for (RFC 6581: an invalid Request
/// or Reply 0x04, insufficient IRD 0x06, no matching RTR 0x07; LLP layer,
/// MPA error type), and how to frame it. Send it, then close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartupTerminate {
    /// The LLP error type (always MPA).
    pub etype: u8,
    /// The LLP error code.
    pub code: u8,
    /// CRC32c on the FPDU: as negotiated when the failure came after the
    /// Reply settled it, else as this side asked in its own policy.
    pub crc: bool,
    /// Markers in the FPDU, as negotiated (none when nothing was).
    pub markers: bool,
}

#[derive(Debug, Clone)]
enum State {
    AwaitingReply(Box<InitiatorConfig>),
    AwaitingRequest(Box<ResponderConfig>),
    RequestReceived {
        cfg: Box<ResponderConfig>,
        decision: Box<RequestDecision>,
    },
    Established,
    Rejected,
    Failed(StartupError),
}

/// One side of an MPA start-up exchange.
#[derive(Debug, Clone)]
pub struct Startup {
    role: Role,
    state: State,
    reader: FrameReader,
    /// Bytes to send, and how many of them were already handed out.
    tx: Vec<u8>,
    tx_sent: usize,
    deadline: Option<Instant>,
    events: VecDeque<StartupEvent>,
    negotiated: Option<Negotiated>,
    /// This side's policy asks for CRC (framing of a TERMINATE sent before
    /// anything was negotiated).
    crc_asked: bool,
    terminate: Option<StartupTerminate>,
}

impl Startup {
    /// An Initiator, with its Request queued for sending and the Reply
    /// timer started at `now`.
    pub fn initiator(cfg: InitiatorConfig, now: Instant) -> Result<Startup, ConfigError> {
        negotiate::check_initiator(&cfg)?;
        let mut tx = Vec::new();
        negotiate::request(&cfg)
            .emit_to_vec(&mut tx)
            .map_err(|e| match e {
                wire::Error::PrivateDataTooLong { pd_length } => ConfigError::PrivateDataTooLong {
                    len: pd_length,
                    max: wire::MAX_PRIVATE_DATA,
                },
                _ => ConfigError::IrdOrdOutOfRange(cfg.ird.max(cfg.ord)),
            })?;
        Ok(Startup {
            role: Role::Initiator,
            crc_asked: cfg.crc.asks(),
            terminate: None,
            deadline: Some(now + cfg.reply_timeout),
            state: State::AwaitingReply(Box::new(cfg)),
            reader: FrameReader::new(FrameKind::Reply),
            tx,
            tx_sent: 0,
            events: VecDeque::new(),
            negotiated: None,
        })
    }

    /// A Responder waiting for the Request, timer started at `now`.
    pub fn responder(cfg: ResponderConfig, now: Instant) -> Result<Startup, ConfigError> {
        negotiate::check_responder(&cfg)?;
        Ok(Startup {
            role: Role::Responder,
            crc_asked: cfg.crc.asks(),
            terminate: None,
            deadline: Some(now + cfg.request_timeout),
            state: State::AwaitingRequest(Box::new(cfg)),
            reader: FrameReader::new(FrameKind::Request),
            tx: Vec::new(),
            tx_sent: 0,
            events: VecDeque::new(),
            negotiated: None,
        })
    }

    /// Our role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// True once start-up succeeded.
    pub fn is_established(&self) -> bool {
        matches!(self.state, State::Established)
    }

    /// True once start-up ended, either way.
    pub fn is_finished(&self) -> bool {
        matches!(
            self.state,
            State::Established | State::Rejected | State::Failed(_)
        )
    }

    /// True while a Responder waits for [`Startup::accept`] or
    /// [`Startup::reject`].
    pub fn is_awaiting_decision(&self) -> bool {
        matches!(self.state, State::RequestReceived { .. })
    }

    /// True once any byte of the peer's frame has arrived.
    pub fn has_input(&self) -> bool {
        self.reader.has_input()
    }

    /// The error start-up failed with, if it did.
    pub fn error(&self) -> Option<StartupError> {
        match self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// What was negotiated: after success, and also after an Initiator
    /// refused a well-formed Reply (insufficient IRD, no matching RTR), so
    /// the caller can frame the TERMINATE those errors call for.
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    /// The TERMINATE to send after a failure that RFC 6581 assigns a code
    /// to, once [`Startup::poll_transmit`] has nothing left. `None` when
    /// start-up did not fail so, and after a refusal answered with a Reject
    /// reply (the reply says it).
    pub fn terminate(&self) -> Option<StartupTerminate> {
        self.terminate
    }

    /// Consumes stream bytes up to the end of the peer's frame and returns
    /// how many were consumed; bytes after the frame are left for the
    /// deframer (0 is returned once start-up is over).
    ///
    /// On failure the error is returned and also queued as
    /// [`StartupEvent::Failed`]; later calls repeat it. A Responder refusing
    /// a Request on policy grounds (markers, CRC, RTR) has then queued a
    /// Reject reply: send what [`Startup::poll_transmit`] gives before
    /// closing. Bytes that arrive after the deadline but before
    /// [`Startup::handle_timeout`] is called are still processed.
    pub fn handle_bytes(&mut self, input: &[u8], now: Instant) -> Result<usize, StartupError> {
        let _ = now;
        match &self.state {
            State::Failed(e) => return Err(*e),
            State::Established | State::Rejected => return Ok(0),
            State::RequestReceived { .. } => {
                // The Initiator sends nothing before our Reply.
                return if input.is_empty() {
                    Ok(0)
                } else {
                    Err(self.fail(StartupError::UnexpectedData))
                };
            }
            State::AwaitingReply(_) | State::AwaitingRequest(_) => {}
        }
        let (consumed, complete) = match self.reader.feed(input) {
            Ok(r) => r,
            Err(e) => return Err(self.fail(e)),
        };
        if complete {
            self.deadline = None;
            self.on_frame()?;
        }
        Ok(consumed)
    }

    /// The peer closed (or reset) the TCP connection.
    pub fn handle_peer_closed(&mut self) {
        if !self.is_finished() {
            self.fail(StartupError::PeerClosed);
        }
    }

    /// The next deadline, while waiting for the peer's frame.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }

    /// Fails start-up with [`StartupError::Timeout`] if the deadline passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(deadline) = self.deadline {
            if now >= deadline {
                self.deadline = None;
                self.fail(StartupError::Timeout);
            }
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<StartupEvent> {
        self.events.pop_front()
    }

    /// True while bytes wait to be sent.
    pub fn has_transmit(&self) -> bool {
        self.tx_sent < self.tx.len()
    }

    /// Appends all pending bytes to `out`; returns how many.
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> usize {
        let pending = &self.tx[self.tx_sent..];
        out.extend_from_slice(pending);
        let n = pending.len();
        self.tx_sent += n;
        n
    }

    /// Copies as many pending bytes as fit into `out` (e.g. a TCP send
    /// buffer's free space); returns how many. The rest stays pending.
    pub fn transmit_into(&mut self, out: &mut [u8]) -> usize {
        let pending = &self.tx[self.tx_sent..];
        let n = pending.len().min(out.len());
        out[..n].copy_from_slice(&pending[..n]);
        self.tx_sent += n;
        n
    }

    /// Responder: accepts the Request with `params`, queues the Reply and
    /// completes start-up. On a configuration error nothing changes and the
    /// call may be repeated with other parameters.
    pub fn accept(&mut self, params: ReplyParams, now: Instant) -> Result<(), ConfigError> {
        let _ = now;
        let State::RequestReceived { cfg, decision } = &self.state else {
            return Err(ConfigError::WrongState);
        };
        let (repr, negotiated) = negotiate::reply(cfg, decision, &params)?;
        let mut frame = Vec::with_capacity(repr.buffer_len());
        // Cannot fail: `reply` checked the private data and IRD/ORD.
        repr.emit_to_vec(&mut frame)
            .map_err(|_| ConfigError::WrongState)?;
        self.tx.extend_from_slice(&frame);
        self.state = State::Established;
        self.negotiated = Some(negotiated.clone());
        self.events.push_back(StartupEvent::Established(negotiated));
        Ok(())
    }

    /// Responder: rejects the Request, queuing a Reply with R set and
    /// `private_data` (same limits as for accepting).
    pub fn reject(&mut self, private_data: &[u8], now: Instant) -> Result<(), ConfigError> {
        let _ = now;
        let State::RequestReceived { decision, .. } = &self.state else {
            return Err(ConfigError::WrongState);
        };
        let shape = negotiate::RejectShape {
            rev: decision.rev,
            crc: decision.crc,
            enhanced: decision.peer_ird_ord.is_some(),
        };
        let max = wire::MAX_PRIVATE_DATA - if shape.enhanced { wire::IRD_ORD_LEN } else { 0 };
        if private_data.len() > max {
            return Err(ConfigError::PrivateDataTooLong {
                len: private_data.len(),
                max,
            });
        }
        shape
            .reply(private_data)
            .emit_to_vec(&mut self.tx)
            .map_err(|_| ConfigError::WrongState)?;
        self.state = State::Rejected;
        Ok(())
    }

    fn fail(&mut self, e: StartupError) -> StartupError {
        self.deadline = None;
        self.terminate = e.terminate_code().map(|(etype, code)| StartupTerminate {
            etype,
            code,
            crc: self.negotiated.as_ref().map_or(self.crc_asked, |n| n.crc),
            markers: self.negotiated.as_ref().is_some_and(|n| n.markers_tx),
        });
        self.state = State::Failed(e);
        self.events.push_back(StartupEvent::Failed(e));
        e
    }

    /// The peer's frame is complete in the reader.
    fn on_frame(&mut self) -> Result<(), StartupError> {
        let repr = match FrameRepr::parse_bytes(self.reader.frame()) {
            Ok((repr, _)) => repr,
            Err(e) => return Err(self.fail(from_wire(e))),
        };
        match &self.state {
            State::AwaitingReply(cfg) => match negotiate::evaluate_reply(cfg, &repr) {
                ReplyOutcome::Established(n) => {
                    self.state = State::Established;
                    self.negotiated = Some(n.clone());
                    self.events.push_back(StartupEvent::Established(n));
                    Ok(())
                }
                ReplyOutcome::Rejected { private_data } => {
                    self.state = State::Rejected;
                    self.events
                        .push_back(StartupEvent::Rejected { private_data });
                    Ok(())
                }
                ReplyOutcome::Failed { error, partial } => {
                    self.negotiated = partial;
                    Err(self.fail(error))
                }
            },
            State::AwaitingRequest(cfg) => match negotiate::evaluate_request(cfg, &repr) {
                Ok(decision) => {
                    self.events.push_back(StartupEvent::RequestReceived {
                        rev: repr.rev,
                        crc: decision.request_crc,
                        markers: decision.request_markers,
                        ird_ord: decision.peer_ird_ord,
                        rtr: decision.rtr,
                        private_data: decision.private_data.clone(),
                    });
                    let cfg = cfg.clone();
                    self.state = State::RequestReceived {
                        cfg,
                        decision: Box::new(decision),
                    };
                    Ok(())
                }
                Err(refusal) => {
                    let e = self.fail(refusal.error);
                    if let Some(shape) = refusal.reject_reply {
                        // Cannot fail: no private data, a default block.
                        let _ = shape.reply(&[]).emit_to_vec(&mut self.tx);
                        self.terminate = None;
                    }
                    Err(e)
                }
            },
            _ => Ok(()),
        }
    }
}

/// A frame the reader completed but the wire format refuses.
fn from_wire(e: wire::Error) -> StartupError {
    match e {
        wire::Error::BadKey => StartupError::BadKey,
        wire::Error::PrivateDataTooLong { pd_length } => {
            StartupError::PrivateDataTooLong { pd_length }
        }
        // The reader only completes whole frames; what remains is an
        // enhanced flag without room for its block.
        _ => StartupError::MissingIrdOrd,
    }
}

#[cfg(test)]
mod tests;
