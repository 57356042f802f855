//! Connection state shared by the receive and transmit halves, and what
//! happens when the stream fails or closes.

use std::collections::VecDeque;
use std::time::Instant;

use ddp::memory::PdId;
use ddp::tagged::TaggedSequence;
use ddp::untagged::{MsnCounter, UntaggedQueues, QN_SEND};

use crate::completion::{WcOpcode, WcStatus, WorkCompletion};
use crate::read_queue::{InboundReads, OutboundReads};
use crate::term::{TermCause, TermCode};
use crate::wire::TerminateRepr;
use crate::work_request::{sgl_len, PostError, RecvWr, SendOp, SendWr};

use super::config::{ConnectionConfig, Role, MIN_FPDU};
use super::event::{Event, State};
use super::framing::FrameTx;
use super::send_queue::SendQueue;
use super::terminate::{self, Offender, TermFrame};
use super::tx::Turn;

#[derive(Debug)]
pub(super) struct Inner {
    pub pd: PdId,
    pub state: State,
    pub tx: FrameTx,
    /// Largest ULPDU we send.
    pub mulpdu: usize,
    pub sq: SendQueue,
    pub max_send_sge: usize,
    /// Receive queues: 0 posted buffers (Sends), 1 and 2 inline (Read
    /// Requests, Terminates).
    pub rq: UntaggedQueues,
    /// Continuity of inbound tagged messages (Writes, Read Responses).
    pub tagged_rx: TaggedSequence,
    pub orq: OutboundReads,
    pub irq: InboundReads,
    pub msn_send: MsnCounter,
    pub msn_read: MsnCounter,
    pub msn_term: MsnCounter,
    /// Initiator in peer-to-peer mode: the RTR still to send first.
    pub rtr_out: Option<mpa::Rtr>,
    /// Responder in peer-to-peer mode: the first message may be an RTR.
    pub rtr_in: bool,
    /// Zero-length Send RTRs swallowed: MSNs the receive queue never saw.
    pub send_msn_skip: u32,
    /// Scheduler: which stream goes next when both could.
    pub turn: Turn,
    pub pending_term: Option<TermFrame>,
    /// Status for the receive buffer a failed Send was landing in.
    pub rq_head_status: Option<WcStatus>,
    pub events: VecDeque<Event>,
    /// Posts are refused while this many events wait to be polled.
    pub event_cap: usize,
    /// Responder: the initiator's first FPDU is due by then.
    pub first_fpdu_deadline: Option<Instant>,
}

impl Inner {
    pub fn new(cfg: &ConnectionConfig) -> Self {
        let n = &cfg.negotiated;
        let tx = FrameTx::new(n);
        let max_fpdu = cfg.max_fpdu.max(MIN_FPDU) & !3;
        let mulpdu = tx.max_ulpdu(max_fpdu).min(usize::from(u16::MAX));
        let initiator = n.role == Role::Initiator;
        Inner {
            pd: cfg.pd,
            state: if initiator || cfg.responder_sends_first {
                State::Established
            } else {
                State::AwaitingFirstFpdu
            },
            tx,
            mulpdu,
            sq: SendQueue::new(cfg.sq_depth),
            max_send_sge: cfg.max_send_sge,
            rq: UntaggedQueues::rdmap(cfg.rq_depth, cfg.max_recv_sge),
            tagged_rx: TaggedSequence::new(),
            orq: OutboundReads::new(usize::from(n.ord)),
            irq: InboundReads::new(usize::from(n.ird)),
            msn_send: MsnCounter::new(),
            msn_read: MsnCounter::new(),
            msn_term: MsnCounter::new(),
            rtr_out: if initiator { n.rtr } else { None },
            rtr_in: !initiator && n.rtr.is_some(),
            send_msn_skip: 0,
            turn: Turn::SendQueue,
            pending_term: None,
            rq_head_status: None,
            events: VecDeque::new(),
            event_cap: cfg.sq_depth + cfg.rq_depth + 4,
            first_fpdu_deadline: if initiator || cfg.responder_sends_first {
                None
            } else {
                cfg.first_fpdu_deadline
            },
        }
    }

    fn check_event_room(&self) -> Result<(), PostError> {
        if self.events.len() >= self.event_cap {
            return Err(PostError::QueueFull {
                queue: "completion",
                depth: self.event_cap,
            });
        }
        Ok(())
    }

    fn flushed(&mut self, wr_id: u64, opcode: WcOpcode) {
        self.events.push_back(Event::Completion(WorkCompletion {
            wr_id,
            status: WcStatus::WrFlushErr,
            opcode,
            byte_len: 0,
            invalidated: None,
            solicited: false,
        }));
    }

    pub fn post_send(&mut self, wr: SendWr) -> Result<(), PostError> {
        self.check_event_room()?;
        if wr.sgl.len() > self.max_send_sge {
            return Err(PostError::TooManySges {
                n: wr.sgl.len(),
                max: self.max_send_sge,
            });
        }
        if let SendOp::Read { .. } = wr.op {
            if wr.sgl.len() > 1 {
                return Err(PostError::ReadSgl(wr.sgl.len()));
            }
            if self.orq.ord() == 0 {
                return Err(PostError::NoReadCredit);
            }
        }
        let len = sgl_len(&wr.sgl)?;
        if !matches!(self.state, State::AwaitingFirstFpdu | State::Established) {
            let opcode = match wr.op {
                SendOp::Send { .. } => WcOpcode::Send,
                SendOp::Write { .. } => WcOpcode::RdmaWrite,
                SendOp::Read { .. } => WcOpcode::RdmaRead,
            };
            self.flushed(wr.wr_id, opcode);
            return Ok(());
        }
        self.sq.push(wr, len).map(|_| ())
    }

