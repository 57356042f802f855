//! The transmit half: choosing the next FPDU and building it straight into
//! the transport's buffer.

use ddp::memory::{Access, CopyHook, Memory, PdId, STag};
use ddp::tagged::check;
use ddp::untagged::{QN_READ_REQUEST, QN_SEND};
use ddp::wire::{
    EmitError, SegmentRepr, TaggedRepr, UntaggedRepr, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN,
};

use crate::completion::WcStatus;
use crate::opcode::queue;
use crate::opcode::Opcode;
use crate::read_queue::{ReadOwner, ReadSink};
use crate::term::{Attach, Layer, TermCause, TermCode};
use crate::wire::atomic::REQUEST_LEN as ATOMIC_REQUEST_LEN;
use crate::wire::{
    AtomicRequestRepr, AtomicResponseRepr, Body, Control, ImmediateDataRepr, MessageRepr,
    ReadRequest, ReadRequestRepr,
};
use crate::work_request::{AtomicArgs, SendOp, Sge};

use super::super::framing::FpduCrc;
use super::super::send_queue::Progress;
use super::phase::Phase;
use super::Inner;

/// The STag siw and iw_cxgb4 use where a zero-length message needs one
/// (RTRs, and Reads with no sink buffer): never 0 on the wire.
const NULL_STAG: STag = STag(1);

/// Header bytes of one FPDU: the DDP header and the largest RDMAP header
/// behind it, an Atomic Request (a Read Request is shorter).
const MAX_HEADER: usize = UNTAGGED_HEADER_LEN + ATOMIC_REQUEST_LEN;
// The larger DDP header is the untagged one, so every header fits.
const _: () = assert!(UNTAGGED_HEADER_LEN >= TAGGED_HEADER_LEN);

/// Which outbound stream the scheduler serves next when both are ready:
/// they alternate FPDU by FPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    SendQueue,
    ReadResponses,
}

impl Turn {
    const fn other(self) -> Turn {
        match self {
            Turn::SendQueue => Turn::ReadResponses,
            Turn::ReadResponses => Turn::SendQueue,
        }
    }
}

/// What one attempt to produce an FPDU did.
enum Step {
    /// An FPDU of this many bytes is in the buffer.
    Wrote(usize),
    /// Nothing due, or the next FPDU does not fit.
    Blocked,
    /// State changed without output (a local error queued a TERMINATE).
    Again,
}

/// RDMAP's local catastrophic error, unspecified (siw's choice when a
/// local buffer fails while sending).
const LOCAL_CATASTROPHIC: TermCode = TermCode::new(Layer::Rdmap, 0, 0xff);

/// Where the gather of one run of segments stands in the SGL, and which
/// span of the current SGE is already checked.
///
/// The pieces of one SGE that FPDU after FPDU copies are checked once, as
/// the whole rest of the SGE (valid STag, our PD, inside the region; local
/// read needs no access right), not once per FPDU. When that whole rest is
/// not valid, each piece is checked on its own, as if nothing were cached:
/// the FPDUs before the bad bytes still go out and the one that reaches
/// them fails, at the same point as with a check per piece. A region
/// deregistered within the run is caught by the read itself.
#[derive(Debug, Default)]
struct Gather {
    /// The SGE the next piece starts in.
    sge: usize,
    /// Message offset of that SGE's first byte.
    sge_start: u32,
    /// The SGE's bytes from this offset (within the SGE) to its end were
    /// checked whole and start at this region offset.
    checked: Option<(u32, u64)>,
}

