//! Work completions, shaped like `struct ibv_wc`.

use ddp::memory::STag;

/// Completion status, mirroring `enum ibv_wc_status` (same order, so
/// [`WcStatus::ibv_value`] is the libibverbs number).
///
/// Statuses may be added (libibverbs has more): a match needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcStatus {
    /// The work request did what it asked.
    Success,
    /// A message did not fit the local buffers (receive too small).
    LocLenErr,
    /// The work request was inconsistent with the queue pair.
    LocQpOpErr,
    /// Not used by iWARP (no end-to-end contexts); kept for `ibv_wc_status` numbering.
    LocEecOpErr,
    /// A local buffer failed its protection check (STag, PD, access, bounds).
    LocProtErr,
    /// Flushed: the queue pair went to the error state before this ran.
    WrFlushErr,
    /// Not used here (no memory windows); kept for `ibv_wc_status` numbering.
    MwBindErr,
    /// Not used by iWARP; kept for `ibv_wc_status` numbering.
    BadRespErr,
    /// A local access error (`IBV_WC_LOC_ACCESS_ERR`); not produced here, kept for the numbering.
    LocAccessErr,
    /// The peer found the request invalid (no or too small receive buffer,
    /// unexpected opcode).
    RemInvReqErr,
    /// The peer refused access to its memory (STag, bounds, rights).
    RemAccessErr,
    /// The peer could not carry out the operation.
    RemOpErr,
    /// Not used by iWARP (TCP retransmits); kept for `ibv_wc_status` numbering.
    RetryExcErr,
    /// Not used by iWARP (no RNR retries); kept for `ibv_wc_status` numbering.
    RnrRetryExcErr,
    /// Not used by iWARP (no RDD); kept for `ibv_wc_status` numbering.
    LocRddViolErr,
    /// Not used by iWARP (no reliable datagram); kept for `ibv_wc_status` numbering.
    RemInvRdReqErr,
    /// The peer aborted the operation (`IBV_WC_REM_ABORT_ERR`); not produced here, kept for the numbering.
    RemAbortErr,
    /// Not used by iWARP (no end-to-end contexts); kept for `ibv_wc_status` numbering.
    InvEecnErr,
    /// Not used by iWARP (no end-to-end contexts); kept for `ibv_wc_status` numbering.
    InvEecStateErr,
    /// The connection failed below RDMAP (an MPA or TCP error ended the stream).
    FatalErr,
    /// Not used by iWARP (TCP keeps the timers); kept for `ibv_wc_status` numbering.
    RespTimeoutErr,
    /// An error with no more specific status.
    GeneralErr,
}

impl WcStatus {
    /// The `ibv_wc_status` value.
    pub const fn ibv_value(self) -> u32 {
        self as u32
    }

    /// Whether the work request succeeded.
    pub const fn is_success(self) -> bool {
        matches!(self, WcStatus::Success)
    }
}

/// What completed, mirroring `enum ibv_wc_opcode` for the operations iWARP
/// carries.
///
/// Opcodes may be added (memory window binds, say): a match needs a `_`
/// arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcOpcode {
    /// A Send (any variant) left the send queue.
    Send,
    /// An RDMA Write left the send queue.
    RdmaWrite,
    /// An RDMA Read's data arrived in its sink.
    RdmaRead,
    /// A receive work request (receive queue).
    Recv,
    /// A receive consumed by an RFC 7306 Immediate Data message (what an
    /// RDMA Write or Send with Immediate Data ends with): no bytes, the
    /// value in `imm_data` (libibverbs' `IBV_WC_RECV_RDMA_WITH_IMM`).
    RecvImm,
    /// RFC 7306 atomic Fetch and Add (`IBV_WC_FETCH_ADD`).
    FetchAdd,
    /// RFC 7306 atomic Compare and Swap (`IBV_WC_COMP_SWAP`).
    CmpSwap,
    /// RFC 7306 atomic (masked) Swap.
    Swap,
    /// A local Invalidate STag work request (`IBV_WC_LOCAL_INV`).
    LocalInv,
}

impl WcOpcode {
    /// A completion of the receive queue.
    pub const fn is_recv(self) -> bool {
        matches!(self, WcOpcode::Recv | WcOpcode::RecvImm)
    }
}

/// One completed work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WorkCompletion {
    /// The id the work request was posted with.
    pub wr_id: u64,
    /// Success, or why not.
    pub status: WcStatus,
    /// What kind of work request completed.
    pub opcode: WcOpcode,
    /// Bytes received (Recv) or transferred (READ); for Send and Write the
    /// message length.
    pub byte_len: u32,
    /// The local STag a Send with Invalidate invalidated (Recv only). The
    /// STag is invalid by the time this completion is seen.
    pub invalidated: Option<STag>,
    /// The Send asked for a solicited event (Recv only).
    pub solicited: bool,
    /// The 32-bit immediate data of an RFC 7306 Immediate Data message
    /// (RecvImm only).
    pub imm_data: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibv_numbers() {
        assert_eq!(WcStatus::Success.ibv_value(), 0);
        assert_eq!(WcStatus::LocLenErr.ibv_value(), 1);
        assert_eq!(WcStatus::LocProtErr.ibv_value(), 4);
        assert_eq!(WcStatus::WrFlushErr.ibv_value(), 5);
        assert_eq!(WcStatus::RemInvReqErr.ibv_value(), 9);
        assert_eq!(WcStatus::RemAccessErr.ibv_value(), 10);
        assert_eq!(WcStatus::RemOpErr.ibv_value(), 11);
        assert_eq!(WcStatus::FatalErr.ibv_value(), 19);
        assert_eq!(WcStatus::GeneralErr.ibv_value(), 21);
    }
}
