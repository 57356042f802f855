//! The MPA Request and Reply frames (RFC 5044 section 7.1, RFC 6581).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +         Key (16 bytes containing "MPA ID Req Frame")          +
//! |      (4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65)        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |M|C|R|S| Res   |     Rev       |          PD_Length            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~            Private Data (PD_Length octets, at most 512)       ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//! S is RFC 6581's "enhanced" bit: the private data then starts with the
//! IRD/ORD block.

use core::fmt;

use super::ird_ord::{IrdOrd, IRD_ORD_LEN};
use super::Error;

/// Length of the key that starts every Request/Reply.
pub const KEY_LEN: usize = 16;
/// Key, flags, Rev and PD_Length.
pub const HEADER_LEN: usize = 20;
/// RFC 5044's limit on PD_Length (the IRD/ORD block included).
pub const MAX_PRIVATE_DATA: usize = 512;
/// The key of an MPA Request.
pub const REQUEST_KEY: &[u8; KEY_LEN] = b"MPA ID Req Frame";
/// The key of an MPA Reply.
pub const REPLY_KEY: &[u8; KEY_LEN] = b"MPA ID Rep Frame";

/// Bits of the flags octet.
pub mod flags {
    /// M: the sender of this frame wants markers in the FPDUs it receives.
    pub const MARKERS: u8 = 0x80;
    /// C: the sender wants CRC32c on FPDUs (in a Reply: CRC is on).
    pub const CRC: u8 = 0x40;
    /// R: the Responder rejects the connection (Reply only).
    pub const REJECT: u8 = 0x20;
    /// RFC 6581 "enhanced": private data starts with the IRD/ORD block.
    pub const ENHANCED: u8 = 0x10;
    /// Still reserved; kept as received (siw uses 0x08 for an experimental
    /// GSO hint). Receivers ignore them.
    pub const RESERVED: u8 = 0x0f;
}

mod field {
    use core::ops::Range;

    pub const KEY: Range<usize> = 0..16;
    pub const FLAGS: usize = 16;
    pub const REV: usize = 17;
    pub const PD_LENGTH: Range<usize> = 18..20;
    pub const PRIVATE_DATA: usize = 20;
}

/// Which of the two start-up frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FrameKind {
    /// Sent by the Initiator.
    #[default]
    Request,
    /// Sent by the Responder.
    Reply,
}

impl FrameKind {
    /// The 16-byte key of this kind.
    pub const fn key(self) -> &'static [u8; KEY_LEN] {
        match self {
            FrameKind::Request => REQUEST_KEY,
            FrameKind::Reply => REPLY_KEY,
        }
    }

    /// The kind a key names, if any.
    pub fn from_key(key: &[u8]) -> Option<FrameKind> {
        if key == REQUEST_KEY {
            Some(FrameKind::Request)
        } else if key == REPLY_KEY {
            Some(FrameKind::Reply)
        } else {
            None
        }
    }
}

impl fmt::Display for FrameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrameKind::Request => "Request",
            FrameKind::Reply => "Reply",
        })
    }
}

