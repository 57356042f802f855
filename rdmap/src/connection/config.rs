//! Connection parameters: what MPA negotiated plus local limits.

use std::time::Instant;

use ddp::memory::PdId;

pub use mpa::{Negotiated, Role};

/// How a [`Connection`](super::Connection) is set up. Fields may be
/// added: start from [`ConnectionConfig::new`] and set the fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectionConfig {
    /// The outcome of MPA start-up: CRC, markers, IRD/ORD, RTR, role.
    pub negotiated: Negotiated,
    /// The protection domain of the queue pair.
    pub pd: PdId,
    /// Largest FPDU to send (header, markers and CRC included): the TCP MSS.
    /// Rounded down to a multiple of 4 (an FPDU's length always is); at
    /// least [`MIN_FPDU`]. siw rounds down to 8, which matches this on the
    /// common MSS of 1448 (with TCP timestamps); where the MSS is 1460
    /// (smoltcp, no timestamps) rounding to 8 would leave FPDUs 4 bytes short
    /// of a segment, and a run of them would drift across segment
    /// boundaries, which peers and dissectors that expect FPDUs aligned with
    /// segments (RFC 5044 section 4) handle badly.
    pub max_fpdu: usize,
    /// Send queue depth (outstanding send work requests).
    pub sq_depth: usize,
    /// Receive queue depth (posted receive work requests).
    pub rq_depth: usize,
    /// SGEs per send work request.
    pub max_send_sge: usize,
    /// SGEs per receive work request.
    pub max_recv_sge: usize,
    /// Bytes of inline data a send work request may carry.
    pub max_inline_data: usize,
    /// Responder: when to give up on the initiator's first FPDU (its RTR
    /// in peer-to-peer mode). Past it the connection goes to
    /// [`State::Error`](super::State::Error), flushing every work request,
    /// and reports [`Event::FirstFpduTimeout`](super::Event::FirstFpduTimeout).
    /// `None`: wait as long as TCP keeps the stream.
    pub first_fpdu_deadline: Option<Instant>,
    /// Responder: send without waiting for the initiator's first FPDU.
    /// RFC 5044 (section 7.1.2) has the responder wait; Linux siw does not,
    /// and perftest's ib_write_lat relies on that (its server writes
    /// first and its client sends nothing before). Off by default.
    pub responder_sends_first: bool,
    /// Both sides agreed to RFC 7306 (immediate data, atomics). MPA has no
    /// field to negotiate it and siw and iw_cxgb4 do not offer it, so it is
    /// the application's setting, made the same on both sides. Off: the
    /// RFC 7306 opcodes are refused at posting and answered with a
    /// TERMINATE (unexpected opcode) on receipt, as RFC 5040 peers do.
    pub rfc7306: bool,
    /// Queue 0 (Sends, Immediate Data) takes its buffers from a shared
    /// pool the driver passes to [`Connection::handle_bytes_shared`]
    /// (a verbs shared receive queue) instead of buffers posted to the
    /// connection, which then refuses `post_recv`.
    ///
    /// [`Connection::handle_bytes_shared`]: super::Connection::handle_bytes_shared
    pub shared_receive: bool,
}

/// Inline bytes per send work request unless configured: a small message
/// (a header, a doorbell, a credit) copied in at posting.
pub const DEFAULT_MAX_INLINE: usize = 256;

/// The smallest FPDU a connection builds: room for a TERMINATE carrying
/// an untagged DDP header and a Read Request.
pub const MIN_FPDU: usize = 128;

/// The largest ULPDU accepted from the peer: MPA's 16-bit length field.
pub const MAX_RX_ULPDU: usize = u16::MAX as usize;

impl ConnectionConfig {
    /// Defaults like siw's: 128-entry queues, 6 SGEs per request.
    pub fn new(negotiated: Negotiated, pd: PdId, max_fpdu: usize) -> Self {
        ConnectionConfig {
            negotiated,
            pd,
            max_fpdu,
            sq_depth: 128,
            rq_depth: 128,
            max_send_sge: 6,
            max_recv_sge: 6,
            max_inline_data: DEFAULT_MAX_INLINE,
            first_fpdu_deadline: None,
            responder_sends_first: false,
            rfc7306: false,
            shared_receive: false,
        }
    }
}
