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
}

impl TcpLossStats {
    /// Adds one smoltcp socket's counters.
    pub(crate) fn add(&mut self, s: &TcpStats) {
        self.retransmitted_segments += s.retransmitted_segments;
        self.retransmitted_bytes += s.retransmitted_bytes;
        self.fast_recoveries += s.fast_recoveries;
        self.timeouts += s.timeouts;
        self.tail_loss_probes += s.tail_loss_probes;
        self.spurious_retransmits += s.spurious_retransmits;
    }
}

/// One line: `retransmitted 12 segments (17520 bytes), 9 fast recoveries,
/// 2 timeouts, 3 tail loss probes, 1 spurious`.
impl fmt::Display for TcpLossStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retransmitted {} segments ({} bytes), {} fast recoveries, {} timeouts, \
             {} tail loss probes, {} spurious",
            self.retransmitted_segments,
            self.retransmitted_bytes,
            self.fast_recoveries,
            self.timeouts,
            self.tail_loss_probes,
            self.spurious_retransmits
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
            "retransmitted 4 segments (5840 bytes), 2 fast recoveries, 1 timeouts, \
             5 tail loss probes, 1 spurious"
        );
    }
}
