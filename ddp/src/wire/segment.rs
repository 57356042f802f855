//! One DDP segment of either model: dispatch on the T bit.

use super::control::{Control, DDP_VERSION};
use super::{EmitError, TaggedHeader, TaggedRepr, UntaggedHeader, UntaggedRepr};
use crate::error::DdpError;

/// A checked view of a ULPDU as one DDP segment of either model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// A segment placed by STag and tagged offset.
    Tagged(TaggedHeader<&'a [u8]>),
    /// A segment placed into a queue's next buffer.
    Untagged(UntaggedHeader<&'a [u8]>),
}

impl<'a> Segment<'a> {
    /// Checks the DDP version first (another version's header length is
    /// unknown), then that the ULPDU holds the whole header.
    pub fn new_checked(ulpdu: &'a [u8]) -> Result<Self, DdpError> {
        let Some(&first) = ulpdu.first() else {
            return Err(DdpError::Truncated { len: 0, needed: 1 });
        };
        let c = Control::from_byte(first);
        if c.version != DDP_VERSION {
            return Err(DdpError::InvalidVersion {
                tagged: c.tagged,
                version: c.version,
            });
        }
        Ok(if c.tagged {
            Segment::Tagged(TaggedHeader::new_checked(ulpdu)?)
        } else {
            Segment::Untagged(UntaggedHeader::new_checked(ulpdu)?)
        })
    }

    /// The control byte, of either model.
    pub fn control(&self) -> Control {
        match self {
            Segment::Tagged(h) => h.control(),
            Segment::Untagged(h) => h.control(),
        }
    }

    /// The bits DDP reserves for the layer above (RDMAP's control byte).
    pub fn rsvd_ulp(&self) -> u8 {
        match self {
            Segment::Tagged(h) => h.rsvd_ulp(),
            Segment::Untagged(h) => h.rsvd_ulp(),
        }
    }

    /// The DDP header bytes.
    pub fn header(&self) -> &'a [u8] {
        match *self {
            Segment::Tagged(h) => {
                let b: &'a [u8] = h.into_inner();
                &b[..super::TAGGED_HEADER_LEN]
            }
            Segment::Untagged(h) => {
                let b: &'a [u8] = h.into_inner();
                &b[..super::UNTAGGED_HEADER_LEN]
            }
        }
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &'a [u8] {
        match *self {
            Segment::Tagged(h) => {
                let b: &'a [u8] = h.into_inner();
                &b[super::TAGGED_HEADER_LEN..]
            }
            Segment::Untagged(h) => {
                let b: &'a [u8] = h.into_inner();
                &b[super::UNTAGGED_HEADER_LEN..]
            }
        }
    }
}

/// The meaning of a DDP header of either model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SegmentRepr {
    /// A tagged header's meaning.
    Tagged(TaggedRepr),
    /// An untagged header's meaning.
    Untagged(UntaggedRepr),
}

impl SegmentRepr {
    /// Reads the header of a checked segment.
    pub fn parse(segment: &Segment<'_>) -> Result<Self, DdpError> {
        Ok(match segment {
            Segment::Tagged(h) => SegmentRepr::Tagged(TaggedRepr::parse(h)?),
            Segment::Untagged(h) => SegmentRepr::Untagged(UntaggedRepr::parse(h)?),
        })
    }

    /// Bytes the header takes on the wire.
    pub const fn buffer_len(&self) -> usize {
        match self {
            SegmentRepr::Tagged(r) => r.buffer_len(),
            SegmentRepr::Untagged(r) => r.buffer_len(),
        }
    }

    /// Whether it is a tagged header.
    pub const fn is_tagged(&self) -> bool {
        matches!(self, SegmentRepr::Tagged(_))
    }

    /// Whether the segment ends its message.
    pub const fn last(&self) -> bool {
        match self {
            SegmentRepr::Tagged(r) => r.last,
            SegmentRepr::Untagged(r) => r.last,
        }
    }

    /// The bits reserved for the layer above.
    pub const fn rsvd_ulp(&self) -> u8 {
        match self {
            SegmentRepr::Tagged(r) => r.rsvd_ulp,
            SegmentRepr::Untagged(r) => r.rsvd_ulp,
        }
    }

    /// Writes the header into the front of `buf`, returning its length.
    /// Bytes after the header are untouched; a buffer shorter than
    /// [`buffer_len`](Self::buffer_len) is refused with nothing written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        match self {
            SegmentRepr::Tagged(r) => r.emit(&mut TaggedHeader::new_unchecked(&mut *buf))?,
            SegmentRepr::Untagged(r) => r.emit(&mut UntaggedHeader::new_unchecked(&mut *buf))?,
        }
        Ok(self.buffer_len())
    }

    /// Rewrites only the fields that change from one segment of a message
    /// to the next (the control octet, with L, and the TO or MO) in a
    /// header [`emit`](Self::emit) wrote for another segment of the same
    /// message: a sender producing segment after segment patches 9 or 5
    /// octets instead of writing the whole header again. The other fields
    /// in `buf` are left as they are, so they must already be this
    /// header's. A buffer shorter than [`buffer_len`](Self::buffer_len) is
    /// refused with nothing written.
    #[inline]
    pub fn emit_moving_fields(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        EmitError::check(buf, self.buffer_len())?;
        match self {
            SegmentRepr::Tagged(r) => {
                let mut h = TaggedHeader::new_unchecked(buf);
                h.set_control(r.control());
                h.set_to(r.to);
            }
            SegmentRepr::Untagged(r) => {
                let mut h = UntaggedHeader::new_unchecked(buf);
                h.set_control(r.control());
                h.set_mo(r.mo);
            }
        }
        Ok(())
    }
}