impl Gather {
    /// Copies `buf.len()` message bytes starting at `offset` from the SGL;
    /// calls of one run come with rising offsets. With `register`, the
    /// FPDU's CRC register is advanced over the bytes as they are copied.
    #[inline]
    fn copy<M: Memory + ?Sized>(
        &mut self,
        mem: &M,
        pd: PdId,
        sgl: &[Sge],
        mut offset: u32,
        buf: &mut [u8],
        mut register: Option<&mut u32>,
    ) -> Result<(), ()> {
        let mut done = 0usize;
        while done < buf.len() {
            let s = sgl.get(self.sge).ok_or(())?;
            let within = offset.checked_sub(self.sge_start).ok_or(())?;
            if within >= s.len {
                // Cannot overflow: the SGE ends at or before `offset`.
                self.sge_start += s.len;
                self.sge += 1;
                self.checked = None;
                continue;
            }
            let rest = s.len - within;
            let n = (rest as usize).min(buf.len() - done);
            let at = match self.checked {
                Some((from, at)) if within >= from => at + u64::from(within - from),
                _ => {
                    let to = s.to.wrapping_add(u64::from(within));
                    let region = mem.region(s.stag);
                    match check(region, pd, s.stag, to, rest as usize, Access::NONE) {
                        Ok(at) => {
                            self.checked = Some((within, at));
                            at
                        }
                        Err(_) => check(region, pd, s.stag, to, n, Access::NONE).map_err(|_| ())?,
                    }
                }
            };
            let piece = buf.get_mut(done..done + n).ok_or(())?;
            match register.as_deref_mut() {
                Some(r) => mem
                    .read_via(s.stag, at, piece, &mut FpduCrc(r))
                    .map_err(|_| ())?,
                None => mem.read(s.stag, at, piece).map_err(|_| ())?,
            }
            done += n;
            // Cannot overflow: the piece lies within the message.
            offset += n as u32;
        }
        Ok(())
    }
}

/// Writes the DDP header and, after it, the Read Request into `out`,
/// returning their length. `out` holds the largest pair (`MAX_HEADER`), so
/// this does not fail; were it to, callers end the stream rather than send
/// a header with a field missing.
fn header_bytes(
    ddp: &SegmentRepr,
    extra: Option<&ReadRequestRepr>,
    out: &mut [u8; MAX_HEADER],
) -> Result<usize, EmitError> {
    let n = ddp.emit(out)?;
    match extra {
        Some(r) => {
            let rest = out.get_mut(n..).unwrap_or_default();
            r.emit(&mut ReadRequest::new_unchecked(rest))?;
            Ok(n + r.buffer_len())
        }
        None => Ok(n),
    }
}

impl Inner {
    pub fn poll_transmit<M: Memory + ?Sized>(&mut self, mem: &M, out: &mut [u8]) -> usize {
        self.transmit_fpdus(mem, out)
    }

    /// `poll_transmit`, reporting where in `out` each FPDU ends.
    pub fn poll_transmit_records<M: Memory + ?Sized>(
        &mut self,
        mem: &M,
        out: &mut [u8],
        fpdu_end: impl FnMut(usize),
    ) -> usize {
        self.tx.start_recording();
        let written = self.transmit_fpdus(mem, out);
        self.tx.finish_recording(fpdu_end);
        written
    }

    fn transmit_fpdus<M: Memory + ?Sized>(&mut self, mem: &M, out: &mut [u8]) -> usize {
        let mut written = 0;
        // Every FPDU is at least 8 bytes and a state change without output
        // happens at most once per error, so this bound is never reached.
        for _ in 0..out.len() / 8 + 4 {
            let Some(rest) = out.get_mut(written..) else {
                break;
            };
            match self.next_fpdu(mem, rest) {
                Step::Wrote(n) => written += n,
                Step::Again => continue,
                Step::Blocked => break,
            }
        }
        self.tx.traffic.bytes(written);
        written
    }

    /// The send queue's current entry may go now.
    pub fn sq_eligible(&self) -> bool {
        let Some(e) = self.sq.current() else {
            return false;
        };
        if e.wr.fence && !e.started() && !(self.orq.is_empty() && self.atomics_out.is_empty()) {
            // Fenced: earlier Reads and atomics complete first.
            return false;
        }
        match e.wr.op {
            SendOp::Read { .. } => self.orq.has_room() && self.rd_atomic_room(),
            SendOp::Atomic { .. } => self.rd_atomic_room(),
            SendOp::WriteImm { .. } if e.progress == Progress::Immediate => true,
            SendOp::Write { .. } | SendOp::WriteImm { .. } => !self.read_response_started(),
            SendOp::Send { .. } | SendOp::SendImm { .. } => true,
            SendOp::LocalInvalidate { .. } => self.local_invalidate.is_none(),
        }
    }

    /// Another READ or atomic may go without exceeding ORD: they share it.
    fn rd_atomic_room(&self) -> bool {
        self.orq.len() + self.atomics_out.len() < self.orq.ord()
    }

    /// The oldest Read Response may go now.
    pub fn irq_eligible(&self) -> bool {
        let tagged_busy = self.sq_current_is_write() && self.sq.current_started();
        self.irq.front().is_some() && !tagged_busy
    }

