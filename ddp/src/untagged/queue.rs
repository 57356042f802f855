//! One untagged queue: its expected MSN, its posted buffers and the one
//! message it may have in progress.

use std::collections::VecDeque;

use super::sgl::{self, Cursor, Sge};
use super::{Completion, Placed, PostError, QueueMode, SharedBuffers};
use crate::error::UntaggedError;
use crate::memory::{Memory, PdId};
use crate::wire::UntaggedRepr;

/// The first MSN of every queue (RFC 5041 section 5.3).
pub const INITIAL_MSN: u32 = 1;

/// A buffer the ULP posted: its handle and where its bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Posted {
    pub(super) id: u64,
    sgl: PostedSgl,
    /// Bytes the SGL holds, capped at what a message can be (MO is 32 bits).
    capacity: u64,
    /// Scattered into as this domain: the stream's, or a shared pool's.
    pd: Option<PdId>,
}

/// A posted buffer's SGL: a single SGE (the usual case) is kept in
/// place, so posting it allocates nothing; longer lists go on the heap.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PostedSgl {
    One(Sge),
    Many(Box<[Sge]>),
}

impl PostedSgl {
    fn new(sgl: &[Sge]) -> Self {
        match sgl {
            [one] => PostedSgl::One(*one),
            more => PostedSgl::Many(more.into()),
        }
    }

    fn as_slice(&self) -> &[Sge] {
        match self {
            PostedSgl::One(one) => core::slice::from_ref(one),
            PostedSgl::Many(more) => more,
        }
    }
}

impl Posted {
    /// Buffer `id` for queue `qn`, which holds `held` of at most
    /// `max_posted` buffers of at most `max_sge` SGEs.
    pub(super) fn check(
        qn: u32,
        max_posted: usize,
        max_sge: usize,
        held: usize,
        id: u64,
        sgl: &[Sge],
    ) -> Result<Posted, PostError> {
        if held >= max_posted {
            return Err(PostError::QueueFull {
                qn,
                max: max_posted,
            });
        }
        if sgl.len() > max_sge {
            return Err(PostError::TooManySges {
                n: sgl.len(),
                max: max_sge,
            });
        }
        if let Some(index) = sgl::first_wrapping(sgl) {
            return Err(PostError::SgeWraps { index });
        }
        Ok(Posted {
            id,
            sgl: PostedSgl::new(sgl),
            capacity: sgl::capacity(sgl).min(u64::from(u32::MAX)),
            pd: None,
        })
    }
}

/// The message being assembled.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Active {
    /// `None` on an inline queue.
    buffer: Option<Posted>,
    placed: u32,
    cursor: Cursor,
    /// RsvdULP and RsvdULP2 of the message's first segment.
    ulp: (u8, u32),
}

/// One untagged queue (RFC 5041 section 5.3) with siw's strictness: the
/// segments of a message arrive in order (MO equal to the bytes already
/// placed), messages complete one at a time in MSN order, and each message
/// fills the oldest posted buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvQueue {
    qn: u32,
    mode: QueueMode,
    expected_msn: u32,
    posted: VecDeque<Posted>,
    active: Option<Active>,
}

impl RecvQueue {
    /// An empty queue `qn` taking messages as `mode` says.
    pub fn new(qn: u32, mode: QueueMode) -> Self {
        RecvQueue {
            qn,
            mode,
            expected_msn: INITIAL_MSN,
            posted: VecDeque::new(),
            active: None,
        }
    }

    /// The queue number segments name it by.
    pub fn qn(&self) -> u32 {
        self.qn
    }

    /// How its messages are delivered.
    pub fn mode(&self) -> QueueMode {
        self.mode
    }

    /// The RsvdULP and RsvdULP2 fields of the first segment of the message
    /// being assembled, if one is. They belong to the ULP, which carries
    /// them in every segment of a message (RDMAP: its opcode and the STag
    /// to invalidate); DDP keeps the first pair so the ULP can refuse a
    /// later segment that changes them.
    pub fn message_ulp_fields(&self) -> Option<(u8, u32)> {
        self.active.as_ref().map(|a| a.ulp)
    }

    /// MSN of the message the queue expects (or is assembling).
    pub fn expected_msn(&self) -> u32 {
        self.expected_msn
    }

    /// Test hook: pretend `msn - 1` messages have completed.
    #[cfg(test)]
    pub(crate) fn set_expected_msn(&mut self, msn: u32) {
        self.expected_msn = msn;
    }

    /// Buffers posted and not yet holding a message.
    pub fn posted(&self) -> usize {
        self.posted.len()
    }

    /// Whether a message has started and not completed.
    pub fn in_progress(&self) -> bool {
        self.active.is_some()
    }

    /// Bytes of the message in progress placed so far.
    pub fn placed(&self) -> u32 {
        self.active.as_ref().map_or(0, |a| a.placed)
    }

    /// Posts a receive buffer. Its SGEs are checked against memory when
    /// payload lands (a buffer may be deregistered meanwhile); see
    /// [`check_sgl`](super::check_sgl) to check them now as well.
    pub fn post(&mut self, id: u64, sgl: &[Sge]) -> Result<(), PostError> {
        let QueueMode::Posted {
            max_posted,
            max_sge,
        } = self.mode
        else {
            return Err(PostError::NotPostable { qn: self.qn });
        };
        let b = Posted::check(self.qn, max_posted, max_sge, self.posted.len(), id, sgl)?;
        self.posted.push_back(b);
        Ok(())
    }

