//! The RDMA Read Request header (RFC 5040): the 28-byte
//! payload of an untagged DDP segment on queue 1.
//!
//! ```text
//! +-------------------------------+
//! | Data Sink STag          (u32) |
//! | Data Sink Tagged Offset (u64) |
//! | RDMA Read Message Size  (u32) |
//! | Data Source STag        (u32) |
//! | Data Source Tagged Offset(u64)|
//! +-------------------------------+
//! ```

use ddp::memory::STag;
use ddp::wire::EmitError;

use super::WireError;

mod field {
    use core::ops::Range;
    pub const SINK_STAG: Range<usize> = 0..4;
    pub const SINK_TO: Range<usize> = 4..12;
    pub const SIZE: Range<usize> = 12..16;
    pub const SOURCE_STAG: Range<usize> = 16..20;
    pub const SOURCE_TO: Range<usize> = 20..28;
}

/// Length of the header in bytes.
pub const HEADER_LEN: usize = field::SOURCE_TO.end;

/// A checked view over a Read Request header.
///
/// After [`ReadRequest::new_checked`] succeeds no accessor can panic.
#[derive(Debug, Clone, Copy)]
pub struct ReadRequest<T: AsRef<[u8]>> {
    buffer: T,
}

#[inline]
fn be32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    u32::from_be_bytes(a)
}

#[inline]
fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_be_bytes(a)
}

