//! Frames built with smoltcp's wire types, run through what the device
//! does on transmit, on receive and for captures.

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, Icmpv4Packet, Icmpv4Repr,
    IpAddress, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, TcpControl, TcpPacket, TcpRepr,
    TcpSeqNumber,
};

use super::*;
use crate::tap::vnet::{GsoType, PartialChecksum, Segmentation, VnetRepr};

const SRC: Ipv4Address = Ipv4Address::new(10, 77, 2, 1);
const DST: Ipv4Address = Ipv4Address::new(10, 77, 2, 2);
const MSS: usize = 1460;

fn eth(proto: EthernetProtocol) -> EthernetRepr {
    EthernetRepr {
        src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
        dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
        ethertype: proto,
    }
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 + i / 7) as u8).collect()
}

/// A TCP/IPv4 frame as smoltcp emits it on an interface with checksum
/// offload (`checksum_tx` false: TCP checksum zero) or without.
fn tcp_frame(data: &[u8], control: TcpControl, checksum_tx: bool) -> Vec<u8> {
    let tcp = TcpRepr {
        src_port: 49152,
        dst_port: 7471,
        control,
        seq_number: TcpSeqNumber(0x7fff_f000),
        ack_number: Some(TcpSeqNumber(99)),
        window_len: 512,
        window_scale: None,
        max_seg_size: None,
        sack_permitted: false,
        sack_ranges: [None, None, None],
        timestamp: None,
        payload: data,
    };
    let ip = Ipv4Repr {
        src_addr: SRC,
        dst_addr: DST,
        next_header: IpProtocol::Tcp,
        payload_len: tcp.buffer_len(),
        hop_limit: 64,
    };
    let mut buf = vec![0xa5u8; 14 + 20 + tcp.buffer_len()];
    let mut caps = ChecksumCapabilities::default();
    if !checksum_tx {
        caps.tcp = smoltcp::phy::Checksum::None;
    }
    let mut f = EthernetFrame::new_unchecked(&mut buf[..]);
    eth(EthernetProtocol::Ipv4).emit(&mut f);
    let mut p = Ipv4Packet::new_unchecked(f.payload_mut());
    ip.emit(&mut p, &caps);
    let mut t = TcpPacket::new_unchecked(p.payload_mut());
    tcp.emit(&mut t, &IpAddress::Ipv4(SRC), &IpAddress::Ipv4(DST), &caps);
    buf
}

fn tcp_checksum_valid(frame: &[u8]) -> bool {
    tcp_checksum_ok(frame) == Some(true)
}

#[test]
fn transmit_leaves_the_checksum_partial_and_asks_for_segments() {
    let data = payload(3 * MSS + 100);
    let mut frame = tcp_frame(&data, TcpControl::Psh, false);
    let hdr = prepare_tx(&mut frame, Some(MSS as u16));
    assert_eq!(
        hdr,
        VnetRepr {
            checksum: Some(PartialChecksum {
                start: 34,
                offset: 16
            }),
            segmentation: Some(Segmentation {
                kind: GsoType::TcpV4,
                ecn: false,
                hdr_len: 54,
                size: MSS as u16,
            }),
            ..VnetRepr::default()
        }
    );
    // The field holds the pseudo-header sum; completing it as the kernel
    // does gives the checksum smoltcp would have computed.
    assert!(!tcp_checksum_valid(&frame));
    complete(&mut frame, hdr.checksum.unwrap()).unwrap();
    assert_eq!(frame, tcp_frame(&data, TcpControl::Psh, true));
}

#[test]
fn one_segment_or_no_tcp_needs_no_segmentation() {
    let mut small = tcp_frame(&payload(MSS), TcpControl::None, false);
    let hdr = prepare_tx(&mut small, Some(MSS as u16));
    assert!(hdr.checksum.is_some());
    assert_eq!(hdr.segmentation, None, "one MSS is one segment");
    let mut plain = tcp_frame(&payload(5000), TcpControl::None, false);
    assert_eq!(prepare_tx(&mut plain, None).segmentation, None);

    let mut arp = vec![0u8; 42];
    EthernetFrame::new_unchecked(&mut arp[..]).set_ethertype(EthernetProtocol::Arp);
    let before = arp.clone();
    assert_eq!(prepare_tx(&mut arp, Some(1460)), VnetRepr::default());
    assert_eq!(arp, before, "left alone");
}

