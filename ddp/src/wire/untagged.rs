//! The untagged buffer model header (RFC 5041 section 4.3, figure 4):
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |T|L| Rsvd  | DV|   RsvdULP[0:7]|            RsvdULP[8:23]      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  RsvdULP[24:39] |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          QN                                   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          MSN                                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          MO                                   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! RsvdULP is 40 bits: the first octet (RDMAP version and opcode) is kept as
//! `rsvd_ulp`, the next four (RDMAP: the STag to invalidate) as `rsvd_ulp2`.

use super::control::{Control, DDP_VERSION};
use super::EmitError;
use super::{read_u32, UNTAGGED_HEADER_LEN};
use crate::error::DdpError;

mod field {
    use core::ops::{Range, RangeFrom};
    pub const CONTROL: usize = 0;
    pub const RSVD_ULP: usize = 1;
    pub const RSVD_ULP2: Range<usize> = 2..6;
    pub const QN: Range<usize> = 6..10;
    pub const MSN: Range<usize> = 10..14;
    pub const MO: Range<usize> = 14..18;
    pub const PAYLOAD: RangeFrom<usize> = 18..;
}

/// A checked view of an untagged DDP segment (header and payload).
///
/// After [`UntaggedHeader::new_checked`] no accessor can panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UntaggedHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UntaggedHeader<T> {
    /// A view without a length check: accessors may panic on short buffers.
    pub const fn new_unchecked(buffer: T) -> Self {
        UntaggedHeader { buffer }
    }

    /// A view over a buffer at least [`UNTAGGED_HEADER_LEN`] bytes long.
    pub fn new_checked(buffer: T) -> Result<Self, DdpError> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    /// Fails if the buffer is shorter than an untagged header; after that no accessor panics.
    pub fn check_len(&self) -> Result<(), DdpError> {
        let len = self.buffer.as_ref().len();
        if len < UNTAGGED_HEADER_LEN {
            return Err(DdpError::Truncated {
                len,
                needed: UNTAGGED_HEADER_LEN,
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

    /// The 32 bits reserved for the layer above (RDMAP's Send with Invalidate STag).
    #[inline]
    pub fn rsvd_ulp2(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::RSVD_ULP2.start)
    }

    /// The queue the message goes to.
    #[inline]
    pub fn qn(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::QN.start)
    }

    /// The message sequence number within the queue.
    #[inline]
    pub fn msn(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::MSN.start)
    }

    /// The message offset of the payload's first byte.
    #[inline]
    pub fn mo(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::MO.start)
    }

    /// The header bytes (for a TERMINATE that quotes them).
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..UNTAGGED_HEADER_LEN]
    }

    /// The message bytes this segment carries.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UntaggedHeader<T> {
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

    /// Writes the 32 bits reserved for the layer above.
    #[inline]
    pub fn set_rsvd_ulp2(&mut self, v: u32) {
        self.buffer.as_mut()[field::RSVD_ULP2].copy_from_slice(&v.to_be_bytes());
    }

    /// Writes the queue number.
    #[inline]
    pub fn set_qn(&mut self, v: u32) {
        self.buffer.as_mut()[field::QN].copy_from_slice(&v.to_be_bytes());
    }

    /// Writes the message sequence number.
    #[inline]
    pub fn set_msn(&mut self, v: u32) {
        self.buffer.as_mut()[field::MSN].copy_from_slice(&v.to_be_bytes());
    }

    /// Writes the message offset.
    #[inline]
    pub fn set_mo(&mut self, v: u32) {
        self.buffer.as_mut()[field::MO].copy_from_slice(&v.to_be_bytes());
    }

    /// The payload, to build in place.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The meaning of an untagged DDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct UntaggedRepr {
    /// L: the last segment of the message.
    pub last: bool,
    /// The ULP's first octet (RDMAP: version and opcode).
    pub rsvd_ulp: u8,
    /// The ULP's next four octets (RDMAP: the STag a Send with Invalidate
    /// invalidates; zero otherwise).
    pub rsvd_ulp2: u32,
    /// Queue number (RDMAP: 0 Send, 1 Read Request, 2 Terminate).
    pub qn: u32,
    /// Message sequence number, per queue, starting at 1.
    pub msn: u32,
    /// Message offset of the first payload byte.
    pub mo: u32,
    /// The control octet's reserved bits (`0..=0xf`): zero when we send,
    /// whatever the peer sent when parsed.
    pub ddp_rsvd: u8,
}

