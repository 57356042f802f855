//! Ethernet/IP/TCP frames synthesized for a byte stream, so a transport
//! that never sees packets (kernel TCP) can still write a capture that
//! Wireshark decodes as one well-formed TCP connection.
//!
//! Sequence numbers follow the bytes actually written and read, every
//! segment acknowledges everything received so far, and checksums are real.
//! Segment boundaries are those of the reads and writes, cut to the MSS;
//! they are not the kernel's.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, IpAddress, IpProtocol, IpRepr,
    IpVersion, TcpControl, TcpPacket, TcpRepr, TcpSeqNumber,
};

use capture::pcap::PcapSink;

/// MACs of the synthesized frames: locally administered, fixed.
const LOCAL_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);
const PEER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x02]);
/// Largest TCP payload whose IPv4 packet still fits a 16-bit total length.
const MAX_PAYLOAD: usize = 65535 - 20 - 20;
/// Receive window advertised in every segment.
const WINDOW: u16 = 65535;

/// One connection's synthesized capture state.
#[derive(Debug)]
pub(crate) struct TcpSynth {
    local: SocketAddr,
    peer: SocketAddr,
    /// Next sequence number this side sends.
    snd_nxt: TcpSeqNumber,
    /// Next sequence number expected from the peer.
    rcv_nxt: TcpSeqNumber,
    mss: usize,
    frame: Vec<u8>,
}

/// Which way a segment travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Out,
    In,
}

/// Both ends as one address family (v4-mapped IPv6 becomes IPv4).
fn family(a: IpAddr, b: IpAddr) -> Option<(IpAddress, IpAddress)> {
    let norm = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match (norm(a), norm(b)) {
        (IpAddr::V4(x), IpAddr::V4(y)) => Some((IpAddress::Ipv4(x), IpAddress::Ipv4(y))),
        (IpAddr::V6(x), IpAddr::V6(y)) => Some((IpAddress::Ipv6(x), IpAddress::Ipv6(y))),
        _ => None,
    }
}

/// A deterministic initial sequence number per endpoint pair.
fn isn(from: SocketAddr, to: SocketAddr) -> TcpSeqNumber {
    let mut h: u32 = 0x811c_9dc5;
    for b in format!("{from}>{to}").bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    TcpSeqNumber(h as i32)
}

impl TcpSynth {
    /// State for the connection `local`↔`peer`; `None` if the two addresses
    /// are of different families.
    pub(crate) fn new(local: SocketAddr, peer: SocketAddr, mss: usize) -> Option<Self> {
        family(local.ip(), peer.ip())?;
        Some(TcpSynth {
            local,
            peer,
            snd_nxt: isn(local, peer),
            rcv_nxt: isn(peer, local),
            mss: mss.clamp(1, MAX_PAYLOAD),
            frame: Vec::new(),
        })
    }

    /// SYN, SYN-ACK, ACK with the side that connected first.
    pub(crate) fn handshake(&mut self, sink: &mut PcapSink, now: Instant, we_connected: bool) {
        let (first, second) = if we_connected {
            (Dir::Out, Dir::In)
        } else {
            (Dir::In, Dir::Out)
        };
        self.segment(sink, now, first, TcpControl::Syn, false, &[]);
        self.segment(sink, now, second, TcpControl::Syn, true, &[]);
        self.segment(sink, now, first, TcpControl::None, true, &[]);
    }

    /// Bytes this side wrote.
    pub(crate) fn sent(&mut self, sink: &mut PcapSink, now: Instant, bytes: &[u8]) {
        self.data(sink, now, Dir::Out, bytes);
    }

    /// Bytes this side read.
    pub(crate) fn received(&mut self, sink: &mut PcapSink, now: Instant, bytes: &[u8]) {
        self.data(sink, now, Dir::In, bytes);
    }

    pub(crate) fn fin_sent(&mut self, sink: &mut PcapSink, now: Instant) {
        self.segment(sink, now, Dir::Out, TcpControl::Fin, true, &[]);
    }

    pub(crate) fn fin_received(&mut self, sink: &mut PcapSink, now: Instant) {
        self.segment(sink, now, Dir::In, TcpControl::Fin, true, &[]);
    }

    pub(crate) fn rst_sent(&mut self, sink: &mut PcapSink, now: Instant) {
        self.segment(sink, now, Dir::Out, TcpControl::Rst, true, &[]);
    }

    pub(crate) fn rst_received(&mut self, sink: &mut PcapSink, now: Instant) {
        self.segment(sink, now, Dir::In, TcpControl::Rst, true, &[]);
    }

    fn data(&mut self, sink: &mut PcapSink, now: Instant, dir: Dir, bytes: &[u8]) {
        let mut chunks = bytes.chunks(self.mss).peekable();
        while let Some(c) = chunks.next() {
            let control = if chunks.peek().is_none() {
                TcpControl::Psh
            } else {
                TcpControl::None
            };
            self.segment(sink, now, dir, control, true, c);
        }
    }

