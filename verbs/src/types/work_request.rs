//! Work requests: the scatter/gather entries and send and receive requests
//! of rdmap, and short constructors for each kind.

pub use ddp::memory::STag;
pub use ddp::untagged::Sge;
pub use rdmap::work_request::{RecvWr, SendOp, SendWr};

/// Convenience constructors for work requests.
pub mod wr {
    use super::*;

    /// A signaled Send of the bytes `sgl` names.
    pub fn send(wr_id: u64, sgl: Vec<Sge>) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Send {
                solicited: false,
                invalidate: None,
            },
            sgl,
            signaled: true,
        }
    }

    /// A signaled Send that asks the peer for a solicited event.
    pub fn send_solicited(wr_id: u64, sgl: Vec<Sge>) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Send {
                solicited: true,
                invalidate: None,
            },
            sgl,
            signaled: true,
        }
    }

    /// A signaled Send with Invalidate: the peer's `invalidate` STag is invalidated on arrival.
    pub fn send_invalidate(wr_id: u64, sgl: Vec<Sge>, invalidate: STag) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Send {
                solicited: false,
                invalidate: Some(invalidate),
            },
            sgl,
            signaled: true,
        }
    }

    /// A signaled RDMA Write of `sgl` to the peer's `remote_stag` at tagged offset `remote_to`.
    pub fn write(wr_id: u64, sgl: Vec<Sge>, remote_stag: STag, remote_to: u64) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Write {
                remote_stag,
                remote_to,
            },
            sgl,
            signaled: true,
        }
    }

    /// A signaled RDMA Read from the peer's `remote_stag` at `remote_to` into `sink`.
    pub fn read(wr_id: u64, sink: Sge, remote_stag: STag, remote_to: u64) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Read {
                remote_stag,
                remote_to,
            },
            sgl: vec![sink],
            signaled: true,
        }
    }

    /// A receive into the buffers `sgl` names.
    pub fn recv(wr_id: u64, sgl: Vec<Sge>) -> RecvWr {
        RecvWr { wr_id, sgl }
    }
}
