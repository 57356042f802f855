//! Where markers fall in an FPDU and what they point at (RFC 5044's
//! marker and FPDU formats).
//!
//! A marker occupies the 4 octets at every stream position that is a
//! multiple of 512 counted from the first octet of the first FPDU:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           RESERVED            |            FPDUPTR            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Conventions this crate follows (as the Wireshark dissector and the OSC
//! iWARP stack do, where RFC 5044 leaves room):
//! - A marker slot met just before an FPDU's next octet belongs to that
//!   FPDU. One that falls right after an FPDU's CRC therefore starts the
//!   next FPDU (a "leading" marker, before its ULPDU_Length), and one that
//!   falls between the pad and the CRC is inside the FPDU.
//! - The CRC covers every octet of the FPDU before the CRC field, markers
//!   included.
//! - FPDUPTR is the number of octets from the FPDU's ULPDU_Length field to the
//!   marker (RFC 5044's definition). A leading marker has no header behind
//!   it in its FPDU and carries 0.
//!
//! Receivers accept two more readings, because implementations differ where
//! the RFC is terse: an FPDUPTR counted from a leading marker rather than
//! from ULPDU_Length (4 more), and a leading marker pointing back at the
//! previous FPDU's header. The two low bits of FPDUPTR are ignored on
//! receipt, as RFC 5044 requires.

use crate::crc32c::crc32c;
use crate::seq::{StreamOffset, MARKER_INTERVAL, MARKER_LEN};

/// Octets of FPDU content between two marker slots.
const CONTENT_PER_INTERVAL: usize = MARKER_INTERVAL - MARKER_LEN;

/// ULPDU_Length field size.
pub const LENGTH_LEN: usize = 2;
/// CRC field size (present even when CRC is off, then zero).
pub const CRC_LEN: usize = 4;
/// The largest ULPDU_Length.
pub const MAX_ULPDU: usize = u16::MAX as usize;

/// Pad octets after a ULPDU of `ulpdu_len` so the FPDU is a multiple of 4.
#[inline]
pub const fn pad_len(ulpdu_len: usize) -> usize {
    (4 - (LENGTH_LEN + ulpdu_len) % 4) % 4
}

/// ULPDU_Length, ULPDU, pad and CRC: the FPDU without markers.
#[inline]
pub const fn content_len(ulpdu_len: usize) -> usize {
    LENGTH_LEN + ulpdu_len + pad_len(ulpdu_len) + CRC_LEN
}

/// The CRC32c of a whole FPDU without markers (`content_len` octets from
/// its ULPDU_Length) and the value its CRC field carries, or `None` when
/// `fpdu` is not one FPDU's length. A field of zero where the two differ
/// is an FPDU sent with the CRC off.
pub fn crc_of_unmarked(fpdu: &[u8]) -> Option<(u32, u32)> {
    let (&[hi, lo], _) = fpdu.split_first_chunk::<LENGTH_LEN>()?;
    if fpdu.len() != content_len(usize::from(u16::from_be_bytes([hi, lo]))) {
        return None;
    }
    let (covered, field) = fpdu.split_last_chunk::<CRC_LEN>()?;
    Some((crc32c(covered), u32::from_le_bytes(*field)))
}

/// Markers inside `content_len` octets of FPDU content that start at
/// stream position `start`.
#[inline]
pub fn markers_in(start: StreamOffset, content_len: usize) -> usize {
    let first = start.until_marker();
    if first >= content_len {
        0
    } else {
        1 + (content_len - first - 1) / CONTENT_PER_INTERVAL
    }
}

/// Stream octets of an FPDU carrying `ulpdu_len` octets that starts at
/// `start`; `markers` says whether markers are being inserted.
#[inline]
pub fn fpdu_len_at(start: StreamOffset, ulpdu_len: usize, markers: bool) -> usize {
    let content = content_len(ulpdu_len);
    if markers {
        content + MARKER_LEN * markers_in(start, content)
    } else {
        content
    }
}

