//! RDMA Read bookkeeping (RFC 5040; IRD/ORD as RFC 6581 negotiates them).
//!
//! [`OutboundReads`] is the requester's view (the ORQ): READs we sent,
//! at most ORD of them, answered strictly in order, so each Read Response
//! segment must continue the oldest one. [`InboundReads`] is the
//! responder's (the IRQ): READs the peer sent, at most IRD of them, answered
//! in the order they arrived. Both are bounded by the negotiated limits, so
//! nothing the peer does grows them.

use std::collections::VecDeque;

use ddp::memory::STag;

use crate::fifo::Fifo;
use crate::term::TermCode;
use crate::wire::ReadRequestRepr;

/// Who is waiting for a READ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOwner {
    /// A send queue entry (its posting sequence number).
    WorkRequest(u64),
    /// The zero-length READ that serves as a peer-to-peer RTR.
    Rtr,
}

/// The local buffer a READ fills: the Data Sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSink {
    /// The region the data goes into.
    pub stag: STag,
    /// The tagged offset of the first byte.
    pub to: u64,
    /// The number of bytes.
    pub len: u32,
}

/// A READ whose response has not fully arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutstandingRead {
    /// Who posted the READ: what to complete once it is answered.
    pub owner: ReadOwner,
    /// Where its data goes.
    pub sink: ReadSink,
    /// Response bytes placed so far.
    pub placed: u32,
}

/// Why [`OutboundReads::respond`] took no segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseError<E> {
    /// It does not continue the oldest READ (the TERMINATE's code).
    Refused(TermCode),
    /// It did, and placing it failed.
    Place(E),
}

/// Whether `len` bytes at `stag`/`to` continue `head`, and on the last
/// segment end it: the end offset they reach, or siw's code.
#[inline]
fn continues(
    head: &OutstandingRead,
    stag: STag,
    to: u64,
    len: usize,
    last: bool,
) -> Result<u32, TermCode> {
    if stag != head.sink.stag {
        return Err(TermCode::DDP_T_INVALID_STAG);
    }
    if to != head.sink.to.wrapping_add(u64::from(head.placed)) {
        return Err(TermCode::DDP_T_BASE_BOUNDS);
    }
    let end = u32::try_from(len)
        .ok()
        .and_then(|l| head.placed.checked_add(l))
        .filter(|&end| end <= head.sink.len)
        .ok_or(TermCode::DDP_T_BASE_BOUNDS)?;
    if last && end != head.sink.len {
        return Err(TermCode::DDP_T_BASE_BOUNDS);
    }
    Ok(end)
}

/// The requester's outstanding READs, limited by ORD.
#[derive(Debug, Clone)]
pub struct OutboundReads {
    ord: usize,
    queue: VecDeque<OutstandingRead>,
}

impl OutboundReads {
    /// Room for `ord` outstanding READs, the limit MPA negotiated; memory
    /// for them is taken as READs are posted.
    pub fn new(ord: usize) -> Self {
        OutboundReads {
            ord,
            queue: VecDeque::new(),
        }
    }

    /// How many READs may be outstanding.
    pub fn ord(&self) -> usize {
        self.ord
    }

    /// READs outstanding now.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no READ is outstanding.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Another READ may be sent without exceeding ORD.
    pub fn has_room(&self) -> bool {
        self.queue.len() < self.ord
    }

    /// Records a READ about to be sent. The caller checks [`has_room`]
    /// first (a READ beyond ORD waits on the send queue); a full queue hands
    /// the READ back.
    ///
    /// [`has_room`]: Self::has_room
    pub fn push(&mut self, owner: ReadOwner, sink: ReadSink) -> Result<(), ReadSink> {
        if !self.has_room() {
            return Err(sink);
        }
        self.queue.push_back(OutstandingRead {
            owner,
            sink,
            placed: 0,
        });
        Ok(())
    }

    /// Records the zero-length READ of a peer-to-peer RTR, which is sent
    /// whatever ORD is (once per connection).
    pub fn push_rtr(&mut self, sink: ReadSink) {
        self.queue.push_back(OutstandingRead {
            owner: ReadOwner::Rtr,
            sink,
            placed: 0,
        });
    }

