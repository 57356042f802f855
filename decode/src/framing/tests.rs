use super::*;
use mpa::Framer;
use proptest::prelude::*;

/// An FPDU stream built by the mpa crate's framer, and where each FPDU starts.
fn stream(crc: bool, markers: bool, ulpdus: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut f = Framer::new(crc, markers);
    let mut out = Vec::new();
    let mut starts = Vec::new();
    for u in ulpdus {
        starts.push(out.len());
        f.frame_to_vec(u, &[], &mut out).unwrap();
    }
    (out, starts)
}

fn ulpdus(lens: &[usize]) -> Vec<Vec<u8>> {
    lens.iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|j| (i * 31 + j) as u8).collect())
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    start: u64,
    ulpdu: Vec<u8>,
    wire_len: usize,
    crc: CrcStatus,
}

fn feed_chunks(s: &mut FpduStream, chunks: &[&[u8]]) -> (Vec<Seen>, Option<Broken>) {
    let mut seen = Vec::new();
    for c in chunks {
        let r = s.feed(c, &mut |f| {
            seen.push(Seen {
                start: f.start,
                ulpdu: f.ulpdu.to_vec(),
                wire_len: f.wire_len,
                crc: f.crc,
            })
        });
        if let Err(b) = r {
            return (seen, Some(b));
        }
    }
    (seen, None)
}

fn expected(ulpdus: &[Vec<u8>], starts: &[usize], total: usize, crc: CrcStatus) -> Vec<Seen> {
    ulpdus
        .iter()
        .enumerate()
        .map(|(i, u)| Seen {
            start: starts[i] as u64,
            ulpdu: u.clone(),
            wire_len: starts.get(i + 1).copied().unwrap_or(total) - starts[i],
            crc,
        })
        .collect()
}

#[test]
fn every_split_offset_without_markers() {
    let us = ulpdus(&[18, 14, 0, 33, 46, 101]);
    for crc in [false, true] {
        let (bytes, starts) = stream(crc, false, &us);
        let status = if crc { CrcStatus::Good } else { CrcStatus::Off };
        let want = expected(&us, &starts, bytes.len(), status);
        for cut in 0..=bytes.len() {
            let mut s = FpduStream::new(crc, false);
            let (seen, broken) = feed_chunks(&mut s, &[&bytes[..cut], &bytes[cut..]]);
            assert!(broken.is_none());
            assert_eq!(seen, want, "crc {crc} cut {cut}");
            assert_eq!(s.buffered(), 0);
        }
    }
}

#[test]
fn byte_at_a_time_with_markers() {
    // Long enough to cross several 512-byte marker slots, including inside
    // a length field and a CRC.
    let us = ulpdus(&[300, 18, 700, 14, 509, 1200, 30]);
    let (bytes, starts) = stream(true, true, &us);
    let want = expected(&us, &starts, bytes.len(), CrcStatus::Good);
    let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
    let mut s = FpduStream::new(true, true);
    let (seen, broken) = feed_chunks(&mut s, &chunks);
    assert!(broken.is_none(), "{broken:?}");
    assert_eq!(seen, want);
    // Markers are counted in the FPDUs' wire lengths.
    let content: usize = us
        .iter()
        .map(|u| (2 + u.len()).next_multiple_of(4) + 4)
        .sum();
    assert_eq!(bytes.len(), content + 4 * bytes.len().div_ceil(512));
}

#[test]
fn partial_fpdu_is_buffered() {
    let us = ulpdus(&[40, 40]);
    let (bytes, starts) = stream(true, false, &us);
    let mut s = FpduStream::new(true, false);
    let (seen, _) = feed_chunks(&mut s, &[&bytes[..bytes.len() - 5]]);
    assert_eq!(seen.len(), 1);
    assert_eq!(s.buffered(), bytes.len() - 5 - starts[1]);
}

