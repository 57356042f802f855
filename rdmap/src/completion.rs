//! Work completions, shaped like `struct ibv_wc`.

use ddp::memory::STag;

/// Completion status, mirroring `enum ibv_wc_status` (same order, so
/// [`WcStatus::ibv_value`] is the libibverbs number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcStatus {
    Success,
    /// A message did not fit the local buffers (receive too small).
    LocLenErr,
    /// The work request was inconsistent with the queue pair.
    LocQpOpErr,
    LocEecOpErr,
    /// A local buffer failed its protection check (STag, PD, access, bounds).
    LocProtErr,
    /// Flushed: the queue pair went to the error state before this ran.
    WrFlushErr,
    MwBindErr,
    BadRespErr,
    LocAccessErr,
    /// The peer found the request invalid (no or too small receive buffer,
    /// unexpected opcode).
    RemInvReqErr,
    /// The peer refused access to its memory (STag, bounds, rights).
    RemAccessErr,
    /// The peer could not carry out the operation.
    RemOpErr,
    RetryExcErr,
    RnrRetryExcErr,
    LocRddViolErr,
    RemInvRdReqErr,
    RemAbortErr,
    InvEecnErr,
    InvEecStateErr,
    FatalErr,
    RespTimeoutErr,
    GeneralErr,
}

impl WcStatus {
    /// The `ibv_wc_status` value.
    pub const fn ibv_value(self) -> u32 {
        self as u32
    }

    pub const fn is_success(self) -> bool {
        matches!(self, WcStatus::Success)
    }
}

/// What completed, mirroring `enum ibv_wc_opcode` for the operations iWARP
/// carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    Send,
    RdmaWrite,
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
pub struct WorkCompletion {
    pub wr_id: u64,
    pub status: WcStatus,
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