impl From<TaggedRepr> for SegmentRepr {
    fn from(r: TaggedRepr) -> Self {
        SegmentRepr::Tagged(r)
    }
}

impl From<UntaggedRepr> for SegmentRepr {
    fn from(r: UntaggedRepr) -> Self {
        SegmentRepr::Untagged(r)
    }
}

/// Parses one ULPDU (what MPA delivers) into its header and payload.
pub fn parse_segment(ulpdu: &[u8]) -> Result<(SegmentRepr, &[u8]), DdpError> {
    let segment = Segment::new_checked(ulpdu)?;
    Ok((SegmentRepr::parse(&segment)?, segment.payload()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::STag;
    use proptest::prelude::*;

    // rping-cxgb.pcap frame 8: the client's zero-length RDMA Write RTR to
    // STag 1, TO 0 (ULPDU only; MPA length 0x000e and CRC stripped).
    const WRITE_RTR: [u8; 14] = [0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];

    #[test]
    fn rtr_is_a_zero_length_tagged_write() {
        let (repr, payload) = parse_segment(&WRITE_RTR).unwrap();
        assert_eq!(
            repr,
            SegmentRepr::Tagged(TaggedRepr::new(true, 0x40, STag(1), 0))
        );
        assert!(payload.is_empty());
        assert!(repr.is_tagged() && repr.last());
        assert_eq!(repr.rsvd_ulp() & 0x0f, 0, "RDMAP opcode 0 = RDMA Write");
    }

    #[test]
    fn moving_fields_turn_one_segment_header_into_the_next() {
        let tagged =
            |last, to| SegmentRepr::Tagged(TaggedRepr::new(last, 0x40, STag(0x1234_5678), to));
        let untagged =
            |last, mo| SegmentRepr::Untagged(UntaggedRepr::new(last, 0x43, 0xdead_beef, 0, 9, mo));
        let pairs = [
            (tagged(false, 0x1000), tagged(true, 0xffff_ffff_0000_0001)),
            (tagged(true, 7), tagged(false, 1 << 40)),
            (untagged(false, 0), untagged(true, 0x8000_0001)),
            (untagged(true, 5), untagged(false, 1460)),
        ];
        for (first, next) in pairs {
            let mut want = [0xa5u8; 20];
            next.emit(&mut want).unwrap();
            let mut got = [0xa5u8; 20];
            first.emit(&mut got).unwrap();
            next.emit_moving_fields(&mut got).unwrap();
            assert_eq!(got, want, "{first:?} -> {next:?}");
        }
        let mut short = [0u8; 13];
        assert!(tagged(false, 1).emit_moving_fields(&mut short).is_err());
        assert_eq!(short, [0; 13], "nothing written to a short buffer");
    }

    #[test]
    fn empty_ulpdu_is_truncated() {
        assert_eq!(
            parse_segment(&[]).unwrap_err(),
            DdpError::Truncated { len: 0, needed: 1 }
        );
    }

    #[test]
    fn version_is_checked_before_length() {
        // One byte announcing DV 2: the version error wins.
        assert_eq!(
            parse_segment(&[0xc2]).unwrap_err(),
            DdpError::InvalidVersion {
                tagged: true,
                version: 2
            }
        );
        assert_eq!(
            parse_segment(&[0x40]).unwrap_err(),
            DdpError::InvalidVersion {
                tagged: false,
                version: 0
            }
        );
    }

    #[test]
    fn untagged_needs_eighteen_bytes() {
        let mut b = [0u8; 17];
        b[0] = 0x41;
        assert_eq!(
            parse_segment(&b).unwrap_err(),
            DdpError::Truncated {
                len: 17,
                needed: 18
            }
        );
        // The same 17 bytes read as tagged are a whole header + 3 payload.
        b[0] = 0xc1;
        assert_eq!(parse_segment(&b).unwrap().1.len(), 3);
    }

    #[test]
    fn segment_view_splits_header_and_payload() {
        let mut b = WRITE_RTR.to_vec();
        b.extend_from_slice(b"abc");
        let s = Segment::new_checked(&b).unwrap();
        assert_eq!(s.header(), &WRITE_RTR[..]);
        assert_eq!(s.payload(), b"abc");
        assert_eq!(s.rsvd_ulp(), 0x40);
        assert!(s.control().tagged);
    }

    #[test]
    fn emit_reports_short_buffers() {
        let r = SegmentRepr::from(UntaggedRepr::new(true, 0x43, 0, 0, 1, 0));
        let mut small = [0xa5u8; 17];
        assert_eq!(
            r.emit(&mut small),
            Err(EmitError {
                len: 17,
                needed: 18
            })
        );
        assert_eq!(small, [0xa5; 17], "nothing written on failure");
        let mut big = [0xa5u8; 20];
        assert_eq!(r.emit(&mut big), Ok(18));
        assert_eq!(&big[18..], &[0xa5, 0xa5]);
    }

    proptest! {
        /// Whatever the bytes, parse never panics, and whatever parses
        /// re-emits to the same header bytes.
        #[test]
        fn parse_is_total_and_exact(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok((repr, payload)) = parse_segment(&bytes) {
                let mut out = vec![0xa5u8; repr.buffer_len()];
                repr.emit(&mut out).unwrap();
                prop_assert_eq!(&out[..], &bytes[..repr.buffer_len()]);
                prop_assert_eq!(payload, &bytes[repr.buffer_len()..]);
            }
        }
    }
}
