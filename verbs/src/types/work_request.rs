//! Work requests: the scatter/gather entries and send and receive requests
//! of rdmap, and short constructors for each kind.

pub use ddp::memory::STag;
pub use ddp::untagged::Sge;
pub use rdmap::work_request::{RecvWr, SendOp, SendWr};

/// Convenience constructors for work requests.
pub mod wr {
    use super::*;

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

    pub fn recv(wr_id: u64, sgl: Vec<Sge>) -> RecvWr {
        RecvWr { wr_id, sgl }
    }
}
