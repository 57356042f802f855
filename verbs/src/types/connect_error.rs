//! Why connecting failed, typed by who was at fault: the caller's settings
//! ([`MpaSettingsError`], returned at once by the call), the network, the
//! peer's protocol conduct, or a mismatch of policies neither side broke.
//! The MPA layer's own error types stay inside, reachable as opaque
//! sources for display and TERMINATE codes.

use thiserror::Error;

/// How a connection attempt ended without a connection.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The peer rejected the request (an MPA Reply with the R bit), with
    /// its private data.
    #[error("the peer rejected the connection")]
    Rejected {
        /// The private data of the peer's Reply.
        private_data: Vec<u8>,
    },
    /// The TCP connection was refused or reset before MPA start-up: nobody
    /// listening, or unreachable.
    #[error("the TCP connection was refused or reset")]
    Unreachable,
    /// The peer's MPA frame did not come within
    /// [`MpaOptions::timeout`](crate::MpaOptions::timeout).
    #[error("timed out waiting for the peer's MPA frame")]
    Timeout,
    /// The peer closed the TCP connection during start-up.
    #[error("the peer closed the connection during MPA start-up")]
    PeerClosed,
    /// The peer broke the MPA protocol (malformed or unexpected frame, a
    /// bad revision, oversized private data); a TERMINATE went out where
    /// RFC 6581 assigns one.
    #[error("the peer violated MPA start-up")]
    PeerProtocol(#[source] MpaFailure),
    /// Both sides followed the protocol but their policies do not meet
    /// (CRC, markers, IRD against ORD, peer-to-peer RTR kinds): a
    /// configuration to change on one side.
    #[error("the two sides' MPA settings do not agree")]
    Incompatible(#[source] MpaFailure),
}

impl ConnectError {
    /// Whether the peer misbehaved (as opposed to refusing, a network
    /// failure or a policy mismatch).
    pub fn is_peer_fault(&self) -> bool {
        matches!(self, ConnectError::PeerProtocol(_))
    }

    /// The (layer, error type, error code) of the TERMINATE this side sent
    /// for the failure, if it sent one.
    pub fn terminate_code(&self) -> Option<(u8, u8, u8)> {
        match self {
            ConnectError::PeerProtocol(f) | ConnectError::Incompatible(f) => f.terminate_code(),
            _ => None,
        }
    }

    pub(crate) fn from_startup(e: mpa::StartupError) -> Self {
        use mpa::StartupError as S;
        match e {
            S::Timeout => ConnectError::Timeout,
            S::PeerClosed => ConnectError::PeerClosed,
            S::Rejected => ConnectError::Rejected {
                private_data: Vec::new(),
            },
            S::CrcRequired
            | S::CrcRefused
            | S::MarkersRefused
            | S::InsufficientIrd { .. }
            | S::NoMatchingRtr => ConnectError::Incompatible(MpaFailure(e)),
            _ => ConnectError::PeerProtocol(MpaFailure(e)),
        }
    }
}

/// What the MPA layer reported about a failed start-up (opaque: its
/// message and TERMINATE code are what a program needs of it).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(transparent)]
pub struct MpaFailure(mpa::StartupError);

impl MpaFailure {
    /// The LLP-layer TERMINATE (layer, error type, error code) assigned to
    /// this failure, if RFC 6581 assigns one.
    pub fn terminate_code(&self) -> Option<(u8, u8, u8)> {
        self.0
            .terminate_code()
            .map(|(etype, code)| (rdmap::Layer::Llp.bits(), etype, code))
    }
}

/// MPA settings the caller passed that cannot be used (a revision other
/// than 1 or 2, private data over the limit, IRD/ORD out of range,
/// peer-to-peer without an RTR kind or on revision 1), or an accept or
/// reject of a request no longer waiting. Always the caller's to fix.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(transparent)]
pub struct MpaSettingsError(mpa::ConfigError);

impl MpaSettingsError {
    pub(crate) fn new(e: mpa::ConfigError) -> Self {
        MpaSettingsError(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpa::StartupError as S;

    #[test]
    fn start_up_failures_are_sorted_by_fault() {
        assert_eq!(
            ConnectError::from_startup(S::Timeout),
            ConnectError::Timeout
        );
        assert!(ConnectError::from_startup(S::BadKey).is_peer_fault());
        let bad_rev = ConnectError::from_startup(S::BadRev { rev: 9 });
        assert!(bad_rev.is_peer_fault());
        assert!(
            bad_rev.terminate_code().is_some(),
            "an invalid frame is answered"
        );
        let crc = ConnectError::from_startup(S::CrcRequired);
        assert!(matches!(crc, ConnectError::Incompatible(_)));
        assert!(!crc.is_peer_fault());
        assert!(crc.terminate_code().is_none());
        let ird = ConnectError::from_startup(S::InsufficientIrd {
            our_ird: 1,
            peer_ord: 8,
        });
        assert!(!ird.is_peer_fault());
        assert!(ird.terminate_code().is_some());
        // The MPA error stays reachable as the source.
        let src = std::error::Error::source(&bad_rev).unwrap().to_string();
        assert!(src.contains("revision 9"), "{src}");
    }
}