/// Offset inside the FPDU of its last marker, if it has any.
#[inline]
pub fn last_marker_offset(start: StreamOffset, ulpdu_len: usize) -> Option<usize> {
    let content = content_len(ulpdu_len);
    match markers_in(start, content) {
        0 => None,
        n => Some(start.until_marker() + (n - 1) * MARKER_INTERVAL),
    }
}

/// The FPDUPTR a marker at `at` carries, for the FPDU that starts at
/// `fpdu_start` with its ULPDU_Length at `header_at` (`None` while the marker
/// precedes the header). `None` if the distance does not fit 16 bits.
#[inline]
pub fn fpduptr(at: StreamOffset, header_at: Option<StreamOffset>) -> Option<u16> {
    match header_at {
        None => Some(0),
        Some(h) => u16::try_from(at.wrapping_sub(h)).ok(),
    }
}

/// Builds the 4 marker octets carrying `fpduptr`.
#[inline]
pub fn encode(fpduptr: u16) -> [u8; MARKER_LEN] {
    let [hi, lo] = fpduptr.to_be_bytes();
    [0, 0, hi, lo]
}

/// FPDUPTR from 4 received marker octets (reserved half ignored).
#[inline]
pub fn decode(marker: [u8; MARKER_LEN]) -> u16 {
    u16::from_be_bytes([marker[2], marker[3]])
}