    pub fn post_recv(&mut self, wr: RecvWr) -> Result<(), PostError> {
        self.check_event_room()?;
        sgl_len(&wr.sgl)?;
        if !matches!(self.state, State::AwaitingFirstFpdu | State::Established) {
            self.flushed(wr.wr_id, WcOpcode::Recv);
            return Ok(());
        }
        self.rq.post(QN_SEND, wr.wr_id, &wr.sgl)?;
        Ok(())
    }

    /// Moves finished send queue entries to the event queue.
    pub fn retire(&mut self) {
        let events = &mut self.events;
        self.sq.retire(|wc| events.push_back(Event::Completion(wc)));
    }

    /// Flushes every outstanding work request, in queue order.
    fn flush_all(&mut self) {
        let events = &mut self.events;
        self.sq.flush(|wc| events.push_back(Event::Completion(wc)));
        let mut head_status = self.rq_head_status.take();
        for (qn, id) in self.rq.flush() {
            if qn != QN_SEND {
                continue;
            }
            let status = head_status.take().unwrap_or(WcStatus::WrFlushErr);
            self.events.push_back(Event::Completion(WorkCompletion {
                wr_id: id,
                status,
                opcode: WcOpcode::Recv,
                byte_len: 0,
                invalidated: None,
                solicited: false,
            }));
        }
        self.orq.drain().for_each(drop);
        self.irq.clear();
        self.rtr_out = None;
    }

    fn enter_error(&mut self) {
        self.state = State::Error;
        self.flush_all();
    }

    /// A protocol error we detected (or a local one that ends the stream):
    /// queue a TERMINATE about `offending` (the ULPDU at fault, or a header
    /// we reconstructed), report, flush.
    pub fn terminate_local(&mut self, cause: TermCause, offending: &[u8]) {
        if !matches!(self.state, State::AwaitingFirstFpdu | State::Established) {
            return;
        }
        let msn = self.msn_term.take();
        self.pending_term = Some(terminate::build(cause, offending, msn));
        self.events.push_back(Event::Terminated {
            by_peer: false,
            cause: cause.code,
            peer: None,
        });
        self.enter_error();
    }

    /// The initiator never sent its first FPDU: error, flush, report.
    pub fn first_fpdu_timed_out(&mut self) {
        if self.state != State::AwaitingFirstFpdu {
            return;
        }
        self.events.push_back(Event::FirstFpduTimeout);
        self.enter_error();
    }

    /// The deframer found the stream broken (bad CRC, marker, length).
    pub fn stream_broken(&mut self, code: TermCode) {
        self.terminate_local(TermCause::new(code), &[]);
    }

    /// The peer sent a TERMINATE (`None`: one that did not parse). Nothing
    /// is sent back. The work request its header names, if still queued,
    /// gets the matching remote error; the rest are flushed.
    pub fn peer_terminated(&mut self, t: Option<&TerminateRepr<'_>>) {
        if !matches!(self.state, State::AwaitingFirstFpdu | State::Established) {
            return;
        }
        let (cause, peer) = match t {
            Some(t) => {
                let (code, peer) = terminate::peer_cause(t);
                (code, Some(peer))
            }
            None => (TermCode::RDMAP_CATASTROPHIC, None),
        };
        if let Some(offender) = t.and_then(terminate::offender) {
            let seq = self.sq.find_any(|e| match (offender, e.wr.op) {
                (Offender::Untagged { qn: 0, msn }, SendOp::Send { .. })
                | (Offender::Untagged { qn: 1, msn }, SendOp::Read { .. }) => e.msn == Some(msn),
                (
                    Offender::Tagged { stag, to },
                    SendOp::Write {
                        remote_stag,
                        remote_to,
                    },
                ) => {
                    remote_stag.0 == stag
                        && to.wrapping_sub(remote_to) <= u64::from(e.len)
                        && e.started()
                }
                _ => false,
            });
            if let Some(seq) = seq {
                self.sq.finish_seq(seq, terminate::remote_status(cause));
            }
        }
        self.events.push_back(Event::Terminated {
            by_peer: true,
            cause,
            peer,
        });
        self.enter_error();
    }

    pub fn close(&mut self) {
        if self.state == State::Closed {
            return;
        }
        if self.state != State::Error {
            self.flush_all();
        }
        self.state = State::Closed;
    }

    pub fn peer_closed(&mut self) {
        if self.state == State::Closed {
            return;
        }
        self.close();
        self.events.push_back(Event::PeerClosed);
    }

    pub fn is_idle(&self) -> bool {
        self.sq.is_empty()
            && self.irq.is_empty()
            && self.orq.is_empty()
            && self.pending_term.is_none()
            && self.rtr_out.is_none()
    }

    pub fn wants_write(&self) -> bool {
        if self.pending_term.is_some() {
            return true;
        }
        self.state == State::Established
            && (self.rtr_out.is_some() || self.sq_eligible() || self.irq_eligible())
    }
}
