//! What one connection has carried and what it has outstanding: the
//! per-queue-pair picture a program needs to tell a busy connection from a
//! stuck one.

use crate::term::TermCode;

/// A snapshot of one connection (see [`Connection::stats`]).
///
/// Counts are of MPA stream bytes (whole FPDUs: header, markers, pad and
/// CRC included) and of DDP messages (a message is counted once, at its
/// last segment), so they match what a capture of the stream shows.
///
/// [`Connection::stats`]: super::Connection::stats
/// Fields may be added, so it is not built outside this crate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionStats {
    /// Stream bytes handed to the transport.
    pub bytes_sent: u64,
    /// Stream bytes taken from the transport.
    pub bytes_received: u64,
    /// DDP messages sent (Sends, Writes, Read Requests and Responses,
    /// atomics, TERMINATEs).
    pub messages_sent: u64,
    /// DDP messages received whole.
    pub messages_received: u64,
    /// Send work requests posted and not yet completed, whatever their
    /// operation.
    pub sends_outstanding: usize,
    /// RDMA Reads sent whose response has not fully arrived.
    pub reads_outstanding: usize,
    /// Atomic requests sent whose response has not arrived.
    pub atomics_outstanding: usize,
    /// Reads and atomics the peer may have outstanding towards us (IRD).
    pub ird: usize,
    /// The peer's Reads and atomics waiting for our response.
    pub ird_in_use: usize,
    /// Reads and atomics we may have outstanding towards the peer (ORD).
    pub ord: usize,
    /// Our Reads and atomics waiting for the peer's response.
    pub ord_in_use: usize,
    /// The last TERMINATE sent or received, if any.
    pub last_terminate: Option<TerminateRecord>,
}

/// A TERMINATE a connection sent or received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TerminateRecord {
    /// Whether the peer sent it (else this side did).
    pub by_peer: bool,
    /// Its Layer / Error Type / Error Code (for one from the peer that did
    /// not parse: RDMAP local catastrophic, as it is reported).
    pub cause: TermCode,
}

/// Stream bytes and DDP messages one direction of a connection carried.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Traffic {
    pub bytes: u64,
    pub messages: u64,
}

impl Traffic {
    /// Counts `n` stream bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) {
        self.bytes = self.bytes.wrapping_add(n as u64);
    }

    /// Counts a DDP segment by its header; a message at its last segment.
    #[inline]
    pub fn segment(&mut self, ddp_header: &[u8]) {
        let last = ddp_header
            .first()
            .is_some_and(|&b| b & ddp::wire::control::FLAG_LAST != 0);
        self.messages = self.messages.wrapping_add(u64::from(last));
    }
}
