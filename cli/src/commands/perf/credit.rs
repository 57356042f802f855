//! Receive credits for SEND tests.
//!
//! iWARP has no receiver-not-ready retry: a SEND that finds no posted
//! receive terminates the connection. So the sender may have at most as
//! many SENDs unaccounted for as the receiver keeps receives posted; the
//! receiver reports, now and then, how many receives it has reposted.

/// The sender's side: how many more SENDs may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendCredits {
    /// Receives the peer posted before the run (its Welcome).
    initial: u64,
    /// Receives the peer says it has reposted since (cumulative).
    returned: u64,
    /// SENDs posted so far.
    sent: u64,
}

impl SendCredits {
    pub fn new(initial: u32) -> Self {
        SendCredits {
            initial: u64::from(initial),
            returned: 0,
            sent: 0,
        }
    }

    /// SENDs that may be posted now.
    pub fn available(&self) -> u64 {
        (self.initial + self.returned).saturating_sub(self.sent)
    }

    /// Takes one credit; false (and nothing taken) if there is none.
    pub fn take(&mut self) -> bool {
        if self.available() == 0 {
            return false;
        }
        self.sent += 1;
        true
    }

    /// The peer reported `returned` receives reposted in all. Reports are
    /// cumulative, so an old one arriving late changes nothing, and a
    /// claim of more receives than SENDs ever made is capped at those.
    pub fn on_report(&mut self, returned: u64) {
        self.returned = self.returned.max(returned.min(self.sent));
    }
}

/// The receiver's side: when to tell the sender about reposted receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreditReturn {
    reposted: u64,
    reported: u64,
    /// Report after this many reposts since the last report.
    every: u64,
}

impl CreditReturn {
    /// For `posted` receives kept posted: report every quarter of them, so
    /// the sender never stalls for long and at most four reports are ever
    /// waiting at the sender.
    pub fn new(posted: u32) -> Self {
        CreditReturn {
            reposted: 0,
            reported: 0,
            every: u64::from(posted.div_ceil(4)).max(1),
        }
    }

    /// A receive completed and was posted again.
    pub fn reposted(&mut self) {
        self.reposted += 1;
    }

    /// The cumulative count to report now, if one is due; `can_send` says
    /// whether a report could be sent (a send slot is free). A report not
    /// sent stays due.
    pub fn due(&mut self, can_send: bool) -> Option<u64> {
        if can_send && self.reposted - self.reported >= self.every {
            self.reported = self.reposted;
            Some(self.reposted)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_window_opens_with_reports() {
        let mut c = SendCredits::new(4);
        for _ in 0..4 {
            assert!(c.take());
        }
        assert!(!c.take());
        c.on_report(2);
        assert_eq!(c.available(), 2);
        c.on_report(1); // late, stale
        assert_eq!(c.available(), 2);
        c.on_report(100); // more than was ever sent
        assert_eq!(c.available(), 4);
    }

    #[test]
    fn reports_every_quarter() {
        let mut r = CreditReturn::new(512);
        for _ in 0..127 {
            r.reposted();
            assert_eq!(r.due(true), None);
        }
        r.reposted();
        assert_eq!(r.due(false), None, "no slot to send it from");
        assert_eq!(r.due(true), Some(128));
        assert_eq!(r.due(true), None);
        let mut one = CreditReturn::new(1);
        one.reposted();
        assert_eq!(one.due(true), Some(1));
    }

    proptest! {
        /// A sender and a receiver joined by a lossless, reordering-free
        /// channel with arbitrary delays: the receiver never has more
        /// SENDs arriving than receives posted, and reports waiting at the
        /// sender never exceed four (plus one in the worst interleaving).
        #[test]
        fn never_overruns_the_receiver(
            posted in 1u32..64,
            steps in proptest::collection::vec(0u8..4, 1..400),
        ) {
            let mut tx = SendCredits::new(posted);
            let mut rx = CreditReturn::new(posted);
            let mut in_flight = 0u64;      // SENDs on the wire
            let mut waiting = 0u64;        // receives holding data, not reposted
            let mut reports: std::collections::VecDeque<u64> = Default::default();
            for s in steps {
                match s {
                    0 => if tx.take() { in_flight += 1 },
                    1 => if in_flight > 0 {
                        in_flight -= 1;
                        waiting += 1;
                        prop_assert!(waiting <= u64::from(posted), "a SEND found no receive");
                    },
                    2 => if waiting > 0 {
                        waiting -= 1;
                        rx.reposted();
                        if let Some(n) = rx.due(true) { reports.push_back(n) }
                    },
                    _ => if let Some(n) = reports.pop_front() { tx.on_report(n) },
                }
                prop_assert!(reports.len() <= 5, "{} reports queued", reports.len());
            }
        }
    }
}
