//! Shared receive queues: creation parameters, what a query reports, and
//! the event the limit raises.

/// Most receive work requests one shared receive queue holds.
pub const MAX_SRQ_WR: usize = 16 * 1024;
/// Most scatter/gather entries per shared receive work request (siw's 6).
pub const MAX_SRQ_SGE: usize = 6;

/// Sizes of a new shared receive queue (`struct ibv_srq_init_attr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SrqInit {
    /// Receive work requests it holds at most (1 to [`MAX_SRQ_WR`]).
    pub max_wr: usize,
    /// Scatter/gather entries per work request (1 to [`MAX_SRQ_SGE`]).
    pub max_sge: usize,
    /// Armed limit: 0 leaves it unarmed. libibverbs ignores this at
    /// creation; here a non-zero value arms it at once, as a following
    /// `modify_limit` would.
    pub srq_limit: usize,
}

impl SrqInit {
    /// `max_wr` work requests of `max_sge` entries each, limit unarmed.
    pub fn new(max_wr: usize, max_sge: usize) -> Self {
        SrqInit {
            max_wr,
            max_sge,
            srq_limit: 0,
        }
    }

    /// With the limit armed at `limit`.
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.srq_limit = limit;
        self
    }
}

/// A shared receive queue's sizes and fill (`ibv_query_srq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SrqAttr {
    /// Receive work requests it holds at most.
    pub max_wr: usize,
    /// Scatter/gather entries per work request.
    pub max_sge: usize,
    /// The armed limit; 0 when not armed (it disarms as it fires).
    pub srq_limit: usize,
    /// Work requests posted and not yet taken by a message.
    pub posted: usize,
    /// Queue pairs receiving from it now.
    pub qps: usize,
}

/// An asynchronous event of a shared receive queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SrqEvent {
    /// Fewer work requests than the armed limit are posted
    /// (IBV_EVENT_SRQ_LIMIT_REACHED): reported once, after which the limit
    /// is disarmed until armed again.
    LimitReached,
}
