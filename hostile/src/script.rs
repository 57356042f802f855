//! A hostile case: a name, what the hostile peer sends on a fresh TCP
//! connection, and what the target must answer.

use std::time::Duration;

use mpa::{InitiatorConfig, ResponderConfig};

use crate::expect::Expectation;

/// How an FPDU is spoiled after framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mangle {
    /// Sent as framed.
    None,
    /// The CRC field's low bit flipped.
    FlipCrc,
    /// Only the first `n` octets are sent.
    Cut(usize),
    /// ULPDU_Length overwritten with this value (the rest as framed).
    Length(u16),
    /// The framed octet at `at` (if there is one) XORed with `mask`: CRC,
    /// pad and marker octets included.
    Xor {
        /// Which framed octet.
        at: usize,
        /// The bits flipped.
        mask: u8,
    },
}

impl Mangle {
    /// Spoils a framed FPDU.
    pub fn apply(self, fpdu: &mut Vec<u8>) {
        match self {
            Mangle::None => {}
            Mangle::FlipCrc => {
                if let Some(last) = fpdu.last_mut() {
                    // The CRC's most significant octet is last.
                    *last ^= 0x01;
                }
            }
            Mangle::Cut(n) => fpdu.truncate(n),
            Mangle::Length(len) => {
                if let Some(head) = fpdu.first_chunk_mut::<2>() {
                    *head = len.to_be_bytes();
                }
            }
            Mangle::Xor { at, mask } => {
                if let Some(b) = fpdu.get_mut(at) {
                    *b ^= mask;
                }
            }
        }
    }
}

/// One thing the hostile peer does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A valid MPA start-up under this configuration: the Request, then
    /// the Reply read. Later [`Step::Fpdu`]s are framed as it negotiated;
    /// if it does not complete, the rest of the script is skipped.
    StartUp(Box<InitiatorConfig>),
    /// Plays the Responder: waits for the target's Request and answers it
    /// with a valid Reply under this policy (accepting whatever it asks
    /// within it). Later FPDUs are framed as that negotiated; a Request the
    /// policy refuses ends the script.
    Accept(Box<ResponderConfig>),
    /// Plays the Responder up to the Request only: waits until a whole MPA
    /// frame has come (or the target gives up), and answers nothing, so
    /// the next step can send a Reply of its own making.
    AwaitRequest,
    /// Sends nothing for this long (a peer taking its time).
    Pause(Duration),
    /// Waits until the target has sent at least this many messages (in
    /// all, on this connection), or the patience runs out (which ends the
    /// script).
    Await(Want),
    /// Waits for the target's MPA Reply (after a Request sent as bytes).
    AwaitReply,
    /// An FPDU built from what the target has handed out, framed as
    /// start-up negotiated and spoiled by `mangle`.
    Learned {
        /// Which learned buffer the FPDU uses.
        what: Learned,
        /// How it is spoiled.
        mangle: Mangle,
    },
    /// These bytes, as they are.
    Bytes(Vec<u8>),
    /// One FPDU carrying `ulpdu`, framed as start-up negotiated, then
    /// spoiled by `mangle`.
    Fpdu {
        /// The ULPDU framed.
        ulpdu: Vec<u8>,
        /// How the FPDU is spoiled.
        mangle: Mangle,
    },
    /// Closes our sending direction (FIN); the target may still answer.
    Fin,
}

impl Step {
    /// An FPDU sent as framed.
    pub fn fpdu(ulpdu: Vec<u8>) -> Step {
        Step::Fpdu {
            ulpdu,
            mangle: Mangle::None,
        }
    }
}

/// Counts of the target's messages a script waits for, in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Want {
    /// Sends (each consumes a receive the peer posted).
    pub sends: u64,
    /// RDMA Read Requests.
    pub read_requests: u64,
    /// Writes and Read Responses.
    pub tagged: u64,
}

/// A ULPDU that needs a buffer the target handed out on this connection:
/// the sink of its latest Read Request (an rping server reading our
/// advert) or the buffer its latest Send advertised (an rping client's
/// `rping_rdma_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learned {
    /// The Read Response answering the target's latest Read Request.
    AnswerRead,
    /// An RDMA Write of `len` octets into the target's latest Read
    /// Request sink, `offset` octets past its start.
    WriteToReadSink {
        /// Octets past the sink's start.
        offset: u64,
        /// Octets written.
        len: u32,
    },
    /// Read Request `msn` for `size` octets from the target's latest Read
    /// Request sink, `offset` octets past its start.
    ReadFromReadSink {
        /// The Read Request's MSN on queue 1.
        msn: u32,
        /// Octets past the sink's start.
        offset: u64,
        /// Octets asked for.
        size: u32,
    },
    /// An RDMA Write of `len` octets (0: the advertised size) into the
    /// buffer of the target's latest advert, `offset` octets past its start.
    WriteToAdvert {
        /// Octets past the buffer's start.
        offset: u64,
        /// Octets written (0: the advertised size).
        len: u32,
    },
    /// Send with Invalidate `msn` naming the STag of the target's latest
    /// Read Request sink.
    InvalidateReadSink {
        /// The Send's MSN on queue 0.
        msn: u32,
    },
    /// Read Request `msn` for the advertised size plus `extra` octets from
    /// the buffer of the target's latest advert, `offset` past its start.
    ReadFromAdvert {
        /// The Read Request's MSN on queue 1.
        msn: u32,
        /// Octets past the buffer's start.
        offset: u64,
        /// Octets asked for beyond the advertised size.
        extra: u32,
    },
}

/// One hostile behaviour and the answer the RFCs assign to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// A short identifier (`bad-crc`).
    pub name: &'static str,
    /// One line on what the peer does and which rule it breaks.
    pub about: &'static str,
    /// What the hostile peer does, in order.
    pub script: Vec<Step>,
    /// The answers the RFCs allow.
    pub expect: Expectation,
    /// How long the target has to answer once the script is sent: the
    /// bound on the whole observation. A case expecting the connection to
    /// stay open waits all of it.
    pub patience: Duration,
    /// Connections that run the script at once (1, or hundreds for a
    /// flood); each is judged.
    pub connections: usize,
}
