//! A hostile case: a name, what the hostile peer sends on a fresh TCP
//! connection, and what the target must answer.

use std::time::Duration;

use mpa::InitiatorConfig;

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
}

/// One thing the hostile peer does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A valid MPA start-up under this configuration: the Request, then
    /// the Reply read. Later [`Step::Fpdu`]s are framed as it negotiated;
    /// if it does not complete, the rest of the script is skipped.
    StartUp(Box<InitiatorConfig>),
    /// These bytes, as they are.
    Bytes(Vec<u8>),
    /// One FPDU carrying `ulpdu`, framed as start-up negotiated, then
    /// spoiled by `mangle`.
    Fpdu { ulpdu: Vec<u8>, mangle: Mangle },
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

/// One hostile behaviour and the answer the RFCs assign to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// A short identifier (`bad-crc`).
    pub name: &'static str,
    /// One line on what the peer does and which rule it breaks.
    pub about: &'static str,
    pub script: Vec<Step>,
    pub expect: Expectation,
    /// How long the target has to answer once the script is sent: the
    /// bound on the whole observation. A case expecting the connection to
    /// stay open waits all of it.
    pub patience: Duration,
    /// Connections that run the script at once (1, or hundreds for a
    /// flood); each is judged.
    pub connections: usize,
}