/// A checked view over the bytes of a Request/Reply frame.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps `buffer` without checking it; accessors may panic until
    /// [`Frame::check_len`] succeeds.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps `buffer` after [`Frame::check_len`].
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let frame = Frame::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Checks that the buffer holds the header and all the private data
    /// PD_Length announces, and that PD_Length is within RFC 5044's 512.
    /// PD_Length is checked as soon as the header is present, so a caller
    /// can refuse an oversized frame before buffering its private data.
    pub fn check_len(&self) -> Result<(), Error> {
        let have = self.buffer.as_ref().len();
        let Some(header) = self.buffer.as_ref().get(..HEADER_LEN) else {
            return Err(Error::Truncated {
                needed: HEADER_LEN,
                have,
            });
        };
        let pd_length = usize::from(u16::from_be_bytes([header[18], header[19]]));
        if pd_length > MAX_PRIVATE_DATA {
            return Err(Error::PrivateDataTooLong { pd_length });
        }
        let needed = HEADER_LEN + pd_length;
        if have < needed {
            return Err(Error::Truncated { needed, have });
        }
        Ok(())
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The 16-byte key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.buffer.as_ref()[field::KEY]
    }

    /// The frame kind its key names, if it is an MPA key.
    #[inline]
    pub fn kind(&self) -> Option<FrameKind> {
        FrameKind::from_key(self.key())
    }

    /// The whole flags octet.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The M bit.
    #[inline]
    pub fn markers(&self) -> bool {
        self.flags() & flags::MARKERS != 0
    }

    /// The C bit.
    #[inline]
    pub fn crc(&self) -> bool {
        self.flags() & flags::CRC != 0
    }

    /// The R bit.
    #[inline]
    pub fn reject(&self) -> bool {
        self.flags() & flags::REJECT != 0
    }

    /// The RFC 6581 enhanced bit.
    #[inline]
    pub fn enhanced(&self) -> bool {
        self.flags() & flags::ENHANCED != 0
    }

    /// The four reserved bits.
    #[inline]
    pub fn reserved(&self) -> u8 {
        self.flags() & flags::RESERVED
    }

    /// The Rev octet.
    #[inline]
    pub fn rev(&self) -> u8 {
        self.buffer.as_ref()[field::REV]
    }

    /// PD_Length.
    #[inline]
    pub fn pd_length(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PD_LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Header plus private data: the bytes this frame occupies in the stream.
    #[inline]
    pub fn frame_len(&self) -> usize {
        HEADER_LEN + usize::from(self.pd_length())
    }

    /// All PD_Length octets of private data (the IRD/ORD block included).
    #[inline]
    pub fn private_data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PRIVATE_DATA..self.frame_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Writes the key of `kind`.
    #[inline]
    pub fn set_kind(&mut self, kind: FrameKind) {
        self.buffer.as_mut()[field::KEY].copy_from_slice(kind.key());
    }

    /// Writes the flags octet.
    #[inline]
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[field::FLAGS] = value;
    }

    /// Writes the Rev octet.
    #[inline]
    pub fn set_rev(&mut self, value: u8) {
        self.buffer.as_mut()[field::REV] = value;
    }

    /// Writes PD_Length.
    #[inline]
    pub fn set_pd_length(&mut self, value: u16) {
        self.buffer.as_mut()[field::PD_LENGTH].copy_from_slice(&value.to_be_bytes());
    }

    /// The private data, mutably (PD_Length must be set first).
    #[inline]
    pub fn private_data_mut(&mut self) -> &mut [u8] {
        let end = self.frame_len();
        &mut self.buffer.as_mut()[field::PRIVATE_DATA..end]
    }
}

/// The meaning of a Request/Reply frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameRepr<'a> {
    /// Request or Reply (from the key).
    pub kind: FrameKind,
    /// M: the sender wants markers in the FPDUs it receives.
    pub markers: bool,
    /// C: CRC wanted (Request) or in use (Reply).
    pub crc: bool,
    /// R: connection rejected (Reply).
    pub reject: bool,
    /// The Rev octet (1 = RFC 5044, 2 = RFC 6581).
    pub rev: u8,
    /// The IRD/ORD block, present exactly when the enhanced bit is set.
    pub enhanced: Option<IrdOrd>,
    /// Private data after the IRD/ORD block (all of it when not enhanced).
    pub private_data: &'a [u8],
    /// The reserved flag bits (low four bits of the flags octet), kept so a
    /// parsed frame re-emits byte for byte; zero when sending.
    pub reserved: u8,
}

