//! Connection state shared by the receive and transmit halves, and what
//! happens when the stream fails or closes.

mod phase;
mod rx;
mod tx;

use core::ops::ControlFlow;
use std::time::Instant;

use ddp::memory::{PdId, STag};
use ddp::tagged::TaggedSequence;
use ddp::untagged::{MsnCounter, QueueMode, UntaggedQueues, QN_READ_REQUEST, QN_SEND};

use crate::completion::{WcOpcode, WcStatus, WorkCompletion};
use crate::fifo::Fifo;
use crate::opcode::queue;
use crate::read_queue::{InboundReads, OutboundReads};
use crate::term::{TermCause, TermCode};
use crate::wire::atomic::{OPERAND_LEN, REQUEST_LEN, RESPONSE_LEN};
use crate::wire::TerminateRepr;
use crate::work_request::{sgl_len, PostError, RecvWr, SendOp, SendWr};

use super::atomics::{InboundAtomics, OutboundAtomics};
use super::config::{ConnectionConfig, MIN_FPDU};
use super::event::{Event, State};
use super::framing::FrameTx;
use super::send_queue::{Progress, SendQueue};
use super::stats::{ConnectionStats, TerminateRecord};
use super::terminate::{self, Offender, TermFrame};
use phase::Phase;
use tx::Turn;

/// The state of one connection. Fields are private to this module and its
/// receive (`rx`) and transmit (`tx`) halves; `Connection` goes through
/// methods.
#[derive(Debug)]
pub(super) struct Inner {
    pd: PdId,
    /// Start-up, established, terminated or closed, with what each needs.
    phase: Phase,
    tx: FrameTx,
    /// Largest ULPDU we send.
    mulpdu: usize,
    sq: SendQueue,
    max_send_sge: usize,
    max_inline: usize,
    /// Both sides agreed to RFC 7306.
    rfc7306: bool,
    /// Receive queues: 0 posted buffers (Sends, Immediate Data), 1, 2 and
    /// (RFC 7306) 3 inline (Read and Atomic Requests, Terminates, Atomic
    /// Responses).
    rq: UntaggedQueues,
    /// Continuity of inbound tagged messages (Writes, Read Responses).
    tagged_rx: TaggedSequence,
    orq: OutboundReads,
    irq: InboundReads,
    msn_send: MsnCounter,
    msn_read: MsnCounter,
    msn_term: MsnCounter,
    msn_atomic_response: MsnCounter,
    /// RFC 7306: our atomic requests awaiting responses, and responses to
    /// the peer's waiting to go out.
    atomics_out: OutboundAtomics,
    atomics_in: InboundAtomics,
    /// Zero-length Send RTRs swallowed: MSNs the receive queue never saw.
    send_msn_skip: u32,
    /// Scheduler: which stream goes next when both could.
    turn: Turn,
    pending_term: Option<TermFrame>,
    /// A local invalidate at the head of the send queue, checked and
    /// waiting for the driver to carry it out (`take_local_invalidate`).
    local_invalidate: Option<STag>,
    /// Status for the receive buffer a failed Send was landing in.
    rq_head_status: Option<WcStatus>,
    events: Fifo<Event>,
    /// Posts are refused while this many events wait to be polled.
    event_cap: usize,
    /// The TERMINATE that ended the stream, either way.
    last_terminate: Option<TerminateRecord>,
}

impl Inner {
    pub fn new(cfg: &ConnectionConfig) -> Self {
        let n = &cfg.negotiated;
        let tx = FrameTx::new(n);
        let max_fpdu = cfg.max_fpdu.max(MIN_FPDU) & !3;
        let mulpdu = tx.max_ulpdu(max_fpdu).min(usize::from(u16::MAX));
        Inner {
            pd: cfg.pd,
            phase: Phase::initial(cfg),
            tx,
            mulpdu,
            sq: SendQueue::new(cfg.sq_depth),
            max_send_sge: cfg.max_send_sge,
            max_inline: cfg.max_inline_data,
            rfc7306: cfg.rfc7306,
            rq: receive_queues(cfg),
            tagged_rx: TaggedSequence::new(),
            orq: OutboundReads::new(usize::from(n.ord)),
            irq: InboundReads::new(usize::from(n.ird)),
            msn_send: MsnCounter::new(),
            msn_read: MsnCounter::new(),
            msn_term: MsnCounter::new(),
            msn_atomic_response: MsnCounter::new(),
            atomics_out: OutboundAtomics::default(),
            atomics_in: InboundAtomics::default(),
            send_msn_skip: 0,
            turn: Turn::SendQueue,
            pending_term: None,
            local_invalidate: None,
            rq_head_status: None,
            events: Fifo::default(),
            event_cap: cfg.sq_depth.saturating_add(cfg.rq_depth).saturating_add(4),
            last_terminate: None,
        }
    }

