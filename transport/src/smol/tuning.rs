//! TCP settings for the smoltcp sockets.

use std::time::Duration;

use smoltcp::socket::tcp;
use smoltcp::wire::TcpSeqNumber;

/// Scratch for one segment that the send ring's end would cut: any MSS.
const RECORD_SCRATCH: usize = 1 << 16;

/// Congestion control algorithm of the smoltcp sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CongestionControl {
    /// No congestion window: only the peer's receive window limits sending.
    /// Fine on a lossless memory link, harmful anywhere frames can be lost.
    None,
    /// RFC 5681 Reno.
    Reno,
    /// RFC 8312 CUBIC, as Linux uses by default.
    #[default]
    Cubic,
    /// BBR version 3 (draft-ietf-ccwg-bbr-06) with pacing: a model of the
    /// path's rate and round trip, not loss, sets the sending rate, so
    /// random loss below its 2% threshold costs little and a deep queue
    /// stays short.
    Bbr,
}

impl CongestionControl {
    pub(crate) fn to_smoltcp(self) -> tcp::CongestionControl {
        match self {
            CongestionControl::None => tcp::CongestionControl::None,
            CongestionControl::Reno => tcp::CongestionControl::Reno,
            CongestionControl::Cubic => tcp::CongestionControl::Cubic,
            CongestionControl::Bbr => tcp::CongestionControl::Bbr,
        }
    }

    /// The name `--cc` takes and reports print.
    pub fn name(self) -> &'static str {
        match self {
            CongestionControl::None => "none",
            CongestionControl::Reno => "reno",
            CongestionControl::Cubic => "cubic",
            CongestionControl::Bbr => "bbr",
        }
    }
}

/// How each smoltcp TCP socket is set up.
///
/// The defaults are for RDMA traffic: FPDUs leave at once (no Nagle), every
/// segment is acknowledged at once (no delayed ACK, which would otherwise
/// stall a READ response behind a 10 ms timer), and buffers are large
/// enough for a bandwidth-delay product of a few milliseconds at 10 Gbit/s.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TcpTuning {
    /// Receive ring per socket; above 64 KiB smoltcp negotiates window scaling.
    pub rx_buffer: usize,
    /// Send ring per socket.
    pub tx_buffer: usize,
    /// Sockets per listening port, armed or holding a connection not yet
    /// accepted (smoltcp has no backlog: a SYN arriving when all are taken
    /// is answered with RST). Bounds what a SYN flood can hold.
    pub backlog: usize,
    /// Congestion control algorithm.
    pub congestion: CongestionControl,
    /// Nagle's algorithm; off so each FPDU is sent as soon as it is queued.
    pub nagle: bool,
    /// Delayed-ACK timer; `None` acknowledges every segment immediately.
    pub ack_delay: Option<Duration>,
    /// Abort a connection whose data stays unacknowledged this long.
    pub user_timeout: Option<Duration>,
    /// Keep-alive probe interval on idle connections. smoltcp 0.14 applies
    /// `user_timeout` to idle connections too (smoltcp-rs/smoltcp#1202): an
    /// idle connection is aborted after `user_timeout` without a received
    /// segment. A probe interval well inside the timeout keeps a healthy
    /// idle connection alive and still detects a dead peer in time.
    pub keep_alive: Option<Duration>,
    /// Sender-side silly window avoidance (RFC 1122, section 4.2.3.4;
    /// added to the vendored smoltcp): while data is in flight, a segment
    /// the receive or congestion window would cut short waits for the
    /// window instead. With FPDUs filling the MSS, segments then start on
    /// FPDU boundaries, as siw's do (RFC 5044 section 4), which peers and
    /// dissectors expecting one FPDU per segment need. On by default on TAP
    /// (real peers); off on the memory link, where nothing reads segments.
    pub segment_aligned: bool,
    /// Autocorking: bytes posted behind unacknowledged data leave with the
    /// next poll instead of at once, so small messages share full segments.
    /// A win against a peer that acknowledges at once (the memory link's
    /// smoltcp); against one that delays its ACKs (Linux, 40 ms) it would
    /// hold messages that long, and it packs several FPDUs into a segment.
    /// On by default; off on TAP.
    pub autocork: bool,
    /// Minimum retransmission timeout. 200 ms (Linux's) by default, right
    /// for real peers; a link inside one host, whose round trip is a few
    /// microseconds, can use a few milliseconds (`MEMORY_LINK_RTO_MIN`).
    pub rto_min: Duration,
    /// Retransmission timeout before the first RTT sample (RFC 6298: 1 s).
    pub rto_initial: Duration,
}

