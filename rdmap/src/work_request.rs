//! Work requests, shaped like `struct ibv_send_wr` / `ibv_recv_wr`.

use ddp::memory::STag;
pub use ddp::untagged::Sge;

use crate::completion::WcOpcode;
pub use crate::wire::AtomicOp;

/// What a send queue entry does. Operations may be added (memory window
/// binds, say): a match needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendOp {
    /// A Send; with `invalidate`, a Send with Invalidate naming the peer's
    /// STag; with `solicited`, the Solicited Event variant.
    Send {
        /// Ask the peer for a solicited event.
        solicited: bool,
        /// The peer's STag to invalidate on arrival.
        invalidate: Option<STag>,
    },
    /// An RDMA Write of the local SGL to the peer's buffer.
    Write {
        /// The peer's region.
        remote_stag: STag,
        /// The tagged offset to write at.
        remote_to: u64,
    },
    /// An RDMA Read of the peer's buffer into the local SGL (the Data Sink:
    /// at most one SGE, as one Read Request names one sink).
    Read {
        /// The peer's region.
        remote_stag: STag,
        /// The tagged offset to read from.
        remote_to: u64,
    },
    /// RFC 7306 RDMA Write with Immediate Data: the Write, then an
    /// Immediate Data message carrying `imm`, which consumes one receive
    /// at the peer and completes it with `imm` once the Write is placed.
    WriteImm {
        /// The peer's region.
        remote_stag: STag,
        /// The tagged offset to write at.
        remote_to: u64,
        /// The immediate data delivered to the peer's receive.
        imm: u32,
    },
    /// RFC 7306 Send with Immediate Data: a Send of the SGL (none when it
    /// is empty), then an Immediate Data message carrying `imm` (with
    /// Solicited Event when `solicited`). Each message consumes one
    /// receive at the peer, as every message on DDP queue 0 does.
    SendImm {
        /// Ask the peer for a solicited event.
        solicited: bool,
        /// The immediate data delivered to the peer's receive.
        imm: u32,
    },
    /// An RFC 7306 atomic operation on the 8 bytes at the peer's
    /// `remote_to` (8-byte aligned); the original value lands in the one
    /// 8-byte local SGE.
    Atomic {
        /// The peer's region.
        remote_stag: STag,
        /// The tagged offset of the 8 target bytes (8-byte aligned).
        remote_to: u64,
        /// The operation and its operands.
        args: AtomicArgs,
    },
    /// Invalidates a local STag (a local Invalidate STag work request,
    /// `IBV_WR_LOCAL_INV`): nothing goes on the wire; in send queue order,
    /// once every request before it is on its way, the STag stops being
    /// valid for the peer and for later requests. No SGL.
    LocalInvalidate {
        /// The local STag to invalidate.
        stag: STag,
    },
}

impl SendOp {
    /// The opcode its completion reports.
    pub const fn wc_opcode(&self) -> WcOpcode {
        match self {
            SendOp::Send { .. } | SendOp::SendImm { .. } => WcOpcode::Send,
            SendOp::Write { .. } | SendOp::WriteImm { .. } => WcOpcode::RdmaWrite,
            SendOp::Read { .. } => WcOpcode::RdmaRead,
            SendOp::LocalInvalidate { .. } => WcOpcode::LocalInv,
            SendOp::Atomic { args, .. } => match args.op {
                AtomicOp::FetchAdd => WcOpcode::FetchAdd,
                AtomicOp::CmpSwap => WcOpcode::CmpSwap,
                AtomicOp::Swap | AtomicOp::Unknown(_) => WcOpcode::Swap,
            },
        }
    }

    /// Whether the operation exists only with RFC 7306.
    pub const fn needs_rfc7306(&self) -> bool {
        matches!(
            self,
            SendOp::WriteImm { .. } | SendOp::SendImm { .. } | SendOp::Atomic { .. }
        )
    }
}