impl UntaggedRepr {
    /// A header with the reserved bits clear.
    pub const fn new(last: bool, rsvd_ulp: u8, rsvd_ulp2: u32, qn: u32, msn: u32, mo: u32) -> Self {
        UntaggedRepr {
            last,
            rsvd_ulp,
            rsvd_ulp2,
            qn,
            msn,
            mo,
            ddp_rsvd: 0,
        }
    }

    /// Reads a header: the T bit must be clear and the version must be 1.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &UntaggedHeader<&T>) -> Result<Self, DdpError> {
        let first = header.buffer.as_ref().first().copied();
        let c = Control::from_byte(first.unwrap_or(0));
        if first.is_some() && c.version != DDP_VERSION {
            return Err(DdpError::InvalidVersion {
                tagged: c.tagged,
                version: c.version,
            });
        }
        header.check_len()?;
        if c.tagged {
            return Err(DdpError::WrongModel {
                expected_tagged: false,
            });
        }
        Ok(UntaggedRepr {
            last: c.last,
            rsvd_ulp: header.rsvd_ulp(),
            rsvd_ulp2: header.rsvd_ulp2(),
            qn: header.qn(),
            msn: header.msn(),
            mo: header.mo(),
            ddp_rsvd: c.rsvd,
        })
    }

    /// Bytes the header takes on the wire.
    pub const fn buffer_len(&self) -> usize {
        UNTAGGED_HEADER_LEN
    }

    /// The control octet this header carries.
    pub const fn control(&self) -> Control {
        Control {
            tagged: false,
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
        header: &mut UntaggedHeader<T>,
    ) -> Result<(), EmitError> {
        EmitError::check(header.buffer.as_ref(), self.buffer_len())?;
        header.set_control(self.control());
        header.set_rsvd_ulp(self.rsvd_ulp);
        header.set_rsvd_ulp2(self.rsvd_ulp2);
        header.set_qn(self.qn);
        header.set_msn(self.msn);
        header.set_mo(self.mo);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // rping-default.pcap frame 8: the client's first Send (opcode 3), MSN 1,
    // carrying rping's 16-byte {addr, rkey, size} message.
    const SEND: [u8; 34] = [
        0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, //
        0x00, 0x00, 0x55, 0x80, 0x8d, 0xd2, 0x83, 0x70, 0xbd, 0x94, 0xaf, 0x00, 0x00, 0x00, 0x00,
        0x40,
    ];
    // rping-default.pcap frame 9: the server's Read Request header, QN 1.
    const READ_REQ: [u8; 18] = [0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
    // rping-default.pcap frame 14: the server's second Send, MSN 2.
    const SEND2: [u8; 18] = [0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0];

    #[test]
    fn parse_capture_send() {
        let h = UntaggedHeader::new_checked(&SEND[..]).unwrap();
        let r = UntaggedRepr::parse(&h).unwrap();
        assert_eq!(r, UntaggedRepr::new(true, 0x43, 0, 0, 1, 0));
        // rping's message: BE64 addr, BE32 rkey, BE32 size = 64.
        assert_eq!(h.payload().len(), 16);
        assert_eq!(&h.payload()[12..], &[0, 0, 0, 0x40]);
    }

    #[test]
    fn parse_capture_read_request_and_second_send() {
        let r = UntaggedRepr::parse(&UntaggedHeader::new_checked(&READ_REQ[..]).unwrap()).unwrap();
        assert_eq!((r.qn, r.msn, r.mo, r.rsvd_ulp), (1, 1, 0, 0x41));
        let r = UntaggedRepr::parse(&UntaggedHeader::new_checked(&SEND2[..]).unwrap()).unwrap();
        assert_eq!((r.qn, r.msn, r.mo, r.last), (0, 2, 0, true));
    }

    #[test]
    fn emit_refuses_a_buffer_one_byte_short() {
        let r = UntaggedRepr::new(true, 0x44, 0x00ab_cd00, 1, 7, 9);
        let mut short = vec![0xa5u8; r.buffer_len() - 1];
        assert_eq!(
            r.emit(&mut UntaggedHeader::new_unchecked(&mut short[..])),
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
            .emit(&mut UntaggedHeader::new_unchecked(&mut [][..]))
            .is_err());
    }

    #[test]
    fn emit_fills_exactly_buffer_len() {
        // Two different pre-fills give the same bytes: every byte of the
        // header is written, no field is forgotten.
        let r = UntaggedRepr::new(true, 0x44, 0x00ab_cd00, 1, 7, 9);
        let mut a = vec![0xa5u8; r.buffer_len()];
        let mut b = vec![0x5au8; r.buffer_len()];
        r.emit(&mut UntaggedHeader::new_unchecked(&mut a[..]))
            .unwrap();
        r.emit(&mut UntaggedHeader::new_unchecked(&mut b[..]))
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(
            UntaggedRepr::parse(&UntaggedHeader::new_checked(&a[..]).unwrap()),
            Ok(r)
        );
    }

    #[test]
    fn emit_into_prefilled_buffer_is_byte_exact() {
        for bytes in [&SEND[..18], &READ_REQ[..], &SEND2[..]] {
            let r = UntaggedRepr::parse(&UntaggedHeader::new_checked(bytes).unwrap()).unwrap();
            let mut buf = [0xa5u8; 18];
            r.emit(&mut UntaggedHeader::new_unchecked(&mut buf[..]))
                .unwrap();
            assert_eq!(&buf[..], bytes);
        }
    }

    #[test]
    fn rfc_figure_field_positions() {
        let r = UntaggedRepr {
            last: false,
            rsvd_ulp: 0x77,
            rsvd_ulp2: 0x0102_0304,
            qn: 0x1112_1314,
            msn: 0x2122_2324,
            mo: 0x3132_3334,
            ddp_rsvd: 0x3,
        };
        let mut buf = [0xa5u8; 18];
        r.emit(&mut UntaggedHeader::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(
            buf,
            [
                0b0000_1101,
                0x77,
                1,
                2,
                3,
                4,
                0x11,
                0x12,
                0x13,
                0x14,
                0x21,
                0x22,
                0x23,
                0x24,
                0x31,
                0x32,
                0x33,
                0x34
            ]
        );
    }

    #[test]
    fn send_with_invalidate_stag_sits_in_rsvd_ulp2() {
        // RDMAP Send with Invalidate (opcode 4) of STag 0x00abcd00.
        let r = UntaggedRepr::new(true, 0x44, 0x00ab_cd00, 0, 7, 0);
        let mut buf = [0xa5u8; 18];
        r.emit(&mut UntaggedHeader::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(&buf[..6], &[0x41, 0x44, 0x00, 0xab, 0xcd, 0x00]);
    }

    #[test]
    fn short_buffers_are_refused() {
        for n in 0..18 {
            assert_eq!(
                UntaggedHeader::new_checked(&SEND[..n]).unwrap_err(),
                DdpError::Truncated { len: n, needed: 18 }
            );
        }
    }

    #[test]
    fn bad_version_is_an_untagged_version_error() {
        for dv in [0u8, 2, 3] {
            let mut b = READ_REQ;
            b[0] = (b[0] & !0x03) | dv;
            let h = UntaggedHeader::new_checked(&b[..]).unwrap();
            assert_eq!(
                UntaggedRepr::parse(&h),
                Err(DdpError::InvalidVersion {
                    tagged: false,
                    version: dv
                })
            );
        }
    }

    #[test]
    fn tagged_bytes_are_the_wrong_model() {
        let mut b = READ_REQ;
        b[0] = 0xc1;
        let h = UntaggedHeader::new_checked(&b[..]).unwrap();
        assert_eq!(
            UntaggedRepr::parse(&h),
            Err(DdpError::WrongModel {
                expected_tagged: false
            })
        );
    }

    fn any_repr() -> impl Strategy<Value = UntaggedRepr> {
        (
            any::<bool>(),
            any::<u8>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            0u8..16,
        )
            .prop_map(
                |(last, rsvd_ulp, rsvd_ulp2, qn, msn, mo, ddp_rsvd)| UntaggedRepr {
                    last,
                    rsvd_ulp,
                    rsvd_ulp2,
                    qn,
                    msn,
                    mo,
                    ddp_rsvd,
                },
            )
    }

    proptest! {
        #[test]
        fn parse_emit_round_trip(r in any_repr(), payload in proptest::collection::vec(any::<u8>(), 0..32)) {
            let mut buf = vec![0xa5u8; r.buffer_len() + payload.len()];
            let mut h = UntaggedHeader::new_unchecked(&mut buf[..]);
            r.emit(&mut h).unwrap();
            h.payload_mut().copy_from_slice(&payload);
            let h = UntaggedHeader::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(UntaggedRepr::parse(&h).unwrap(), r);
            prop_assert_eq!(h.payload(), &payload[..]);
        }

        #[test]
        fn valid_headers_re_emit_identically(mut bytes in proptest::array::uniform18(any::<u8>())) {
            bytes[0] = bytes[0] & !0x80 & !0x03 | 0x01;
            let r = UntaggedRepr::parse(&UntaggedHeader::new_checked(&bytes[..]).unwrap()).unwrap();
            let mut out = [0xa5u8; 18];
            r.emit(&mut UntaggedHeader::new_unchecked(&mut out[..])).unwrap();
            prop_assert_eq!(out, bytes);
        }
    }
}
