//! Per-socket counters of loss recovery, in the spirit of Linux's `tcp_info`.

/// Counters of one TCP connection's loss recovery, read with
/// [`Socket::stats`](super::Socket::stats). They only grow while the socket
/// lives; they start from zero when it is reset.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct TcpStats {
    /// Octets of data sent, first transmissions and resends alike
    /// (`tcpi_bytes_sent`): what `retransmitted_bytes` is a share of.
    pub sent_bytes: u64,
    /// Segments sent again, for any reason (`tcpi_total_retrans`).
    pub retransmitted_segments: u64,
    /// Octets sent again.
    pub retransmitted_bytes: u64,
    /// Fast recovery episodes entered on duplicate ACKs, SACK or RACK.
    pub fast_recoveries: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
    /// Tail loss probes sent (RFC 8985 section 7).
    pub tail_loss_probes: u64,
    /// Retransmissions the receiver reported as duplicates with D-SACK
    /// (RFC 2883): the original had arrived after all.
    pub spurious_retransmits: u64,
    /// Loss episodes (fast recoveries or timeouts) whose every resend was
    /// reported duplicate, and whose window reduction was undone.
    pub undos: u64,
    /// Retransmission timeouts found spurious by F-RTO (RFC 5682): data
    /// sent before the timeout and never resent was acknowledged after it.
    pub spurious_rtos: u64,
    /// Octets newly reported held by SACK blocks.
    pub sacked_bytes: u64,
    /// Octets delivered, cumulatively acknowledged or SACKed
    /// (`tcpi_delivered`, in octets; draft-cheng-iccrg-delivery-rate-estimation's
    /// C.delivered).
    pub delivered_bytes: u64,
    /// The last delivery rate sample, in octets per second
    /// (`tcpi_delivery_rate`): data delivered over the longer of the
    /// intervals it took to send and to acknowledge.
    pub delivery_rate: u64,
    /// That sample was taken while the sender had run out of data, so it
    /// understates what the path can carry (`tcpi_delivery_rate_app_limited`).
    pub delivery_rate_app_limited: bool,
    /// The rate data is paced at, in octets per second; 0 when unpaced
    /// (`tcpi_pacing_rate`).
    pub pacing_rate: u64,
}
