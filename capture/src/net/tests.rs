use std::net::SocketAddr;

use super::*;
use crate::net::build;
use proptest::prelude::*;

/// Frame 1 of rping-mpav1.pcap: the client's SYN, 74 bytes.
const SYN_FRAME: [u8; 74] = [
    0x52, 0x54, 0x00, 0x99, 0x00, 0x02, 0x52, 0x54, 0x00, 0x99, 0x00, 0x03, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x3c, 0xaa, 0xb2, 0x40, 0x00, 0x40, 0x06, 0x7b, 0x3f, 0x0a, 0x63, 0x00, 0x03, 0x0a, 0x63,
    0x00, 0x02, 0x9b, 0x4b, 0x1c, 0x06, 0x73, 0xba, 0x03, 0xe3, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02,
    0xfa, 0xf0, 0x14, 0xf9, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x56, 0xdd,
    0x02, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
];

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn capture_syn_frame() {
    let seg = tcp_segment(LinkType::ETHERNET, &SYN_FRAME).unwrap();
    assert_eq!(seg.endpoints.src, addr("10.99.0.3:39755"));
    assert_eq!(seg.endpoints.dst, addr("10.99.0.2:7174"));
    assert_eq!(seg.seq, 0x73ba_03e3);
    assert_eq!(seg.ack, 0);
    assert!(seg.flags.syn() && !seg.flags.ack() && !seg.flags.fin() && !seg.flags.rst());
    assert!(seg.payload.is_empty());
    assert_eq!(seg.payload_len, 0);
}

#[test]
fn mss_option_is_found_and_damage_is_not_read_past() {
    let seg = tcp_segment(LinkType::ETHERNET, &SYN_FRAME).unwrap();
    assert_eq!(seg.mss(), Some(1460));
    let mut other = seg;
    for (options, mss) in [
        (&[][..], None),
        (&[1, 1, 2, 4, 0x23, 0x28][..], Some(9000)),
        (&[0, 2, 4, 5, 0xb4][..], None),
        (&[2, 4, 5][..], None),
        (&[8, 0, 2, 4, 1, 0][..], Some(256)),
        (&[3, 3, 7, 2, 3, 1][..], None),
    ] {
        other.options = options;
        assert_eq!(other.mss(), mss, "{options:?}");
    }
}

#[test]
fn capture_syn_frame_cut_at_every_length() {
    for len in 0..SYN_FRAME.len() {
        // 40 options bytes of TCP header: anything shorter than 74 is cut.
        assert!(
            tcp_segment(LinkType::ETHERNET, &SYN_FRAME[..len]).is_err(),
            "len {len}"
        );
    }
}

#[test]
fn ethernet_padding_is_not_payload() {
    let mut f = build::frame(addr("10.0.0.1:1"), addr("10.0.0.2:2"), 7, 0, 0x10, b"");
    f.extend_from_slice(&[0; 6]); // pad to 60 bytes
    let seg = tcp_segment(LinkType::ETHERNET, &f).unwrap();
    assert!(seg.payload.is_empty());
    assert_eq!(seg.payload_len, 0);
}

#[test]
fn vlan_tags_are_walked() {
    let f = build::frame(addr("10.0.0.1:1"), addr("10.0.0.2:2"), 7, 0, 0x18, b"data");
    let mut tagged = f[..12].to_vec();
    tagged.extend_from_slice(&[0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x00, 0x05]);
    tagged.extend_from_slice(&f[12..]);
    let seg = tcp_segment(LinkType::ETHERNET, &tagged).unwrap();
    assert_eq!(seg.payload, b"data");
    // A tag cut short.
    assert!(matches!(
        tcp_segment(LinkType::ETHERNET, &tagged[..15]),
        Err(Skip::Truncated {
            layer: "VLAN tag",
            ..
        })
    ));
}

#[test]
fn cooked_raw_and_loopback_links() {
    let ip = build::ip(
        "10.0.0.1".parse().unwrap(),
        "10.0.0.2".parse().unwrap(),
        6,
        &build::tcp(5, 6, 1, 2, 0x18, b"xyz"),
    );
    let mut sll = vec![0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00];
    sll.extend_from_slice(&ip);
    let mut sll2 = vec![
        0x08, 0x00, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0,
    ];
    sll2.extend_from_slice(&ip);
    let mut null_le = vec![2, 0, 0, 0];
    null_le.extend_from_slice(&ip);
    let mut null_be = vec![0, 0, 0, 2];
    null_be.extend_from_slice(&ip);
    for (link, frame) in [
        (LinkType::LINUX_SLL, &sll),
        (LinkType::LINUX_SLL2, &sll2),
        (LinkType::RAW, &ip),
        (LinkType::RAW_BSD, &ip),
        (LinkType::IPV4, &ip),
        (LinkType::NULL, &null_le),
        (LinkType::NULL, &null_be),
    ] {
        let seg = tcp_segment(link, frame).unwrap();
        assert_eq!(seg.payload, b"xyz", "{link}");
        assert_eq!(seg.endpoints.src, addr("10.0.0.1:5"));
    }
    assert_eq!(
        tcp_segment(LinkType(147), &ip),
        Err(Skip::UnsupportedLink(LinkType(147)))
    );
}

