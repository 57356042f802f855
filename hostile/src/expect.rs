//! What a target should answer to a hostile case: the MPA Reply (none, an
//! acceptance, or a reject with R set), the TERMINATE the RFCs assign, and
//! how the connection ends. A case lists every outcome the RFCs allow; the
//! judge accepts any one of them.

use core::fmt;

use rdmap::term::TermCode;

/// The MPA Reply a case expects from the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    /// No Reply at all (the Request was never valid enough to answer).
    None,
    /// A Reply with R clear: start-up completed.
    Accept,
    /// A Reply with R set (RFC 5044 section 7.1.5).
    Reject,
}

/// A TERMINATE's Layer / EType / Code, with the code left open where the
/// RFCs allow several (e.g. any remote protection error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TermMatch {
    /// 0 RDMAP, 1 DDP, 2 LLP (MPA).
    pub layer: u8,
    /// The error type within the layer.
    pub etype: u8,
    /// `None`: any code of this layer and type.
    pub code: Option<u8>,
}

impl TermMatch {
    /// Exactly `code`.
    pub const fn exactly(code: TermCode) -> TermMatch {
        TermMatch {
            layer: code.layer.bits(),
            etype: code.etype,
            code: Some(code.code),
        }
    }

    /// Any code of `code`'s layer and error type.
    pub const fn any_code_of(code: TermCode) -> TermMatch {
        TermMatch {
            layer: code.layer.bits(),
            etype: code.etype,
            code: None,
        }
    }

    /// Whether a TERMINATE carrying this triple matches.
    pub fn matches(&self, layer: u8, etype: u8, code: u8) -> bool {
        self.layer == layer && self.etype == etype && self.code.is_none_or(|c| c == code)
    }
}

impl fmt::Display for TermMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(c) => write!(f, "{}/{}/{c:#04x}", self.layer, self.etype),
            None => write!(f, "{}/{}/any", self.layer, self.etype),
        }
    }
}

/// The TERMINATE a case expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Terminate {
    /// None may be sent.
    None,
    /// Exactly one, matching.
    Matching(TermMatch),
    /// Exactly one, with any triple the RFCs define (for random input,
    /// where which check fires first is the target's choice).
    AnyKnown,
}

/// How the connection ends, as far as the hostile side can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum End {
    /// The target closed (FIN) or reset (RST) the connection in time.
    Closed,
    /// The target kept the connection open and silent until the deadline
    /// (it waits for bytes the case never sends, holding bounded state).
    Open,
}

/// One outcome the RFCs allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// The MPA Reply expected.
    pub answer: Answer,
    /// The TERMINATE expected.
    pub terminate: Terminate,
    /// How the connection should end.
    pub end: End,
}

impl Outcome {
    /// No Reply, and the connection closes.
    pub const CLOSED_UNANSWERED: Outcome = Outcome {
        answer: Answer::None,
        terminate: Terminate::None,
        end: End::Closed,
    };
    /// A Reply with R set, then the close.
    pub const REJECTED: Outcome = Outcome {
        answer: Answer::Reject,
        terminate: Terminate::None,
        end: End::Closed,
    };
    /// Start-up completed, then a close with no TERMINATE.
    pub const ACCEPTED_THEN_CLOSED: Outcome = Outcome {
        answer: Answer::Accept,
        terminate: Terminate::None,
        end: End::Closed,
    };
    /// Start-up completed, then nothing until the deadline.
    pub const ACCEPTED_THEN_WAITING: Outcome = Outcome {
        answer: Answer::Accept,
        terminate: Terminate::None,
        end: End::Open,
    };

    /// Start-up completed, then the TERMINATE `m`, then the close.
    pub const fn terminated(m: TermMatch) -> Outcome {
        Outcome {
            answer: Answer::Accept,
            terminate: Terminate::Matching(m),
            end: End::Closed,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let answer = match self.answer {
            Answer::None => "no Reply",
            Answer::Accept => "Reply",
            Answer::Reject => "Reply with R",
        };
        f.write_str(answer)?;
        match self.terminate {
            Terminate::None => {}
            Terminate::Matching(m) => write!(f, ", TERMINATE {m}")?,
            Terminate::AnyKnown => f.write_str(", a TERMINATE")?,
        }
        f.write_str(match self.end {
            End::Closed => ", close",
            End::Open => ", open and silent",
        })
    }
}

/// Every outcome a case allows; at least one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// The outcomes any of which passes.
    pub outcomes: Vec<Outcome>,
}

impl Expectation {
    /// One allowed outcome.
    pub fn only(o: Outcome) -> Expectation {
        Expectation { outcomes: vec![o] }
    }

    /// Any of `outcomes`.
    pub fn any_of(outcomes: &[Outcome]) -> Expectation {
        Expectation {
            outcomes: outcomes.to_vec(),
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, o) in self.outcomes.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{o}")?;
        }
        Ok(())
    }
}