/// The operands of an atomic operation, as the Atomic Request carries
/// them. The constructors build the unmasked operations libibverbs has;
/// the fields allow the masked ones RFC 7306 defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicArgs {
    /// The operation.
    pub op: AtomicOp,
    /// FetchAdd: the addend; Swap and CmpSwap: the new bits.
    pub add_swap_data: u64,
    /// FetchAdd: set bits end fields (no carry out of them); Swap and
    /// CmpSwap: the bits replaced.
    pub add_swap_mask: u64,
    /// CmpSwap: the value compared against.
    pub compare_data: u64,
    /// CmpSwap: the bits compared.
    pub compare_mask: u64,
}

impl AtomicArgs {
    /// Adds `add` (64-bit, wrapping).
    pub const fn fetch_add(add: u64) -> Self {
        AtomicArgs {
            op: AtomicOp::FetchAdd,
            add_swap_data: add,
            add_swap_mask: 0,
            compare_data: 0,
            compare_mask: 0,
        }
    }

    /// Replaces the value with `swap` if it equals `compare`.
    pub const fn cmp_swap(compare: u64, swap: u64) -> Self {
        AtomicArgs {
            op: AtomicOp::CmpSwap,
            add_swap_data: swap,
            add_swap_mask: u64::MAX,
            compare_data: compare,
            compare_mask: u64::MAX,
        }
    }

    /// Replaces the value with `swap`.
    pub const fn swap(swap: u64) -> Self {
        AtomicArgs {
            op: AtomicOp::Swap,
            add_swap_data: swap,
            add_swap_mask: u64::MAX,
            compare_data: 0,
            compare_mask: 0,
        }
    }
}

/// A send queue entry.
///
/// Fields may be added: build one with [`SendWr::new`] and the builder
/// methods (or `verbs::wr`), and read its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SendWr {
    /// Returned in the completion, to tell requests apart.
    pub wr_id: u64,
    /// What to do.
    pub op: SendOp,
    /// Local buffers: the source of a Send or Write, the sink of a Read.
    pub sgl: Vec<Sge>,
    /// Report a completion on success (failures are always reported).
    pub signaled: bool,
    /// Hold this request until every earlier RDMA Read and atomic has
    /// completed (libibverbs' `IBV_SEND_FENCE`), so it cannot overtake
    /// the data they fetch.
    pub fence: bool,
    /// Inline data (`IBV_SEND_INLINE`): the bytes of a Send or Write,
    /// copied in at posting, in place of `sgl` (which must be empty). No
    /// local STag is involved; at most `max_inline_data` bytes.
    pub inline: Vec<u8>,
}

impl SendWr {
    /// A signaled request doing `op` over `sgl`, unfenced, without
    /// inline data.
    pub fn new(wr_id: u64, op: SendOp, sgl: Vec<Sge>) -> Self {
        SendWr {
            wr_id,
            op,
            sgl,
            signaled: true,
            fence: false,
            inline: Vec::new(),
        }
    }

    /// With the fence flag: waits for earlier Reads and atomics.
    pub fn fenced(mut self) -> Self {
        self.fence = true;
        self
    }

    /// Reporting a completion on success or not (failures always are).
    pub fn with_signaled(mut self, signaled: bool) -> Self {
        self.signaled = signaled;
        self
    }

    /// Carrying `data` inline in place of a scatter/gather list.
    pub fn with_inline(mut self, data: Vec<u8>) -> Self {
        self.inline = data;
        self
    }
}

/// A receive queue entry. Fields may be added: build one with
/// [`RecvWr::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecvWr {
    /// Returned in the completion, to tell requests apart.
    pub wr_id: u64,
    /// Where a received message goes; its total length bounds the message.
    pub sgl: Vec<Sge>,
}

impl RecvWr {
    /// A receive into `sgl`.
    pub fn new(wr_id: u64, sgl: Vec<Sge>) -> Self {
        RecvWr { wr_id, sgl }
    }
}