    /// The oldest Read Response has segments out and more to send: a Write
    /// may not start between them (one tagged message at a time). Derived
    /// from the queue, so it cannot disagree with it.
    fn read_response_started(&self) -> bool {
        self.irq.front().is_some_and(|p| p.sent > 0)
    }

    /// The current entry is a tagged message still sending data.
    fn sq_current_is_write(&self) -> bool {
        matches!(
            self.sq.current().map(|e| (e.wr.op, e.progress)),
            Some((SendOp::Write { .. }, _))
                | Some((SendOp::WriteImm { .. }, Progress::Transmitting { .. }))
        )
    }

    fn next_fpdu<M: Memory + ?Sized>(&mut self, mem: &M, out: &mut [u8]) -> Step {
        if let Some(t) = &self.pending_term {
            return match self.tx.frame(t.bytes(), &[], out) {
                Some(n) => {
                    self.pending_term = None;
                    Step::Wrote(n)
                }
                None => Step::Blocked,
            };
        }
        if !self.phase.may_send() {
            return Step::Blocked;
        }
        if let Phase::RtrToSend(kind) = self.phase {
            return self.emit_rtr(kind, out);
        }
        if let Some(r) = self.atomics_in.front().copied() {
            // Twelve bytes on their own queue: they go before anything else.
            return self.emit_atomic_response(r, out);
        }
        let (sq, irq) = (self.sq_eligible(), self.irq_eligible());
        let serve = match (sq, irq) {
            (true, true) => self.turn,
            (true, false) => Turn::SendQueue,
            (false, true) => Turn::ReadResponses,
            (false, false) => return Step::Blocked,
        };
        let step = match serve {
            Turn::SendQueue => self.emit_sq(mem, out),
            Turn::ReadResponses => self.emit_irq(mem, out),
        };
        if matches!(step, Step::Wrote(_)) && sq && irq {
            self.turn = serve.other();
        }
        step
    }

    #[inline]
    fn fits(&self, ulpdu_len: usize, out: &[u8]) -> bool {
        self.tx.fpdu_len(ulpdu_len) <= out.len()
    }

    /// The RFC 6581 ready-to-receive message, as siw sends it.
    fn emit_rtr(&mut self, kind: mpa::Rtr, out: &mut [u8]) -> Step {
        let mut hdr = [0u8; MAX_HEADER];
        let (ddp, read) = match kind {
            mpa::Rtr::Write => (
                SegmentRepr::Tagged(TaggedRepr::new(
                    true,
                    Control::new(Opcode::RdmaWrite).0,
                    NULL_STAG,
                    0,
                )),
                None,
            ),
            mpa::Rtr::Send => (
                SegmentRepr::Untagged(UntaggedRepr::new(
                    true,
                    Control::new(Opcode::Send).0,
                    0,
                    QN_SEND,
                    self.msn_send.peek(),
                    0,
                )),
                None,
            ),
            mpa::Rtr::Read => (
                SegmentRepr::Untagged(UntaggedRepr::new(
                    true,
                    Control::new(Opcode::ReadRequest).0,
                    0,
                    QN_READ_REQUEST,
                    self.msn_read.peek(),
                    0,
                )),
                Some(ReadRequestRepr {
                    sink_stag: NULL_STAG,
                    sink_to: 0,
                    size: 0,
                    source_stag: NULL_STAG,
                    source_to: 0,
                }),
            ),
        };
        let Ok(n) = header_bytes(&ddp, read.as_ref(), &mut hdr) else {
            return self.header_overflow();
        };
        let Some(w) = self.tx.frame(&hdr[..n], &[], out) else {
            return Step::Blocked;
        };
        match kind {
            mpa::Rtr::Write => {}
            mpa::Rtr::Send => {
                self.msn_send.take();
            }
            mpa::Rtr::Read => {
                self.msn_read.take();
                self.orq.push_rtr(ReadSink {
                    stag: NULL_STAG,
                    to: 0,
                    len: 0,
                });
            }
        }
        self.phase = Phase::Established;
        Step::Wrote(w)
    }

