//! TERMINATE causes: the Layer / Error Type / Error Code triple (shared with
//! DDP and MPA through `ddp::error`) and which headers of the offending
//! segment go on the wire with it.

pub use ddp::error::{Layer, TermCode};
use ddp::DdpError;

use crate::wire::{ParseError, WireError};

/// Which headers of the offending segment a TERMINATE carries
/// (RFC 5040 section 4.8, Hdrct bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Attach {
    /// No header: local catastrophic errors, LLP errors, and errors where the
    /// header layout itself is in doubt (a DDP or RDMAP version we do not
    /// know, a ULPDU too short for its header).
    Nothing,
    /// The DDP header (M and D set).
    Ddp,
    /// The DDP header and the Read Request header behind it (M, D and R).
    DdpAndRdma,
}

/// Why we terminate a stream: what goes in the control word and what is
/// attached behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TermCause {
    /// What goes in the control word.
    pub code: TermCode,
    /// Which headers are attached behind it.
    pub attach: Attach,
}

impl TermCause {
    /// The cause with the attachment siw and RFC 5040 use for `code`:
    /// nothing for LLP and local catastrophic errors, the DDP header for the
    /// DDP layer, the DDP and Read Request headers for remote protection
    /// errors (those are detected on a Read Request's Data Source).
    pub const fn new(code: TermCode) -> TermCause {
        let attach = match (code.layer, code.etype) {
            (Layer::Llp, _) | (Layer::Rdmap, 0) | (Layer::Ddp, 0) => Attach::Nothing,
            (Layer::Rdmap, 1) => Attach::DdpAndRdma,
            _ => Attach::Ddp,
        };
        TermCause { code, attach }
    }

    /// A cause with an attachment other than the usual one (see [`TermCause::new`]).
    pub const fn with_attach(code: TermCode, attach: Attach) -> TermCause {
        TermCause { code, attach }
    }
}

impl From<TermCode> for TermCause {
    fn from(code: TermCode) -> Self {
        TermCause::new(code)
    }
}

impl WireError {
    /// The TERMINATE triple for an RDMAP header the peer got wrong.
    ///
    /// RFC 5040 has no code for a malformed Read Request (wrong length, or
    /// spread over several segments); those are "remote operation error,
    /// unspecified".
    pub fn terminate(&self) -> TermCode {
        match self {
            WireError::Version(_) => TermCode::RDMAP_INVALID_VERSION,
            WireError::UnexpectedOpcode(_) => TermCode::RDMAP_UNEXPECTED_OPCODE,
            WireError::WrongQueue { .. } => TermCode::DDP_UT_INVALID_QN,
            WireError::Truncated
            | WireError::TrailingBytes
            | WireError::MalformedTerminate
            | WireError::NotSingleSegment(_)
            | WireError::BadLength { .. } => TermCode::RDMAP_OPERATION_UNSPECIFIED,
        }
    }
}

impl ParseError {
    /// The TERMINATE the parse failure calls for.
    pub fn terminate(&self) -> TermCode {
        match self {
            ParseError::Ddp(e) => e.terminate(),
            ParseError::Rdmap(e) => e.terminate(),
        }
    }
}

impl From<WireError> for TermCause {
    fn from(e: WireError) -> Self {
        let code = e.terminate();
        match e {
            // The version decides the layout: attach nothing (as siw).
            WireError::Version(_) => TermCause::with_attach(code, Attach::Nothing),
            _ => TermCause::with_attach(code, Attach::Ddp),
        }
    }
}

impl From<DdpError> for TermCause {
    fn from(e: DdpError) -> Self {
        let code = e.terminate();
        match e {
            DdpError::InvalidVersion { .. } | DdpError::Truncated { .. } => {
                TermCause::with_attach(code, Attach::Nothing)
            }
            _ => TermCause::with_attach(code, Attach::Ddp),
        }
    }
}

/// A broken FPDU stream (bad CRC, marker or length): an LLP error, sent
/// with nothing attached.
impl From<mpa::DeframeError> for TermCause {
    fn from(e: mpa::DeframeError) -> Self {
        let (etype, code) = e.terminate_code();
        TermCause::with_attach(TermCode::new(Layer::Llp, etype, code), Attach::Nothing)
    }
}

impl From<ParseError> for TermCause {
    fn from(e: ParseError) -> Self {
        match e {
            ParseError::Ddp(e) => e.into(),
            ParseError::Rdmap(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opcode::Opcode;

    #[test]
    fn wire_errors_map_to_rfc5040_codes() {
        assert_eq!(
            WireError::Version(0).terminate(),
            TermCode::new(Layer::Rdmap, 2, 5)
        );
        assert_eq!(
            WireError::UnexpectedOpcode(Opcode::Unknown(0xc)).terminate(),
            TermCode::new(Layer::Rdmap, 2, 6)
        );
        assert_eq!(
            WireError::WrongQueue {
                opcode: Opcode::Send,
                qn: 7
            }
            .terminate(),
            TermCode::new(Layer::Ddp, 2, 1)
        );
        assert_eq!(
            WireError::NotSingleSegment(Opcode::ReadRequest).terminate(),
            TermCode::new(Layer::Rdmap, 2, 0xff)
        );
    }

    #[test]
    fn attachments_follow_the_layer() {
        assert_eq!(TermCause::new(TermCode::LLP_CRC).attach, Attach::Nothing);
        assert_eq!(
            TermCause::new(TermCode::RDMAP_CATASTROPHIC).attach,
            Attach::Nothing
        );
        assert_eq!(
            TermCause::new(TermCode::RDMAP_ACCESS_RIGHTS).attach,
            Attach::DdpAndRdma
        );
        assert_eq!(
            TermCause::new(TermCode::DDP_T_INVALID_STAG).attach,
            Attach::Ddp
        );
        assert_eq!(
            TermCause::new(TermCode::RDMAP_UNEXPECTED_OPCODE).attach,
            Attach::Ddp
        );
    }

    #[test]
    fn mpa_errors_are_llp_errors() {
        let c: TermCause = mpa::DeframeError::Crc {
            computed: 1,
            received: 2,
        }
        .into();
        assert_eq!(
            c,
            TermCause::with_attach(TermCode::LLP_CRC, Attach::Nothing)
        );
        let c: TermCause = mpa::DeframeError::UlpduTooLong {
            len: 9000,
            max: 100,
        }
        .into();
        assert_eq!(c.code, TermCode::LLP_MARKER_MISMATCH);
    }

    #[test]
    fn unknown_layout_attaches_nothing() {
        let c: TermCause = WireError::Version(3).into();
        assert_eq!(c.attach, Attach::Nothing);
        let c: TermCause = DdpError::InvalidVersion {
            tagged: true,
            version: 0,
        }
        .into();
        assert_eq!(c.attach, Attach::Nothing);
        assert_eq!(c.code, TermCode::DDP_T_INVALID_VERSION);
        let c: TermCause = ParseError::Ddp(DdpError::Truncated { len: 3, needed: 18 }).into();
        assert_eq!(
            c,
            TermCause::with_attach(TermCode::DDP_CATASTROPHIC, Attach::Nothing)
        );
    }
}