#[test]
fn captures_show_the_segments_the_wire_carries() {
    let data = payload(3 * MSS + 100);
    let mut frame = tcp_frame(&data, TcpControl::Fin, false);
    let hdr = prepare_tx(&mut frame, Some(MSS as u16));
    let mut segs: Vec<Vec<u8>> = Vec::new();
    wire_frames(&hdr, &frame, &mut |f| segs.push(f.to_vec()));
    assert_eq!(segs.len(), 4);
    let mut joined = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        let e = EthernetFrame::new_checked(&s[..]).unwrap();
        let ip = Ipv4Packet::new_checked(e.payload()).unwrap();
        assert!(ip.verify_checksum(), "segment {i}: IP checksum");
        assert_eq!(usize::from(ip.total_len()), s.len() - 14);
        assert!(tcp_checksum_valid(s), "segment {i}: TCP checksum");
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(tcp.seq_number(), TcpSeqNumber(0x7fff_f000) + i * MSS);
        let last = i == 3;
        assert_eq!(tcp.fin(), last, "FIN on the last segment only");
        assert_eq!(tcp.payload().len(), if last { 100 } else { MSS });
        joined.extend_from_slice(tcp.payload());
    }
    assert_eq!(joined, data);

    // A single frame with a partial checksum is recorded completed.
    let mut one = tcp_frame(&payload(200), TcpControl::Psh, false);
    let hdr = prepare_tx(&mut one, Some(MSS as u16));
    let mut got = Vec::new();
    wire_frames(&hdr, &one, &mut |f| got.push(f.to_vec()));
    assert_eq!(got, vec![tcp_frame(&payload(200), TcpControl::Psh, true)]);
}

#[test]
fn receive_verifies_only_what_nobody_vouched_for() {
    let good = tcp_frame(&payload(700), TcpControl::Psh, true);
    let mut bad = good.clone();
    *bad.last_mut().unwrap() ^= 0x40;
    let plain = VnetRepr::default();
    assert_eq!(accept_rx(&plain, &mut good.clone()), Ok(()));
    assert_eq!(
        accept_rx(&plain, &mut bad.clone()),
        Err(RxDrop::BadChecksum)
    );
    let valid = VnetRepr {
        data_valid: true,
        ..VnetRepr::default()
    };
    assert_eq!(accept_rx(&valid, &mut bad.clone()), Ok(()));
    // A local sender's partial checksum: TCP is taken as it is.
    let mut partial = tcp_frame(&payload(700), TcpControl::Psh, false);
    let hdr = prepare_tx(&mut partial, None);
    let before = partial.clone();
    assert_eq!(accept_rx(&hdr, &mut partial), Ok(()));
    assert_eq!(partial, before);
}

#[test]
fn receive_completes_partial_checksums_smoltcp_checks() {
    // An ICMP echo with its checksum left zero (the pseudo-header sum of
    // a protocol without one) and NEEDS_CSUM.
    let icmp = Icmpv4Repr::EchoRequest {
        ident: 7,
        seq_no: 1,
        data: b"ping ping ping",
    };
    let ip = Ipv4Repr {
        src_addr: SRC,
        dst_addr: DST,
        next_header: IpProtocol::Icmp,
        payload_len: icmp.buffer_len(),
        hop_limit: 64,
    };
    let mut frame = vec![0u8; 14 + 20 + icmp.buffer_len()];
    let caps = ChecksumCapabilities::default();
    let mut f = EthernetFrame::new_unchecked(&mut frame[..]);
    eth(EthernetProtocol::Ipv4).emit(&mut f);
    let mut p = Ipv4Packet::new_unchecked(f.payload_mut());
    ip.emit(&mut p, &caps);
    let mut i = Icmpv4Packet::new_unchecked(p.payload_mut());
    icmp.emit(&mut i, &caps);
    let expect = frame.clone();
    frame[34 + 2] = 0;
    frame[34 + 3] = 0;
    let hdr = VnetRepr {
        checksum: Some(PartialChecksum {
            start: 34,
            offset: 2,
        }),
        ..VnetRepr::default()
    };
    assert_eq!(accept_rx(&hdr, &mut frame), Ok(()));
    assert_eq!(frame, expect);

    let outside = VnetRepr {
        checksum: Some(PartialChecksum {
            start: 34,
            offset: u16::MAX,
        }),
        ..VnetRepr::default()
    };
    assert_eq!(accept_rx(&outside, &mut frame), Err(RxDrop::BadHeader));
    let at_end = VnetRepr {
        checksum: Some(PartialChecksum {
            start: (frame.len() - 1) as u16,
            offset: 0,
        }),
        ..VnetRepr::default()
    };
    assert_eq!(accept_rx(&at_end, &mut frame), Err(RxDrop::BadHeader));
}

#[test]
fn odd_frames_never_panic() {
    // Truncations of a super-frame at every length, under every header.
    let mut full = tcp_frame(&payload(2 * MSS + 3), TcpControl::Psh, false);
    let tso = prepare_tx(&mut full, Some(MSS as u16));
    let headers = [
        VnetRepr::default(),
        tso,
        VnetRepr {
            data_valid: true,
            ..VnetRepr::default()
        },
    ];
    for len in 0..full.len() {
        for hdr in &headers {
            let mut f = full[..len].to_vec();
            let _ = accept_rx(hdr, &mut f);
            wire_frames(hdr, &full[..len], &mut |_| {});
        }
        let mut f = full[..len].to_vec();
        let _ = prepare_tx(&mut f, Some(MSS as u16));
    }
}
