//! The receive half: one ULPDU at a time, checked, placed and completed.

use core::ops::ControlFlow;

use ddp::memory::{Access, InvalidateError, Memory, STag};
use ddp::tagged::{check, place_tagged};
use ddp::untagged::{Placed, QN_SEND};
use ddp::wire::{SegmentRepr, TaggedRepr, UntaggedRepr, UNTAGGED_HEADER_LEN};
use ddp::UntaggedError;

use crate::completion::{WcOpcode, WcStatus, WorkCompletion};
use crate::opcode::Opcode;
use crate::read_queue::ReadOwner;
use crate::term::{Attach, TermCause, TermCode};
use crate::wire::{Body, Control, MessageRepr, ReadRequestRepr, TermControl, TerminateRepr};

use super::super::event::Event;
use super::Inner;

impl Inner {
    /// Handles one ULPDU from the deframer; breaks the feed once the
    /// connection stops accepting input.
    pub fn on_ulpdu<M: Memory + ?Sized>(&mut self, mem: &mut M, ulpdu: &[u8]) -> ControlFlow<()> {
        let Some(first) = self.phase.on_inbound() else {
            return ControlFlow::Break(());
        };
        match MessageRepr::parse(ulpdu) {
            Ok(m) => self.dispatch(mem, ulpdu, &m, first),
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
        self.flow()
    }

    fn dispatch<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        ulpdu: &[u8],
        m: &MessageRepr<'_>,
        first: bool,
    ) {
        match (&m.ddp, &m.body) {
            (SegmentRepr::Tagged(t), Body::Data(p)) => self.on_tagged(mem, ulpdu, t, m.opcode(), p),
            (SegmentRepr::Untagged(u), Body::Data(p)) => self.on_send(mem, ulpdu, u, p, first),
            (SegmentRepr::Untagged(u), Body::ReadRequest(r)) => {
                self.on_read_request(mem, ulpdu, u, r, first)
            }
            (_, Body::Terminate(t)) => self.peer_terminated(Some(t)),
            // MessageRepr::parse pairs bodies with models; this is unreachable.
            (SegmentRepr::Tagged(_), Body::ReadRequest(_)) => self.terminate_local(
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
        // A Read Response: it must continue the oldest outstanding READ.
        let placement = match self.orq.check(t.stag, t.to, payload.len(), t.last) {
            Ok(p) => p,
            Err(code) => return self.terminate_local(tagged_error(code), ulpdu),
        };
        if place_tagged(mem, self.pd, t, payload, Access::LOCAL_WRITE).is_err() {
            // Our own sink went bad since the request left: a local error
            // on the READ (siw: DDP catastrophic, local protection error).
            let owner = self.orq.drain().next().map(|r| r.owner);
            if let Some(ReadOwner::WorkRequest(seq)) = owner {
                self.sq.finish_seq(seq, WcStatus::LocProtErr);
            }
            return self.terminate_local(tagged_error(TermCode::DDP_CATASTROPHIC), ulpdu);
        }
        let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        if let Some(done) = self.orq.advance(&placement, len) {
            if let ReadOwner::WorkRequest(seq) = done.owner {
                self.sq.finish_seq(seq, WcStatus::Success);
                self.retire();
            }
        }
    }

    fn on_send<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        ulpdu: &[u8],
        u: &UntaggedRepr,
        payload: &[u8],
        first: bool,
    ) {
        let msn = u.msn.wrapping_sub(self.send_msn_skip);
        let expected = self.rq.queue(QN_SEND).map(|q| q.expected_msn());
        if first && payload.is_empty() && u.last && u.mo == 0 && expected == Some(msn) {
            // A zero-length Send RTR: it takes no receive buffer.
            self.send_msn_skip = self.send_msn_skip.wrapping_add(1);
            return;
        }
        let seen = UntaggedRepr { msn, ..*u };
        match self.rq.place(mem, self.pd, &seen, payload) {
            Ok(Placed::Complete(c)) => {
                let opcode = Control(c.rsvd_ulp).opcode();
                let mut wc = WorkCompletion {
                    wr_id: c.id,
                    status: WcStatus::Success,
                    opcode: WcOpcode::Recv,
                    byte_len: c.len,
                    invalidated: None,
                    solicited: opcode.is_solicited(),
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
                            self.events.push_back(Event::Completion(wc));
                            return self
                                .terminate_local(TermCause::with_attach(code, Attach::Ddp), ulpdu);
                        }
                    }
                }
                self.events.push_back(Event::Completion(wc));
            }
            Ok(Placed::Partial { .. } | Placed::Inline { .. }) => {}
            Err(e) => {
                self.rq_head_status = match e {
                    UntaggedError::TooLong { .. } => Some(WcStatus::LocLenErr),
                    UntaggedError::LocalBuffer { .. } => Some(WcStatus::LocProtErr),
                    _ => None,
                };
                self.terminate_local(TermCause::with_attach(e.terminate(), Attach::Ddp), ulpdu);
            }
        }
    }

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

/// An untagged segment on queue 2 whose opcode says Terminate, whatever
/// else is wrong with it.
fn is_terminate(ulpdu: &[u8]) -> bool {
    match ulpdu {
        [ddp, rdmap, ..] => ddp & 0x80 == 0 && Control(*rdmap).opcode() == Opcode::Terminate,
        _ => false,
    }
}