    /// One Read Response segment in one look at the oldest READ: checked
    /// against it (the same sink STag, the next tagged offset, no more
    /// bytes than asked for, and on the last segment exactly as many; the
    /// codes are siw's, siw_rresp_check_ntoh, and a response nobody asked
    /// for is an unexpected opcode), placed by `place`, then recorded;
    /// returns the READ it completed. Refused or failing to place, it
    /// changes nothing: the READ stays at the head for the caller to fail.
    /// Inlined into its one caller, so its answer stays out of memory.
    #[inline]
    pub fn respond<E>(
        &mut self,
        stag: STag,
        to: u64,
        len: usize,
        last: bool,
        place: impl FnOnce() -> Result<(), E>,
    ) -> Result<Option<OutstandingRead>, ResponseError<E>> {
        let head = self
            .queue
            .front_mut()
            .ok_or(ResponseError::Refused(TermCode::RDMAP_UNEXPECTED_OPCODE))?;
        let end = continues(head, stag, to, len, last).map_err(ResponseError::Refused)?;
        place().map_err(ResponseError::Place)?;
        if !last {
            head.placed = end;
            return Ok(None);
        }
        // Recorded on the copy taken out: the entry written and then read
        // back wider than it was written would stall the load.
        Ok(self.queue.pop_front().map(|done| OutstandingRead {
            placed: end,
            ..done
        }))
    }

    /// Whether any READ of a send queue entry is outstanding.
    pub fn owns(&self, seq: u64) -> bool {
        self.queue
            .iter()
            .any(|r| r.owner == ReadOwner::WorkRequest(seq))
    }

    /// Takes every outstanding READ, oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = OutstandingRead> + '_ {
        self.queue.drain(..)
    }
}

/// A READ the peer asked for, answered by `sent` bytes so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingResponse {
    /// What the peer asked for.
    pub request: ReadRequestRepr,
    /// The Read Request's MSN on queue 1, kept for the TERMINATE that
    /// reports a failure found while answering.
    pub msn: u32,
    /// Response bytes sent so far.
    pub sent: u32,
    /// A zero-length READ RTR: answered outside the IRD budget.
    pub rtr: bool,
}

impl PendingResponse {
    /// Bytes still to send.
    pub fn remaining(&self) -> u32 {
        self.request.size.saturating_sub(self.sent)
    }
}

/// The responder's queue of READs to answer, limited by IRD.
#[derive(Debug, Clone)]
pub struct InboundReads {
    ird: usize,
    queue: Fifo<PendingResponse>,
    /// Entries of `queue` that answer an RTR: kept so the count against
    /// IRD needs no walk over the queue.
    rtrs: usize,
}

impl InboundReads {
    /// Room for `ird` Read Requests from the peer, the limit MPA
    /// negotiated; memory for them is taken as they arrive.
    pub fn new(ird: usize) -> Self {
        InboundReads {
            ird,
            queue: Fifo::default(),
            rtrs: 0,
        }
    }

    /// How many Read Requests may wait for their response.
    pub fn ird(&self) -> usize {
        self.ird
    }

    /// Read Requests waiting now.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Queues a READ from the peer. More than IRD unanswered READs is the
    /// peer overrunning what it was granted: siw answers with RDMAP remote
    /// operation error, catastrophic error localised to the stream
    /// (siw_init_rresp), and so do we.
    #[inline]
    pub fn accept(&mut self, request: ReadRequestRepr, msn: u32) -> Result<(), TermCode> {
        if self.counted() >= self.ird {
            return Err(TermCode::RDMAP_CATASTROPHIC_STREAM);
        }
        self.queue.push(PendingResponse {
            request,
            msn,
            sent: 0,
            rtr: false,
        });
        Ok(())
    }

    /// Unanswered READs counted against IRD (an RTR's answer is not).
    pub fn counted(&self) -> usize {
        self.queue.len().saturating_sub(self.rtrs)
    }