#[test]
fn bad_crc_is_reported_and_decoding_goes_on() {
    let us = ulpdus(&[18, 34, 22, 46]);
    let (mut bytes, starts) = stream(true, false, &us);
    let crc_at = starts[2] - 4;
    let good_crc = u32::from_le_bytes(bytes[crc_at..crc_at + 4].try_into().unwrap());
    bytes[crc_at] ^= 0xff;
    let received = u32::from_le_bytes(bytes[crc_at..crc_at + 4].try_into().unwrap());
    let mut want = expected(&us, &starts, bytes.len(), CrcStatus::Good);
    want[1].crc = CrcStatus::Bad {
        received,
        computed: good_crc,
    };
    for cut in 0..=bytes.len() {
        let mut s = FpduStream::new(true, false);
        let (seen, broken) = feed_chunks(&mut s, &[&bytes[..cut], &bytes[cut..]]);
        assert!(broken.is_none());
        assert_eq!(seen, want, "cut {cut}");
    }
}

#[test]
fn bad_crc_with_markers() {
    let us = ulpdus(&[600, 100, 40]);
    let (mut bytes, starts) = stream(true, true, &us);
    // Corrupt a payload byte of the first FPDU (well away from any marker).
    bytes[100] ^= 1;
    let mut s = FpduStream::new(true, true);
    let (seen, broken) = feed_chunks(&mut s, &[&bytes]);
    assert!(broken.is_none(), "{broken:?}");
    assert_eq!(seen.len(), 3);
    assert!(matches!(seen[0].crc, CrcStatus::Bad { .. }));
    assert_eq!(seen[0].ulpdu.len(), 600);
    assert_eq!(seen[0].wire_len, starts[1]);
    assert_eq!(seen[1].crc, CrcStatus::Good);
    assert_eq!(seen[2].ulpdu, us[2]);
}

#[test]
fn crc_off_ignores_the_field() {
    let us = ulpdus(&[20]);
    let (mut bytes, _) = stream(true, false, &us);
    let n = bytes.len();
    bytes[n - 1] ^= 0x55;
    let mut s = FpduStream::new(false, false);
    let (seen, broken) = feed_chunks(&mut s, &[&bytes]);
    assert!(broken.is_none());
    assert_eq!(seen[0].crc, CrcStatus::Off);
}

#[test]
fn a_wrong_marker_breaks_the_stream() {
    let us = ulpdus(&[100, 600, 50]);
    let (mut bytes, starts) = stream(true, true, &us);
    // The marker at stream offset 512 lies inside the second FPDU.
    assert!(starts[1] < 512 && starts[2] > 516);
    bytes[514] ^= 0x7f;
    let mut s = FpduStream::new(true, true);
    let (seen, broken) = feed_chunks(&mut s, &[&bytes[..700], &bytes[700..]]);
    assert_eq!(seen.len(), 1);
    let broken = broken.expect("marker error");
    assert_eq!(broken.offset, starts[1] as u64);
    // Everything from the second FPDU to the end of the first chunk fed.
    assert_eq!(broken.unconsumed, (700 - starts[1]) as u64);
    assert!(broken.reason.contains("marker"), "{}", broken.reason);
}

proptest! {
    #[test]
    fn any_ulpdus_any_chunking(
        lens in proptest::collection::vec(0usize..1500, 1..12),
        crc in any::<bool>(),
        markers in any::<bool>(),
        chunk in 1usize..700,
    ) {
        let us = ulpdus(&lens);
        let (bytes, starts) = stream(crc, markers, &us);
        let status = if crc { CrcStatus::Good } else { CrcStatus::Off };
        let want = expected(&us, &starts, bytes.len(), status);
        let chunks: Vec<&[u8]> = bytes.chunks(chunk).collect();
        let mut s = FpduStream::new(crc, markers);
        let (seen, broken) = feed_chunks(&mut s, &chunks);
        prop_assert!(broken.is_none());
        prop_assert_eq!(seen, want);
        prop_assert_eq!(s.buffered(), 0);
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..3000), crc in any::<bool>(), markers in any::<bool>()) {
        let mut s = FpduStream::new(crc, markers);
        let (seen, broken) = feed_chunks(&mut s, &[&bytes]);
        let used: usize = seen.iter().map(|f| f.wire_len).sum();
        prop_assert!(used <= bytes.len());
        if let Some(b) = broken {
            prop_assert!(b.offset as usize <= bytes.len());
        }
    }
}