    /// Handles of every buffer the queue holds, the one in progress first,
    /// leaving the queue empty (MSN kept): what a flush completes in error.
    /// A shared queue holds only the buffer it was filling; the pool's
    /// are not its to flush.
    pub fn flush(&mut self) -> Vec<u64> {
        let active = self.active.take().and_then(|a| a.buffer).map(|b| b.id);
        active
            .into_iter()
            .chain(self.posted.drain(..).map(|b| b.id))
            .collect()
    }

    /// Accepts one segment for this queue and places its payload. On error
    /// the queue is unchanged and nothing was written (unless the memory
    /// itself failed mid-write, a local error).
    pub fn place<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        pd: PdId,
        repr: &UntaggedRepr,
        payload: &[u8],
    ) -> Result<Placed, UntaggedError> {
        self.place_with(mem, pd, repr, payload, None)
    }

    /// [`Self::place`] for a queue that may be [`QueueMode::Shared`]: a
    /// message that starts takes the oldest buffer of `shared`
    /// ([`UntaggedError::NoBuffer`] if there is none, or no pool), and it
    /// stays this queue's even if the message then fails (too long, a bad
    /// buffer): the failure is reported on that buffer, as on a queue's
    /// own, and no other stream may fill a buffer already written into.
    ///
    /// Inlined into its callers, whatever its size: the answer then stays
    /// in registers (returned through memory, its fields were written one
    /// by one and read back two at a time, and the load waited for the
    /// stores: a quarter of a Send's `on_ulpdu` samples).
    #[inline(always)]
    pub fn place_with<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        pd: PdId,
        repr: &UntaggedRepr,
        payload: &[u8],
        shared: Option<&mut SharedBuffers>,
    ) -> Result<Placed, UntaggedError> {
        let (qn, msn) = (self.qn, repr.msn);
        if msn != self.expected_msn {
            return Err(match self.active {
                Some(_) => UntaggedError::Interleaved {
                    qn,
                    msn,
                    active: self.expected_msn,
                },
                None => UntaggedError::MsnRange {
                    qn,
                    msn,
                    expected: self.expected_msn,
                },
            });
        }
        let placed = self.placed();
        if repr.mo != placed {
            return Err(UntaggedError::InvalidMo {
                qn,
                msn,
                mo: repr.mo,
                expected: placed,
            });
        }
        let needed = u64::from(placed) + payload.len() as u64;
        if self.mode == QueueMode::Shared && self.active.is_none() {
            let pool_pd = shared.as_ref().map(|s| s.pd());
            let Some(mut b) = shared.and_then(SharedBuffers::take) else {
                return Err(UntaggedError::NoBuffer { qn, msn });
            };
            b.pd = pool_pd;
            self.active = Some(Active {
                buffer: Some(b),
                placed: 0,
                cursor: Cursor::default(),
                ulp: (repr.rsvd_ulp, repr.rsvd_ulp2),
            });
        }

        let (buffer, cursor) = match &self.active {
            Some(a) => (a.buffer.as_ref(), a.cursor),
            None => match self.mode {
                QueueMode::Posted { .. } => match self.posted.front() {
                    Some(b) => (Some(b), Cursor::default()),
                    None => return Err(UntaggedError::NoBuffer { qn, msn }),
                },
                QueueMode::Inline { .. } => (None, Cursor::default()),
                // Claimed above.
                QueueMode::Shared => return Err(UntaggedError::NoBuffer { qn, msn }),
            },
        };
        let capacity = match (buffer, self.mode) {
            (Some(b), _) => b.capacity,
            (None, QueueMode::Inline { max_message }) => u64::from(max_message),
            (None, QueueMode::Posted { .. } | QueueMode::Shared) => 0,
        };
        if needed > capacity {
            return Err(UntaggedError::TooLong {
                qn,
                msn,
                needed,
                capacity,
            });
        }
        // needed <= capacity <= u32::MAX.
        let placed = needed as u32;
        let cursor = match buffer {
            Some(b) => sgl::scatter(mem, b.pd.unwrap_or(pd), b.sgl.as_slice(), cursor, payload)
                .map_err(|source| UntaggedError::LocalBuffer {
                    qn,
                    id: b.id,
                    source,
                })?,
            None => cursor,
        };

        // Commit: a message in progress is updated where it is.
        let id = match &mut self.active {
            Some(a) => {
                a.placed = placed;
                a.cursor = cursor;
                a.buffer.as_ref().map(|b| b.id)
            }
            None => {
                let buffer = match self.mode {
                    QueueMode::Posted { .. } => self.posted.pop_front(),
                    QueueMode::Inline { .. } | QueueMode::Shared => None,
                };
                let id = buffer.as_ref().map(|b| b.id);
                if !repr.last {
                    self.active = Some(Active {
                        buffer,
                        placed,
                        cursor,
                        ulp: (repr.rsvd_ulp, repr.rsvd_ulp2),
                    });
                }
                id
            }
        };
        if repr.last {
            self.expected_msn = self.expected_msn.wrapping_add(1);
            self.active = None;
        }
        Ok(match id {
            None => Placed::Inline {
                qn,
                msn,
                mo: repr.mo,
                last: repr.last,
            },
            Some(id) if repr.last => Placed::Complete(Completion {
                qn,
                msn,
                id,
                len: placed,
                rsvd_ulp: repr.rsvd_ulp,
                rsvd_ulp2: repr.rsvd_ulp2,
            }),
            Some(id) => Placed::Partial {
                qn,
                msn,
                id,
                placed,
            },
        })
    }
}
