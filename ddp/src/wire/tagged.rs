//! The tagged buffer model header (RFC 5041 section 4.2, figure 3):
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |T|L| Rsvd  | DV|   RsvdULP     |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+               STag            +
//! |                               |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//! |                           TO (64 bits)                        |
//! +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use super::control::{Control, DDP_VERSION};
use super::EmitError;
use super::{read_u32, read_u64, TAGGED_HEADER_LEN};
use crate::error::DdpError;
use crate::memory::STag;

mod field {
    use core::ops::{Range, RangeFrom};
    pub const CONTROL: usize = 0;
    pub const RSVD_ULP: usize = 1;
    pub const STAG: Range<usize> = 2..6;
    pub const TO: Range<usize> = 6..14;
    pub const PAYLOAD: RangeFrom<usize> = 14..;
}

/// A checked view of a tagged DDP segment (header and payload).
///
/// After [`TaggedHeader::new_checked`] no accessor can panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaggedHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TaggedHeader<T> {
    /// A view without a length check: accessors may panic on short buffers.
    pub const fn new_unchecked(buffer: T) -> Self {
        TaggedHeader { buffer }
    }

    /// A view over a buffer at least [`TAGGED_HEADER_LEN`] bytes long.
    pub fn new_checked(buffer: T) -> Result<Self, DdpError> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    /// Fails if the buffer is shorter than a tagged header; after that no accessor panics.
    pub fn check_len(&self) -> Result<(), DdpError> {
        let len = self.buffer.as_ref().len();
        if len < TAGGED_HEADER_LEN {
            return Err(DdpError::Truncated {
                len,
                needed: TAGGED_HEADER_LEN,
            });
        }
        Ok(())
    }

    /// The buffer the view was made over.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The control byte.
    #[inline]
    pub fn control(&self) -> Control {
        Control::from_byte(self.buffer.as_ref()[field::CONTROL])
    }

    /// The bits reserved for the layer above (RDMAP's control byte).
    #[inline]
    pub fn rsvd_ulp(&self) -> u8 {
        self.buffer.as_ref()[field::RSVD_ULP]
    }

    /// The region the payload goes into.
    #[inline]
    pub fn stag(&self) -> STag {
        STag(read_u32(self.buffer.as_ref(), field::STAG.start))
    }

    /// The tagged offset of the payload's first byte.
    #[inline]
    pub fn to(&self) -> u64 {
        read_u64(self.buffer.as_ref(), field::TO.start)
    }

    /// The header bytes (for a TERMINATE that quotes them).
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..TAGGED_HEADER_LEN]
    }

    /// The bytes to place.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TaggedHeader<T> {
    /// Writes the control byte.
    #[inline]
    pub fn set_control(&mut self, c: Control) {
        self.buffer.as_mut()[field::CONTROL] = c.to_byte();
    }

    /// Writes the bits reserved for the layer above.
    #[inline]
    pub fn set_rsvd_ulp(&mut self, v: u8) {
        self.buffer.as_mut()[field::RSVD_ULP] = v;
    }

    /// Writes the sink STag.
    #[inline]
    pub fn set_stag(&mut self, stag: STag) {
        self.buffer.as_mut()[field::STAG].copy_from_slice(&stag.0.to_be_bytes());
    }

    /// Writes the tagged offset.
    #[inline]
    pub fn set_to(&mut self, to: u64) {
        self.buffer.as_mut()[field::TO].copy_from_slice(&to.to_be_bytes());
    }

    /// The payload, to build in place.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The meaning of a tagged DDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TaggedRepr {
    /// L: the last segment of the message.
    pub last: bool,
    /// The ULP's octet (RDMAP: version and opcode).
    pub rsvd_ulp: u8,
    /// The Data Sink's steering tag.
    pub stag: STag,
    /// The Data Sink's tagged offset of the first payload byte.
    pub to: u64,
    /// The control octet's reserved bits (`0..=0xf`): zero when we send,
    /// whatever the peer sent when parsed.
    pub ddp_rsvd: u8,
}

impl TaggedRepr {
    /// A header with the reserved bits clear.
    pub const fn new(last: bool, rsvd_ulp: u8, stag: STag, to: u64) -> Self {
        TaggedRepr {
            last,
            rsvd_ulp,
            stag,
            to,
            ddp_rsvd: 0,
        }
    }