    /// Queues the zero-length answer to a READ RTR (one per connection, so
    /// it needs no budget).
    pub fn accept_rtr(&mut self, request: ReadRequestRepr, msn: u32) {
        self.rtrs += 1;
        self.queue.push(PendingResponse {
            request,
            msn,
            sent: 0,
            rtr: true,
        });
    }

    /// The Read Request being answered.
    pub fn front(&self) -> Option<&PendingResponse> {
        self.queue.front()
    }

    /// The Read Request being answered, to advance (its `sent`: whether
    /// it answers an RTR is fixed when it is queued).
    pub fn front_mut(&mut self) -> Option<&mut PendingResponse> {
        self.queue.front_mut()
    }

    /// Drops the answered Read Request.
    #[inline]
    pub fn pop_front(&mut self) -> Option<PendingResponse> {
        let p = self.queue.pop()?;
        self.rtrs = self.rtrs.saturating_sub(usize::from(p.rtr));
        Some(p)
    }

    /// Drops every waiting Read Request (the stream ended).
    pub fn clear(&mut self) {
        self.queue.clear();
        self.rtrs = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sink(len: u32) -> ReadSink {
        ReadSink {
            stag: STag(0x100),
            to: 0x1000,
            len,
        }
    }

    fn request(size: u32) -> ReadRequestRepr {
        ReadRequestRepr {
            sink_stag: STag(0x100),
            sink_to: 0,
            size,
            source_stag: STag(0x200),
            source_to: 0,
        }
    }

    #[test]
    fn ord_limits_pushes() {
        let mut q = OutboundReads::new(2);
        assert!(q.push(ReadOwner::WorkRequest(0), sink(4)).is_ok());
        assert!(q.push(ReadOwner::WorkRequest(1), sink(4)).is_ok());
        assert!(!q.has_room());
        assert_eq!(q.push(ReadOwner::WorkRequest(2), sink(4)), Err(sink(4)));
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn ord_zero_takes_nothing() {
        let mut q = OutboundReads::new(0);
        assert!(!q.has_room());
        assert!(q.push(ReadOwner::Rtr, sink(0)).is_err());
    }

    /// A placement that succeeds.
    fn ok() -> Result<(), ()> {
        Ok(())
    }

    #[test]
    fn response_in_segments() {
        let mut q = OutboundReads::new(1);
        q.push(ReadOwner::WorkRequest(7), sink(10)).unwrap();
        assert_eq!(q.respond(STag(0x100), 0x1000, 4, false, ok), Ok(None));
        // The second segment continues at offset 4 of the sink.
        let done = q
            .respond(STag(0x100), 0x1004, 6, true, ok)
            .unwrap()
            .unwrap();
        assert_eq!(done.owner, ReadOwner::WorkRequest(7));
        assert_eq!(done.placed, 10);
        assert!(q.is_empty());
    }

    #[test]
    fn zero_length_response() {
        let mut q = OutboundReads::new(0);
        q.push_rtr(sink(0));
        let done = q.respond(STag(0x100), 0x1000, 0, true, ok).unwrap();
        assert_eq!(done.unwrap().owner, ReadOwner::Rtr);
    }

    #[test]
    fn unsolicited_response_is_unexpected() {
        let mut q = OutboundReads::new(4);
        assert_eq!(
            q.respond(STag(1), 0, 0, true, ok),
            Err(ResponseError::Refused(TermCode::RDMAP_UNEXPECTED_OPCODE))
        );
    }

    #[test]
    fn mismatches_use_siw_codes() {
        let mut q = OutboundReads::new(1);
        q.push(ReadOwner::WorkRequest(0), sink(8)).unwrap();
        let refused = |code| Err(ResponseError::Refused(code));
        assert_eq!(
            q.respond(STag(0x101), 0x1000, 8, true, ok),
            refused(TermCode::DDP_T_INVALID_STAG)
        );
        assert_eq!(
            q.respond(STag(0x100), 0x1001, 7, true, ok),
            refused(TermCode::DDP_T_BASE_BOUNDS)
        );
        assert_eq!(
            q.respond(STag(0x100), 0x1000, 9, false, ok),
            refused(TermCode::DDP_T_BASE_BOUNDS)
        );
        assert_eq!(
            q.respond(STag(0x100), 0x1000, 7, true, ok),
            refused(TermCode::DDP_T_BASE_BOUNDS),
            "short last segment"
        );
        assert!(q.respond(STag(0x100), 0x1000, 8, true, ok).is_ok());
    }

    #[test]
    fn responses_match_the_oldest_read_only() {
        let mut q = OutboundReads::new(2);
        q.push(ReadOwner::WorkRequest(0), sink(4)).unwrap();
        let second = ReadSink {
            stag: STag(0x200),
            to: 0,
            len: 4,
        };
        q.push(ReadOwner::WorkRequest(1), second).unwrap();
        assert_eq!(
            q.respond(STag(0x200), 0, 4, true, ok),
            Err(ResponseError::Refused(TermCode::DDP_T_INVALID_STAG))
        );
        assert!(q.owns(1));
        assert!(!q.owns(2));
    }

    #[test]
    fn sink_to_wraps() {
        let mut q = OutboundReads::new(1);
        let s = ReadSink {
            stag: STag(9),
            to: u64::MAX - 1,
            len: 4,
        };
        q.push(ReadOwner::WorkRequest(0), s).unwrap();
        assert_eq!(q.respond(STag(9), u64::MAX - 1, 2, false, ok), Ok(None));
        assert!(q.respond(STag(9), 0, 2, true, ok).is_ok());
    }

    #[test]
    fn respond_places_only_what_continues_the_oldest_read() {
        let mut q = OutboundReads::new(1);
        q.push(ReadOwner::WorkRequest(7), sink(10)).unwrap();
        let placed = std::cell::Cell::new(0);
        let place = |n: usize| {
            let placed = &placed;
            move || -> Result<(), ()> {
                placed.set(placed.get() + n);
                Ok(())
            }
        };
        let refused = [
            (STag(0x101), 0x1000, 4, false, TermCode::DDP_T_INVALID_STAG),
            (STag(0x100), 0x1001, 4, false, TermCode::DDP_T_BASE_BOUNDS),
            (STag(0x100), 0x1000, 11, false, TermCode::DDP_T_BASE_BOUNDS),
            (STag(0x100), 0x1000, 4, true, TermCode::DDP_T_BASE_BOUNDS),
        ];
        for (stag, to, len, last, code) in refused {
            let r = q.respond(stag, to, len, last, || -> Result<(), ()> {
                panic!("placed a refused segment")
            });
            assert_eq!(r, Err(ResponseError::Refused(code)));
        }
        assert_eq!(q.respond(STag(0x100), 0x1000, 4, false, place(4)), Ok(None));
        // The next segment starts where that one ended.
        let r = q.respond(STag(0x100), 0x1000, 6, true, || -> Result<(), ()> {
            panic!("placed a refused segment")
        });
        assert_eq!(r, Err(ResponseError::Refused(TermCode::DDP_T_BASE_BOUNDS)));
        let done = q.respond(STag(0x100), 0x1004, 6, true, place(6)).unwrap();
        assert_eq!(
            done.map(|d| (d.owner, d.placed)),
            Some((ReadOwner::WorkRequest(7), 10))
        );
        assert!(q.is_empty());
        assert_eq!(placed.get(), 10);
        assert_eq!(
            q.respond(STag(0x100), 0x100a, 0, true, place(0)),
            Err(ResponseError::Refused(TermCode::RDMAP_UNEXPECTED_OPCODE))
        );
    }

    #[test]
    fn respond_that_fails_to_place_changes_nothing() {
        let mut q = OutboundReads::new(1);
        q.push(ReadOwner::WorkRequest(3), sink(4)).unwrap();
        let r = q.respond(STag(0x100), 0x1000, 4, true, || Err("sink gone"));
        assert_eq!(r, Err(ResponseError::Place("sink gone")));
        assert_eq!(q.len(), 1);
        // The READ is still at the head, nothing of it placed.
        let done = q.respond(STag(0x100), 0x1000, 4, true, ok).unwrap();
        assert_eq!(done.map(|d| d.placed), Some(4));
    }

    #[test]
    fn rtr_answers_leave_the_ird_count() {
        let mut q = InboundReads::new(1);
        q.accept_rtr(request(0), 1);
        assert_eq!(q.counted(), 0);
        q.accept(request(1), 2).unwrap();
        assert_eq!(q.counted(), 1);
        assert_eq!(
            q.accept(request(1), 3),
            Err(TermCode::RDMAP_CATASTROPHIC_STREAM)
        );
        assert!(q.pop_front().unwrap().rtr);
        assert_eq!(q.counted(), 1, "popping the RTR frees no budget");
        q.pop_front();
        assert_eq!(q.counted(), 0);
        q.accept_rtr(request(0), 4);
        q.clear();
        q.accept(request(1), 5).unwrap();
        assert_eq!(q.counted(), 1);
    }

    #[test]
    fn ird_is_enforced_with_siw_code() {
        let mut q = InboundReads::new(2);
        q.accept(request(1), 1).unwrap();
        q.accept(request(1), 2).unwrap();
        assert_eq!(
            q.accept(request(1), 3),
            Err(TermCode::RDMAP_CATASTROPHIC_STREAM)
        );
        q.pop_front();
        q.accept(request(1), 3).unwrap();
    }

    #[test]
    fn ird_zero_refuses_every_read() {
        let mut q = InboundReads::new(0);
        assert_eq!(
            q.accept(request(0), 1),
            Err(TermCode::RDMAP_CATASTROPHIC_STREAM)
        );
    }

    #[test]
    fn rtr_answer_needs_no_budget() {
        let mut q = InboundReads::new(0);
        q.accept_rtr(request(0), 1);
        assert_eq!(q.len(), 1);
        assert!(q.front().unwrap().rtr);
    }

    #[test]
    fn remaining_counts_down() {
        let mut p = PendingResponse {
            request: request(10),
            msn: 1,
            sent: 0,
            rtr: false,
        };
        assert_eq!(p.remaining(), 10);
        p.sent = 10;
        assert_eq!(p.remaining(), 0);
    }

    proptest! {
        /// Splitting a response at arbitrary points is accepted exactly
        /// when the pieces are contiguous and add up to the READ size.
        #[test]
        fn any_split_of_a_response_completes(len in 0u32..5000, cuts in proptest::collection::vec(0u32..5000, 0..8)) {
            let mut q = OutboundReads::new(1);
            q.push(ReadOwner::WorkRequest(1), sink(len)).unwrap();
            let mut points: Vec<u32> = cuts.into_iter().map(|c| c % (len + 1)).collect();
            points.push(0);
            points.push(len);
            points.sort_unstable();
            points.dedup();
            let mut done = None;
            if points.len() == 1 {
                done = q.respond(STag(0x100), 0x1000, 0, true, ok).unwrap();
            }
            for w in points.windows(2) {
                let n = w[1] - w[0];
                let last = w[1] == len;
                // Accepted only where the previous piece ended (offset w[0]).
                let r = q.respond(STag(0x100), 0x1000 + u64::from(w[0]), n as usize, last, ok);
                prop_assert!(r.is_ok(), "piece at {} refused: {:?}", w[0], r);
                done = r.unwrap();
                prop_assert_eq!(done.is_some(), last);
            }
            prop_assert_eq!(done.map(|d| d.placed), Some(len));
            prop_assert!(q.is_empty());
        }

        /// The queue never holds more than ORD reads.
        #[test]
        fn never_more_than_ord(ord in 0usize..8, pushes in 0usize..20) {
            let mut q = OutboundReads::new(ord);
            for i in 0..pushes {
                let _ = q.push(ReadOwner::WorkRequest(i as u64), sink(1));
            }
            prop_assert_eq!(q.len(), pushes.min(ord));
        }
    }
}
