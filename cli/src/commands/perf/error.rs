//! Why a perf run failed.

use verbs::{DisconnectReason, VerbsError, WcOpcode, WcStatus, WorkCompletion};

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

impl PerfError {
    /// `Ok` for a successful completion, [`PerfError::Completion`] for a
    /// failed one.
    pub fn check_completion(wc: &WorkCompletion) -> Result<(), PerfError> {
        if wc.is_success() {
            Ok(())
        } else {
            Err(PerfError::Completion {
                opcode: wc.opcode,
                status: wc.status,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_completion_is_an_error_naming_it() {
        let mut wc = WorkCompletion::FILLER;
        wc.opcode = WcOpcode::RdmaRead;
        wc.status = WcStatus::RemAccessErr;
        assert!(matches!(
            PerfError::check_completion(&wc),
            Err(PerfError::Completion {
                opcode: WcOpcode::RdmaRead,
                status: WcStatus::RemAccessErr
            })
        ));
        wc.status = WcStatus::Success;
        assert!(PerfError::check_completion(&wc).is_ok());
    }
}