    /// Reads a header: the T bit must be set and the version must be 1.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &TaggedHeader<&T>) -> Result<Self, DdpError> {
        let first = header.buffer.as_ref().first().copied();
        let c = Control::from_byte(first.unwrap_or(0));
        if first.is_some() && c.version != DDP_VERSION {
            return Err(DdpError::InvalidVersion {
                tagged: c.tagged,
                version: c.version,
            });
        }
        header.check_len()?;
        if !c.tagged {
            return Err(DdpError::WrongModel {
                expected_tagged: true,
            });
        }
        Ok(TaggedRepr {
            last: c.last,
            rsvd_ulp: header.rsvd_ulp(),
            stag: header.stag(),
            to: header.to(),
            ddp_rsvd: c.rsvd,
        })
    }

    /// Bytes the header takes on the wire.
    pub const fn buffer_len(&self) -> usize {
        TAGGED_HEADER_LEN
    }

    /// The control octet this header carries.
    pub const fn control(&self) -> Control {
        Control {
            tagged: true,
            last: self.last,
            rsvd: self.ddp_rsvd,
            version: DDP_VERSION,
        }
    }

    /// Writes the header into the front of the view's buffer; the payload is
    /// left untouched. A buffer shorter than [`buffer_len`](Self::buffer_len)
    /// is refused with nothing written.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        header: &mut TaggedHeader<T>,
    ) -> Result<(), EmitError> {
        EmitError::check(header.buffer.as_ref(), self.buffer_len())?;
        header.set_control(self.control());
        header.set_rsvd_ulp(self.rsvd_ulp);
        header.set_stag(self.stag);
        header.set_to(self.to);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // rping-default.pcap frame 13: the server's RDMA Write of the 64-byte
    // ping (DDP header of the ULPDU; MPA length 0x004e precedes it).
    const WRITE: [u8; 14] = [
        0xc1, 0x40, 0x02, 0xfd, 0x5f, 0x00, 0x00, 0x00, 0x55, 0x80, 0x8d, 0xd2, 0x85, 0x50,
    ];
    // rping-crc-8k.pcap frame 10: first Read Response segment, L clear.
    const RRESP_MIDDLE: [u8; 14] = [
        0x81, 0x42, 0x6e, 0xab, 0x76, 0x00, 0x00, 0x00, 0x55, 0x8d, 0x6e, 0x6f, 0xe6, 0x10,
    ];

    #[test]
    fn parse_capture_write() {
        let h = TaggedHeader::new_checked(&WRITE[..]).unwrap();
        let r = TaggedRepr::parse(&h).unwrap();
        assert_eq!(
            r,
            TaggedRepr::new(true, 0x40, STag(0x02fd_5f00), 0x0000_5580_8dd2_8550)
        );
        assert_eq!(r.stag.index(), 0x02fd5f);
        assert_eq!(r.stag.key(), 0);
        assert!(h.payload().is_empty());
    }

    #[test]
    fn parse_capture_middle_read_response() {
        let h = TaggedHeader::new_checked(&RRESP_MIDDLE[..]).unwrap();
        let r = TaggedRepr::parse(&h).unwrap();
        assert!(!r.last);
        assert_eq!(r.rsvd_ulp, 0x42);
        assert_eq!(r.stag, STag(0x6eab_7600));
        assert_eq!(r.to, 0x558d_6e6f_e610);
    }

    #[test]
    fn emit_refuses_a_buffer_one_byte_short() {
        let r = TaggedRepr::new(true, 0x40, STag(0x0102_0304), 0x1112_1314_1516_1718);
        let mut short = vec![0xa5u8; r.buffer_len() - 1];
        assert_eq!(
            r.emit(&mut TaggedHeader::new_unchecked(&mut short[..])),
            Err(EmitError {
                len: r.buffer_len() - 1,
                needed: r.buffer_len()
            })
        );
        assert!(
            short.iter().all(|&b| b == 0xa5),
            "nothing written on failure"
        );
        assert!(r
            .emit(&mut TaggedHeader::new_unchecked(&mut [][..]))
            .is_err());
    }

    #[test]
    fn emit_fills_exactly_buffer_len() {
        // Two different pre-fills give the same bytes: every byte of the
        // header is written, no field is forgotten.
        let r = TaggedRepr::new(true, 0x40, STag(0x0102_0304), 0x1112_1314_1516_1718);
        let mut a = vec![0xa5u8; r.buffer_len()];
        let mut b = vec![0x5au8; r.buffer_len()];
        r.emit(&mut TaggedHeader::new_unchecked(&mut a[..]))
            .unwrap();
        r.emit(&mut TaggedHeader::new_unchecked(&mut b[..]))
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(
            TaggedRepr::parse(&TaggedHeader::new_checked(&a[..]).unwrap()),
            Ok(r)
        );
    }

    #[test]
    fn emit_into_prefilled_buffer_is_byte_exact() {
        for bytes in [WRITE, RRESP_MIDDLE] {
            let r = TaggedRepr::parse(&TaggedHeader::new_checked(&bytes[..]).unwrap()).unwrap();
            let mut buf = [0xa5u8; 14];
            r.emit(&mut TaggedHeader::new_unchecked(&mut buf[..]))
                .unwrap();
            assert_eq!(buf, bytes);
        }
    }

    #[test]
    fn emit_leaves_payload_alone() {
        let mut buf = [0xa5u8; 20];
        TaggedRepr::new(false, 0, STag(1), 0)
            .emit(&mut TaggedHeader::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(&buf[14..], &[0xa5; 6]);
        assert_eq!(buf[0], 0x81);
    }

    #[test]
    fn rfc_figure_field_positions() {
        // Every field set to a distinct pattern lands where figure 3 says.
        let r = TaggedRepr {
            last: true,
            rsvd_ulp: 0x5a,
            stag: STag(0x0102_0304),
            to: 0x1112_1314_1516_1718,
            ddp_rsvd: 0x9,
        };
        let mut buf = [0xa5u8; 14];
        r.emit(&mut TaggedHeader::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(
            buf,
            [
                0b1110_0101,
                0x5a,
                1,
                2,
                3,
                4,
                0x11,
                0x12,
                0x13,
                0x14,
                0x15,
                0x16,
                0x17,
                0x18
            ]
        );
    }

    #[test]
    fn short_buffers_are_refused() {
        for n in 0..14 {
            assert_eq!(
                TaggedHeader::new_checked(&WRITE[..n]).unwrap_err(),
                DdpError::Truncated { len: n, needed: 14 }
            );
        }
    }

    #[test]
    fn bad_version_is_a_tagged_version_error() {
        for dv in [0u8, 2, 3] {
            let mut b = WRITE;
            b[0] = (b[0] & !0x03) | dv;
            let h = TaggedHeader::new_checked(&b[..]).unwrap();
            assert_eq!(
                TaggedRepr::parse(&h),
                Err(DdpError::InvalidVersion {
                    tagged: true,
                    version: dv
                })
            );
        }
    }

    #[test]
    fn untagged_bytes_are_the_wrong_model() {
        let mut b = WRITE;
        b[0] = 0x41;
        let h = TaggedHeader::new_checked(&b[..]).unwrap();
        assert_eq!(
            TaggedRepr::parse(&h),
            Err(DdpError::WrongModel {
                expected_tagged: true
            })
        );
    }

    #[test]
    fn reserved_bits_survive_parse_and_emit() {
        let mut b = WRITE;
        b[0] |= 0x3c;
        let r = TaggedRepr::parse(&TaggedHeader::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r.ddp_rsvd, 0xf);
        let mut out = [0xa5u8; 14];
        r.emit(&mut TaggedHeader::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out, b);
    }

    fn any_repr() -> impl Strategy<Value = TaggedRepr> {
        (
            any::<bool>(),
            any::<u8>(),
            any::<u32>(),
            any::<u64>(),
            0u8..16,
        )
            .prop_map(|(last, rsvd_ulp, stag, to, ddp_rsvd)| TaggedRepr {
                last,
                rsvd_ulp,
                stag: STag(stag),
                to,
                ddp_rsvd,
            })
    }

    proptest! {
        #[test]
        fn parse_emit_round_trip(r in any_repr(), payload in proptest::collection::vec(any::<u8>(), 0..32)) {
            let mut buf = vec![0xa5u8; r.buffer_len() + payload.len()];
            let mut h = TaggedHeader::new_unchecked(&mut buf[..]);
            r.emit(&mut h).unwrap();
            h.payload_mut().copy_from_slice(&payload);
            let h = TaggedHeader::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(TaggedRepr::parse(&h).unwrap(), r);
            prop_assert_eq!(h.payload(), &payload[..]);
        }

        #[test]
        fn valid_headers_re_emit_identically(mut bytes in proptest::array::uniform14(any::<u8>())) {
            bytes[0] = (bytes[0] | 0x80) & !0x03 | 0x01;
            let r = TaggedRepr::parse(&TaggedHeader::new_checked(&bytes[..]).unwrap()).unwrap();
            let mut out = [0xa5u8; 14];
            r.emit(&mut TaggedHeader::new_unchecked(&mut out[..])).unwrap();
            prop_assert_eq!(out, bytes);
        }
    }
}
