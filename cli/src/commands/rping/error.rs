//! What ends an rping connection early, worded like rping's own messages.

use verbs::{DisconnectReason, VerbsError, WcOpcode, WcStatus};

/// Where a side stands in the ping loop, for error messages (rping prints
/// its state number; a name says more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the connection is up.
    Connecting,
    /// Client: source advertised, waiting for the server's go-ahead.
    /// Server: waiting for the client's source advertisement.
    ReadAdvert,
    /// Server: RDMA READ of the client's source under way.
    Reading,
    /// Client: sink advertised, waiting for the final go-ahead.
    /// Server: waiting for the client's sink advertisement.
    WriteAdvert,
    /// Server: RDMA WRITE to the client's sink under way.
    Writing,
    /// Between pings.
    Idle,
    /// Every ping done.
    Finished,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::Connecting => "CONNECTING",
            Phase::ReadAdvert => "RDMA_READ_ADV",
            Phase::Reading => "RDMA_READ",
            Phase::WriteAdvert => "RDMA_WRITE_ADV",
            Phase::Writing => "RDMA_WRITE",
            Phase::Idle => "IDLE",
            Phase::Finished => "FINISHED",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RpingError {
    #[error("Received bogus data, size {byte_len}")]
    BogusReceive { byte_len: u32 },
    #[error("unexpected {what} in state {phase}")]
    Unexpected { what: &'static str, phase: Phase },
    #[error("data mismatch! (ping {ping})")]
    DataMismatch { ping: i32 },
    #[error("cq completion failed status {status:?} ({opcode:?})")]
    Completion { opcode: WcOpcode, status: WcStatus },
    #[error("connection ended in state {phase}: {}", describe(reason))]
    Disconnected {
        reason: DisconnectReason,
        phase: Phase,
    },
    #[error("connect error: {0}")]
    Connect(String),
    #[error("nothing happened for {secs} s in state {phase}")]
    Timeout { secs: f64, phase: Phase },
    #[error("{0}")]
    Verbs(#[from] VerbsError),
    #[error("{0}")]
    Setup(String),
}

/// A disconnect reason in words.
pub fn describe(reason: &DisconnectReason) -> String {
    match reason {
        DisconnectReason::Local => "closed locally".into(),
        DisconnectReason::PeerClosed => "the peer closed the connection".into(),
        DisconnectReason::Reset => "the connection was reset".into(),
        DisconnectReason::FirstFpduTimeout => {
            "the peer sent nothing after the connection was accepted".into()
        }
        DisconnectReason::Terminated {
            by_peer,
            layer,
            etype,
            code,
        } => format!(
            "TERMINATE {} (layer {layer} etype {etype} code {code:#04x})",
            if *by_peer {
                "from the peer"
            } else {
                "sent to the peer"
            }
        ),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_like_rpings() {
        assert_eq!(
            RpingError::BogusReceive { byte_len: 8 }.to_string(),
            "Received bogus data, size 8"
        );
        assert_eq!(
            RpingError::DataMismatch { ping: 3 }.to_string(),
            "data mismatch! (ping 3)"
        );
        let e = RpingError::Disconnected {
            reason: DisconnectReason::Terminated {
                by_peer: true,
                layer: 1,
                etype: 1,
                code: 1,
            },
            phase: Phase::WriteAdvert,
        };
        assert_eq!(
            e.to_string(),
            "connection ended in state RDMA_WRITE_ADV: TERMINATE from the peer (layer 1 etype 1 code 0x01)"
        );
    }
}
