//! How long a stream the user closed may outlive its `close`.
//!
//! After `close` the transport still delivers queued bytes and waits for
//! the peer's FIN, but a peer that never answers (or never reads) must not
//! pin a socket and its buffers for ever: once the linger is over the
//! stream is released, with a reset if its bytes were not all delivered.

use std::time::{Duration, Instant};

/// Time a closed stream is given to finish cleanly: far more than a LAN
/// needs to deliver the last bytes and exchange FINs, short enough that a
/// flood of unanswered closes cannot pile up.
pub const CLOSE_LINGER: Duration = Duration::from_secs(5);

/// When a closed stream's linger ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Linger {
    deadline: Option<Instant>,
}

impl Linger {
    /// Starts the linger at `now`, unless it already runs.
    pub(crate) fn start(&mut self, now: Instant) {
        self.deadline.get_or_insert(now + CLOSE_LINGER);
    }

    /// Whether the linger ran out by `now`.
    pub(crate) fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// Time left at `now`, if the linger runs.
    pub(crate) fn remaining(&self, now: Instant) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_from_the_first_start_only() {
        let t0 = Instant::now();
        let mut l = Linger::default();
        assert!(!l.expired(t0 + CLOSE_LINGER * 10));
        assert_eq!(l.remaining(t0), None);
        l.start(t0);
        l.start(t0 + CLOSE_LINGER);
        assert!(!l.expired(t0 + CLOSE_LINGER / 2));
        assert!(l.expired(t0 + CLOSE_LINGER));
        assert_eq!(l.remaining(t0), Some(CLOSE_LINGER));
        assert_eq!(l.remaining(t0 + CLOSE_LINGER * 2), Some(Duration::ZERO));
    }
}