/// Whether a received FPDUPTR is acceptable for a marker at `at` in the
/// FPDU starting at `fpdu_start` (header at `header_at`, if reached), given
/// the previous FPDU's header position. Returns the value this side would
/// have sent, for error reports, on refusal.
pub fn check(
    received: u16,
    at: StreamOffset,
    fpdu_start: StreamOffset,
    header_at: Option<StreamOffset>,
    prev_header_at: Option<StreamOffset>,
) -> Result<(), u16> {
    let received = received & !3;
    let expected = fpduptr(at, header_at).unwrap_or(u16::MAX);
    let alternative = match header_at {
        // Counted from the FPDU's first octet (a leading marker) instead.
        Some(_) => fpduptr(at, Some(fpdu_start)),
        // A leading marker pointing back at the previous FPDU's header.
        None => prev_header_at.and_then(|h| fpduptr(at, Some(h))),
    };
    if received == expected || Some(received) == alternative {
        Ok(())
    } else {
        Err(expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_unmarked_reads_what_the_framer_wrote() {
        for len in [0usize, 1, 2, 3, 34, 1000] {
            let payload = vec![0x5a; len];
            let mut out = [0xa5u8; 1100];
            for crc in [true, false] {
                let n = crate::Framer::new(crc, false)
                    .frame(&[], &payload, &mut out)
                    .unwrap();
                assert_eq!(n, content_len(len));
                let (computed, field) = crc_of_unmarked(&out[..n]).unwrap();
                assert_eq!(field, if crc { computed } else { 0 });
                // One octet short or long is not one FPDU.
                assert_eq!(crc_of_unmarked(&out[..n - 1]), None);
                assert_eq!(crc_of_unmarked(&out[..n + 1]), None);
            }
        }
        assert_eq!(crc_of_unmarked(&[0]), None);
    }

    #[test]
    fn pad_makes_multiples_of_four() {
        assert_eq!(pad_len(0), 2);
        assert_eq!(pad_len(1), 1);
        assert_eq!(pad_len(2), 0);
        assert_eq!(pad_len(3), 3);
        assert_eq!(pad_len(34), 0); // rping's 34-byte SEND: 2 + 34 = 36
        for n in 0..64 {
            assert_eq!((LENGTH_LEN + n + pad_len(n)) % 4, 0);
        }
    }

    #[test]
    fn content_of_captured_fpdus() {
        // rping-default.pcap: ULPDU_Length 0x22 -> 40-byte FPDU,
        // 0x2e -> 52, 0x4e -> 84; rping-cxgb.pcap RTR 0x0e -> 20.
        assert_eq!(content_len(0x22), 40);
        assert_eq!(content_len(0x2e), 52);
        assert_eq!(content_len(0x4e), 84);
        assert_eq!(content_len(0x0e), 20);
    }

    #[test]
    fn first_fpdu_starts_with_a_marker() {
        assert_eq!(markers_in(StreamOffset(0), 40), 1);
        assert_eq!(fpdu_len_at(StreamOffset(0), 0x22, true), 44);
        assert_eq!(last_marker_offset(StreamOffset(0), 0x22), Some(0));
    }

    #[test]
    fn marker_exactly_at_the_end_belongs_to_the_next_fpdu() {
        // Content 472 octets from 40 reaches 512 exactly.
        assert_eq!(markers_in(StreamOffset(40), 472), 0);
        assert_eq!(markers_in(StreamOffset(40), 476), 1);
    }

    #[test]
    fn marker_before_the_crc() {
        // Content ends at 516 from 44: the slot at 512 falls between pad and
        // CRC, inside this FPDU.
        assert_eq!(markers_in(StreamOffset(44), 472), 1);
    }

    #[test]
    fn long_fpdu_counts_one_marker_per_508_octets() {
        assert_eq!(markers_in(StreamOffset(0), 508), 1);
        assert_eq!(markers_in(StreamOffset(0), 509), 2);
        assert_eq!(markers_in(StreamOffset(0), 1016), 2);
        assert_eq!(markers_in(StreamOffset(0), 1017), 3);
        assert_eq!(markers_in(StreamOffset(4), 508), 0);
        assert_eq!(markers_in(StreamOffset(4), 512), 1);
        assert_eq!(markers_in(StreamOffset(4), 1016), 1);
        assert_eq!(markers_in(StreamOffset(4), 1017), 2);
    }

    #[test]
    fn marker_count_matches_a_walk() {
        for start in (0..1024).step_by(4) {
            for content in (8..3000).step_by(36) {
                let mut pos = StreamOffset(start);
                let mut n = 0;
                for _ in 0..content {
                    if pos.is_marker_slot() {
                        n += 1;
                        pos += MARKER_LEN;
                    }
                    pos += 1;
                }
                assert_eq!(
                    markers_in(StreamOffset(start), content),
                    n,
                    "{start} {content}"
                );
            }
        }
    }

    #[test]
    fn fpduptr_values() {
        assert_eq!(fpduptr(StreamOffset(512), None), Some(0));
        assert_eq!(
            fpduptr(StreamOffset(512), Some(StreamOffset(100))),
            Some(412)
        );
        assert_eq!(
            fpduptr(StreamOffset(4), Some(StreamOffset(u32::MAX - 11))),
            Some(16)
        );
        assert_eq!(fpduptr(StreamOffset(70_000), Some(StreamOffset(0))), None);
    }

    #[test]
    fn encode_decode() {
        assert_eq!(encode(0x1234), [0, 0, 0x12, 0x34]);
        assert_eq!(decode([0xff, 0xff, 0x01, 0xfc]), 0x01fc);
    }

    #[test]
    fn check_accepts_the_rfc_reading_and_ignores_low_bits() {
        let h = Some(StreamOffset(100));
        assert_eq!(
            check(412, StreamOffset(512), StreamOffset(100), h, None),
            Ok(())
        );
        assert_eq!(
            check(413, StreamOffset(512), StreamOffset(100), h, None),
            Ok(())
        );
        assert_eq!(
            check(416, StreamOffset(512), StreamOffset(100), h, None),
            Err(412)
        );
    }

    #[test]
    fn check_accepts_a_pointer_to_a_leading_marker() {
        // FPDU at 0 with a leading marker, header at 4, marker at 512.
        let h = Some(StreamOffset(4));
        assert_eq!(
            check(508, StreamOffset(512), StreamOffset(0), h, None),
            Ok(())
        );
        assert_eq!(
            check(512, StreamOffset(512), StreamOffset(0), h, None),
            Ok(())
        );
        assert_eq!(
            check(500, StreamOffset(512), StreamOffset(0), h, None),
            Err(508)
        );
    }

    #[test]
    fn check_leading_marker() {
        let at = StreamOffset(1024);
        assert_eq!(check(0, at, at, None, None), Ok(()));
        assert_eq!(check(8, at, at, None, None), Err(0));
        // Pointing back at the previous FPDU's header at 900.
        assert_eq!(check(124, at, at, None, Some(StreamOffset(900))), Ok(()));
    }
}
