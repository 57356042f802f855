//! Splitting an outbound message into DDP segments (RFC 5041 section 5.1).
//!
//! MPA tells DDP its MULPDU: the largest ULPDU (DDP header plus payload) one
//! FPDU may carry. Each segment then carries at most `MULPDU - header`
//! payload bytes; only the final one has L set. A zero-length message is
//! one segment with no payload (the RTR of RFC 6581, an empty Send).
//! Nothing here allocates.

use core::ops::Range;

use crate::memory::STag;
use crate::wire::{TaggedRepr, UntaggedRepr, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN};

/// The MULPDU leaves no room for payload after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("MULPDU {mulpdu} leaves no payload room after a {header}-byte DDP header")]
pub struct MulpduTooSmall {
    /// The MULPDU given.
    pub mulpdu: usize,
    /// The DDP header the segments carry.
    pub header: usize,
}

/// Iterator over `(offset_in_message, chunk_len, last)` for one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segmenter {
    len: u32,
    max_payload: u32,
    next: u32,
    done: bool,
}

impl Segmenter {
    /// Segments of at most `max_payload` bytes (`max_payload > 0`).
    pub fn new(len: u32, max_payload: u32) -> Result<Self, MulpduTooSmall> {
        if max_payload == 0 {
            return Err(MulpduTooSmall {
                mulpdu: 0,
                header: 0,
            });
        }
        Ok(Segmenter {
            len,
            max_payload,
            next: 0,
            done: false,
        })
    }

    /// Segments of a message sent with `header`-byte DDP headers into
    /// ULPDUs of at most `mulpdu` bytes.
    pub fn with_mulpdu(len: u32, mulpdu: usize, header: usize) -> Result<Self, MulpduTooSmall> {
        let room = mulpdu
            .checked_sub(header)
            .filter(|&r| r > 0)
            .ok_or(MulpduTooSmall { mulpdu, header })?;
        Self::new(len, u32::try_from(room).unwrap_or(u32::MAX))
    }

    /// Segments of a tagged message (RDMA Write, Read Response).
    pub fn tagged(len: u32, mulpdu: usize) -> Result<Self, MulpduTooSmall> {
        Self::with_mulpdu(len, mulpdu, TAGGED_HEADER_LEN)
    }

    /// Segments of an untagged message (Send, Read Request, Terminate).
    pub fn untagged(len: u32, mulpdu: usize) -> Result<Self, MulpduTooSmall> {
        Self::with_mulpdu(len, mulpdu, UNTAGGED_HEADER_LEN)
    }

    /// Largest payload of one segment.
    pub fn max_payload(&self) -> u32 {
        self.max_payload
    }

    /// Message length.
    pub fn message_len(&self) -> u32 {
        self.len
    }
}

