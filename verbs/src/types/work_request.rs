//! Work requests: the scatter/gather entries and send and receive requests
//! of rdmap, and short constructors for each kind.

pub use ddp::memory::STag;
pub use ddp::untagged::Sge;
pub use rdmap::work_request::{AtomicArgs, AtomicOp, RecvWr, SendOp, SendWr};

/// Convenience constructors for work requests.
pub mod wr {
    use super::*;

    /// A signaled Send of the bytes `sgl` names.
    pub fn send(wr_id: u64, sgl: Vec<Sge>) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::Send {
                solicited: false,
                invalidate: None,
            },
            sgl,
        )
    }

    /// A signaled Send that asks the peer for a solicited event.
    pub fn send_solicited(wr_id: u64, sgl: Vec<Sge>) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::Send {
                solicited: true,
                invalidate: None,
            },
            sgl,
        )
    }

    /// A signaled Send with Invalidate: the peer's `invalidate` STag is invalidated on arrival.
    pub fn send_invalidate(wr_id: u64, sgl: Vec<Sge>, invalidate: STag) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::Send {
                solicited: false,
                invalidate: Some(invalidate),
            },
            sgl,
        )
    }

    /// A signaled RDMA Write of `sgl` to the peer's `remote_stag` at tagged offset `remote_to`.
    pub fn write(wr_id: u64, sgl: Vec<Sge>, remote_stag: STag, remote_to: u64) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::Write {
                remote_stag,
                remote_to,
            },
            sgl,
        )
    }

    /// A signaled RDMA Read from the peer's `remote_stag` at `remote_to` into `sink`.
    pub fn read(wr_id: u64, sink: Sge, remote_stag: STag, remote_to: u64) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::Read {
                remote_stag,
                remote_to,
            },
            vec![sink],
        )
    }

    /// A signaled Send of `data`, copied in now (inline: no registered
    /// buffer; at most the queue pair's `max_inline_data` bytes).
    pub fn send_inline(wr_id: u64, data: &[u8]) -> SendWr {
        send(wr_id, Vec::new()).with_inline(data.to_vec())
    }

    /// A signaled RDMA Write of `data`, copied in now (inline).
    pub fn write_inline(wr_id: u64, data: &[u8], remote_stag: STag, remote_to: u64) -> SendWr {
        write(wr_id, Vec::new(), remote_stag, remote_to).with_inline(data.to_vec())
    }

    /// A signaled RDMA Write with Immediate Data (RFC 7306): the Write,
    /// then `imm` completes one receive at the peer.
    pub fn write_imm(
        wr_id: u64,
        sgl: Vec<Sge>,
        remote_stag: STag,
        remote_to: u64,
        imm: u32,
    ) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::WriteImm {
                remote_stag,
                remote_to,
                imm,
            },
            sgl,
        )
    }

    /// A signaled Send with Immediate Data (RFC 7306): a Send of `sgl`
    /// (none when empty), then `imm`; each consumes one receive at the
    /// peer.
    pub fn send_imm(wr_id: u64, sgl: Vec<Sge>, imm: u32) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::SendImm {
                solicited: false,
                imm,
            },
            sgl,
        )
    }

    /// As [`send_imm`], the immediate data raising a solicited event.
    pub fn send_solicited_imm(wr_id: u64, sgl: Vec<Sge>, imm: u32) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::SendImm {
                solicited: true,
                imm,
            },
            sgl,
        )
    }

    /// A signaled RFC 7306 atomic on the peer's 8 bytes at `remote_to`
    /// (8-byte aligned, `Access::REMOTE_ATOMIC`); the original value lands
    /// in `sink` (8 bytes, native byte order).
    pub fn atomic(
        wr_id: u64,
        sink: Sge,
        remote_stag: STag,
        remote_to: u64,
        args: AtomicArgs,
    ) -> SendWr {
        SendWr::new(
            wr_id,
            SendOp::Atomic {
                remote_stag,
                remote_to,
                args,
            },
            vec![sink],
        )
    }

    /// Atomic Fetch and Add of `add`.
    pub fn fetch_add(wr_id: u64, sink: Sge, remote_stag: STag, remote_to: u64, add: u64) -> SendWr {
        atomic(
            wr_id,
            sink,
            remote_stag,
            remote_to,
            AtomicArgs::fetch_add(add),
        )
    }

    /// Atomic Compare and Swap: `swap` replaces the value if it equals
    /// `compare`.
    pub fn cmp_swap(
        wr_id: u64,
        sink: Sge,
        remote_stag: STag,
        remote_to: u64,
        compare: u64,
        swap: u64,
    ) -> SendWr {
        atomic(
            wr_id,
            sink,
            remote_stag,
            remote_to,
            AtomicArgs::cmp_swap(compare, swap),
        )
    }

    /// A signaled local Invalidate STag: once the requests posted before it
    /// are on their way, `stag` (a region of this queue pair's protection
    /// domain) is invalid for the peer and for later requests.
    pub fn local_invalidate(wr_id: u64, stag: STag) -> SendWr {
        SendWr::new(wr_id, SendOp::LocalInvalidate { stag }, Vec::new())
    }

    /// A receive into the buffers `sgl` names.
    pub fn recv(wr_id: u64, sgl: Vec<Sge>) -> RecvWr {
        RecvWr::new(wr_id, sgl)
    }
}
