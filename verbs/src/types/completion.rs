//! Work completions, shaped like `struct ibv_wc`.

pub use rdmap::{WcOpcode, WcStatus};

/// One completed work request, shaped like `struct ibv_wc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WorkCompletion {
    /// The id the work request was posted with.
    pub wr_id: u64,
    /// Success, or why not (`ibv_wc_status`).
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
    /// Bytes received (Recv), read (RDMA Read) or sent (Send, Write).
    pub byte_len: u32,
    /// The queue pair the work request was posted to.
    pub qp_num: u32,
    /// The local STag a peer's Send with Invalidate invalidated (Recv only).
    pub invalidated: Option<ddp::memory::STag>,
    /// The peer's Send asked for a solicited event (Recv only).
    pub solicited: bool,
    /// The 32-bit immediate data of an RFC 7306 RDMA Write or Send with
    /// Immediate Data (`RecvImm` only).
    pub imm_data: Option<u32>,
}

impl WorkCompletion {
    /// A value to fill the array handed to `CompletionQueue::poll` with
    /// (`[WorkCompletion::FILLER; 16]`): an error status and zeros, never
    /// a completion the queue returned.
    pub const FILLER: WorkCompletion = WorkCompletion {
        wr_id: 0,
        status: WcStatus::GeneralErr,
        opcode: WcOpcode::Send,
        byte_len: 0,
        qp_num: 0,
        invalidated: None,
        solicited: false,
        imm_data: None,
    };

    pub(crate) fn from_rdmap(wc: rdmap::WorkCompletion, qp_num: u32) -> Self {
        WorkCompletion {
            wr_id: wc.wr_id,
            status: wc.status,
            opcode: wc.opcode,
            byte_len: wc.byte_len,
            qp_num,
            invalidated: wc.invalidated,
            solicited: wc.solicited,
            imm_data: wc.imm_data,
        }
    }

    /// Whether the status is success.
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }
}

/// Filler for output arrays; never returned to the caller as a completion.
pub(crate) const PLACEHOLDER: WorkCompletion = WorkCompletion::FILLER;