    /// Emits one segment and advances the sender's sequence number.
    fn segment(
        &mut self,
        sink: &mut PcapSink,
        now: Instant,
        dir: Dir,
        control: TcpControl,
        ack: bool,
        payload: &[u8],
    ) {
        let (src, dst, seq, ack_no) = match dir {
            Dir::Out => (self.local, self.peer, self.snd_nxt, self.rcv_nxt),
            Dir::In => (self.peer, self.local, self.rcv_nxt, self.snd_nxt),
        };
        let Some((src_ip, dst_ip)) = family(src.ip(), dst.ip()) else {
            return;
        };
        // A SYN-ACK answers the opposite side's SYN: its ACK is that ISN + 1.
        let tcp = TcpRepr {
            src_port: src.port(),
            dst_port: dst.port(),
            control,
            seq_number: seq,
            ack_number: ack.then_some(ack_no),
            window_len: WINDOW,
            window_scale: None,
            max_seg_size: (control == TcpControl::Syn)
                .then(|| u16::try_from(self.mss).unwrap_or(u16::MAX)),
            sack_permitted: false,
            sack_ranges: [None, None, None],
            timestamp: None,
            payload,
        };
        let consumed =
            payload.len() + usize::from(matches!(control, TcpControl::Syn | TcpControl::Fin));
        let (src_mac, dst_mac) = match dir {
            Dir::Out => (LOCAL_MAC, PEER_MAC),
            Dir::In => (PEER_MAC, LOCAL_MAC),
        };
        let caps = ChecksumCapabilities::default();
        let eth_len = EthernetFrame::<&[u8]>::header_len();
        // `family` gave both addresses the same version.
        let ip = IpRepr::new(src_ip, dst_ip, IpProtocol::Tcp, tcp.buffer_len(), 64);
        let ethertype = match ip.version() {
            IpVersion::Ipv4 => EthernetProtocol::Ipv4,
            IpVersion::Ipv6 => EthernetProtocol::Ipv6,
        };
        self.frame.clear();
        self.frame.resize(eth_len + ip.buffer_len(), 0);
        let mut eth = EthernetFrame::new_unchecked(&mut self.frame[..]);
        EthernetRepr {
            src_addr: src_mac,
            dst_addr: dst_mac,
            ethertype,
        }
        .emit(&mut eth);
        let packet = eth.payload_mut();
        ip.emit(&mut *packet, &caps);
        tcp.emit(
            &mut TcpPacket::new_unchecked(&mut packet[ip.header_len()..]),
            &src_ip,
            &dst_ip,
            &caps,
        );
        sink.record(now, &self.frame);
        match dir {
            Dir::Out => self.snd_nxt += consumed,
            Dir::In => self.rcv_nxt += consumed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{parse, SharedBuf};
    use smoltcp::wire::{Ipv4Packet, Ipv6Packet};
    use std::time::Duration;

    struct Seg {
        src_port: u16,
        seq: i32,
        ack: Option<i32>,
        flags: (bool, bool, bool, bool),
        payload: Vec<u8>,
    }

    /// Decodes a capture with smoltcp's checked views, verifying checksums.
    fn segments(bytes: &[u8]) -> Vec<Seg> {
        let (_, link, recs) = parse(bytes).unwrap();
        assert_eq!(link, 1);
        recs.iter()
            .map(|(_, _, f)| {
                let eth = EthernetFrame::new_checked(&f[..]).unwrap();
                let (src, dst, l4): (IpAddress, IpAddress, &[u8]) = match eth.ethertype() {
                    EthernetProtocol::Ipv4 => {
                        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
                        assert!(ip.verify_checksum());
                        assert_eq!(ip.total_len() as usize, eth.payload().len());
                        (
                            ip.src_addr().into(),
                            ip.dst_addr().into(),
                            &eth.payload()[20..],
                        )
                    }
                    EthernetProtocol::Ipv6 => {
                        let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
                        assert_eq!(ip.payload_len() as usize + 40, eth.payload().len());
                        (
                            ip.src_addr().into(),
                            ip.dst_addr().into(),
                            &eth.payload()[40..],
                        )
                    }
                    other => panic!("{other}"),
                };
                let t = TcpPacket::new_checked(l4).unwrap();
                assert!(t.verify_checksum(&src, &dst), "bad TCP checksum");
                Seg {
                    src_port: t.src_port(),
                    seq: t.seq_number().0,
                    ack: t.ack().then(|| t.ack_number().0),
                    flags: (t.syn(), t.fin(), t.rst(), t.psh()),
                    payload: t.payload().to_vec(),
                }
            })
            .collect()
    }

    fn sink() -> (PcapSink, SharedBuf) {
        let buf = SharedBuf::default();
        let s = PcapSink::with_wall_base(Box::new(buf.clone()), Duration::from_secs(10)).unwrap();
        (s, buf)
    }

    #[test]
    fn a_whole_connection_has_consistent_sequence_numbers() {
        let local: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let peer: SocketAddr = "127.0.0.1:7174".parse().unwrap();
        let (mut sink, buf) = sink();
        let mut t = TcpSynth::new(local, peer, 4).unwrap();
        let now = Instant::now();
        t.handshake(&mut sink, now, true);
        t.sent(&mut sink, now, b"abcdefghij");
        t.received(&mut sink, now, b"xyz");
        t.fin_sent(&mut sink, now);
        t.fin_received(&mut sink, now);
        drop(sink);
        let segs = segments(&buf.0.lock().unwrap());
        // SYN, SYN-ACK, ACK, 3 data out (4+4+2), 1 data in, FIN, FIN.
        assert_eq!(segs.len(), 3 + 3 + 1 + 2);
        let (c_isn, s_isn) = (segs[0].seq, segs[1].seq);
        assert!(segs[0].flags.0);
        assert_eq!(segs[0].ack, None);
        assert_eq!(segs[0].src_port, 40000);
        assert_eq!(segs[1].src_port, 7174);
        assert_eq!(segs[1].ack, Some(c_isn.wrapping_add(1)));
        assert_eq!(segs[2].ack, Some(s_isn.wrapping_add(1)));
        assert_eq!(segs[2].seq, c_isn.wrapping_add(1));
        let out: Vec<u8> = segs[3..6].iter().flat_map(|s| s.payload.clone()).collect();
        assert_eq!(out, b"abcdefghij");
        assert_eq!(segs[4].seq, c_isn.wrapping_add(5));
        assert_eq!(
            segs[3..6].iter().map(|s| s.flags.3).collect::<Vec<_>>(),
            [false, false, true],
            "PSH only on the last segment of a write"
        );
        assert_eq!(segs[6].payload, b"xyz");
        assert_eq!(segs[6].seq, s_isn.wrapping_add(1));
        assert_eq!(segs[6].ack, Some(c_isn.wrapping_add(11)));
        assert!(segs[7].flags.1);
        assert_eq!(segs[7].seq, c_isn.wrapping_add(11));
        assert_eq!(segs[7].ack, Some(s_isn.wrapping_add(4)));
        assert!(segs[8].flags.1);
        assert_eq!(segs[8].ack, Some(c_isn.wrapping_add(12)));
    }

    #[test]
    fn accepted_side_sees_the_peer_syn_first() {
        let local: SocketAddr = "10.0.0.1:7174".parse().unwrap();
        let peer: SocketAddr = "10.0.0.2:5555".parse().unwrap();
        let (mut sink, buf) = sink();
        let mut t = TcpSynth::new(local, peer, 1460).unwrap();
        t.handshake(&mut sink, Instant::now(), false);
        t.rst_received(&mut sink, Instant::now());
        drop(sink);
        let segs = segments(&buf.0.lock().unwrap());
        assert_eq!(segs[0].src_port, 5555);
        assert!(segs[0].flags.0 && segs[1].flags.0);
        assert_eq!(segs[1].src_port, 7174);
        assert!(segs[3].flags.2);
    }

    #[test]
    fn ipv6_and_mapped_addresses() {
        let (mut sink, buf) = sink();
        let mut t = TcpSynth::new(
            "[::1]:1000".parse().unwrap(),
            "[::1]:2000".parse().unwrap(),
            1440,
        )
        .unwrap();
        t.handshake(&mut sink, Instant::now(), true);
        t.sent(&mut sink, Instant::now(), &[7; 3000]);
        t.rst_sent(&mut sink, Instant::now());
        let mut m = TcpSynth::new(
            "[::ffff:10.0.0.1]:1".parse().unwrap(),
            "10.0.0.2:2".parse().unwrap(),
            1460,
        )
        .unwrap();
        m.sent(&mut sink, Instant::now(), b"v4");
        drop(sink);
        let segs = segments(&buf.0.lock().unwrap());
        assert_eq!(segs.len(), 3 + 3 + 1 + 1);
        assert_eq!(segs[3].payload.len(), 1440);
        assert_eq!(segs[7].payload, b"v4");
        assert!(TcpSynth::new(
            "[::1]:1".parse().unwrap(),
            "10.0.0.2:2".parse().unwrap(),
            1460
        )
        .is_none());
    }

    #[test]
    fn sequence_numbers_wrap() {
        let (mut sink, buf) = sink();
        let mut t = TcpSynth::new(
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
            MAX_PAYLOAD,
        )
        .unwrap();
        t.snd_nxt = TcpSeqNumber(-10);
        t.sent(&mut sink, Instant::now(), &[1; 30]);
        t.sent(&mut sink, Instant::now(), &[2; 5]);
        drop(sink);
        let segs = segments(&buf.0.lock().unwrap());
        assert_eq!(segs[0].seq, -10);
        assert_eq!(segs[1].seq, 20);
    }

    #[test]
    fn jumbo_writes_are_cut_to_ip_limits() {
        let (mut sink, buf) = sink();
        let mut t = TcpSynth::new(
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
            usize::MAX,
        )
        .unwrap();
        t.sent(&mut sink, Instant::now(), &vec![3; 200_000]);
        drop(sink);
        let segs = segments(&buf.0.lock().unwrap());
        assert_eq!(segs.len(), 4);
        assert!(segs.iter().all(|s| s.payload.len() <= MAX_PAYLOAD));
        assert_eq!(segs.iter().map(|s| s.payload.len()).sum::<usize>(), 200_000);
    }
}
