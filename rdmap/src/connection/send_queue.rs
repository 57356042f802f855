//! The send queue: work requests in posting order, each transmitted in
//! turn and completed in turn (RFC 5040 ordering rules: completions of
//! one send queue are delivered in the order the requests were posted).
//!
//! A Send or Write is done once its last byte is handed to the transport
//! (`poll_transmit` wrote its last FPDU): RDMAP has no acknowledgement of
//! its own, and siw and iw_cxgb4 complete at the same point. A Read is done
//! when its last response byte is placed. A Write that was handed off after
//! a still-outstanding Read waits for that Read before it is reported.

use std::collections::VecDeque;

use crate::completion::{WcOpcode, WcStatus, WorkCompletion};
use crate::work_request::{PostError, SendWr};

/// Progress of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Not (fully) transmitted: `sent` payload bytes are out.
    Transmitting { sent: u32 },
    /// An RDMA Write or Send with Immediate Data whose data is out: the
    /// Immediate Data message goes next.
    Immediate,
    /// A Read or atomic whose request is out: waiting for the response.
    AwaitingResponse,
    /// Finished with this status; reported once everything before it is.
    Done(WcStatus),
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Posting sequence number, unique per connection.
    pub seq: u64,
    pub wr: SendWr,
    /// Message length (sum of the SGL).
    pub len: u32,
    /// The MSN the message carries on its queue, once assigned.
    pub msn: Option<u32>,
    pub progress: Progress,
}

impl Entry {
    pub fn opcode(&self) -> WcOpcode {
        self.wr.op.wc_opcode()
    }

    /// Some of the message is on the wire.
    pub fn started(&self) -> bool {
        self.msn.is_some() || !matches!(self.progress, Progress::Transmitting { sent: 0 })
    }

    fn completion(&self, status: WcStatus) -> WorkCompletion {
        WorkCompletion {
            wr_id: self.wr.wr_id,
            status,
            opcode: self.opcode(),
            byte_len: if status.is_success() { self.len } else { 0 },
            invalidated: None,
            solicited: false,
            imm_data: None,
        }
    }
}

/// The entries of one send queue, bounded by its depth.
#[derive(Debug, Clone)]
pub(crate) struct SendQueue {
    depth: usize,
    entries: VecDeque<Entry>,
    next_seq: u64,
    /// Index of the first entry not yet fully transmitted.
    tx: usize,
}