/// A work request refused at posting: local misuse, nothing on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// The queue has as many entries as it may.
    #[error("the {queue} queue is full ({depth} entries)")]
    QueueFull {
        /// Which queue ("send" or "receive").
        queue: &'static str,
        /// Its depth.
        depth: usize,
    },
    /// The SGL has more elements than the queue pair allows.
    #[error("{n} SGEs, at most {max} allowed")]
    TooManySges {
        /// Elements given.
        n: usize,
        /// The limit.
        max: usize,
    },
    /// An RDMA Read with more than one sink SGE (its count).
    #[error("an RDMA Read takes at most one sink SGE, got {0}")]
    ReadSgl(usize),
    /// A message longer than DDP can number.
    #[error("the message is longer than 2^32 - 1 bytes")]
    TooLong,
    /// An SGE whose end does not fit in 64 bits (its index).
    #[error("SGE {0} ends past 2^64")]
    SgeWraps(usize),
    /// No READ credit: the peer granted none.
    #[error("RDMA Read or atomic posted on a connection negotiated with ORD 0")]
    NoReadCredit,
    /// An RFC 7306 operation on a connection whose two sides did not agree
    /// to RFC 7306: nothing goes on the wire.
    #[error("RFC 7306 operations (immediate data, atomics) were not agreed for this connection")]
    Rfc7306NotAgreed,
    /// An atomic takes exactly one 8-byte local SGE for the original value.
    #[error("an atomic takes one 8-byte local SGE, got {sges} SGEs of {len} bytes")]
    AtomicSink {
        /// SGEs given.
        sges: usize,
        /// Their total length.
        len: u32,
    },
    /// More inline data than the queue pair takes.
    #[error("{len} bytes of inline data, at most {max}")]
    InlineTooLong {
        /// Bytes given.
        len: usize,
        /// The queue pair's limit.
        max: usize,
    },
    /// Inline data goes with Sends and Writes only, and in place of an SGL.
    #[error("inline data needs a Send or Write without SGEs")]
    InlineMisused,
    /// A local invalidate names no buffer.
    #[error("a local invalidate carries no SGEs or inline data")]
    InvalidateSgl,
    /// An atomic's remote tagged offset must be 8-byte aligned.
    #[error("atomic target {0:#x} is not 8-byte aligned")]
    AtomicAlignment(u64),
    /// A receive posted to a connection that takes its receives from a
    /// shared receive queue: post it to that queue.
    #[error("the queue pair receives from a shared receive queue; post receives there")]
    SharedReceiveQueue,
}

impl From<ddp::untagged::PostError> for PostError {
    fn from(e: ddp::untagged::PostError) -> Self {
        use ddp::untagged::PostError as P;
        match e {
            P::QueueFull { max, .. } => PostError::QueueFull {
                queue: "receive",
                depth: max,
            },
            P::TooManySges { n, max } => PostError::TooManySges { n, max },
            P::SgeWraps { index } => PostError::SgeWraps(index),
            P::NotPostable { .. } => PostError::SharedReceiveQueue,
            // The receive queue is always enabled.
            P::NoSuchQueue { .. } => PostError::QueueFull {
                queue: "receive",
                depth: 0,
            },
        }
    }
}

/// Total length of an SGL, if it fits a message.
pub(crate) fn sgl_len(sgl: &[Sge]) -> Result<u32, PostError> {
    let mut total: u32 = 0;
    for (i, s) in sgl.iter().enumerate() {
        if s.to.checked_add(u64::from(s.len)).is_none() {
            return Err(PostError::SgeWraps(i));
        }
        total = total.checked_add(s.len).ok_or(PostError::TooLong)?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sge(to: u64, len: u32) -> Sge {
        Sge {
            stag: STag(0x100),
            to,
            len,
        }
    }

    #[test]
    fn lengths_add_up() {
        assert_eq!(sgl_len(&[]), Ok(0));
        assert_eq!(sgl_len(&[sge(0, 3), sge(10, 4)]), Ok(7));
    }

    #[test]
    fn too_long_and_wrapping_are_refused() {
        assert_eq!(
            sgl_len(&[sge(0, u32::MAX), sge(0, 1)]),
            Err(PostError::TooLong)
        );
        assert_eq!(
            sgl_len(&[sge(0, 1), sge(u64::MAX, 2)]),
            Err(PostError::SgeWraps(1))
        );
    }
}