impl<'a> FrameRepr<'a> {
    /// Parses a checked frame. The key must be an MPA key; with the
    /// enhanced bit, the private data must hold the IRD/ORD block.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &Frame<&'a T>) -> Result<FrameRepr<'a>, Error> {
        frame.check_len()?;
        let kind = frame.kind().ok_or(Error::BadKey)?;
        // Borrow the private data for 'a, not for the lifetime of `frame`.
        let bytes: &'a [u8] = frame.buffer.as_ref();
        let pd = &bytes[HEADER_LEN..frame.frame_len()];
        let (enhanced, private_data) = if frame.enhanced() {
            let block = IrdOrd::parse_prefix(pd)?;
            (Some(block), &pd[IRD_ORD_LEN..])
        } else {
            (None, pd)
        };
        Ok(FrameRepr {
            kind,
            markers: frame.markers(),
            crc: frame.crc(),
            reject: frame.reject(),
            rev: frame.rev(),
            enhanced,
            private_data,
            reserved: frame.reserved(),
        })
    }

    /// Parses the frame at the start of `bytes`; returns it and its length
    /// (bytes after the frame are not part of it).
    pub fn parse_bytes(bytes: &'a [u8]) -> Result<(FrameRepr<'a>, usize), Error> {
        let frame = Frame::new_checked(bytes)?;
        let repr = FrameRepr::parse(&frame)?;
        Ok((repr, frame.frame_len()))
    }

    /// PD_Length this frame has on the wire.
    pub fn pd_length(&self) -> usize {
        self.private_data.len()
            + if self.enhanced.is_some() {
                IRD_ORD_LEN
            } else {
                0
            }
    }

    /// Bytes [`FrameRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.pd_length()
    }

    /// The flags octet.
    pub fn flags(&self) -> u8 {
        let mut f = self.reserved & flags::RESERVED;
        if self.markers {
            f |= flags::MARKERS;
        }
        if self.crc {
            f |= flags::CRC;
        }
        if self.reject {
            f |= flags::REJECT;
        }
        if self.enhanced.is_some() {
            f |= flags::ENHANCED;
        }
        f
    }

    /// Writes the frame into the start of `frame`'s buffer. Fails, writing
    /// nothing, if the private data exceeds 512 octets, IRD/ORD exceed 14
    /// bits, or the buffer is shorter than [`FrameRepr::buffer_len`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) -> Result<(), Error> {
        let pd_length = self.pd_length();
        if pd_length > MAX_PRIVATE_DATA {
            return Err(Error::PrivateDataTooLong { pd_length });
        }
        let block = self.enhanced.as_ref().map(IrdOrd::to_bytes).transpose()?;
        let needed = self.buffer_len();
        let available = frame.buffer.as_ref().len();
        if available < needed {
            return Err(Error::BufferTooSmall { needed, available });
        }
        frame.set_kind(self.kind);
        frame.set_flags(self.flags());
        frame.set_rev(self.rev);
        // Cannot truncate: pd_length <= 512 was checked above.
        frame.set_pd_length(pd_length as u16);
        let pd = frame.private_data_mut();
        let rest = match block {
            Some(block) => {
                pd[..IRD_ORD_LEN].copy_from_slice(&block);
                &mut pd[IRD_ORD_LEN..]
            }
            None => pd,
        };
        rest.copy_from_slice(self.private_data);
        Ok(())
    }

    /// Appends the frame to `out`.
    pub fn emit_to_vec(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        let start = out.len();
        out.resize(start + self.buffer_len(), 0);
        let result = self.emit(&mut Frame::new_unchecked(&mut out[start..]));
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    /// The frame as a new vector.
    pub fn to_vec(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::with_capacity(self.buffer_len());
        self.emit_to_vec(&mut out)?;
        Ok(out)
    }
}