impl SendQueue {
    /// A queue of at most `depth` entries. Its memory grows with the
    /// entries posted, not with the depth: an idle queue pair among
    /// thousands holds none.
    pub fn new(depth: usize) -> Self {
        SendQueue {
            depth,
            entries: VecDeque::new(),
            next_seq: 0,
            tx: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Work requests posted and not yet retired.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Appends a work request whose length the caller computed.
    pub fn push(&mut self, wr: SendWr, len: u32) -> Result<u64, PostError> {
        if self.entries.len() >= self.depth {
            return Err(PostError::QueueFull {
                queue: "send",
                depth: self.depth,
            });
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.entries.push_back(Entry {
            seq,
            wr,
            len,
            msn: None,
            progress: Progress::Transmitting { sent: 0 },
        });
        Ok(seq)
    }

    /// The entry being transmitted, if any.
    pub fn current(&self) -> Option<&Entry> {
        self.entries.get(self.tx)
    }

    pub fn current_mut(&mut self) -> Option<&mut Entry> {
        self.entries.get_mut(self.tx)
    }

    /// Whether the current entry has started (some segment is out).
    pub fn current_started(&self) -> bool {
        self.current().is_some_and(Entry::started)
    }

    /// The current entry's last byte is out: it becomes `next` and
    /// transmission moves to the following entry.
    pub fn finish_current(&mut self, next: Progress) {
        if let Some(e) = self.entries.get_mut(self.tx) {
            e.progress = next;
            self.tx += 1;
        }
    }

    /// Finishes the entry posted as `seq` (a Read whose response arrived,
    /// or failed).
    pub fn finish_seq(&mut self, seq: u64, status: WcStatus) -> bool {
        match self.entries.iter_mut().find(|e| e.seq == seq) {
            Some(e) => {
                e.progress = Progress::Done(status);
                true
            }
            None => false,
        }
    }

    /// The first entry still queued (finished or not) matching `pred`.
    pub fn find_any(&self, pred: impl FnMut(&&Entry) -> bool) -> Option<u64> {
        self.entries.iter().find(pred).map(|e| e.seq)
    }

    /// Pops finished entries from the front, reporting each that is
    /// signaled or failed.
    pub fn retire(&mut self, mut report: impl FnMut(WorkCompletion)) {
        while let Some(front) = self.entries.front() {
            let Progress::Done(status) = front.progress else {
                break;
            };
            if front.wr.signaled || !status.is_success() {
                report(front.completion(status));
            }
            self.entries.pop_front();
            self.tx = self.tx.saturating_sub(1);
        }
    }

    /// Completes everything left: entries already given a status keep it,
    /// the rest are flushed. Every entry is reported, signaled or not.
    pub fn flush(&mut self, mut report: impl FnMut(WorkCompletion)) {
        for e in self.entries.drain(..) {
            let status = match e.progress {
                Progress::Done(s) if !s.is_success() => s,
                _ => WcStatus::WrFlushErr,
            };
            report(e.completion(status));
        }
        self.tx = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work_request::SendOp;
    use ddp::memory::STag;

    fn wr(id: u64, op: SendOp, signaled: bool) -> SendWr {
        SendWr {
            wr_id: id,
            op,
            sgl: Vec::new(),
            signaled,
            fence: false,
            inline: Vec::new(),
        }
    }

    const SEND: SendOp = SendOp::Send {
        solicited: false,
        invalidate: None,
    };
    const READ: SendOp = SendOp::Read {
        remote_stag: STag(1),
        remote_to: 0,
    };

    fn drain(q: &mut SendQueue) -> Vec<(u64, WcStatus)> {
        let mut v = Vec::new();
        q.retire(|c| v.push((c.wr_id, c.status)));
        v
    }

    #[test]
    fn depth_is_enforced() {
        let mut q = SendQueue::new(2);
        q.push(wr(1, SEND, true), 0).unwrap();
        q.push(wr(2, SEND, true), 0).unwrap();
        assert_eq!(
            q.push(wr(3, SEND, true), 0),
            Err(PostError::QueueFull {
                queue: "send",
                depth: 2
            })
        );
    }

    #[test]
    fn completions_wait_for_an_earlier_read() {
        let mut q = SendQueue::new(8);
        let r = q.push(wr(1, READ, true), 4).unwrap();
        q.push(wr(2, SEND, true), 4).unwrap();
        q.finish_current(Progress::AwaitingResponse);
        q.finish_current(Progress::Done(WcStatus::Success));
        assert!(drain(&mut q).is_empty(), "the Send waits for the Read");
        q.finish_seq(r, WcStatus::Success);
        assert_eq!(
            drain(&mut q),
            vec![(1, WcStatus::Success), (2, WcStatus::Success)]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn unsignaled_successes_are_silent_failures_are_not() {
        let mut q = SendQueue::new(8);
        q.push(wr(1, SEND, false), 0).unwrap();
        q.push(wr(2, SEND, false), 0).unwrap();
        q.finish_current(Progress::Done(WcStatus::Success));
        q.finish_current(Progress::Done(WcStatus::LocProtErr));
        assert_eq!(drain(&mut q), vec![(2, WcStatus::LocProtErr)]);
    }

    #[test]
    fn flush_reports_everything_in_order() {
        let mut q = SendQueue::new(8);
        q.push(wr(1, READ, false), 4).unwrap();
        q.push(wr(2, SEND, false), 4).unwrap();
        q.push(wr(3, SEND, true), 4).unwrap();
        q.finish_current(Progress::AwaitingResponse);
        q.finish_current(Progress::Done(WcStatus::Success));
        q.finish_seq(0, WcStatus::RemAccessErr);
        let mut v = Vec::new();
        q.flush(|c| v.push((c.wr_id, c.status, c.byte_len)));
        assert_eq!(
            v,
            vec![
                (1, WcStatus::RemAccessErr, 0),
                (2, WcStatus::WrFlushErr, 0),
                (3, WcStatus::WrFlushErr, 0)
            ]
        );
        assert!(q.is_empty());
        assert!(q.current().is_none());
    }

    #[test]
    fn current_advances_and_survives_retirement() {
        let mut q = SendQueue::new(8);
        q.push(wr(1, SEND, true), 0).unwrap();
        q.push(wr(2, SEND, true), 0).unwrap();
        assert_eq!(q.current().unwrap().wr.wr_id, 1);
        q.finish_current(Progress::Done(WcStatus::Success));
        drain(&mut q);
        assert_eq!(q.current().unwrap().wr.wr_id, 2);
        assert!(!q.current_started());
        q.current_mut().unwrap().msn = Some(1);
        assert!(q.current_started());
    }

    #[test]
    fn find_any_sees_finished_entries() {
        let mut q = SendQueue::new(8);
        q.push(wr(1, SEND, true), 0).unwrap();
        q.push(wr(2, READ, true), 0).unwrap();
        q.finish_current(Progress::Done(WcStatus::Success));
        assert_eq!(q.find_any(|e| e.wr.wr_id == 1), Some(0));
        assert_eq!(q.find_any(|e| e.wr.wr_id == 2), Some(1));
        assert_eq!(q.find_any(|e| e.wr.wr_id == 3), None);
        assert!(!q.current().unwrap().started());
    }
}
