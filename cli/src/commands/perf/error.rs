//! Why a perf run failed.

use verbs::{DisconnectReason, VerbsError, WcOpcode, WcStatus};

use super::wire::{Status, WireError};

#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    #[error("{0}")]
    Verbs(#[from] VerbsError),
    #[error("connecting failed: {0}")]
    Connect(String),
    #[error("the server refused: {0:?}")]
    Refused(Status),
    #[error("malformed message from the peer: {0}")]
    Wire(#[from] WireError),
    #[error("malformed perftest message from the peer: {0}")]
    PerftestWire(#[from] super::perftest::wire::WireError),
    #[error("work request failed: {opcode:?} {status:?}")]
    Completion { opcode: WcOpcode, status: WcStatus },
    #[error("connection ended early: {0:?}")]
    Disconnected(DisconnectReason),
    #[error("no progress for {0:.1} s")]
    Stalled(f64),
    #[error("no client came within {0:.1} s")]
    NoClient(f64),
    #[error("{0}")]
    Protocol(String),
    #[error("{0}")]
    Setup(String),
}