    /// What the connection carried (this side's framing; the receive
    /// side's counts are added by the caller) and has outstanding.
    pub fn stats(&self) -> ConnectionStats {
        ConnectionStats {
            bytes_sent: self.tx.traffic.bytes,
            messages_sent: self.tx.traffic.messages,
            sends_outstanding: self.sq.len(),
            reads_outstanding: self.orq.len(),
            atomics_outstanding: self.atomics_out.len(),
            ird: self.irq.ird(),
            ird_in_use: self.irq.counted() + self.atomics_in.len(),
            ord: self.orq.ord(),
            ord_in_use: self.orq.len() + self.atomics_out.len(),
            last_terminate: self.last_terminate,
            ..ConnectionStats::default()
        }
    }

    pub fn state(&self) -> State {
        self.phase.state()
    }

    pub fn pd(&self) -> PdId {
        self.pd
    }

    pub fn max_ulpdu(&self) -> usize {
        self.mulpdu
    }

    pub fn ird(&self) -> usize {
        self.irq.ird()
    }

    pub fn ord(&self) -> usize {
        self.orq.ord()
    }

    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop()
    }

    /// The responder's deadline for the initiator's first FPDU, while it
    /// waits for it.
    pub fn first_fpdu_deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::AwaitingFirstFpdu { deadline, .. } => deadline,
            _ => None,
        }
    }

    pub fn accepts_input(&self) -> bool {
        self.phase.is_live()
    }

    /// Whether to keep feeding after a ULPDU.
    fn flow(&self) -> ControlFlow<()> {
        if self.accepts_input() {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
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
        self.events.push(Event::Completion(WorkCompletion {
            wr_id,
            status: WcStatus::WrFlushErr,
            opcode,
            byte_len: 0,
            invalidated: None,
            solicited: false,
            imm_data: None,
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
        if let SendOp::LocalInvalidate { .. } = wr.op {
            if !wr.sgl.is_empty() || !wr.inline.is_empty() {
                return Err(PostError::InvalidateSgl);
            }
        }
        if wr.op.needs_rfc7306() && !self.rfc7306 {
            return Err(PostError::Rfc7306NotAgreed);
        }
        if let SendOp::Atomic { remote_to, .. } = wr.op {
            let len = wr.sgl.first().map_or(0, |s| s.len);
            if wr.sgl.len() != 1 || len as usize != OPERAND_LEN {
                return Err(PostError::AtomicSink {
                    sges: wr.sgl.len(),
                    len,
                });
            }
            if remote_to % OPERAND_LEN as u64 != 0 {
                return Err(PostError::AtomicAlignment(remote_to));
            }
            if self.orq.ord() == 0 {
                return Err(PostError::NoReadCredit);
            }
        }
        if !wr.inline.is_empty() {
            let carries_data = matches!(
                wr.op,
                SendOp::Send { .. }
                    | SendOp::SendImm { .. }
                    | SendOp::Write { .. }
                    | SendOp::WriteImm { .. }
            );
            if !carries_data || !wr.sgl.is_empty() {
                return Err(PostError::InlineMisused);
            }
            if wr.inline.len() > self.max_inline {
                return Err(PostError::InlineTooLong {
                    len: wr.inline.len(),
                    max: self.max_inline,
                });
            }
        }
        let len = if wr.inline.is_empty() {
            sgl_len(&wr.sgl)?
        } else {
            // At most max_inline_data, far below 4 GiB.
            u32::try_from(wr.inline.len()).map_err(|_| PostError::TooLong)?
        };
        if !self.phase.is_live() {
            self.flushed(wr.wr_id, wr.op.wc_opcode());
            return Ok(());
        }
        self.sq.push(wr, len).map(|_| ())
    }

    pub fn post_recv(&mut self, wr: RecvWr) -> Result<(), PostError> {
        if self.rq.queue(QN_SEND).map(|q| q.mode()) == Some(QueueMode::Shared) {
            return Err(PostError::SharedReceiveQueue);
        }
        self.check_event_room()?;
        sgl_len(&wr.sgl)?;
        if !self.phase.is_live() {
            self.flushed(wr.wr_id, WcOpcode::Recv);
            return Ok(());
        }
        self.rq.post(QN_SEND, wr.wr_id, &wr.sgl)?;
        Ok(())
    }

    /// Moves finished send queue entries to the event queue.
    pub fn retire(&mut self) {
        let events = &mut self.events;
        self.sq.retire(|wc| events.push(Event::Completion(wc)));
    }

    /// Flushes every outstanding work request, in queue order.
    fn flush_all(&mut self) {
        let events = &mut self.events;
        self.sq.flush(|wc| events.push(Event::Completion(wc)));
        let mut head_status = self.rq_head_status.take();
        for (qn, id) in self.rq.flush() {
            if qn != QN_SEND {
                continue;
            }
            let status = head_status.take().unwrap_or(WcStatus::WrFlushErr);
            self.events.push(Event::Completion(WorkCompletion {
                wr_id: id,
                status,
                opcode: WcOpcode::Recv,
                byte_len: 0,
                invalidated: None,
                solicited: false,
                imm_data: None,
            }));
        }
        self.orq.drain().for_each(drop);
        self.irq.clear();
        self.atomics_out.clear();
        self.atomics_in.clear();
        self.local_invalidate = None;
    }

    /// The STag a local invalidate at the head of the send queue asks the
    /// driver to invalidate now; the request completes as this returns it.
    pub fn take_local_invalidate(&mut self) -> Option<STag> {
        let stag = self.local_invalidate.take()?;
        self.sq.finish_current(Progress::Done(WcStatus::Success));
        self.retire();
        Some(stag)
    }

    fn enter_error(&mut self) {
        self.phase = Phase::Error;
        self.flush_all();
    }

    /// A protocol error we detected (or a local one that ends the stream):
    /// queue a TERMINATE about `offending` (the ULPDU at fault, or a header
    /// we reconstructed), report, flush.
    pub fn terminate_local(&mut self, cause: TermCause, offending: &[u8]) {
        if !self.phase.is_live() {
            return;
        }
        let msn = self.msn_term.take();
        self.pending_term = Some(terminate::build(cause, offending, msn));
        self.last_terminate = Some(TerminateRecord {
            by_peer: false,
            cause: cause.code,
        });
        self.events.push(Event::Terminated {
            by_peer: false,
            cause: cause.code,
            peer: None,
        });
        self.enter_error();
    }

    /// The initiator never sent its first FPDU: error, flush, report.
    pub fn first_fpdu_timed_out(&mut self) {
        if !matches!(self.phase, Phase::AwaitingFirstFpdu { .. }) {
            return;
        }
        self.events.push(Event::FirstFpduTimeout);
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
        if !self.phase.is_live() {
            return;
        }
        let (cause, peer) = match t {
            Some(t) => {
                let (code, peer) = terminate::peer_cause(t);
                (code, Some(peer))
            }
            None => (TermCode::RDMAP_CATASTROPHIC, None),
        };
        self.last_terminate = Some(TerminateRecord {
            by_peer: true,
            cause,
        });
        if let Some(offender) = t.and_then(terminate::offender) {
            let seq = self.sq.find_any(|e| match (offender, e.wr.op) {
                (
                    Offender::Untagged { qn: 0, msn },
                    SendOp::Send { .. } | SendOp::SendImm { .. },
                )
                | (
                    Offender::Untagged { qn: 1, msn },
                    SendOp::Read { .. } | SendOp::Atomic { .. },
                ) => e.msn == Some(msn),
                (
                    Offender::Tagged { stag, to },
                    SendOp::Write {
                        remote_stag,
                        remote_to,
                    }
                    | SendOp::WriteImm {
                        remote_stag,
                        remote_to,
                        ..
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
        self.events.push(Event::Terminated {
            by_peer: true,
            cause,
            peer,
        });
        self.enter_error();
    }

    pub fn close(&mut self) {
        if self.phase == Phase::Closed {
            return;
        }
        if self.phase != Phase::Error {
            self.flush_all();
        }
        self.phase = Phase::Closed;
    }

    pub fn peer_closed(&mut self) {
        if self.phase == Phase::Closed {
            return;
        }
        self.close();
        self.events.push(Event::PeerClosed);
    }

    pub fn is_idle(&self) -> bool {
        self.sq.is_empty()
            && self.irq.is_empty()
            && self.orq.is_empty()
            && self.pending_term.is_none()
            && self.atomics_out.is_empty()
            && self.atomics_in.is_empty()
            && !matches!(self.phase, Phase::RtrToSend(_))
    }

    pub fn wants_write(&self) -> bool {
        if self.pending_term.is_some() {
            return true;
        }
        self.phase.may_send()
            && (matches!(self.phase, Phase::RtrToSend(_))
                || self.sq_eligible()
                || self.irq_eligible()
                || !self.atomics_in.is_empty())
    }
}

/// RDMAP's receive queues; with RFC 7306 queue 1 also takes the larger
/// Atomic Requests and queue 3 the Atomic Responses. Without it a message
/// on queue 3 is refused as an invalid queue number.
fn receive_queues(cfg: &ConnectionConfig) -> UntaggedQueues {
    let mut q = UntaggedQueues::rdmap(cfg.rq_depth, cfg.max_recv_sge);
    if cfg.shared_receive {
        q.enable(QN_SEND, QueueMode::Shared);
    }
    if cfg.rfc7306 {
        let request = QueueMode::Inline {
            max_message: REQUEST_LEN as u32,
        };
        let response = QueueMode::Inline {
            max_message: RESPONSE_LEN as u32,
        };
        q.enable(QN_READ_REQUEST, request);
        q.enable(queue::ATOMIC_RESPONSE, response);
    }
    q
}
