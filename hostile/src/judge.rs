//! Comparing what came back with what the RFCs allow. Pure: an
//! [`Expectation`] and an [`Observation`] in, a [`Verdict`] out.

use core::fmt;

use rdmap::wire::terminate::is_known_cause;

use crate::expect::{Answer, End, Expectation, Outcome, Terminate};
use crate::observe::{Ending, Observation};

/// The target answered in a way no allowed outcome describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What the case allowed.
    pub expected: Expectation,
    /// Boxed: an observation is large, and verdicts are kept per connection.
    pub observed: Box<Observation>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}; observed {}", self.expected, self.observed)
    }
}

impl std::error::Error for Mismatch {}

/// The allowed outcome the target met, or why it met none.
pub type Verdict = Result<Outcome, Mismatch>;

/// Whether `obs` is `outcome`.
pub fn meets(outcome: &Outcome, obs: &Observation) -> bool {
    if obs.malformed.is_some() {
        return false;
    }
    let answer = match obs.reply {
        None => Answer::None,
        Some(r) if r.reject => Answer::Reject,
        Some(_) => Answer::Accept,
    };
    if answer != outcome.answer {
        return false;
    }
    let terminate = match (outcome.terminate, obs.terminates.as_slice()) {
        (Terminate::None, []) => true,
        // A word either layout could have written matches in either.
        (Terminate::Matching(m), [t]) => t.readings().any(|(l, e, c)| m.matches(l, e, c)),
        (Terminate::AnyKnown, [t]) => t.readings().any(|(l, e, c)| is_known_cause(l, e, c)),
        _ => false,
    };
    let end = match outcome.end {
        End::Closed => matches!(obs.ending, Ending::Fin | Ending::Reset),
        End::Open => obs.ending == Ending::Open,
    };
    terminate && end
}

/// The first allowed outcome `obs` meets.
pub fn judge(expected: &Expectation, obs: &Observation) -> Verdict {
    expected
        .outcomes
        .iter()
        .find(|o| meets(o, obs))
        .copied()
        .ok_or_else(|| Mismatch {
            expected: expected.clone(),
            observed: Box::new(obs.clone()),
        })
}
