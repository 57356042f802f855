//! Errors of the transport seam.

use std::io;

use super::seam::{ListenerId, StreamId, StreamState};

/// Why a transport operation failed.
///
/// Local misuse (an unknown id, a closure claiming more bytes than it was
/// lent) is kept apart from what the network did (a reset, an I/O error).
///
/// More causes may be added: a `match` needs a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The stream id is not (or no longer) known to this transport.
    #[error("unknown stream {0:?}")]
    UnknownStream(StreamId),
    /// The listener id is not known to this transport.
    #[error("unknown listener {0:?}")]
    UnknownListener(ListenerId),
    /// The stream is in a state that does not allow the operation
    /// (sending after close, receiving before the handshake completed...).
    #[error("stream is {0:?}")]
    InvalidState(StreamState),
    /// A `send_with`/`recv_with` closure returned more bytes than it was lent.
    #[error("closure claimed {claimed} bytes of {lent} lent")]
    ClosureOverrun {
        /// What the closure returned.
        claimed: usize,
        /// The length of the slice it was given.
        lent: usize,
    },
    /// The local port is already used by a listener of this transport.
    #[error("port {0} already in use")]
    AddressInUse(u16),
    /// The address or port cannot be used (port 0, wrong address family...).
    #[error("unusable address: {0}")]
    BadAddress(&'static str),
    /// No local ports or socket slots are left.
    #[error("out of {0}")]
    Exhausted(&'static str),
    /// The transport cannot do this at all.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being attempted.
        context: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl TransportError {
    /// Wraps an OS error with what was being attempted.
    pub(crate) fn io(context: &'static str, source: io::Error) -> Self {
        TransportError::Io { context, source }
    }
}