    /// A local buffer of the current send queue entry failed its check:
    /// the entry fails with `status` and the stream ends (siw: RDMAP local
    /// catastrophic error).
    fn local_sq_error(&mut self, status: WcStatus) -> Step {
        self.sq.finish_current(Progress::Done(status));
        self.terminate_local(
            TermCause::with_attach(LOCAL_CATASTROPHIC, Attach::Nothing),
            &[],
        );
        Step::Again
    }

    /// A header did not fit the buffer sized for every header: a local
    /// fault, so the stream ends with a local catastrophic error instead of
    /// carrying a header with a field missing.
    fn header_overflow(&mut self) -> Step {
        self.terminate_local(
            TermCause::with_attach(LOCAL_CATASTROPHIC, Attach::Nothing),
            &[],
        );
        Step::Again
    }

    fn emit_sq<M: Memory + ?Sized>(&mut self, mem: &M, out: &mut [u8]) -> Step {
        let Some(e) = self.sq.current() else {
            return Step::Blocked;
        };
        let with_imm = matches!(e.wr.op, SendOp::SendImm { .. } | SendOp::WriteImm { .. });
        let sent = match e.progress {
            // Data out, or none to send: the Immediate Data message.
            Progress::Immediate => return self.emit_immediate(out),
            Progress::Transmitting { sent: 0 } if with_imm && e.len == 0 => {
                return self.emit_immediate(out)
            }
            Progress::Transmitting { sent } => sent,
            _ => return Step::Blocked,
        };
        match e.wr.op {
            SendOp::LocalInvalidate { stag } => self.emit_local_invalidate(mem, stag),
            SendOp::Read {
                remote_stag,
                remote_to,
            } => {
                let sink = match e.wr.sgl.first() {
                    Some(s) => ReadSink {
                        stag: s.stag,
                        to: s.to,
                        len: s.len,
                    },
                    None => ReadSink {
                        stag: NULL_STAG,
                        to: 0,
                        len: 0,
                    },
                };
                self.emit_read_request(mem, e.seq, sink, remote_stag, remote_to, out)
            }
            SendOp::Atomic {
                remote_stag,
                remote_to,
                args,
            } => {
                let sink = e.wr.sgl.first().copied().unwrap_or(Sge {
                    stag: NULL_STAG,
                    to: 0,
                    len: 0,
                });
                self.emit_atomic_request(mem, e.seq, sink, remote_stag, remote_to, args, out)
            }
            SendOp::Send {
                solicited,
                invalidate,
            } => {
                let ddp = SegmentRepr::Untagged(UntaggedRepr::new(
                    false,
                    Control::new(Opcode::send(solicited, invalidate.is_some())).0,
                    invalidate.map_or(0, |s| s.0),
                    QN_SEND,
                    e.msn.unwrap_or(self.msn_send.peek()),
                    sent,
                ));
                self.emit_data_segment(mem, ddp, sent, out)
            }
            SendOp::SendImm { .. } => {
                // The data goes as a plain Send; the solicited event, if
                // asked for, rides on the Immediate Data message after it.
                let ddp = SegmentRepr::Untagged(UntaggedRepr::new(
                    false,
                    Control::new(Opcode::Send).0,
                    0,
                    QN_SEND,
                    e.msn.unwrap_or(self.msn_send.peek()),
                    sent,
                ));
                self.emit_data_segment(mem, ddp, sent, out)
            }
            SendOp::Write {
                remote_stag,
                remote_to,
            }
            | SendOp::WriteImm {
                remote_stag,
                remote_to,
                ..
            } => {
                let ddp = SegmentRepr::Tagged(TaggedRepr::new(
                    false,
                    Control::new(Opcode::RdmaWrite).0,
                    remote_stag,
                    remote_to.wrapping_add(u64::from(sent)),
                ));
                self.emit_data_segment(mem, ddp, sent, out)
            }
        }
    }