#[test]
fn ipv6_with_extension_headers() {
    let src: std::net::IpAddr = "fd00::1".parse().unwrap();
    let dst: std::net::IpAddr = "fd00::2".parse().unwrap();
    let tcp = build::tcp(4000, 7174, 9, 0, 0x18, b"v6");
    let plain = build::ethernet(&build::ip(src, dst, 6, &tcp));
    let seg = tcp_segment(LinkType::ETHERNET, &plain).unwrap();
    assert_eq!(seg.endpoints.dst, SocketAddr::new(dst, 7174));
    assert_eq!(seg.payload, b"v6");

    // Destination options header (8 bytes) before TCP.
    let mut ext = vec![6, 0, 1, 4, 0, 0, 0, 0];
    ext.extend_from_slice(&tcp);
    let with_ext = build::ethernet(&build::ip(src, dst, 60, &ext));
    let seg = tcp_segment(LinkType::ETHERNET, &with_ext).unwrap();
    assert_eq!(seg.payload, b"v6");

    let mut frag = vec![6, 0, 0, 1, 0, 0, 0, 1];
    frag.extend_from_slice(&tcp);
    let fragment = build::ethernet(&build::ip(src, dst, 44, &frag));
    assert_eq!(
        tcp_segment(LinkType::ETHERNET, &fragment),
        Err(Skip::Fragment)
    );

    let udp = build::ethernet(&build::ip(src, dst, 17, &[0; 8]));
    assert_eq!(tcp_segment(LinkType::ETHERNET, &udp), Err(Skip::NotTcp(17)));
}

#[test]
fn ipv4_fragments_and_bad_headers() {
    let f = build::frame(addr("10.0.0.1:1"), addr("10.0.0.2:2"), 7, 0, 0x18, b"data");
    let mut mf = f.clone();
    mf[14 + 6] |= 0x20; // more fragments
    assert_eq!(tcp_segment(LinkType::ETHERNET, &mf), Err(Skip::Fragment));
    let mut off = f.clone();
    off[14 + 7] = 1; // fragment offset 8
    assert_eq!(tcp_segment(LinkType::ETHERNET, &off), Err(Skip::Fragment));
    let mut ihl = f.clone();
    ihl[14] = 0x44;
    assert_eq!(
        tcp_segment(LinkType::ETHERNET, &ihl),
        Err(Skip::BadIpv4HeaderLen(16))
    );
    let mut total = f.clone();
    total[14 + 2..14 + 4].copy_from_slice(&10u16.to_be_bytes());
    assert_eq!(
        tcp_segment(LinkType::ETHERNET, &total),
        Err(Skip::BadIpv4TotalLen {
            total: 10,
            header: 20
        })
    );
    let mut doff = f.clone();
    doff[14 + 20 + 12] = 0x40;
    assert_eq!(
        tcp_segment(LinkType::ETHERNET, &doff),
        Err(Skip::BadTcpDataOffset(16))
    );
    let mut version = f.clone();
    version[14] = 0x55;
    assert_eq!(
        tcp_segment(LinkType::ETHERNET, &version),
        Err(Skip::BadIpVersion(5))
    );
    let mut arp = f;
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let e = tcp_segment(LinkType::ETHERNET, &arp).unwrap_err();
    assert_eq!(e, Skip::NotIp(0x0806));
    assert!(e.is_uninteresting());
}

#[test]
fn offload_total_length_zero_uses_the_capture() {
    let mut f = build::frame(addr("10.0.0.1:1"), addr("10.0.0.2:2"), 7, 0, 0x18, b"big");
    f[14 + 2..14 + 4].copy_from_slice(&[0, 0]);
    let seg = tcp_segment(LinkType::ETHERNET, &f).unwrap();
    assert_eq!(seg.payload, b"big");
    assert_eq!(seg.payload_len, 3);
}

#[test]
fn snaplen_cut_keeps_the_declared_length() {
    let f = build::frame(
        addr("10.0.0.1:1"),
        addr("10.0.0.2:2"),
        7,
        0,
        0x18,
        &[0x5a; 100],
    );
    let seg = tcp_segment(LinkType::ETHERNET, &f[..f.len() - 60]).unwrap();
    assert_eq!(seg.payload.len(), 40);
    assert_eq!(seg.payload_len, 100);
}

proptest! {
    #[test]
    fn arbitrary_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120), link in 0u16..300) {
        let _ = tcp_segment(LinkType(link), &bytes);
    }

    #[test]
    fn built_frames_round_trip(
        seq in any::<u32>(), ack in any::<u32>(), flags in any::<u8>(),
        sport in 1u16.., dport in 1u16..,
        payload in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let src = SocketAddr::new("192.0.2.1".parse().unwrap(), sport);
        let dst = SocketAddr::new("192.0.2.2".parse().unwrap(), dport);
        let f = build::frame(src, dst, seq, ack, flags, &payload);
        let seg = tcp_segment(LinkType::ETHERNET, &f).unwrap();
        prop_assert_eq!(seg.endpoints, Endpoints { src, dst });
        prop_assert_eq!((seg.seq, seg.ack, seg.flags.0), (seq, ack, flags));
        prop_assert_eq!(seg.payload, &payload[..]);
        prop_assert_eq!(seg.payload_len, payload.len());
    }
}