impl Iterator for Segmenter {
    type Item = (u32, u32, bool);

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let offset = self.next;
        let chunk = (self.len - offset).min(self.max_payload);
        self.next = offset + chunk;
        let last = self.next == self.len;
        self.done = last;
        Some((offset, chunk, last))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = if self.done {
            0
        } else {
            let rest = self.len - self.next;
            rest.div_ceil(self.max_payload).max(1) as usize
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Segmenter {}
impl core::iter::FusedIterator for Segmenter {}

/// The byte range of the message a chunk covers.
fn range(offset: u32, len: u32) -> Range<usize> {
    offset as usize..offset as usize + len as usize
}

/// Tagged headers for one message: each segment targets `to + offset`.
///
/// A message whose `to + len` passes 2^64 wraps here; the peer refuses it
/// (TO wrap), so the ULP should not post one.
#[derive(Debug, Clone)]
pub struct TaggedSegments {
    segmenter: Segmenter,
    rsvd_ulp: u8,
    stag: STag,
    to: u64,
}

impl TaggedSegments {
    /// Segments of one tagged message placed at `to` of `stag`.
    pub fn new(segmenter: Segmenter, rsvd_ulp: u8, stag: STag, to: u64) -> Self {
        TaggedSegments {
            segmenter,
            rsvd_ulp,
            stag,
            to,
        }
    }
}

impl Iterator for TaggedSegments {
    /// The header and the range of message bytes its payload carries.
    type Item = (TaggedRepr, Range<usize>);

    fn next(&mut self) -> Option<Self::Item> {
        let (offset, len, last) = self.segmenter.next()?;
        let repr = TaggedRepr::new(
            last,
            self.rsvd_ulp,
            self.stag,
            self.to.wrapping_add(u64::from(offset)),
        );
        Some((repr, range(offset, len)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.segmenter.size_hint()
    }
}

impl ExactSizeIterator for TaggedSegments {}

/// Untagged headers for one message: each segment carries `mo = offset`.
#[derive(Debug, Clone)]
pub struct UntaggedSegments {
    segmenter: Segmenter,
    rsvd_ulp: u8,
    rsvd_ulp2: u32,
    qn: u32,
    msn: u32,
}

impl UntaggedSegments {
    /// Segments of one untagged message `msn` for queue `qn`.
    pub fn new(segmenter: Segmenter, rsvd_ulp: u8, rsvd_ulp2: u32, qn: u32, msn: u32) -> Self {
        UntaggedSegments {
            segmenter,
            rsvd_ulp,
            rsvd_ulp2,
            qn,
            msn,
        }
    }
}

impl Iterator for UntaggedSegments {
    /// The header and the range of message bytes its payload carries.
    type Item = (UntaggedRepr, Range<usize>);

    fn next(&mut self) -> Option<Self::Item> {
        let (offset, len, last) = self.segmenter.next()?;
        let repr = UntaggedRepr::new(
            last,
            self.rsvd_ulp,
            self.rsvd_ulp2,
            self.qn,
            self.msn,
            offset,
        );
        Some((repr, range(offset, len)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.segmenter.size_hint()
    }
}

impl ExactSizeIterator for UntaggedSegments {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn zero_length_is_one_empty_last_segment() {
        let v: Vec<_> = Segmenter::tagged(0, 100).unwrap().collect();
        assert_eq!(v, vec![(0, 0, true)]);
        let v: Vec<_> = Segmenter::untagged(0, 19).unwrap().collect();
        assert_eq!(v, vec![(0, 0, true)]);
    }

    #[test]
    fn exact_multiple_has_no_empty_tail() {
        // 100-byte MULPDU, 14-byte header: 86 payload bytes per segment.
        let v: Vec<_> = Segmenter::tagged(172, 100).unwrap().collect();
        assert_eq!(v, vec![(0, 86, false), (86, 86, true)]);
    }

    #[test]
    fn remainder_goes_in_the_last_segment() {
        let v: Vec<_> = Segmenter::untagged(10, 22).unwrap().collect();
        assert_eq!(v, vec![(0, 4, false), (4, 4, false), (8, 2, true)]);
    }

    #[test]
    fn siw_8k_read_response_shape() {
        // rping-crc-8k.pcap: 8000-byte Read Response in 1428-byte payloads
        // (ULPDU 0x05a2 = 1442 = 14 + 1428), the tail 0x036a - 14 = 860.
        let v: Vec<_> = Segmenter::tagged(8000, 1442).unwrap().collect();
        assert_eq!(v.len(), 6);
        assert!(v[..5].iter().all(|&(_, n, l)| n == 1428 && !l));
        assert_eq!(v[5], (7140, 860, true));
    }

    #[test]
    fn mulpdu_must_leave_payload_room() {
        assert_eq!(
            Segmenter::tagged(1, 14),
            Err(MulpduTooSmall {
                mulpdu: 14,
                header: 14
            })
        );
        assert!(Segmenter::untagged(1, 10).is_err());
        assert!(Segmenter::new(1, 0).is_err());
        assert!(Segmenter::tagged(1, 15).is_ok());
    }

    #[test]
    fn huge_mulpdu_is_capped_not_truncated() {
        let s = Segmenter::with_mulpdu(u32::MAX, usize::MAX, 14).unwrap();
        assert_eq!(s.max_payload(), u32::MAX);
        let v: Vec<_> = s.collect();
        assert_eq!(v, vec![(0, u32::MAX, true)]);
    }

    #[test]
    fn largest_message_in_one_byte_steps_ends_exactly() {
        let mut s = Segmenter::new(u32::MAX, 1 << 31).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s.next(), Some((0, 1 << 31, false)));
        assert_eq!(s.next(), Some((1 << 31, (1 << 31) - 1, true)));
        assert_eq!(s.next(), None);
        assert_eq!(s.next(), None);
    }

    #[test]
    fn tagged_segments_advance_the_to() {
        let segs: Vec<_> = TaggedSegments::new(
            Segmenter::tagged(30, 24).unwrap(),
            0x40,
            STag(0x100),
            0x1000,
        )
        .collect();
        assert_eq!(segs.len(), 3);
        assert_eq!(segs[0].0, TaggedRepr::new(false, 0x40, STag(0x100), 0x1000));
        assert_eq!(segs[1].0.to, 0x100a);
        assert_eq!(segs[2].0, TaggedRepr::new(true, 0x40, STag(0x100), 0x1014));
        assert_eq!(segs[2].1, 20..30);
    }

    #[test]
    fn untagged_segments_carry_mo() {
        let segs: Vec<_> =
            UntaggedSegments::new(Segmenter::untagged(5, 20).unwrap(), 0x43, 0, 0, 9).collect();
        let mos: Vec<_> = segs.iter().map(|(r, _)| (r.mo, r.msn, r.last)).collect();
        assert_eq!(mos, vec![(0, 9, false), (2, 9, false), (4, 9, true)]);
    }

    proptest! {
        /// Segments cover the message exactly once, in order, each within
        /// the payload room, with L on the final one only.
        #[test]
        fn segments_tile_the_message(len in 0u32..50_000, mulpdu in 15usize..3000) {
            let s = Segmenter::tagged(len, mulpdu).unwrap();
            let expected = s.len();
            let v: Vec<_> = s.collect();
            prop_assert_eq!(v.len(), expected);
            let mut next = 0u32;
            for (i, &(off, n, last)) in v.iter().enumerate() {
                prop_assert_eq!(off, next);
                prop_assert!(n as usize <= mulpdu - TAGGED_HEADER_LEN);
                prop_assert!(n > 0 || len == 0);
                prop_assert_eq!(last, i == v.len() - 1);
                next += n;
            }
            prop_assert_eq!(next, len);
        }

        #[test]
        fn untagged_headers_fit_the_mulpdu(len in 0u32..10_000, mulpdu in 19usize..600, msn in any::<u32>()) {
            let segs = UntaggedSegments::new(Segmenter::untagged(len, mulpdu).unwrap(), 0x43, 0, 0, msn);
            let mut covered = 0usize;
            for (repr, range) in segs {
                prop_assert!(repr.buffer_len() + range.len() <= mulpdu);
                prop_assert_eq!(repr.mo as usize, range.start);
                prop_assert_eq!(repr.msn, msn);
                prop_assert_eq!(range.start, covered);
                covered = range.end;
            }
            prop_assert_eq!(covered, len as usize);
        }

        #[test]
        fn tagged_to_is_base_plus_offset(len in 0u32..10_000, mulpdu in 15usize..600, to in any::<u64>()) {
            for (repr, range) in TaggedSegments::new(Segmenter::tagged(len, mulpdu).unwrap(), 0, STag(1), to) {
                prop_assert_eq!(repr.to, to.wrapping_add(range.start as u64));
            }
        }
    }
}