crate::setters::setters!(TcpTuning {
    rx_buffer: usize,
    tx_buffer: usize,
    backlog: usize,
    congestion: CongestionControl,
    nagle: bool,
    ack_delay: Option<Duration>,
    user_timeout: Option<Duration>,
    keep_alive: Option<Duration>,
    segment_aligned: bool,
    autocork: bool,
    rto_min: Duration,
    rto_initial: Duration,
});

impl TcpTuning {
    /// A minimum RTO for the in-memory link: far above its round trip (tens
    /// of microseconds when one thread drives both ends), far below the
    /// 200 ms a real network needs. It is the margin above the smoothed
    /// RTT (RTO = SRTT + max(minimum, 4 RTTVAR)), so a link given latency
    /// by fault injection keeps its RTO above its round trip. At 10% loss
    /// timeouts still happen (a flight and all its ACKs lost), and each
    /// costs this much, so a smaller minimum moves more under loss. Below
    /// 1 ms chains of timeouts stretch past eight first RTOs on a link
    /// with 100 us of latency (tests/tests/rdma_lossy.rs), and timeouts a
    /// descheduled process makes spurious grow common; those cost resends,
    /// never the connection (the vendored smoltcp numbers its ACKs at
    /// SND.MAX after a timeout).
    pub const MEMORY_LINK_RTO_MIN: Duration = Duration::from_millis(1);
}

impl Default for TcpTuning {
    fn default() -> Self {
        TcpTuning {
            rx_buffer: 1 << 20,
            tx_buffer: 1 << 20,
            backlog: 4,
            congestion: CongestionControl::Cubic,
            nagle: false,
            ack_delay: None,
            user_timeout: Some(Duration::from_secs(30)),
            keep_alive: Some(Duration::from_secs(10)),
            segment_aligned: false,
            autocork: true,
            rto_min: Duration::from_millis(200),
            rto_initial: Duration::from_secs(1),
        }
    }
}

impl TcpTuning {
    /// A new socket with these settings and rings from the heap (the
    /// stack maps its own, see `ring_memory`).
    pub(crate) fn socket(&self) -> tcp::Socket<'static> {
        self.socket_on(
            tcp::SocketBuffer::new(vec![0u8; self.rx_buffer.max(1)]),
            tcp::SocketBuffer::new(vec![0u8; self.tx_buffer.max(1)]),
        )
    }

    /// A new socket with these settings on the rings given.
    pub(crate) fn socket_on(
        &self,
        rx: tcp::SocketBuffer<'static>,
        tx: tcp::SocketBuffer<'static>,
    ) -> tcp::Socket<'static> {
        let mut s = tcp::Socket::new(rx, tx);
        s.set_nagle_enabled(self.nagle);
        s.set_sws_avoidance(self.segment_aligned);
        s.set_ack_delay(self.ack_delay.map(to_smoltcp_duration));
        s.set_timeout(self.user_timeout.map(to_smoltcp_duration));
        s.set_keep_alive(self.keep_alive.map(to_smoltcp_duration));
        s.set_congestion_control(self.congestion.to_smoltcp());
        s.set_rto_min(to_smoltcp_duration(self.rto_min));
        s.set_rto_initial(to_smoltcp_duration(self.rto_initial));
        s
    }
}