    /// The Read Request of the current entry (always one segment).
    fn emit_read_request<M: Memory + ?Sized>(
        &mut self,
        mem: &M,
        seq: u64,
        sink: ReadSink,
        remote_stag: STag,
        remote_to: u64,
        out: &mut [u8],
    ) -> Step {
        let msn = self.msn_read.peek();
        let ddp = SegmentRepr::Untagged(UntaggedRepr::new(
            true,
            Control::new(Opcode::ReadRequest).0,
            0,
            QN_READ_REQUEST,
            msn,
            0,
        ));
        let request = ReadRequestRepr {
            sink_stag: sink.stag,
            sink_to: sink.to,
            size: sink.len,
            source_stag: remote_stag,
            source_to: remote_to,
        };
        let mut hdr = [0u8; MAX_HEADER];
        let Ok(n) = header_bytes(&ddp, Some(&request), &mut hdr) else {
            return self.header_overflow();
        };
        if !self.fits(n, out) {
            return Step::Blocked;
        }
        // The sink must take the response (siw checks it at the same point).
        let region = mem.region(sink.stag);
        let len = sink.len as usize;
        if check(
            region,
            self.pd,
            sink.stag,
            sink.to,
            len,
            Access::LOCAL_WRITE,
        )
        .is_err()
        {
            return self.local_sq_error(WcStatus::LocProtErr);
        }
        let Some(w) = self.tx.frame(&hdr[..n], &[], out) else {
            return Step::Blocked;
        };
        self.msn_read.take();
        if let Some(cur) = self.sq.current_mut() {
            cur.msn = Some(msn);
        }
        // sq_eligible() checked has_room().
        let _ = self.orq.push(ReadOwner::WorkRequest(seq), sink);
        self.sq.finish_current(Progress::AwaitingResponse);
        Step::Wrote(w)
    }

    /// The next segments of the current Send or Write, the first with the
    /// header `ddp` (L clear); `sent` bytes are already out.
    ///
    /// One segment after another in one loop while they fit, the entry
    /// stays current and no Read Response waits for its turn (the two
    /// streams alternate FPDU by FPDU when both are ready). What stays the
    /// same over the run is worked out once: the entry, the header (each
    /// segment rewrites only L and the MO or TO in it), the payload per
    /// segment, the SGE and its checked span (see [`Gather`]); the entry's
    /// progress is written back when the run ends.
    fn emit_data_segment<M: Memory + ?Sized>(
        &mut self,
        mem: &M,
        ddp: SegmentRepr,
        sent: u32,
        out: &mut [u8],
    ) -> Step {
        let Some(e) = self.sq.current() else {
            return Step::Blocked;
        };
        let len = e.len;
        let mut take_msn = e.msn.is_none() && !ddp.is_tagged();
        let then_immediate = matches!(e.wr.op, SendOp::SendImm { .. } | SendOp::WriteImm { .. });
        let mut gather = Gather::default();
        self.emit_run(
            ddp,
            len,
            sent,
            out,
            |this, hdr, sent, chunk, rest| {
                // Gathered from the SGL straight into `rest`. Whether the
                // FPDU fits is the framer's first check (`Ok(None)`, before
                // any byte is gathered).
                let (pd, tx) = (this.pd, &mut this.tx);
                let Some(wr) = this.sq.current().map(|e| &e.wr) else {
                    return Ok(None);
                };
                let framed = tx.frame_with(hdr, chunk as usize, rest, |buf, register| {
                    if wr.inline.is_empty() {
                        gather.copy(mem, pd, &wr.sgl, sent, buf, register)
                    } else {
                        // Inline data was copied in at posting.
                        let from = wr.inline.get(sent as usize..sent as usize + buf.len());
                        let from = from.ok_or(())?;
                        match register {
                            Some(r) => FpduCrc(r).copy(buf, from),
                            None => buf.copy_from_slice(from),
                        }
                        Ok(())
                    }
                })?;
                if take_msn && framed.is_some() {
                    // The message's first segment is out: it took the MSN.
                    take_msn = false;
                    let m = this.msn_send.take();
                    if let Some(cur) = this.sq.current_mut() {
                        cur.msn = Some(m);
                    }
                }
                Ok(framed)
            },
            |this, sent| {
                if let Some(cur) = this.sq.current_mut() {
                    cur.progress = Progress::Transmitting { sent };
                }
                this.irq_eligible()
            },
            // The segments before this one are out; the entry fails.
            |this, ()| this.local_sq_error(WcStatus::LocProtErr),
            |this| {
                if then_immediate {
                    if let Some(cur) = this.sq.current_mut() {
                        cur.progress = Progress::Immediate;
                    }
                } else {
                    this.sq.finish_current(Progress::Done(WcStatus::Success));
                    this.retire();
                }
            },
            |this, sent| {
                if let Some(cur) = this.sq.current_mut() {
                    cur.progress = Progress::Transmitting { sent };
                }
            },
        )
    }

