//! The receive half: one ULPDU at a time, checked, placed and completed.

use core::ops::ControlFlow;

use ddp::memory::{Access, InvalidateError, Memory, STag};
use ddp::tagged::{check, place_tagged};
use ddp::untagged::{Placed, SharedBuffers, QN_SEND};
use ddp::wire::{SegmentRepr, TaggedRepr, UntaggedRepr, UNTAGGED_HEADER_LEN};
use ddp::UntaggedError;

use crate::completion::{WcOpcode, WcStatus, WorkCompletion};
use crate::opcode::Opcode;
use crate::read_queue::{ReadOwner, ResponseError};
use crate::term::{Attach, TermCause, TermCode};
use crate::wire::atomic::OPERAND_LEN;
use crate::wire::{
    AtomicOp, AtomicRequestRepr, AtomicResponseRepr, Body, Control, DataSegment, ImmediateDataRepr,
    MessageRepr, ReadRequestRepr, TermControl, TerminateRepr,
};

use super::super::event::Event;
use super::Inner;

impl Inner {
    /// Handles one ULPDU from the deframer; breaks the feed once the
    /// connection stops accepting input.
    /// `srq`: the pool a shared queue 0 takes its buffers from.
    pub fn on_ulpdu<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        srq: Option<&mut SharedBuffers>,
        ulpdu: &[u8],
    ) -> ControlFlow<()> {
        let Some(first) = self.phase.on_inbound() else {
            return ControlFlow::Break(());
        };
        // Data segments, nearly all of a transfer, in one pass; everything
        // else (and anything malformed) through the full parse.
        match MessageRepr::parse_data(ulpdu) {
            Some(DataSegment::Tagged(t, p)) => {
                let opcode = Control(t.rsvd_ulp).opcode();
                self.on_tagged(mem, ulpdu, &t, opcode, p);
            }
            Some(DataSegment::Send(u, p)) => self.on_send(mem, srq, ulpdu, &u, p, first),
            None => match MessageRepr::parse_read_request(ulpdu) {
                // One per READ: read in one pass too.
                Some((u, r)) => self.on_read_request(mem, ulpdu, &u, &r, first),
                None => self.on_other(mem, srq, ulpdu, first),
            },
        }
        self.flow()
    }

    /// A ULPDU that is neither a well-formed data segment nor a Read
    /// Request: parsed in full, then handled or refused. Kept out of line:
    /// the data path above stays small.
    #[inline(never)]
    fn on_other<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        srq: Option<&mut SharedBuffers>,
        ulpdu: &[u8],
        first: bool,
    ) {
        let parsed = if self.rfc7306 {
            MessageRepr::parse_rfc7306(ulpdu)
        } else {
            MessageRepr::parse(ulpdu)
        };
        match parsed {
            Ok(m) => self.dispatch(mem, srq, ulpdu, &m, first),
            Err(e) => {
                if is_terminate(ulpdu) {
                    // A TERMINATE is never answered with one.
                    let t = ulpdu
                        .get(UNTAGGED_HEADER_LEN..UNTAGGED_HEADER_LEN + 4)
                        .and_then(|w| <[u8; 4]>::try_from(w).ok())
                        .map(|w| {
                            let (control, layout) = TermControl::recognise(w);
                            TerminateRepr {
                                control,
                                layout,
                                attached: None,
                            }
                        });
                    self.peer_terminated(t.as_ref());
                } else {
                    self.terminate_local(e.into(), ulpdu);
                }
            }
        }
    }

    fn dispatch<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        srq: Option<&mut SharedBuffers>,
        ulpdu: &[u8],
        m: &MessageRepr<'_>,
        first: bool,
    ) {
        match (&m.ddp, &m.body) {
            (SegmentRepr::Tagged(t), Body::Data(p)) => self.on_tagged(mem, ulpdu, t, m.opcode(), p),
            (SegmentRepr::Untagged(u), Body::Data(p)) => self.on_send(mem, srq, ulpdu, u, p, first),
            (SegmentRepr::Untagged(u), Body::ReadRequest(r)) => {
                self.on_read_request(mem, ulpdu, u, r, first)
            }
            (SegmentRepr::Untagged(u), Body::Immediate(i)) => {
                self.on_immediate(mem, srq, ulpdu, u, i, m.opcode())
            }
            (SegmentRepr::Untagged(u), Body::AtomicRequest(r)) => {
                self.on_atomic_request(mem, ulpdu, u, r)
            }
            (SegmentRepr::Untagged(u), Body::AtomicResponse(r)) => {
                self.on_atomic_response(mem, ulpdu, u, r)
            }
            (_, Body::Terminate(t)) => self.peer_terminated(Some(t)),
            // MessageRepr::parse pairs bodies with models; this is unreachable.
            (SegmentRepr::Tagged(_), _) => self.terminate_local(
                TermCause::with_attach(TermCode::RDMAP_UNEXPECTED_OPCODE, Attach::Ddp),
                ulpdu,
            ),
        }
    }

    fn on_tagged<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        ulpdu: &[u8],
        t: &TaggedRepr,
        opcode: Opcode,
        payload: &[u8],
    ) {
        let tagged_error = |code: TermCode| TermCause::with_attach(code, Attach::Ddp);
        if let Err(e) = self.tagged_rx.accept(t, payload.len()) {
            return self.terminate_local(tagged_error(e.terminate()), ulpdu);
        }
        if opcode == Opcode::RdmaWrite {
            if let Err(e) = place_tagged(mem, self.pd, t, payload, Access::REMOTE_WRITE) {
                self.terminate_local(tagged_error(e.terminate()), ulpdu);
            }
            return;
        }
        // A Read Response: it must continue the oldest outstanding READ;
        // checked, placed and recorded in one look at it.
        let (pd, len) = (self.pd, payload.len());
        let place = || place_tagged(mem, pd, t, payload, Access::LOCAL_WRITE);
        match self.orq.respond(t.stag, t.to, len, t.last, place) {
            Ok(None) => {}
            Ok(Some(done)) => {
                if let ReadOwner::WorkRequest(seq) = done.owner {
                    self.sq.finish_seq(seq, WcStatus::Success);
                    self.retire();
                }
            }
            Err(ResponseError::Refused(code)) => self.terminate_local(tagged_error(code), ulpdu),
            Err(ResponseError::Place(_)) => {
                // Our own sink went bad since the request left: a local
                // error on the READ (siw: DDP catastrophic, local
                // protection error).
                let owner = self.orq.drain().next().map(|r| r.owner);
                if let Some(ReadOwner::WorkRequest(seq)) = owner {
                    self.sq.finish_seq(seq, WcStatus::LocProtErr);
                }
                self.terminate_local(tagged_error(TermCode::DDP_CATASTROPHIC), ulpdu)
            }
        }
    }

    /// Inlined into the data path: `u` then stays in registers (read
    /// back from memory, wider than its fields were written, it stalls).
    #[inline(always)]
    fn on_send<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        srq: Option<&mut SharedBuffers>,
        ulpdu: &[u8],
        u: &UntaggedRepr,
        payload: &[u8],
        first: bool,
    ) {
        let msn = u.msn.wrapping_sub(self.send_msn_skip);
        let expected = || self.rq.queue(QN_SEND).map(|q| q.expected_msn());
        if first && payload.is_empty() && u.last && u.mo == 0 && expected() == Some(msn) {
            // A zero-length Send RTR: it takes no receive buffer.
            self.send_msn_skip = self.send_msn_skip.wrapping_add(1);
            return;
        }
        let seen = UntaggedRepr { msn, ..*u };
        if let Err(refused) = self.continues_its_message(&seen) {
            return self.refuse_continuation(refused, ulpdu);
        }
        match self.rq.place_with(mem, self.pd, &seen, payload, srq) {
            Ok(Placed::Complete(c)) => {
                let opcode = Control(c.rsvd_ulp).opcode();
                let mut wc = WorkCompletion {
                    wr_id: c.id,
                    status: WcStatus::Success,
                    opcode: WcOpcode::Recv,
                    byte_len: c.len,
                    invalidated: None,
                    solicited: opcode.is_solicited(),
                    imm_data: None,
                };
                if opcode.invalidates() {
                    // Invalidate before the receive completes: the
                    // consumer must see the STag invalid with it.
                    let stag = STag(c.rsvd_ulp2);
                    match mem.invalidate(stag, self.pd) {
                        Ok(()) => wc.invalidated = Some(stag),
                        Err(e) => {
                            let code = match e {
                                InvalidateError::WrongPd => {
                                    TermCode::RDMAP_PROTECTION_CANNOT_INVALIDATE
                                }
                                InvalidateError::Invalid | InvalidateError::NotAllowed => {
                                    TermCode::RDMAP_OPERATION_CANNOT_INVALIDATE
                                }
                            };
                            wc.status = WcStatus::RemInvReqErr;
                            wc.byte_len = 0;
                            self.events.push(Event::Completion(wc));
                            return self
                                .terminate_local(TermCause::with_attach(code, Attach::Ddp), ulpdu);
                        }
                    }
                }
                self.events.push(Event::Completion(wc));
            }
            Ok(Placed::Partial { .. } | Placed::Inline { .. }) => {}
            Err(e) => self.receive_failed(e, ulpdu),
        }
    }

    /// Checks a segment on queue 0 against the message it continues, if
    /// it continues one: RDMAP carries its Control Field (opcode, and with
    /// it the solicited flag) and, for a Send with Invalidate, the STag to
    /// invalidate in every segment of the message (RFC 5040 section 4.1),
    /// so a later segment must carry the first one's. Otherwise the
    /// message's kind would be taken from its last segment: an Immediate
    /// Data segment could complete a half-received Send as a RecvImm.
    ///
    /// A changed opcode is refused as RFC 5040 section 4.8 refuses an
    /// opcode not allowed where it arrives (remote operation error,
    /// unexpected opcode); a changed STag as one that cannot be
    /// invalidated (remote operation error). The receive being filled
    /// completes with the matching error. A segment of another message is
    /// left to DDP, which refuses it.
    #[inline(always)]
    fn continues_its_message(&self, u: &UntaggedRepr) -> Result<(), (TermCode, WcStatus)> {
        let Some(q) = self.rq.queue(QN_SEND) else {
            return Ok(());
        };
        let Some((control, stag)) = q.message_ulp_fields() else {
            return Ok(());
        };
        if u.msn != q.expected_msn() {
            return Ok(());
        }
        if u.rsvd_ulp != control {
            return Err((TermCode::RDMAP_UNEXPECTED_OPCODE, WcStatus::RemOpErr));
        }
        if Control(control).opcode().invalidates() && u.rsvd_ulp2 != stag {
            return Err((
                TermCode::RDMAP_OPERATION_CANNOT_INVALIDATE,
                WcStatus::RemInvReqErr,
            ));
        }
        Ok(())
    }

    /// A segment that changed its message's RDMAP fields: the receive
    /// being filled fails and the stream ends.
    #[inline(never)]
    fn refuse_continuation(&mut self, (code, status): (TermCode, WcStatus), ulpdu: &[u8]) {
        self.rq_head_status = Some(status);
        self.terminate_local(TermCause::with_attach(code, Attach::Ddp), ulpdu);
    }

    /// A message on queue 0 could not land: the receive it was filling
    /// gets a matching status and the stream ends.
    fn receive_failed(&mut self, e: UntaggedError, ulpdu: &[u8]) {
        self.rq_head_status = match e {
            UntaggedError::TooLong { .. } => Some(WcStatus::LocLenErr),
            UntaggedError::LocalBuffer { .. } => Some(WcStatus::LocProtErr),
            _ => None,
        };
        self.terminate_local(TermCause::with_attach(e.terminate(), Attach::Ddp), ulpdu);
    }

    /// RFC 7306 Immediate Data: consumes the next posted receive (its MSN
    /// in the Send sequence) without placing anything, and completes it
    /// with the value.
    fn on_immediate<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        srq: Option<&mut SharedBuffers>,
        ulpdu: &[u8],
        u: &UntaggedRepr,
        i: &ImmediateDataRepr,
        opcode: Opcode,
    ) {
        let seen = UntaggedRepr {
            msn: u.msn.wrapping_sub(self.send_msn_skip),
            ..*u
        };
        if let Err(refused) = self.continues_its_message(&seen) {
            return self.refuse_continuation(refused, ulpdu);
        }
        match self.rq.place_with(mem, self.pd, &seen, &[], srq) {
            Ok(Placed::Complete(c)) => self.events.push(Event::Completion(WorkCompletion {
                wr_id: c.id,
                status: WcStatus::Success,
                opcode: WcOpcode::RecvImm,
                byte_len: 0,
                invalidated: None,
                solicited: opcode.is_solicited(),
                imm_data: Some(i.imm()),
            })),
            // A single segment with L set always completes.
            Ok(_) => {}
            Err(e) => self.receive_failed(e, ulpdu),
        }
    }

    /// RFC 7306 Atomic Request: checked (sequence, budget shared with
    /// READs, operation, STag and rights, alignment), carried out on the
    /// target under the region's hold, and its response queued.
    fn on_atomic_request<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        ulpdu: &[u8],
        u: &UntaggedRepr,
        r: &AtomicRequestRepr,
    ) {
        let fail = |code: TermCode| TermCause::with_attach(code, Attach::Ddp);
        let body = ulpdu.get(UNTAGGED_HEADER_LEN..).unwrap_or_default();
        if let Err(e) = self.rq.place(mem, self.pd, u, body) {
            return self.terminate_local(fail(e.terminate()), ulpdu);
        }
        if self.irq.counted() + self.atomics_in.len() >= self.irq.ird() {
            // Beyond IRD, as a READ beyond it is.
            return self.terminate_local(fail(TermCode::RDMAP_CATASTROPHIC_STREAM), ulpdu);
        }
        if let AtomicOp::Unknown(_) = r.op {
            return self.terminate_local(fail(ATOMIC_UNSUPPORTED), ulpdu);
        }
        let region = mem.region(r.stag);
        let at = match check(
            region,
            self.pd,
            r.stag,
            r.to,
            OPERAND_LEN,
            Access::REMOTE_ATOMIC,
        ) {
            Ok(at) => at,
            Err(e) => return self.terminate_local(fail(e.rdmap_terminate()), ulpdu),
        };
        if !r.to.is_multiple_of(OPERAND_LEN as u64) {
            return self.terminate_local(fail(ATOMIC_MISALIGNED), ulpdu);
        }
        let mut apply = |old: u64| r.apply(old).unwrap_or(old);
        match mem.update_u64(r.stag, at, &mut apply) {
            Ok(original) => self.atomics_in.push(AtomicResponseRepr {
                request_id: r.request_id,
                original,
            }),
            // The region went away between the check and the update.
            Err(_) => self.terminate_local(fail(TermCode::RDMAP_INVALID_STAG), ulpdu),
        }
    }

    /// RFC 7306 Atomic Response: it answers our oldest atomic; the
    /// original value lands in that request's sink.
    fn on_atomic_response<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        ulpdu: &[u8],
        u: &UntaggedRepr,
        r: &AtomicResponseRepr,
    ) {
        let fail = |code: TermCode| TermCause::with_attach(code, Attach::Ddp);
        let body = ulpdu.get(UNTAGGED_HEADER_LEN..).unwrap_or_default();
        if let Err(e) = self.rq.place(mem, self.pd, u, body) {
            return self.terminate_local(fail(e.terminate()), ulpdu);
        }
        let done = match self.atomics_out.answer(r) {
            Ok(done) => done,
            Err(code) => return self.terminate_local(fail(code), ulpdu),
        };
        let s = done.sink;
        let placed = check(
            mem.region(s.stag),
            self.pd,
            s.stag,
            s.to,
            OPERAND_LEN,
            Access::LOCAL_WRITE,
        )
        .ok()
        .and_then(|at| mem.write(s.stag, at, &r.original.to_ne_bytes()).ok());
        if placed.is_none() {
            // Our own sink went bad since the request left, as for a READ.
            self.sq.finish_seq(done.seq, WcStatus::LocProtErr);
            return self.terminate_local(fail(TermCode::DDP_CATASTROPHIC), ulpdu);
        }
        self.sq.finish_seq(done.seq, WcStatus::Success);
        self.retire();
    }

    /// Out of line: one per READ, kept off the data path.
    #[inline(never)]
    fn on_read_request<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        ulpdu: &[u8],
        u: &UntaggedRepr,
        r: &ReadRequestRepr,
        first: bool,
    ) {
        let body = ulpdu.get(UNTAGGED_HEADER_LEN..).unwrap_or_default();
        if let Err(e) = self.rq.place(mem, self.pd, u, body) {
            return self.terminate_local(TermCause::with_attach(e.terminate(), Attach::Ddp), ulpdu);
        }
        if first && r.size == 0 {
            // A zero-length Read RTR: answered outside the IRD budget.
            self.irq.accept_rtr(*r, u.msn);
            return;
        }
        if !self.atomics_in.is_empty()
            && self.irq.counted() + self.atomics_in.len() >= self.irq.ird()
        {
            // READs and atomics share IRD.
            let code = TermCode::RDMAP_CATASTROPHIC_STREAM;
            return self.terminate_local(TermCause::with_attach(code, Attach::DdpAndRdma), ulpdu);
        }
        if let Err(code) = self.irq.accept(*r, u.msn) {
            return self.terminate_local(TermCause::with_attach(code, Attach::DdpAndRdma), ulpdu);
        }
        let size = usize::try_from(r.size).unwrap_or(usize::MAX);
        let region = mem.region(r.source_stag);
        if let Err(e) = check(
            region,
            self.pd,
            r.source_stag,
            r.source_to,
            size,
            Access::REMOTE_READ,
        ) {
            self.terminate_local(
                TermCause::with_attach(e.rdmap_terminate(), Attach::DdpAndRdma),
                ulpdu,
            );
        }
    }
}

/// An Atomic Request naming an AOpCode RFC 7306 does not define: remote
/// operation error, unspecified (RFC 5040 assigns nothing closer).
const ATOMIC_UNSUPPORTED: TermCode = TermCode::RDMAP_OPERATION_UNSPECIFIED;

/// An Atomic Request whose target is not 8-byte aligned: remote
/// protection error, base or bounds violation (an 8-byte operand there is
/// not one the STag may be operated on at).
const ATOMIC_MISALIGNED: TermCode = TermCode::RDMAP_BASE_BOUNDS;

/// An untagged segment on queue 2 whose opcode says Terminate, whatever
/// else is wrong with it.
fn is_terminate(ulpdu: &[u8]) -> bool {
    match ulpdu {
        [ddp, rdmap, ..] => ddp & 0x80 == 0 && Control(*rdmap).opcode() == Opcode::Terminate,
        _ => false,
    }
}
