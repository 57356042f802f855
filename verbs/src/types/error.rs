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
    #[error("range {offset}+{len} is outside the region of {region_len} bytes")]
    OutOfBounds {
        offset: usize,
        len: usize,
        region_len: usize,
    },
    #[error("length {0} does not fit a work request (at most 4 GiB - 1)")]
    TooLong(usize),
    #[error("no more memory regions can be registered")]
    TooManyRegions,
    #[error("the protection domain belongs to another device")]
    WrongDevice,
    #[error("no queue pair {0}")]
    NoSuchQp(u32),
    #[error("the queue pair is not connected")]
    NotConnected,
    #[error("the queue pair is already connected or connecting")]
    AlreadyConnected,
    #[error("the connect request was withdrawn (the peer went away or it timed out)")]
    RequestGone,
    #[error("work request refused: {0}")]
    Post(#[from] rdmap::work_request::PostError),
    #[error("completion queue overflow: more than {capacity} completions were waiting")]
    CqOverflow { capacity: usize },
    #[error("connecting failed")]
    Connect(#[from] ConnectError),
    #[error("disconnected: {0:?}")]
    Disconnected(DisconnectReason),
    #[error("timed out")]
    Timeout,
    #[error("invalid MPA settings")]
    MpaSettings(#[from] MpaSettingsError),
    #[error("the completion queue has no event channel to notify")]
    NoChannel,
    #[error("the transport is held by a waiting thread")]
    TransportBusy,
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("event channel: {0}")]
    Io(#[source] std::io::Error),
}
