//! Errors of the verbs API: local misuse and connection outcomes, never a
//! panic and never blamed on the peer when the program erred.

use thiserror::Error;

use super::connect_error::{ConnectError, MpaSettingsError};
use super::connection::DisconnectReason;
use crate::transport::TransportError;

/// Everything a verbs call can fail with. Connection outcomes say whose
/// fault they were ([`ConnectError`]); local misuse is never blamed on the
/// peer.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum VerbsError {
    /// A range outside a memory region (the caller's offsets).
    #[error("range {offset}+{len} is outside the region of {region_len} bytes")]
    OutOfBounds {
        /// Start of the range.
        offset: usize,
        /// Its length.
        len: usize,
        /// The region's length.
        region_len: usize,
    },
    /// A length a work request cannot carry.
    #[error("length {0} does not fit a work request (at most 4 GiB - 1)")]
    TooLong(usize),
    /// The registration table is full.
    #[error("no more memory regions can be registered")]
    TooManyRegions,
    /// The memory region was deregistered; its handle can no longer
    /// re-register it.
    #[error("the memory region was deregistered")]
    Deregistered,
    /// A protection domain of one device used with another.
    #[error("the protection domain belongs to another device")]
    WrongDevice,
    /// The queue pair no longer exists.
    #[error("no queue pair {0}")]
    NoSuchQp(u32),
    /// A call that needs a connection on a queue pair without one.
    #[error("the queue pair is not connected")]
    NotConnected,
    /// Connect or accept on a queue pair already connected or connecting.
    #[error("the queue pair is already connected or connecting")]
    AlreadyConnected,
    /// Accept or reject of a request no longer waiting.
    #[error("the connect request was withdrawn (the peer went away or it timed out)")]
    RequestGone,
    /// A work request the queue pair refused (queue full, too many
    /// scatter/gather entries, bad local STag...).
    #[error("work request refused: {0}")]
    Post(#[from] rdmap::work_request::PostError),
    /// More completions arrived than the queue's capacity (none was lost).
    #[error("completion queue overflow: more than {capacity} completions were waiting")]
    CqOverflow {
        /// The queue's capacity.
        capacity: usize,
    },
    /// Connecting ended without a connection; the cause says whose fault.
    #[error("connecting failed")]
    Connect(#[from] ConnectError),
    /// The connection ended while waiting for it to be established.
    #[error("disconnected: {0:?}")]
    Disconnected(DisconnectReason),
    /// A blocking call's timeout passed.
    #[error("timed out")]
    Timeout,
    /// MPA settings the caller passed cannot be used.
    #[error("invalid MPA settings")]
    MpaSettings(#[from] MpaSettingsError),
    /// `req_notify` on a completion queue made without an event channel.
    #[error("the completion queue has no event channel to notify")]
    NoChannel,
    /// The transport is lent to a waiting thread.
    #[error("the transport is held by a waiting thread")]
    TransportBusy,
    /// The transport failed (listen, connect).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The shared receive queue no longer exists.
    #[error("no shared receive queue {0}")]
    NoSuchSrq(u32),
    /// A shared receive queue size or limit out of range.
    #[error(
        "shared receive queue {field} of {value} is out of range (at most {max}; sizes at least 1)"
    )]
    SrqSize {
        /// Which parameter.
        field: &'static str,
        /// What was asked for.
        value: usize,
        /// The most allowed.
        max: usize,
    },
    /// A queue pair size beyond the device's limit (`ibv_create_qp`'s
    /// `EINVAL`).
    #[error("queue pair {field} of {value} is out of range (at most {max})")]
    QpSize {
        /// Which parameter.
        field: &'static str,
        /// What was asked for.
        value: usize,
        /// The most allowed.
        max: usize,
    },
    /// An event channel's descriptor failed (async API).
    #[error("event channel: {0}")]
    Io(#[source] std::io::Error),
}

/// A list post ([`QueuePair::post_send_list`](crate::QueuePair::post_send_list),
/// [`QueuePair::post_recv_list`](crate::QueuePair::post_recv_list)) stopped
/// at a refused work request, as `ibv_post_send`'s `bad_wr`: the first
/// `posted` of the list were posted (and complete as usual), the refused
/// one and those after it were not.
#[derive(Debug, Error)]
#[error("work request {posted} of the list refused: {error}")]
pub struct PostListError {
    /// How many work requests before the refused one were posted.
    pub posted: usize,
    /// Why it was refused.
    #[source]
    pub error: VerbsError,
}

impl From<PostListError> for VerbsError {
    /// The refusal alone, for callers that post one request at a time.
    fn from(e: PostListError) -> Self {
        e.error
    }
}