impl<T: AsRef<[u8]>> ReadRequest<T> {
    /// A view without a length check: accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        ReadRequest { buffer }
    }

    /// A view after a length check: no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let r = Self::new_unchecked(buffer);
        r.check_len()?;
        Ok(r)
    }

    /// At least [`HEADER_LEN`] bytes.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// The buffer the view was made over.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The requester's buffer the data goes to.
    #[inline]
    pub fn sink_stag(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::SINK_STAG])
    }
    /// The tagged offset in the sink.
    #[inline]
    pub fn sink_to(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::SINK_TO])
    }
    /// Bytes to read.
    #[inline]
    pub fn read_size(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::SIZE])
    }
    /// The responder's buffer the data comes from.
    #[inline]
    pub fn source_stag(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::SOURCE_STAG])
    }
    /// The tagged offset in the source.
    #[inline]
    pub fn source_to(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::SOURCE_TO])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ReadRequest<T> {
    /// Writes the sink STag.
    #[inline]
    pub fn set_sink_stag(&mut self, v: u32) {
        self.buffer.as_mut()[field::SINK_STAG].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the sink offset.
    #[inline]
    pub fn set_sink_to(&mut self, v: u64) {
        self.buffer.as_mut()[field::SINK_TO].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the read size.
    #[inline]
    pub fn set_read_size(&mut self, v: u32) {
        self.buffer.as_mut()[field::SIZE].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the source STag.
    #[inline]
    pub fn set_source_stag(&mut self, v: u32) {
        self.buffer.as_mut()[field::SOURCE_STAG].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the source offset.
    #[inline]
    pub fn set_source_to(&mut self, v: u64) {
        self.buffer.as_mut()[field::SOURCE_TO].copy_from_slice(&v.to_be_bytes());
    }
}

/// What a Read Request asks for: `size` bytes from the requester's view of
/// the peer's `source` buffer into its own `sink` buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadRequestRepr {
    /// The requester's buffer the data goes to.
    pub sink_stag: STag,
    /// The tagged offset in the sink.
    pub sink_to: u64,
    /// Bytes to read.
    pub size: u32,
    /// The responder's buffer the data comes from.
    pub source_stag: STag,
    /// The tagged offset in the source.
    pub source_to: u64,
}

impl ReadRequestRepr {
    /// Reads a checked Read Request header.
    pub fn parse<T: AsRef<[u8]>>(view: &ReadRequest<T>) -> Result<Self, WireError> {
        view.check_len()?;
        Ok(ReadRequestRepr {
            sink_stag: STag(view.sink_stag()),
            sink_to: view.sink_to(),
            size: view.read_size(),
            source_stag: STag(view.source_stag()),
            source_to: view.source_to(),
        })
    }

    /// Bytes it takes on the wire.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the front of the view's buffer. A buffer
    /// shorter than [`HEADER_LEN`] is refused with nothing written.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut ReadRequest<T>,
    ) -> Result<(), EmitError> {
        EmitError::check(view.buffer.as_ref(), self.buffer_len())?;
        self.write_fields(view);
        Ok(())
    }

    /// The header as bytes (the array's length is the check `emit` makes).
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        self.write_fields(&mut ReadRequest::new_unchecked(&mut out[..]));
        out
    }

    /// Every field; the caller has checked the length.
    fn write_fields<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut ReadRequest<T>) {
        view.set_sink_stag(self.sink_stag.0);
        view.set_sink_to(self.sink_to);
        view.set_read_size(self.size);
        view.set_source_stag(self.source_stag.0);
        view.set_source_to(self.source_to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The Read Request payload of frame 9 of rping-mismatch-crc.pcap.
    const SIW_READ_REQUEST: [u8; 28] = [
        0x16, 0x5d, 0xf5, 0x00, 0x00, 0x00, 0x55, 0xb3, 0xab, 0xb6, 0x2f, 0x30, 0x00, 0x00, 0x00,
        0x64, 0xcb, 0x24, 0x17, 0x00, 0x00, 0x00, 0x55, 0xfc, 0xbe, 0x17, 0x07, 0x00,
    ];

    #[test]
    fn parse_siw_read_request() {
        let v = ReadRequest::new_checked(&SIW_READ_REQUEST[..]).unwrap();
        let r = ReadRequestRepr::parse(&v).unwrap();
        assert_eq!(
            r,
            ReadRequestRepr {
                sink_stag: STag(0x165d_f500),
                sink_to: 0x0000_55b3_abb6_2f30,
                size: 100,
                source_stag: STag(0xcb24_1700),
                source_to: 0x0000_55fc_be17_0700,
            }
        );
        assert_eq!(r.sink_stag.key(), 0, "siw user registrations have key 0");
    }

    #[test]
    fn emit_into_poisoned_buffer() {
        let r = ReadRequestRepr::parse(&ReadRequest::new_unchecked(&SIW_READ_REQUEST[..])).unwrap();
        let mut buf = [0xa5u8; HEADER_LEN];
        r.emit(&mut ReadRequest::new_checked(&mut buf[..]).unwrap())
            .unwrap();
        assert_eq!(buf, SIW_READ_REQUEST);
        assert_eq!(r.to_bytes(), SIW_READ_REQUEST);
    }

    #[test]
    fn emit_refuses_a_buffer_one_byte_short() {
        let r = ReadRequestRepr::parse(&ReadRequest::new_checked(&SIW_READ_REQUEST[..]).unwrap())
            .unwrap();
        let mut short = [0xa5u8; HEADER_LEN - 1];
        assert_eq!(
            r.emit(&mut ReadRequest::new_unchecked(&mut short[..])),
            Err(EmitError {
                len: HEADER_LEN - 1,
                needed: HEADER_LEN
            })
        );
        assert_eq!(short, [0xa5u8; HEADER_LEN - 1], "nothing written");
    }

    #[test]
    fn emit_fills_exactly_buffer_len() {
        // Two pre-fills, one result: no byte of the header is left unwritten.
        let r = ReadRequestRepr::parse(&ReadRequest::new_checked(&SIW_READ_REQUEST[..]).unwrap())
            .unwrap();
        let mut a = vec![0xa5u8; r.buffer_len()];
        let mut b = vec![0x5au8; r.buffer_len()];
        r.emit(&mut ReadRequest::new_unchecked(&mut a[..])).unwrap();
        r.emit(&mut ReadRequest::new_unchecked(&mut b[..])).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, SIW_READ_REQUEST);
    }

    #[test]
    fn short_buffer_is_truncated_at_every_length() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                ReadRequest::new_checked(&SIW_READ_REQUEST[..n]).err(),
                Some(WireError::Truncated)
            );
        }
    }

    #[test]
    fn field_offsets() {
        let r = ReadRequestRepr {
            sink_stag: STag(0x0102_0304),
            sink_to: 0x1112_1314_1516_1718,
            size: 0x2122_2324,
            source_stag: STag(0x3132_3334),
            source_to: 0x4142_4344_4546_4748,
        };
        let b = r.to_bytes();
        assert_eq!(&b[0..4], &[1, 2, 3, 4]);
        assert_eq!(&b[4..12], &[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]);
        assert_eq!(&b[12..16], &[0x21, 0x22, 0x23, 0x24]);
        assert_eq!(&b[16..20], &[0x31, 0x32, 0x33, 0x34]);
        assert_eq!(
            &b[20..28],
            &[0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48]
        );
    }

    proptest! {
        #[test]
        fn round_trip(a in any::<u32>(), b in any::<u64>(), c in any::<u32>(), d in any::<u32>(), e in any::<u64>()) {
            let r = ReadRequestRepr { sink_stag: STag(a), sink_to: b, size: c, source_stag: STag(d), source_to: e };
            let mut bytes = [0xa5u8; HEADER_LEN];
            r.emit(&mut ReadRequest::new_unchecked(&mut bytes[..])).unwrap();
            prop_assert_eq!(bytes, r.to_bytes());
            let back = ReadRequestRepr::parse(&ReadRequest::new_checked(&bytes[..]).unwrap()).unwrap();
            prop_assert_eq!(back, r);
        }

        #[test]
        fn bytes_round_trip(bytes in proptest::collection::vec(any::<u8>(), HEADER_LEN)) {
            let r = ReadRequestRepr::parse(&ReadRequest::new_checked(&bytes[..]).unwrap()).unwrap();
            prop_assert_eq!(&r.to_bytes()[..], &bytes[..]);
        }
    }
}