    /// One run of segments of one message, the first with the header
    /// `ddp` (L clear), `sent` of its `len` bytes already out: a send
    /// queue entry's Send or Write, or the oldest Read Response. The two
    /// differ only in what the closures do:
    ///
    /// - `segment` frames the segment of `chunk` bytes from `sent` on with
    ///   the header `hdr` into `rest`: `Ok(None)` when it does not fit, an
    ///   error when its source is bad;
    /// - `after_first` records the progress once the first segment is out
    ///   and says whether the other stream has something that may go
    ///   between the segments (asked once: nothing arrives while
    ///   transmitting, so the answer cannot change within the run);
    /// - `fail` handles a bad source (what was written before it stands);
    /// - `finish` retires the message after its last segment;
    /// - `save` records the progress when the run stops short of it.
    ///
    /// What stays the same over the run is worked out once: the header
    /// (each segment rewrites only L and the MO or TO in it) and the room
    /// for payload.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn emit_run<E>(
        &mut self,
        mut ddp: SegmentRepr,
        len: u32,
        mut sent: u32,
        out: &mut [u8],
        mut segment: impl FnMut(&mut Self, &[u8], u32, u32, &mut [u8]) -> Result<Option<usize>, E>,
        mut after_first: impl FnMut(&mut Self, u32) -> bool,
        fail: impl FnOnce(&mut Self, E) -> Step,
        finish: impl FnOnce(&mut Self),
        save: impl FnOnce(&mut Self, u32),
    ) -> Step {
        let mut hdr = [0u8; MAX_HEADER];
        let Ok(n) = header_bytes(&ddp, None, &mut hdr) else {
            return self.header_overflow();
        };
        let room = u32::try_from(self.mulpdu.saturating_sub(n)).unwrap_or(u32::MAX);
        let mut written = 0usize;
        let mut asked = false;
        loop {
            let chunk = (len - sent).min(room);
            let last = sent + chunk == len;
            match &mut ddp {
                SegmentRepr::Untagged(u) => u.last = last,
                SegmentRepr::Tagged(t) => t.last = last,
            }
            if ddp.emit_moving_fields(&mut hdr).is_err() {
                // What was written stands, as after any local error.
                let step = self.header_overflow();
                return if written == 0 {
                    step
                } else {
                    Step::Wrote(written)
                };
            }
            let rest = out.get_mut(written..).unwrap_or_default();
            match segment(self, &hdr[..n], sent, chunk, rest) {
                Ok(Some(w)) => written += w,
                // What was written stands, the caller goes on from there.
                Ok(None) => break,
                Err(e) => {
                    let step = fail(self, e);
                    return if written == 0 {
                        step
                    } else {
                        Step::Wrote(written)
                    };
                }
            }
            if last {
                finish(self);
                return Step::Wrote(written);
            }
            if chunk == 0 {
                // No room for payload after the header: nothing moves on.
                break;
            }
            sent += chunk;
            if !asked {
                if after_first(self, sent) {
                    return Step::Wrote(written);
                }
                asked = true;
            }
            match &mut ddp {
                // The MSN stays: the first segment took it for the entry.
                SegmentRepr::Untagged(u) => u.mo = sent,
                SegmentRepr::Tagged(t) => t.to = t.to.wrapping_add(u64::from(chunk)),
            }
        }
        if written == 0 {
            return Step::Blocked;
        }
        save(self, sent);
        Step::Wrote(written)
    }

    /// A local invalidate reached the head of the send queue: an STag that
    /// is not a valid region of this protection domain fails it; a valid
    /// one waits for the driver, and nothing more is sent until it is
    /// carried out, so no later request still finds the STag valid.
    fn emit_local_invalidate<M: Memory + ?Sized>(&mut self, mem: &M, stag: STag) -> Step {
        match mem.region(stag) {
            Some(r) if r.pd == self.pd => {
                self.local_invalidate = Some(stag);
                Step::Blocked
            }
            _ => {
                self.sq.finish_current(Progress::Done(WcStatus::LocProtErr));
                self.retire();
                Step::Again
            }
        }
    }

    /// Writes one single-segment untagged message (DDP header and RDMAP
    /// header, no data) into `out`; the caller commits on `Wrote`.
    fn emit_untagged(&mut self, ddp: UntaggedRepr, body: Body<'_>, out: &mut [u8]) -> Step {
        let m = MessageRepr {
            ddp: SegmentRepr::Untagged(ddp),
            body,
        };
        let mut hdr = [0u8; MAX_HEADER];
        let Ok(n) = m.emit(&mut hdr) else {
            return self.header_overflow();
        };
        match self.tx.frame(&hdr[..n], &[], out) {
            Some(w) => Step::Wrote(w),
            None => Step::Blocked,
        }
    }

    /// The Immediate Data message ending the current RDMA Write or Send
    /// with Immediate Data; the entry completes with it.
    fn emit_immediate(&mut self, out: &mut [u8]) -> Step {
        let Some((op, msn)) = self.sq.current().map(|e| (e.wr.op, e.msn)) else {
            return Step::Blocked;
        };
        let (imm, solicited) = match op {
            SendOp::SendImm { solicited, imm } => (imm, solicited),
            SendOp::WriteImm { imm, .. } => (imm, false),
            _ => return Step::Blocked,
        };
        let opcode = if solicited {
            Opcode::ImmediateDataSolicited
        } else {
            Opcode::ImmediateData
        };
        let m = self.msn_send.peek();
        let ddp = UntaggedRepr::new(true, Control::new(opcode).0, 0, QN_SEND, m, 0);
        let step = self.emit_untagged(ddp, Body::Immediate(ImmediateDataRepr::from_imm(imm)), out);
        if let Step::Wrote(_) = step {
            self.msn_send.take();
            if let Some(cur) = self.sq.current_mut() {
                // A TERMINATE about either message names this entry.
                cur.msn = Some(msn.unwrap_or(m));
            }
            self.sq.finish_current(Progress::Done(WcStatus::Success));
            self.retire();
        }
        step
    }

    /// The Atomic Request of the current entry (one segment, queue 1).
    #[allow(clippy::too_many_arguments)]
    fn emit_atomic_request<M: Memory + ?Sized>(
        &mut self,
        mem: &M,
        seq: u64,
        sink: Sge,
        remote_stag: STag,
        remote_to: u64,
        args: AtomicArgs,
        out: &mut [u8],
    ) -> Step {
        let msn = self.msn_read.peek();
        let ddp = UntaggedRepr::new(
            true,
            Control::new(Opcode::AtomicRequest).0,
            0,
            QN_READ_REQUEST,
            msn,
            0,
        );
        let request = AtomicRequestRepr {
            op: args.op,
            reserved: 0,
            request_id: self.atomics_out.next_id(),
            stag: remote_stag,
            to: remote_to,
            add_swap_data: args.add_swap_data,
            add_swap_mask: args.add_swap_mask,
            compare_data: args.compare_data,
            compare_mask: args.compare_mask,
        };
        if !self.fits(UNTAGGED_HEADER_LEN + ATOMIC_REQUEST_LEN, out) {
            return Step::Blocked;
        }
        // The sink must take the original value, as a Read's must.
        let region = mem.region(sink.stag);
        if check(
            region,
            self.pd,
            sink.stag,
            sink.to,
            sink.len as usize,
            Access::LOCAL_WRITE,
        )
        .is_err()
        {
            return self.local_sq_error(WcStatus::LocProtErr);
        }
        let step = self.emit_untagged(ddp, Body::AtomicRequest(request), out);
        if let Step::Wrote(_) = step {
            self.msn_read.take();
            if let Some(cur) = self.sq.current_mut() {
                cur.msn = Some(msn);
            }
            self.atomics_out.push(seq, sink);
            self.sq.finish_current(Progress::AwaitingResponse);
        }
        step
    }

    /// The oldest queued Atomic Response (one segment, queue 3).
    fn emit_atomic_response(&mut self, r: AtomicResponseRepr, out: &mut [u8]) -> Step {
        let ddp = UntaggedRepr::new(
            true,
            Control::new(Opcode::AtomicResponse).0,
            0,
            queue::ATOMIC_RESPONSE,
            self.msn_atomic_response.peek(),
            0,
        );
        let step = self.emit_untagged(ddp, Body::AtomicResponse(r), out);
        if let Step::Wrote(_) = step {
            self.msn_atomic_response.take();
            self.atomics_in.pop_front();
        }
        step
    }

    /// Segments of the oldest Read Responses, one after another in one
    /// loop while they fit and the send queue has nothing that may go
    /// between them (a Send would alternate with them FPDU by FPDU).
    fn emit_irq<M: Memory + ?Sized>(&mut self, mem: &M, out: &mut [u8]) -> Step {
        let mut written = 0usize;
        loop {
            let rest = out.get_mut(written..).unwrap_or_default();
            match self.emit_irq_run(mem, rest) {
                Step::Wrote(w) => written += w,
                // Blocked, or a TERMINATE queued: what was written stands.
                step if written == 0 => return step,
                _ => break,
            }
            if self.sq_eligible() || !self.irq_eligible() {
                break;
            }
        }
        Step::Wrote(written)
    }

    /// Segments of the oldest Read Response while they fit, the first
    /// only if the send queue then has something that may go between
    /// them. What stays the same over the run is worked out once: the
    /// header (each segment rewrites only L and the TO in it) and the
    /// check of the source (the rest of the response checked whole; when
    /// that is not valid, each segment is checked on its own, so the
    /// request fails at the segment that reaches the bad bytes).
    fn emit_irq_run<M: Memory + ?Sized>(&mut self, mem: &M, out: &mut [u8]) -> Step {
        let Some(p) = self.irq.front().copied() else {
            return Step::Blocked;
        };
        let r = p.request;
        let ddp = TaggedRepr::new(
            false,
            Control::new(Opcode::ReadResponse).0,
            r.sink_stag,
            r.sink_to.wrapping_add(u64::from(p.sent)),
        );
        let src = r.source_stag;
        // The response's bytes from this many sent on were checked whole
        // and start at this region offset.
        let mut checked: Option<(u32, u64)> = None;
        self.emit_run(
            SegmentRepr::Tagged(ddp),
            r.size,
            p.sent,
            out,
            |this, hdr, sent, chunk, rest| {
                if !this.fits(hdr.len() + chunk as usize, rest) {
                    return Ok(None);
                }
                // Checked when the request arrived; checked again because
                // the region may have changed since. Read straight into
                // `rest`.
                let pd = this.pd;
                let to = r.source_to.wrapping_add(u64::from(sent));
                let at = match checked {
                    _ if chunk == 0 => None,
                    Some((from, at)) => Some(at + u64::from(sent - from)),
                    None => {
                        let region = mem.region(src);
                        let whole = (r.size - sent) as usize;
                        match check(region, pd, src, to, whole, Access::REMOTE_READ) {
                            Ok(at) => {
                                checked = Some((sent, at));
                                Some(at)
                            }
                            Err(_) => Some(check(
                                region,
                                pd,
                                src,
                                to,
                                chunk as usize,
                                Access::REMOTE_READ,
                            )?),
                        }
                    }
                };
                this.tx
                    .frame_with(hdr, chunk as usize, rest, |buf, register| {
                        let read = match (at, register) {
                            (Some(at), Some(r)) => mem.read_via(src, at, buf, &mut FpduCrc(r)),
                            (Some(at), None) => mem.read(src, at, buf),
                            // No payload: the register stands as it is.
                            (None, _) => Ok(()),
                        };
                        // The region went away since it was checked: the check
                        // now says why, for this segment.
                        read.map_err(|e| {
                            check(mem.region(src), pd, src, to, buf.len(), Access::REMOTE_READ)
                                .err()
                                .unwrap_or(ddp::TaggedError::Memory(e))
                        })
                    })
            },
            |this, sent| {
                if let Some(front) = this.irq.front_mut() {
                    front.sent = sent;
                }
                this.sq_eligible()
            },
            |this, e| {
                // Report the Read Request as the peer sent it.
                let request = SegmentRepr::Untagged(UntaggedRepr::new(
                    true,
                    Control::new(Opcode::ReadRequest).0,
                    0,
                    QN_READ_REQUEST,
                    p.msn,
                    0,
                ));
                let mut offending = [0u8; MAX_HEADER];
                // Sized for it; were it not, the TERMINATE quotes nothing.
                let len = header_bytes(&request, Some(&r), &mut offending).unwrap_or(0);
                this.terminate_local(
                    TermCause::with_attach(e.rdmap_terminate(), Attach::DdpAndRdma),
                    &offending[..len],
                );
                Step::Again
            },
            |this| {
                this.irq.pop_front();
            },
            |this, sent| {
                if let Some(front) = this.irq.front_mut() {
                    front.sent = sent;
                }
            },
        )
    }
}
