//! Loss recovery counters of a transport's TCP, summed over its connections.

use std::fmt;

use smoltcp::socket::tcp::TcpStats;

/// How a transport's TCP recovered from loss, summed over every connection
/// it carried (closed ones included), in the spirit of Linux's `tcp_info`.
/// Read with [`Transport::tcp_loss_stats`](crate::Transport::tcp_loss_stats):
/// on a lossy link these say whether losses cost fast retransmits or
/// timeouts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TcpLossStats {
    /// Octets of data sent, resends included.
    pub sent_bytes: u64,
    /// Segments sent again, for any reason.
    pub retransmitted_segments: u64,
    /// Octets sent again.
    pub retransmitted_bytes: u64,
    /// Fast recovery episodes (duplicate ACKs, SACK or RACK).
    pub fast_recoveries: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
    /// Tail loss probes sent.
    pub tail_loss_probes: u64,
    /// Retransmissions the peer reported as duplicates (D-SACK).
    pub spurious_retransmits: u64,
    /// Loss episodes undone: every resend in them was a duplicate, or
    /// F-RTO found the timeout spurious.
    pub undos: u64,
    /// Timeouts F-RTO found spurious (RFC 5682).
    pub spurious_timeouts: u64,
}

impl TcpLossStats {
    /// Adds one smoltcp socket's counters.
    pub(crate) fn add(&mut self, s: &TcpStats) {
        self.merge(&TcpLossStats::from(s));
    }

    /// Adds another transport's sums (both ends of a link, say).
    pub fn merge(&mut self, other: &TcpLossStats) {
        self.sent_bytes += other.sent_bytes;
        self.retransmitted_segments += other.retransmitted_segments;
        self.retransmitted_bytes += other.retransmitted_bytes;
        self.fast_recoveries += other.fast_recoveries;
        self.timeouts += other.timeouts;
        self.tail_loss_probes += other.tail_loss_probes;
        self.spurious_retransmits += other.spurious_retransmits;
        self.undos += other.undos;
        self.spurious_timeouts += other.spurious_timeouts;
    }

    /// What was counted after `earlier`, a reading of the same counters:
    /// the figures of one measured span.
    pub fn since(&self, earlier: &TcpLossStats) -> TcpLossStats {
        TcpLossStats {
            sent_bytes: self.sent_bytes.saturating_sub(earlier.sent_bytes),
            retransmitted_segments: self
                .retransmitted_segments
                .saturating_sub(earlier.retransmitted_segments),
            retransmitted_bytes: self
                .retransmitted_bytes
                .saturating_sub(earlier.retransmitted_bytes),
            fast_recoveries: self.fast_recoveries.saturating_sub(earlier.fast_recoveries),
            timeouts: self.timeouts.saturating_sub(earlier.timeouts),
            tail_loss_probes: self
                .tail_loss_probes
                .saturating_sub(earlier.tail_loss_probes),
            spurious_retransmits: self
                .spurious_retransmits
                .saturating_sub(earlier.spurious_retransmits),
            undos: self.undos.saturating_sub(earlier.undos),
            spurious_timeouts: self
                .spurious_timeouts
                .saturating_sub(earlier.spurious_timeouts),
        }
    }

    /// Resent octets as a share of all octets sent (0 when none were).
    pub fn resent_share(&self) -> f64 {
        if self.sent_bytes == 0 {
            0.0
        } else {
            self.retransmitted_bytes as f64 / self.sent_bytes as f64
        }
    }
}

impl From<&TcpStats> for TcpLossStats {
    fn from(s: &TcpStats) -> Self {
        TcpLossStats {
            sent_bytes: s.sent_bytes,
            retransmitted_segments: s.retransmitted_segments,
            retransmitted_bytes: s.retransmitted_bytes,
            fast_recoveries: s.fast_recoveries,
            timeouts: s.timeouts,
            tail_loss_probes: s.tail_loss_probes,
            spurious_retransmits: s.spurious_retransmits,
            undos: s.undos,
            spurious_timeouts: s.spurious_rtos,
        }
    }
}

/// One line: `retransmitted 12 segments (17520 bytes), 9 fast recoveries,
/// 2 timeouts (1 spurious), 3 tail loss probes, 1 spurious, 0 undone`.
impl fmt::Display for TcpLossStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retransmitted {} segments ({} bytes), {} fast recoveries, {} timeouts \
             ({} spurious), {} tail loss probes, {} spurious, {} undone",
            self.retransmitted_segments,
            self.retransmitted_bytes,
            self.fast_recoveries,
            self.timeouts,
            self.spurious_timeouts,
            self.tail_loss_probes,
            self.spurious_retransmits,
            self.undos
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_sockets_and_prints_one_line() {
        let mut a = TcpStats::default();
        a.retransmitted_segments = 3;
        a.retransmitted_bytes = 4380;
        a.fast_recoveries = 2;
        a.timeouts = 1;
        a.spurious_rtos = 1;
        let mut b = TcpStats::default();
        b.retransmitted_segments = 1;
        b.retransmitted_bytes = 1460;
        b.tail_loss_probes = 5;
        b.spurious_retransmits = 1;
        let mut sum = TcpLossStats::default();
        sum.add(&a);
        sum.add(&b);
        assert_eq!(
            sum.to_string(),
            "retransmitted 4 segments (5840 bytes), 2 fast recoveries, 1 timeouts \
             (1 spurious), 5 tail loss probes, 1 spurious, 0 undone"
        );
    }

    #[test]
    fn merges_and_reports_the_resent_share() {
        assert_eq!(TcpLossStats::default().resent_share(), 0.0);
        let mut a = TcpStats::default();
        a.sent_bytes = 100_000;
        a.retransmitted_bytes = 1_000;
        let mut one = TcpLossStats::default();
        one.add(&a);
        let mut both = one;
        both.merge(&one);
        assert_eq!(both.sent_bytes, 200_000);
        assert_eq!(both.retransmitted_bytes, 2_000);
        assert!((both.resent_share() - 0.01).abs() < 1e-12);
    }

    #[test]
    fn a_span_is_the_difference_of_two_readings() {
        let mut a = TcpStats::default();
        a.sent_bytes = 10_000;
        a.retransmitted_segments = 1;
        a.retransmitted_bytes = 1_000;
        a.timeouts = 1;
        let mut first = TcpLossStats::default();
        first.add(&a);
        let mut later = first;
        later.merge(&first);
        later.merge(&first);
        let span = later.since(&first);
        assert_eq!(span.sent_bytes, 20_000);
        assert_eq!(span.retransmitted_segments, 2);
        assert_eq!(span.timeouts, 2);
        assert!((span.resent_share() - 0.1).abs() < 1e-12);
        assert_eq!(
            first.since(&later),
            TcpLossStats::default(),
            "never below 0"
        );
    }
}