impl TcpTuning {
    /// Gives `s` room to remember where records end, so its segments carry
    /// FPDUs whole (RFC 5044 section 4). Only streams written with
    /// `send_records_with` mark any, so the stack gives each this room on
    /// its first record and takes it back once the stream is idle (see
    /// `SmolStack::release_idle`): one entry per record a full send
    /// ring could hold is a quarter of the ring's size again, most of what
    /// an idle connection would otherwise keep resident.
    pub(crate) fn attach_records(&self, s: &mut tcp::Socket<'static>) {
        // An FPDU takes at least 20 octets (length, DDP header, CRC).
        s.set_record_buffers(
            vec![TcpSeqNumber::default(); self.tx_buffer / 16 + 2],
            vec![0u8; RECORD_SCRATCH],
        );
    }

    /// Takes back what [`Self::attach_records`] gave: only once every
    /// record sent is acknowledged, or their ends are lost.
    pub(crate) fn detach_records(s: &mut tcp::Socket<'static>) {
        s.set_record_buffers(Vec::new(), Vec::new());
    }
}

pub(crate) fn to_smoltcp_duration(d: Duration) -> smoltcp::time::Duration {
    smoltcp::time::Duration::from_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_suit_rdma() {
        let t = TcpTuning::default();
        let s = t.socket();
        assert!(!s.nagle_enabled());
        assert_eq!(s.ack_delay(), None);
        assert_eq!(s.congestion_control(), tcp::CongestionControl::Cubic);
        assert_eq!(s.recv_capacity(), 1 << 20);
        assert_eq!(s.send_capacity(), 1 << 20);
        assert_eq!(s.timeout(), Some(smoltcp::time::Duration::from_secs(30)));
        // Idle connections must outlive the user timeout (smoltcp #1202).
        assert!(s.keep_alive().unwrap() < s.timeout().unwrap());
        assert_eq!(s.rto_min(), smoltcp::time::Duration::from_millis(200));
    }

    #[test]
    fn bbr_is_selectable_per_socket() {
        let t = TcpTuning {
            congestion: CongestionControl::Bbr,
            ..TcpTuning::default()
        };
        assert_eq!(t.socket().congestion_control(), tcp::CongestionControl::Bbr);
        assert_eq!(CongestionControl::Bbr.name(), "bbr");
    }

    #[test]
    fn every_setting_reaches_the_socket() {
        let t = TcpTuning {
            rx_buffer: 4096,
            tx_buffer: 8192,
            backlog: 1,
            congestion: CongestionControl::Reno,
            nagle: true,
            ack_delay: Some(Duration::from_millis(3)),
            user_timeout: None,
            keep_alive: Some(Duration::from_secs(7)),
            segment_aligned: true,
            autocork: false,
            rto_min: Duration::from_millis(3),
            rto_initial: Duration::from_millis(50),
        };
        let s = t.socket();
        assert!(s.nagle_enabled());
        assert!(s.sws_avoidance());
        assert_eq!(s.ack_delay(), Some(smoltcp::time::Duration::from_millis(3)));
        assert_eq!(s.congestion_control(), tcp::CongestionControl::Reno);
        assert_eq!(s.recv_capacity(), 4096);
        assert_eq!(s.send_capacity(), 8192);
        assert_eq!(s.timeout(), None);
        assert_eq!(s.keep_alive(), Some(smoltcp::time::Duration::from_secs(7)));
        assert_eq!(s.rto_min(), smoltcp::time::Duration::from_millis(3));
        assert_eq!(s.rto_initial(), smoltcp::time::Duration::from_millis(50));
        let none = TcpTuning {
            congestion: CongestionControl::None,
            ..t
        };
        assert_eq!(
            none.socket().congestion_control(),
            tcp::CongestionControl::None
        );
    }
}