impl fmt::Display for FrameRepr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MPA {} rev {}", self.kind, self.rev)?;
        if self.markers {
            f.write_str(" M")?;
        }
        if self.crc {
            f.write_str(" C")?;
        }
        if self.reject {
            f.write_str(" R")?;
        }
        if let Some(block) = &self.enhanced {
            write!(f, " enhanced ({block})")?;
        }
        write!(f, " pd {}", self.private_data.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Rtr, RtrSet};
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    // rping-default.pcap frame 4 (client -> server), the MPA Request.
    const DEFAULT_REQUEST: &str = "4d504120494420526571204672616d65 10 02 0004 00010001";
    // rping-default.pcap frame 6, the MPA Reply.
    const DEFAULT_REPLY: &str = "4d504120494420526570204672616d65 10 02 0004 00010001";
    // rping-crc.pcap frame 4: C set.
    const CRC_REQUEST: &str = "4d504120494420526571204672616d65 50 02 0004 00010001";
    // rping-cxgb.pcap frames 4 and 6: peer-to-peer with WRITE/READ RTR.
    const CXGB_REQUEST: &str = "4d504120494420526571204672616d65 50 02 0004 8001c001";
    const CXGB_REPLY: &str = "4d504120494420526570204672616d65 50 02 0004 80018001";
    // rping-mpav1.pcap frames 4 and 6: rev 1, C set, no private data.
    const V1_REQUEST: &str = "4d504120494420526571204672616d65 40 01 0000";
    const V1_REPLY: &str = "4d504120494420526570204672616d65 40 01 0000";

    fn check_roundtrip(bytes: &[u8]) -> FrameRepr<'_> {
        let (repr, len) = FrameRepr::parse_bytes(bytes).expect("parses");
        assert_eq!(len, bytes.len());
        assert_eq!(repr.buffer_len(), bytes.len());
        let mut out = vec![0xa5u8; repr.buffer_len()];
        repr.emit(&mut Frame::new_unchecked(&mut out[..]))
            .expect("emits");
        assert_eq!(out, bytes);
        repr
    }

    #[test]
    fn rping_default_request() {
        let bytes = hex(DEFAULT_REQUEST);
        let repr = check_roundtrip(&bytes);
        assert_eq!(
            repr,
            FrameRepr {
                kind: FrameKind::Request,
                markers: false,
                crc: false,
                reject: false,
                rev: 2,
                enhanced: Some(IrdOrd {
                    ird: 1,
                    ord: 1,
                    peer_to_peer: false,
                    rtr: RtrSet::EMPTY
                }),
                private_data: &[],
                reserved: 0,
            }
        );
    }

    #[test]
    fn rping_default_reply() {
        let bytes = hex(DEFAULT_REPLY);
        let repr = check_roundtrip(&bytes);
        assert_eq!(repr.kind, FrameKind::Reply);
        assert!(!repr.crc && !repr.markers && !repr.reject);
    }

    #[test]
    fn rping_crc_request() {
        let bytes = hex(CRC_REQUEST);
        let repr = check_roundtrip(&bytes);
        assert!(repr.crc);
        assert_eq!(repr.rev, 2);
    }

    #[test]
    fn rping_cxgb_request_and_reply() {
        let req = hex(CXGB_REQUEST);
        let repr = check_roundtrip(&req);
        let block = repr.enhanced.expect("enhanced");
        assert!(block.peer_to_peer);
        assert!(block.rtr.contains(Rtr::Write) && block.rtr.contains(Rtr::Read));
        let rep = hex(CXGB_REPLY);
        let repr = check_roundtrip(&rep);
        assert_eq!(repr.enhanced.map(|b| b.rtr), Some(RtrSet::only(Rtr::Write)));
    }

    #[test]
    fn rping_mpav1_request_and_reply() {
        for s in [V1_REQUEST, V1_REPLY] {
            let bytes = hex(s);
            let repr = check_roundtrip(&bytes);
            assert_eq!(repr.rev, 1);
            assert!(repr.crc);
            assert_eq!(repr.enhanced, None);
            assert_eq!(repr.pd_length(), 0);
        }
    }

    #[test]
    fn view_accessors() {
        let bytes = hex(CXGB_REPLY);
        let frame = Frame::new_checked(&bytes[..]).expect("checked");
        assert_eq!(frame.kind(), Some(FrameKind::Reply));
        assert_eq!(frame.flags(), 0x50);
        assert!(frame.crc() && frame.enhanced() && !frame.markers() && !frame.reject());
        assert_eq!(frame.rev(), 2);
        assert_eq!(frame.pd_length(), 4);
        assert_eq!(frame.private_data(), &[0x80, 0x01, 0x80, 0x01]);
        assert_eq!(frame.frame_len(), 24);
    }

    #[test]
    fn construct_into_prefilled_buffer() {
        let repr = FrameRepr {
            kind: FrameKind::Request,
            markers: true,
            crc: true,
            reject: false,
            rev: 2,
            enhanced: Some(IrdOrd {
                ird: 0x10,
                ord: 0x20,
                peer_to_peer: true,
                rtr: RtrSet::only(Rtr::Read),
            }),
            private_data: b"hello",
            reserved: 0,
        };
        let mut buf = vec![0xa5u8; repr.buffer_len() + 3];
        repr.emit(&mut Frame::new_unchecked(&mut buf[..]))
            .expect("emits");
        let mut expected = b"MPA ID Req Frame".to_vec();
        expected.extend_from_slice(&[0xd0, 0x02, 0x00, 0x09, 0x80, 0x10, 0x40, 0x20]);
        expected.extend_from_slice(b"hello");
        assert_eq!(&buf[..repr.buffer_len()], &expected[..]);
        // Bytes past the frame are untouched.
        assert_eq!(&buf[repr.buffer_len()..], &[0xa5; 3]);
    }

    #[test]
    fn reject_reply_flags() {
        let repr = FrameRepr {
            kind: FrameKind::Reply,
            reject: true,
            rev: 1,
            ..FrameRepr::default()
        };
        let bytes = repr.to_vec().expect("emits");
        assert_eq!(&bytes[16..], &[0x20, 0x01, 0x00, 0x00]);
    }

    #[test]
    fn reserved_bits_survive_a_roundtrip() {
        let mut bytes = hex(DEFAULT_REQUEST);
        bytes[16] |= 0x08; // siw's experimental GSO bit
        let repr = check_roundtrip(&bytes);
        assert_eq!(repr.reserved, 0x08);
        assert!(repr.enhanced.is_some());
    }

    #[test]
    fn truncated_header() {
        let bytes = hex(DEFAULT_REQUEST);
        for n in 0..HEADER_LEN {
            assert_eq!(
                Frame::new_checked(&bytes[..n]).err(),
                Some(Error::Truncated {
                    needed: HEADER_LEN,
                    have: n
                })
            );
        }
    }

    #[test]
    fn truncated_private_data() {
        let bytes = hex(DEFAULT_REQUEST);
        assert_eq!(
            Frame::new_checked(&bytes[..22]).err(),
            Some(Error::Truncated {
                needed: 24,
                have: 22
            })
        );
    }

    #[test]
    fn pd_length_over_512_refused_from_the_header_alone() {
        let mut bytes = hex(V1_REQUEST);
        bytes[18..20].copy_from_slice(&513u16.to_be_bytes());
        assert_eq!(
            Frame::new_checked(&bytes[..]).err(),
            Some(Error::PrivateDataTooLong { pd_length: 513 })
        );
        bytes[18..20].copy_from_slice(&0xffffu16.to_be_bytes());
        assert_eq!(
            Frame::new_checked(&bytes[..]).err(),
            Some(Error::PrivateDataTooLong { pd_length: 0xffff })
        );
    }

    #[test]
    fn pd_length_of_exactly_512_is_accepted() {
        let mut bytes = hex(V1_REQUEST);
        bytes[18..20].copy_from_slice(&512u16.to_be_bytes());
        bytes.resize(HEADER_LEN + 512, 0x33);
        let repr = check_roundtrip(&bytes);
        assert_eq!(repr.private_data.len(), 512);
    }

    #[test]
    fn bad_key() {
        let mut bytes = hex(DEFAULT_REQUEST);
        bytes[3] = b'X';
        assert_eq!(FrameRepr::parse_bytes(&bytes).err(), Some(Error::BadKey));
        let frame = Frame::new_checked(&bytes[..]).expect("length is fine");
        assert_eq!(frame.kind(), None);
    }

    #[test]
    fn enhanced_without_room_for_the_block() {
        let bytes = hex("4d504120494420526571204672616d65 10 02 0003 000100");
        assert_eq!(
            FrameRepr::parse_bytes(&bytes).err(),
            Some(Error::EnhancedTooShort { pd_length: 3 })
        );
    }

    #[test]
    fn trailing_bytes_are_not_part_of_the_frame() {
        let mut bytes = hex(DEFAULT_REPLY);
        bytes.extend_from_slice(&[0x00, 0x22, 0x41, 0x43]);
        let (_, len) = FrameRepr::parse_bytes(&bytes).expect("parses");
        assert_eq!(len, 24);
    }

    #[test]
    fn emit_refuses_oversized_private_data() {
        let pd = [0u8; 509];
        let repr = FrameRepr {
            enhanced: Some(IrdOrd::default()),
            private_data: &pd,
            rev: 2,
            ..FrameRepr::default()
        };
        assert_eq!(
            repr.to_vec().err(),
            Some(Error::PrivateDataTooLong { pd_length: 513 })
        );
        let repr = FrameRepr {
            enhanced: None,
            ..repr
        };
        assert_eq!(repr.to_vec().map(|v| v.len()), Ok(20 + 509));
    }

    #[test]
    fn emit_refuses_a_short_buffer_and_writes_nothing() {
        let repr = FrameRepr {
            private_data: b"abc",
            rev: 1,
            ..FrameRepr::default()
        };
        let mut buf = [0xa5u8; 22];
        assert_eq!(
            repr.emit(&mut Frame::new_unchecked(&mut buf[..])),
            Err(Error::BufferTooSmall {
                needed: 23,
                available: 22
            })
        );
        assert_eq!(buf, [0xa5; 22]);
    }

    #[test]
    fn emit_refuses_wide_ird() {
        let repr = FrameRepr {
            rev: 2,
            enhanced: Some(IrdOrd {
                ird: 0x4000,
                ..IrdOrd::default()
            }),
            ..FrameRepr::default()
        };
        let mut out = vec![1, 2, 3];
        assert!(repr.emit_to_vec(&mut out).is_err());
        assert_eq!(out, vec![1, 2, 3]);
    }

    #[test]
    fn display() {
        let bytes = hex(CXGB_REQUEST);
        let (repr, _) = FrameRepr::parse_bytes(&bytes).expect("parses");
        assert_eq!(
            repr.to_string(),
            "MPA Request rev 2 C enhanced (ird 1 ord 1 peer2peer WRITE-RTR READ-RTR) pd 0"
        );
    }

    fn arb_repr(pd: &[u8]) -> impl Strategy<Value = FrameRepr<'_>> {
        (
            any::<bool>(),
            any::<(bool, bool, bool)>(),
            any::<u8>(),
            proptest::option::of((0u16..=0x3fff, 0u16..=0x3fff, any::<u8>())),
            0..=pd.len(),
            0u8..16,
        )
            .prop_map(move |(reply, (m, c, r), rev, block, n, reserved)| {
                let enhanced = block.map(|(ird, ord, b)| IrdOrd {
                    ird,
                    ord,
                    peer_to_peer: b & 1 != 0,
                    rtr: RtrSet {
                        send: b & 2 != 0,
                        write: b & 4 != 0,
                        read: b & 8 != 0,
                    },
                });
                let max = if enhanced.is_some() { 508 } else { 512 };
                FrameRepr {
                    kind: if reply {
                        FrameKind::Reply
                    } else {
                        FrameKind::Request
                    },
                    markers: m,
                    crc: c,
                    reject: r,
                    rev,
                    enhanced,
                    private_data: &pd[..n.min(max)],
                    reserved,
                }
            })
    }

    const PD: [u8; 512] = {
        let mut pd = [0u8; 512];
        let mut i = 0;
        while i < 512 {
            pd[i] = (i * 7 + 3) as u8;
            i += 1;
        }
        pd
    };

    proptest! {
        #[test]
        fn parse_of_emit_is_identity(repr in arb_repr(&PD)) {
            let bytes = repr.to_vec().expect("emits");
            prop_assert_eq!(bytes.len(), repr.buffer_len());
            let (parsed, len) = FrameRepr::parse_bytes(&bytes).expect("parses");
            prop_assert_eq!(len, bytes.len());
            prop_assert_eq!(parsed, repr);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            if let Ok((repr, len)) = FrameRepr::parse_bytes(&bytes) {
                prop_assert!(len <= bytes.len());
                prop_assert_eq!(repr.to_vec().expect("re-emits"), &bytes[..len]);
            }
        }

        #[test]
        fn any_valid_header_and_pd_reemits(
            kind in any::<bool>(),
            flags in any::<u8>(),
            rev in any::<u8>(),
            pd in proptest::collection::vec(any::<u8>(), 0..=512),
        ) {
            let mut bytes = FrameKind::from(kind).key().to_vec();
            bytes.extend_from_slice(&[flags, rev]);
            bytes.extend_from_slice(&(pd.len() as u16).to_be_bytes());
            bytes.extend_from_slice(&pd);
            match FrameRepr::parse_bytes(&bytes) {
                Ok((repr, _)) => prop_assert_eq!(repr.to_vec().expect("re-emits"), bytes),
                Err(e) => {
                    prop_assert!(flags & flags::ENHANCED != 0 && pd.len() < 4);
                    prop_assert_eq!(e, Error::EnhancedTooShort { pd_length: pd.len() });
                }
            }
        }
    }

    impl From<bool> for FrameKind {
        fn from(reply: bool) -> Self {
            if reply {
                FrameKind::Reply
            } else {
                FrameKind::Request
            }
        }
    }
}
