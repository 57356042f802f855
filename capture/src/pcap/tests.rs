//! Reader tests over files built in memory, both formats and byte orders.

use super::*;
use crate::pcap::PcapNgWriter as NgWriter;
use proptest::prelude::*;

/// Builds classic pcap files for tests.
pub(crate) struct ClassicWriter {
    endian: Endian,
    nanos: bool,
    pub(crate) bytes: Vec<u8>,
}

impl ClassicWriter {
    pub(crate) fn new(endian: Endian, nanos: bool, link: u32) -> Self {
        let mut w = ClassicWriter {
            endian,
            nanos,
            bytes: Vec::new(),
        };
        w.u32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        w.u16(2);
        w.u16(4);
        w.u32(0);
        w.u32(0);
        w.u32(262_144);
        w.u32(link);
        w
    }

    fn u16(&mut self, v: u16) {
        let b = match self.endian {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        self.bytes.extend_from_slice(&b);
    }

    fn u32(&mut self, v: u32) {
        let b = match self.endian {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        self.bytes.extend_from_slice(&b);
    }

    /// Adds a record at `secs` + `sub` (µs or ns per the magic).
    pub(crate) fn packet(&mut self, secs: u32, sub: u32, data: &[u8]) -> &mut Self {
        self.u32(secs);
        self.u32(sub);
        self.u32(data.len() as u32);
        self.u32(data.len() as u32);
        self.bytes.extend_from_slice(data);
        self
    }

    pub(crate) fn nanos(&self) -> bool {
        self.nanos
    }
}

/// Reads every packet: (number, timestamp, link, data) and the final error.
type Collected = (Vec<(u64, Timestamp, LinkType, Vec<u8>)>, Option<PcapError>);

fn collect(bytes: &[u8]) -> Collected {
    let mut out = Vec::new();
    let mut r = match CaptureReader::new(bytes) {
        Ok(r) => r,
        Err(e) => return (out, Some(e)),
    };
    loop {
        match r.next_packet() {
            Ok(Some(p)) => out.push((p.number, p.timestamp, p.link, p.data.to_vec())),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

#[test]
fn classic_all_byte_orders_and_resolutions() {
    for endian in [Endian::Little, Endian::Big] {
        for nanos in [false, true] {
            let mut w = ClassicWriter::new(endian, nanos, 1);
            w.packet(1, 2, b"first")
                .packet(3, 999_999, b"")
                .packet(4, 5, &[0xa5; 1514]);
            let (pkts, err) = collect(&w.bytes);
            assert!(err.is_none(), "{err:?}");
            let scale = if w.nanos() { 1 } else { 1000 };
            assert_eq!(pkts.len(), 3);
            assert_eq!(pkts[0].0, 1);
            assert_eq!(pkts[0].1, Timestamp::new(1, 2 * scale));
            assert_eq!(pkts[0].2, LinkType::ETHERNET);
            assert_eq!(pkts[0].3, b"first");
            assert_eq!(pkts[1].1, Timestamp::new(3, 999_999 * scale));
            assert!(pkts[1].3.is_empty());
            assert_eq!(pkts[2].0, 3);
            assert_eq!(pkts[2].3.len(), 1514);
        }
    }
}

#[test]
fn classic_format_is_reported() {
    let w = ClassicWriter::new(Endian::Big, true, 101);
    let r = CaptureReader::new(&w.bytes[..]).unwrap();
    match r.format() {
        Format::Pcap(h) => {
            assert_eq!(h.endian, Endian::Big);
            assert_eq!(h.resolution, Resolution::NANOS);
            assert_eq!(h.link, LinkType::RAW);
        }
        Format::PcapNg => panic!("classic file read as pcapng"),
    }
}

#[test]
fn empty_short_and_foreign_files() {
    assert!(matches!(collect(b"").1, Some(PcapError::Empty)));
    assert!(matches!(
        collect(&[0xd4, 0xc3]).1,
        Some(PcapError::Truncated { got: 2, .. })
    ));
    assert!(matches!(
        collect(b"GIF89a....").1,
        Some(PcapError::UnknownMagic(0x4749_4638))
    ));
    // A classic magic followed by too little header.
    assert!(matches!(
        collect(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]).1,
        Some(PcapError::Truncated {
            what: "pcap file header",
            got: 6,
            ..
        })
    ));
}

#[test]
fn classic_truncated_record_header_and_data() {
    let mut w = ClassicWriter::new(Endian::Little, false, 1);
    w.packet(1, 0, b"whole").packet(2, 0, b"cut short");
    let full = w.bytes.clone();
    // Cut inside the second record's data.
    let (pkts, err) = collect(&full[..full.len() - 3]);
    assert_eq!(pkts.len(), 1);
    match err {
        Some(PcapError::Truncated {
            what: "packet data",
            offset,
            needed: 9,
            got: 6,
        }) => assert_eq!(offset, 24 + 16 + 5),
        other => panic!("{other:?}"),
    }
    // Cut inside the second record's header.
    let (pkts, err) = collect(&full[..24 + 16 + 5 + 10]);
    assert_eq!(pkts.len(), 1);
    assert!(matches!(
        err,
        Some(PcapError::Truncated {
            what: "record header",
            got: 10,
            ..
        })
    ));
}

#[test]
fn classic_record_too_large_is_refused_before_reading() {
    let mut w = ClassicWriter::new(Endian::Big, false, 1);
    w.packet(1, 0, b"x");
    let n = w.bytes.len();
    // Rewrite captured length to 0xffffffff.
    w.bytes[n - 1 - 8..n - 1 - 4].copy_from_slice(&[0xff; 4]);
    assert!(matches!(
        collect(&w.bytes).1,
        Some(PcapError::TooLarge {
            len: 0xffff_ffff,
            ..
        })
    ));
}

#[test]
fn pcapng_both_byte_orders_and_resolutions() {
    for endian in [Endian::Little, Endian::Big] {
        let mut w = NgWriter::new(endian);
        w.interface(LinkType(1), Some(9))
            .interface(LinkType(101), None)
            .enhanced(0, 1_700_000_000_123_456_789, b"ns packet")
            .block(0x0bad, b"unknown block, skipped")
            .enhanced(1, 1_700_000_000_654_321, b"us packet");
        let (pkts, err) = collect(&w.bytes);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(pkts.len(), 2);
        assert_eq!(pkts[0].1, Timestamp::new(1_700_000_000, 123_456_789));
        assert_eq!(pkts[0].2, LinkType::ETHERNET);
        assert_eq!(pkts[0].3, b"ns packet");
        assert_eq!(pkts[1].0, 2);
        assert_eq!(pkts[1].1, Timestamp::new(1_700_000_000, 654_321_000));
        assert_eq!(pkts[1].2, LinkType::RAW);
        assert_eq!(pkts[1].3, b"us packet");
    }
}

#[test]
fn pcapng_new_section_resets_interfaces_and_byte_order() {
    let mut w = NgWriter::new(Endian::Little);
    w.interface(LinkType(1), None).enhanced(0, 5, b"a");
    w.set_endian(Endian::Big)
        .section()
        .interface(LinkType(113), None)
        .enhanced(0, 6, b"b");
    let (pkts, err) = collect(&w.bytes);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(pkts.len(), 2);
    assert_eq!(pkts[1].2, LinkType::LINUX_SLL);
    // A packet naming an interface of the previous section is an error.
    w.enhanced(1, 7, b"c");
    assert!(matches!(
        collect(&w.bytes).1,
        Some(PcapError::UnknownInterface { interface: 1, .. })
    ));
}

#[test]
fn pcapng_block_damage_is_reported() {
    let mut w = NgWriter::new(Endian::Little);
    w.interface(LinkType(1), None).enhanced(0, 5, b"abcd");
    let good = w.bytes.clone();
    let epb_at = good.len() - 36;

    let mut bad = good.clone();
    let end = bad.len();
    bad[end - 4] ^= 0x04; // trailing length
    assert!(matches!(
        collect(&bad).1,
        Some(PcapError::BlockTrailerMismatch { .. })
    ));

    let mut bad = good.clone();
    bad[epb_at + 4] = 10; // leading length not a multiple of 4
    assert!(matches!(
        collect(&bad).1,
        Some(PcapError::BadBlockLength { len: 10, .. })
    ));

    let mut bad = good.clone();
    bad[epb_at + 4..epb_at + 8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    assert!(matches!(collect(&bad).1, Some(PcapError::TooLarge { .. })));

    for cut in epb_at + 1..good.len() {
        let (pkts, err) = collect(&good[..cut]);
        assert!(pkts.is_empty());
        assert!(
            matches!(err, Some(PcapError::Truncated { offset, .. }) if offset == epb_at as u64),
            "cut at {cut}: {err:?}"
        );
    }
    assert_eq!(collect(&good[..epb_at]).0.len(), 0);
    assert!(collect(&good[..epb_at]).1.is_none());
}

#[test]
fn pcapng_bad_byte_order_magic() {
    let mut w = NgWriter::new(Endian::Little);
    w.bytes[8] = 0;
    assert!(matches!(
        collect(&w.bytes).1,
        Some(PcapError::BadByteOrderMagic { offset: 0, .. })
    ));
}

#[test]
fn real_capture_if_present() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/captures");
    let path = std::path::Path::new(dir).join("rping-mpav1.pcap");
    let Ok(bytes) = std::fs::read(&path) else {
        crate::skip::skip(&format!("{} not present", path.display()));
        return;
    };
    let (pkts, err) = collect(&bytes);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(pkts.len(), 11);
    assert!(pkts.iter().all(|p| p.2 == LinkType::ETHERNET));
    assert_eq!(pkts[0].3.len(), 74);
    assert_eq!(pkts[3].3.len(), 86);
    // Nanosecond resolution: frame 2 is 6.765519 ms after frame 1 (tshark).
    assert_eq!(
        pkts[1].1.since(pkts[0].1),
        std::time::Duration::from_nanos(6_765_519)
    );
}

proptest! {
    #[test]
    fn classic_cut_anywhere_yields_a_prefix(
        packets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 0..6),
        big in any::<bool>(),
        nanos in any::<bool>(),
        cut_frac in 0.0f64..1.0,
    ) {
        let endian = if big { Endian::Big } else { Endian::Little };
        let mut w = ClassicWriter::new(endian, nanos, 1);
        let mut ends = vec![24usize];
        for (i, p) in packets.iter().enumerate() {
            w.packet(i as u32, 0, p);
            ends.push(w.bytes.len());
        }
        let cut = 24 + ((w.bytes.len() - 24) as f64 * cut_frac) as usize;
        let (pkts, err) = collect(&w.bytes[..cut]);
        let whole = ends.iter().filter(|&&e| e <= cut).count() - 1;
        prop_assert_eq!(pkts.len(), whole);
        for (got, want) in pkts.iter().zip(&packets) {
            prop_assert_eq!(&got.3, want);
        }
        prop_assert_eq!(err.is_none(), ends.contains(&cut));
    }

    #[test]
    fn pcapng_cut_anywhere_yields_a_prefix(
        packets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 0..6),
        big in any::<bool>(),
        cut_frac in 0.0f64..1.0,
    ) {
        let endian = if big { Endian::Big } else { Endian::Little };
        let mut w = NgWriter::new(endian);
        w.interface(LinkType(1), Some(9));
        let mut ends = vec![w.bytes.len()];
        for (i, p) in packets.iter().enumerate() {
            w.enhanced(0, i as u64, p);
            ends.push(w.bytes.len());
        }
        let start = ends[0];
        let cut = start + ((w.bytes.len() - start) as f64 * cut_frac) as usize;
        let (pkts, err) = collect(&w.bytes[..cut]);
        let whole = ends.iter().filter(|&&e| e <= cut).count() - 1;
        prop_assert_eq!(pkts.len(), whole);
        for (got, want) in pkts.iter().zip(&packets) {
            prop_assert_eq!(&got.3, want);
        }
        prop_assert_eq!(err.is_none(), ends.contains(&cut));
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300), ng in any::<bool>()) {
        let mut input = if ng { vec![0x0a, 0x0d, 0x0d, 0x0a] } else { vec![0xd4, 0xc3, 0xb2, 0xa1] };
        input.extend_from_slice(&bytes);
        let _ = collect(&input);
    }
}

#[test]
fn frames_of_a_file_in_memory() {
    let mut w = NgWriter::new(Endian::Little);
    w.interface(LinkType::ETHERNET, None)
        .enhanced(0, 1, b"first")
        .enhanced(0, 2, b"second");
    assert_eq!(
        frames(w.bytes()).unwrap(),
        vec![
            (LinkType::ETHERNET, b"first".to_vec()),
            (LinkType::ETHERNET, b"second".to_vec())
        ]
    );
    let cut = &w.bytes()[..w.bytes().len() - 1];
    assert!(matches!(frames(cut), Err(PcapError::Truncated { .. })));
}
