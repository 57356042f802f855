//! Work requests, shaped like `struct ibv_send_wr` / `ibv_recv_wr`.

use ddp::memory::STag;
pub use ddp::untagged::Sge;

/// What a send queue entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOp {
    /// A Send; with `invalidate`, a Send with Invalidate naming the peer's
    /// STag; with `solicited`, the Solicited Event variant.
    Send {
        solicited: bool,
        invalidate: Option<STag>,
    },
    /// An RDMA Write of the local SGL to the peer's buffer.
    Write { remote_stag: STag, remote_to: u64 },
    /// An RDMA Read of the peer's buffer into the local SGL (the Data Sink:
    /// at most one SGE, as one Read Request names one sink).
    Read { remote_stag: STag, remote_to: u64 },
}

/// A send queue entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWr {
    pub wr_id: u64,
    pub op: SendOp,
    /// Local buffers: the source of a Send or Write, the sink of a Read.
    pub sgl: Vec<Sge>,
    /// Report a completion on success (failures are always reported).
    pub signaled: bool,
}

/// A receive queue entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvWr {
    pub wr_id: u64,
    pub sgl: Vec<Sge>,
}

/// A work request refused at posting: local misuse, nothing on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    #[error("the {queue} queue is full ({depth} entries)")]
    QueueFull { queue: &'static str, depth: usize },
    #[error("{n} SGEs, at most {max} allowed")]
    TooManySges { n: usize, max: usize },
    #[error("an RDMA Read takes at most one sink SGE, got {0}")]
    ReadSgl(usize),
    #[error("the message is longer than 2^32 - 1 bytes")]
    TooLong,
    #[error("SGE {0} ends past 2^64")]
    SgeWraps(usize),
    #[error("RDMA Read posted on a connection negotiated with ORD 0")]
    NoReadCredit,
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
            // The receive queue is always enabled and postable.
            P::NoSuchQueue { .. } | P::NotPostable { .. } => PostError::QueueFull {
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
