//! One TCP connection's state as the layer above reports it per queue
//! pair: what its TCP knows of the path and of loss.

use std::time::Duration;

use smoltcp::socket::tcp::TcpStats;

/// TCP state of one stream (see [`Transport::tcp_stream_stats`]), in the
/// spirit of Linux's `tcp_info`. A field a transport cannot tell is `None`.
///
/// [`Transport::tcp_stream_stats`]: crate::Transport::tcp_stream_stats
/// Fields may be added, so it is not built outside this crate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TcpStreamStats {
    /// Smoothed round-trip time, once one was measured.
    pub srtt: Option<Duration>,
    /// Congestion window, in octets.
    pub cwnd: Option<usize>,
    /// Segments sent again, for any reason.
    pub retransmitted_segments: u64,
    /// Retransmission timeouts that fired (kernel TCP: `None`, as
    /// `tcp_info` keeps only the current run of them).
    pub timeouts: Option<u64>,
    /// Octets queued to send, in flight or not yet sent.
    pub send_queued: usize,
    /// Octets received and not yet taken by the layer above.
    pub recv_queued: usize,
}

impl TcpStreamStats {
    /// One smoltcp socket's figures.
    pub(crate) fn from_smoltcp(
        stats: &TcpStats,
        srtt: Option<Duration>,
        cwnd: usize,
        send_queued: usize,
        recv_queued: usize,
    ) -> Self {
        TcpStreamStats {
            srtt,
            cwnd: Some(cwnd),
            retransmitted_segments: stats.retransmitted_segments,
            timeouts: Some(stats.timeouts),
            send_queued,
            recv_queued,
        }
    }

    /// A kernel socket's `tcp_info`, with the octets the transport itself
    /// stages on top of the kernel's queues.
    pub(crate) fn from_tcp_info(
        info: &libc::tcp_info,
        send_queued: usize,
        recv_queued: usize,
    ) -> Self {
        let srtt = (info.tcpi_rtt > 0).then(|| Duration::from_micros(info.tcpi_rtt.into()));
        let cwnd = (info.tcpi_snd_cwnd as usize).saturating_mul(info.tcpi_snd_mss as usize);
        TcpStreamStats {
            srtt,
            cwnd: Some(cwnd),
            retransmitted_segments: info.tcpi_total_retrans.into(),
            timeouts: None,
            send_queued,
            recv_queued,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};

    use crate::kernel::{KernelConfig, KernelTransport};
    use crate::memory::{MemoryLink, MemoryLinkConfig};
    use crate::testutil::{drive, Receiver, Sender};
    use crate::{StreamId, StreamState, Transport};

    const LIMIT: Duration = Duration::from_secs(20);

    /// Moves 200 kB from `c` to `s`, then keeps sending while `s` reads
    /// nothing: the figures of both phases, as a stuck peer shows them.
    fn backlog_case(
        t: &mut dyn Transport,
        mut other: Option<&mut dyn Transport>,
        c: StreamId,
        s: StreamId,
    ) {
        let mut tx = Sender::new(3, 200_000);
        let mut rx = Receiver::new(3, 200_000);
        let moved = drive(t, LIMIT, |t| {
            tx.pump(t, c).unwrap();
            match other.as_deref_mut() {
                Some(o) => {
                    o.poll(Instant::now());
                    rx.drain(o, s).unwrap();
                }
                None => {
                    rx.drain(t, s).unwrap();
                }
            }
            rx.done() && t.tcp_stream_stats(c).is_some_and(|st| st.send_queued == 0)
        });
        assert!(moved, "{} of 200000", rx.received);
        let st = t.tcp_stream_stats(c).expect("a live stream");
        assert!(st.srtt.is_some(), "measured after data was acknowledged");
        assert!(st.cwnd.is_some_and(|w| w > 0), "{st:?}");
        // The peer stops reading: the backlog shows on both ends.
        let mut stuck = Sender::new(4, 50_000_000);
        let mut peer = None;
        let backed_up = drive(t, LIMIT, |t| {
            stuck.pump(t, c).unwrap();
            let p = match other.as_deref_mut() {
                Some(o) => {
                    o.poll(Instant::now());
                    o.tcp_stream_stats(s)
                }
                None => t.tcp_stream_stats(s),
            };
            peer = p;
            t.send_capacity(c) == 0 && peer.is_some_and(|p| p.recv_queued > 0)
        });
        assert!(backed_up, "the sender fills up: {peer:?}");
        let st = t.tcp_stream_stats(c).unwrap();
        assert!(st.send_queued > 0, "{st:?}");
    }

    #[test]
    fn smoltcp_streams_report_rtt_cwnd_and_a_peer_that_stops_reading() {
        let (mut a, mut b) = MemoryLink::pair(&MemoryLinkConfig::default()).unwrap();
        let l = b.listen(7000).unwrap();
        let c = a.connect("10.77.0.2:7000".parse().unwrap()).unwrap();
        let mut s = None;
        let up = drive(&mut a, LIMIT, |a| {
            b.poll(Instant::now());
            s = s.or_else(|| b.accept(l));
            s.is_some() && a.state(c) == StreamState::Established
        });
        assert!(up);
        let s = s.unwrap();
        let fresh = a.tcp_stream_stats(c).unwrap();
        assert_eq!((fresh.retransmitted_segments, fresh.timeouts), (0, Some(0)));
        backlog_case(&mut a, Some(&mut b), c, s);
        a.abort(c);
        assert_eq!(a.tcp_stream_stats(c), None, "released");
    }

    #[test]
    fn kernel_streams_report_tcp_info_and_a_peer_that_stops_reading() {
        let mut t = KernelTransport::new(KernelConfig {
            bind_ip: "127.0.0.1".parse().unwrap(),
            ..Default::default()
        });
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr: SocketAddr = probe.local_addr().unwrap();
        drop(probe);
        let l = t.listen(addr.port()).unwrap();
        let c = t.connect(addr).unwrap();
        let mut s = None;
        let up = drive(&mut t, LIMIT, |t| {
            s = s.or_else(|| t.accept(l));
            s.is_some() && t.state(c) == StreamState::Established
        });
        assert!(up);
        let s = s.unwrap();
        assert_eq!(t.tcp_stream_stats(c).unwrap().timeouts, None);
        backlog_case(&mut t, None, c, s);
        t.abort(c);
        assert_eq!(t.tcp_stream_stats(c), None, "released");
    }
}
