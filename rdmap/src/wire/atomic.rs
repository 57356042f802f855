//! The Atomic Operation Request and Response headers (RFC 7306): the
//! payloads of single untagged DDP segments, the request on queue 1 (with
//! RDMA Read Requests), the response on queue 3.
//!
//! ```text
//! Atomic Operation Request (52 bytes)    Atomic Operation Response (12 bytes)
//! +----------------------------------+   +---------------------------------+
//! | Reserved (28 bits) | AOpCode (4) |   | Original Request Identifier u32 |
//! | Request Identifier         (u32) |   | Original Remote Data Value  u64 |
//! | Remote STag                (u32) |   +---------------------------------+
//! | Remote Tagged Offset       (u64) |
//! | Add or Swap Data           (u64) |
//! | Add or Swap Mask           (u64) |
//! | Compare Data               (u64) |
//! | Compare Mask               (u64) |
//! +----------------------------------+
//! ```
//!
//! Every operand is 64 bits at an 8-byte aligned tagged offset. Reserved
//! bits are sent as zero and ignored on receipt; an AOpCode this stack does
//! not know is kept ([`AtomicOp::Unknown`]) so that the responder can
//! answer it with a TERMINATE instead of losing it in the parser.

use ddp::memory::STag;
use ddp::wire::EmitError;

use super::WireError;

mod field {
    use core::ops::Range;
    pub const AOPCODE: Range<usize> = 0..4;
    pub const REQUEST_ID: Range<usize> = 4..8;
    pub const STAG: Range<usize> = 8..12;
    pub const TO: Range<usize> = 12..20;
    pub const ADD_SWAP_DATA: Range<usize> = 20..28;
    pub const ADD_SWAP_MASK: Range<usize> = 28..36;
    pub const COMPARE_DATA: Range<usize> = 36..44;
    pub const COMPARE_MASK: Range<usize> = 44..52;

    pub const ORIGINAL_ID: Range<usize> = 0..4;
    pub const ORIGINAL_VALUE: Range<usize> = 4..12;
}

/// Length of the Atomic Operation Request header.
pub const REQUEST_LEN: usize = field::COMPARE_MASK.end;
/// Length of the Atomic Operation Response header.
pub const RESPONSE_LEN: usize = field::ORIGINAL_VALUE.end;
/// Size and alignment of every atomic operand.
pub const OPERAND_LEN: usize = 8;

fn be32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    u32::from_be_bytes(a)
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_be_bytes(a)
}

/// The atomic operation (AOpCode, the low four bits of the first word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Add (with carries cut where the Add Mask says), return the original.
    FetchAdd,
    /// Replace the bits the Swap Mask selects, return the original.
    Swap,
    /// Swap as above if the bits the Compare Mask selects equal Compare
    /// Data; return the original either way.
    CmpSwap,
    /// A reserved code point, kept as received.
    Unknown(u8),
}

impl AtomicOp {
    /// An AOpCode from its low four bits (the bits above are reserved).
    pub const fn from_bits(raw: u8) -> AtomicOp {
        match raw & 0x0f {
            0 => AtomicOp::FetchAdd,
            1 => AtomicOp::Swap,
            2 => AtomicOp::CmpSwap,
            other => AtomicOp::Unknown(other),
        }
    }

    /// The AOpCode as the four bits on the wire.
    pub const fn bits(self) -> u8 {
        match self {
            AtomicOp::FetchAdd => 0,
            AtomicOp::Swap => 1,
            AtomicOp::CmpSwap => 2,
            AtomicOp::Unknown(raw) => raw & 0x0f,
        }
    }
}

impl core::fmt::Display for AtomicOp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AtomicOp::FetchAdd => f.write_str("FetchAdd"),
            AtomicOp::Swap => f.write_str("Swap"),
            AtomicOp::CmpSwap => f.write_str("CmpSwap"),
            AtomicOp::Unknown(raw) => write!(f, "AOpCode {raw:#x}"),
        }
    }
}

/// A checked view over an Atomic Operation Request header.
///
/// After [`AtomicRequest::new_checked`] succeeds no accessor can panic.
#[derive(Debug, Clone, Copy)]
pub struct AtomicRequest<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> AtomicRequest<T> {
    /// A view without a length check: accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        AtomicRequest { buffer }
    }

    /// A view after a length check: no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let v = Self::new_unchecked(buffer);
        v.check_len()?;
        Ok(v)
    }

    /// At least [`REQUEST_LEN`] bytes.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < REQUEST_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// The raw AOpCode.
    #[inline]
    pub fn aopcode(&self) -> u8 {
        // The low nibble of the first word; the 28 bits above are reserved.
        (be32(&self.buffer.as_ref()[field::AOPCODE]) & 0x0f) as u8
    }
    /// The 28 reserved bits above the AOpCode.
    #[inline]
    pub fn reserved(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::AOPCODE]) >> 4
    }
    /// Chosen by the requester, echoed in the response.
    #[inline]
    pub fn request_id(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::REQUEST_ID])
    }
    /// The target region.
    #[inline]
    pub fn stag(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::STAG])
    }
    /// The tagged offset of the 8 target bytes.
    #[inline]
    pub fn to(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::TO])
    }
    /// FetchAdd: the addend; Swap and CmpSwap: the new bits.
    #[inline]
    pub fn add_swap_data(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::ADD_SWAP_DATA])
    }
    /// FetchAdd: where carries stop; Swap and CmpSwap: the bits replaced.
    #[inline]
    pub fn add_swap_mask(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::ADD_SWAP_MASK])
    }
    /// CmpSwap: the value compared against.
    #[inline]
    pub fn compare_data(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::COMPARE_DATA])
    }
    /// CmpSwap: the bits compared.
    #[inline]
    pub fn compare_mask(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::COMPARE_MASK])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AtomicRequest<T> {
    /// Sets the first word: 28 reserved bits, then the AOpCode.
    #[inline]
    pub fn set_aopcode_word(&mut self, reserved: u32, aopcode: u8) {
        let word = (reserved << 4) | u32::from(aopcode & 0x0f);
        self.buffer.as_mut()[field::AOPCODE].copy_from_slice(&word.to_be_bytes());
    }
    /// Writes the request id.
    #[inline]
    pub fn set_request_id(&mut self, v: u32) {
        self.buffer.as_mut()[field::REQUEST_ID].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the target STag.
    #[inline]
    pub fn set_stag(&mut self, v: u32) {
        self.buffer.as_mut()[field::STAG].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the target offset.
    #[inline]
    pub fn set_to(&mut self, v: u64) {
        self.buffer.as_mut()[field::TO].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the add or swap data.
    #[inline]
    pub fn set_add_swap_data(&mut self, v: u64) {
        self.buffer.as_mut()[field::ADD_SWAP_DATA].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the add or swap mask.
    #[inline]
    pub fn set_add_swap_mask(&mut self, v: u64) {
        self.buffer.as_mut()[field::ADD_SWAP_MASK].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the compare data.
    #[inline]
    pub fn set_compare_data(&mut self, v: u64) {
        self.buffer.as_mut()[field::COMPARE_DATA].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the compare mask.
    #[inline]
    pub fn set_compare_mask(&mut self, v: u64) {
        self.buffer.as_mut()[field::COMPARE_MASK].copy_from_slice(&v.to_be_bytes());
    }
}

/// What an Atomic Operation Request asks of the responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicRequestRepr {
    /// The operation.
    pub op: AtomicOp,
    /// The 28 reserved bits above the AOpCode: zero from us, kept as
    /// received (so a parsed request re-emits unchanged) and otherwise
    /// ignored.
    pub reserved: u32,
    /// Chosen by the requester; the response carries it back.
    pub request_id: u32,
    /// The target region.
    pub stag: STag,
    /// The tagged offset of the 8 target bytes.
    pub to: u64,
    /// FetchAdd: the addend; Swap and CmpSwap: the new bits.
    pub add_swap_data: u64,
    /// FetchAdd: where carries stop; Swap and CmpSwap: the bits replaced.
    pub add_swap_mask: u64,
    /// CmpSwap: the value compared against.
    pub compare_data: u64,
    /// CmpSwap: the bits compared.
    pub compare_mask: u64,
}

impl AtomicRequestRepr {
    /// Reads a checked request.
    pub fn parse<T: AsRef<[u8]>>(view: &AtomicRequest<T>) -> Result<Self, WireError> {
        view.check_len()?;
        Ok(AtomicRequestRepr {
            op: AtomicOp::from_bits(view.aopcode()),
            reserved: view.reserved(),
            request_id: view.request_id(),
            stag: STag(view.stag()),
            to: view.to(),
            add_swap_data: view.add_swap_data(),
            add_swap_mask: view.add_swap_mask(),
            compare_data: view.compare_data(),
            compare_mask: view.compare_mask(),
        })
    }

    /// Bytes the request takes on the wire.
    pub const fn buffer_len(&self) -> usize {
        REQUEST_LEN
    }

    /// Writes the header into the front of `out` (the reserved bits from
    /// `reserved`, masked to 28). A buffer shorter than [`REQUEST_LEN`] is
    /// refused with nothing written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, EmitError> {
        EmitError::check(out, REQUEST_LEN)?;
        let mut v = AtomicRequest::new_unchecked(&mut out[..REQUEST_LEN]);
        v.set_aopcode_word(self.reserved & 0x0fff_ffff, self.op.bits());
        v.set_request_id(self.request_id);
        v.set_stag(self.stag.0);
        v.set_to(self.to);
        v.set_add_swap_data(self.add_swap_data);
        v.set_add_swap_mask(self.add_swap_mask);
        v.set_compare_data(self.compare_data);
        v.set_compare_mask(self.compare_mask);
        Ok(REQUEST_LEN)
    }

    /// The value the target holds after the operation, given the value
    /// `original` it held before; `None` for an unknown operation.
    pub fn apply(&self, original: u64) -> Option<u64> {
        let swap =
            |old: u64| (old & !self.add_swap_mask) | (self.add_swap_data & self.add_swap_mask);
        match self.op {
            AtomicOp::FetchAdd => {
                Some(masked_add(original, self.add_swap_data, self.add_swap_mask))
            }
            AtomicOp::Swap => Some(swap(original)),
            AtomicOp::CmpSwap => {
                let equal = (original ^ self.compare_data) & self.compare_mask == 0;
                Some(if equal { swap(original) } else { original })
            }
            AtomicOp::Unknown(_) => None,
        }
    }
}

/// `a + b` where a set bit of `mask` marks the most significant bit of a
/// field: no carry crosses from it into the next bit, so one 64-bit add
/// performs several independent narrower ones. A zero mask is a plain
/// wrapping 64-bit add.
pub fn masked_add(a: u64, b: u64, mask: u64) -> u64 {
    if mask == 0 {
        return a.wrapping_add(b);
    }
    let mut out = 0u64;
    let mut start = 0u32;
    // Fields end at each set mask bit and at bit 63.
    while start < 64 {
        let rest = mask >> start;
        let end = if rest == 0 {
            63
        } else {
            start + rest.trailing_zeros()
        };
        let width = end - start + 1;
        let field = if width == 64 {
            u64::MAX
        } else {
            ((1u64 << width) - 1) << start
        };
        out |= ((a & field).wrapping_add(b & field)) & field;
        start = end + 1;
    }
    out
}

/// A checked view over an Atomic Operation Response header.
///
/// After [`AtomicResponse::new_checked`] succeeds no accessor can panic.
#[derive(Debug, Clone, Copy)]
pub struct AtomicResponse<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> AtomicResponse<T> {
    /// A view without a length check: accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        AtomicResponse { buffer }
    }

    /// A view after a length check: no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let v = Self::new_unchecked(buffer);
        v.check_len()?;
        Ok(v)
    }

    /// At least [`RESPONSE_LEN`] bytes.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < RESPONSE_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// The request id this answers.
    #[inline]
    pub fn original_request_id(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::ORIGINAL_ID])
    }
    /// The target's value before the operation.
    #[inline]
    pub fn original_value(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::ORIGINAL_VALUE])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AtomicResponse<T> {
    /// Writes the request id answered.
    #[inline]
    pub fn set_original_request_id(&mut self, v: u32) {
        self.buffer.as_mut()[field::ORIGINAL_ID].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes the original value.
    #[inline]
    pub fn set_original_value(&mut self, v: u64) {
        self.buffer.as_mut()[field::ORIGINAL_VALUE].copy_from_slice(&v.to_be_bytes());
    }
}

/// The responder's answer: the target's value before the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicResponseRepr {
    /// The request id this answers.
    pub request_id: u32,
    /// The target's value before the operation.
    pub original: u64,
}

impl AtomicResponseRepr {
    /// Reads a checked response.
    pub fn parse<T: AsRef<[u8]>>(view: &AtomicResponse<T>) -> Result<Self, WireError> {
        view.check_len()?;
        Ok(AtomicResponseRepr {
            request_id: view.original_request_id(),
            original: view.original_value(),
        })
    }

    /// Bytes the response takes on the wire.
    pub const fn buffer_len(&self) -> usize {
        RESPONSE_LEN
    }

    /// Writes the header into the front of `out`. A buffer shorter than
    /// [`RESPONSE_LEN`] is refused with nothing written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, EmitError> {
        EmitError::check(out, RESPONSE_LEN)?;
        let mut v = AtomicResponse::new_unchecked(&mut out[..RESPONSE_LEN]);
        v.set_original_request_id(self.request_id);
        v.set_original_value(self.original);
        Ok(RESPONSE_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn request(op: AtomicOp) -> AtomicRequestRepr {
        AtomicRequestRepr {
            op,
            reserved: 0,
            request_id: 0x0102_0304,
            stag: STag(0x1122_3344),
            to: 0x0000_7f00_0000_1008,
            add_swap_data: 0xa1a2_a3a4_a5a6_a7a8,
            add_swap_mask: 0xb1b2_b3b4_b5b6_b7b8,
            compare_data: 0xc1c2_c3c4_c5c6_c7c8,
            compare_mask: 0xd1d2_d3d4_d5d6_d7d8,
        }
    }

    #[test]
    fn request_field_offsets() {
        let mut out = [0xa5u8; REQUEST_LEN + 2];
        assert_eq!(request(AtomicOp::CmpSwap).emit(&mut out), Ok(REQUEST_LEN));
        let want: Vec<u8> = [
            &[0, 0, 0, 2][..],
            &[1, 2, 3, 4],
            &[0x11, 0x22, 0x33, 0x44],
            &[0, 0, 0x7f, 0, 0, 0, 0x10, 0x08],
            &[0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8],
            &[0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8],
            &[0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8],
            &[0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8],
            &[0xa5, 0xa5],
        ]
        .concat();
        assert_eq!(&out[..], &want[..]);
    }

    #[test]
    fn reserved_bits_and_unknown_opcodes_are_kept() {
        let mut out = [0u8; REQUEST_LEN];
        request(AtomicOp::FetchAdd).emit(&mut out).unwrap();
        out[0] = 0xff;
        out[3] = 0xf7;
        let r = AtomicRequestRepr::parse(&AtomicRequest::new_checked(&out[..]).unwrap()).unwrap();
        assert_eq!(r.op, AtomicOp::Unknown(7));
        assert_eq!(r.reserved, 0x0ff0_000f);
        let mut again = [0u8; REQUEST_LEN];
        r.emit(&mut again).unwrap();
        assert_eq!(again, out, "reserved bits kept");
        assert_eq!(r.apply(5), None);
        for raw in 0u8..16 {
            assert_eq!(AtomicOp::from_bits(raw).bits(), raw);
        }
    }

    #[test]
    fn response_field_offsets() {
        let r = AtomicResponseRepr {
            request_id: 9,
            original: 0x0102_0304_0506_0708,
        };
        let mut out = [0xa5u8; RESPONSE_LEN + 1];
        assert_eq!(r.emit(&mut out), Ok(RESPONSE_LEN));
        assert_eq!(out, [0, 0, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8, 0xa5]);
    }

    #[test]
    fn operations() {
        let all = u64::MAX;
        let mut r = request(AtomicOp::FetchAdd);
        (r.add_swap_data, r.add_swap_mask) = (5, 0);
        assert_eq!(r.apply(u64::MAX - 1), Some(3));
        r.op = AtomicOp::Swap;
        (r.add_swap_data, r.add_swap_mask) = (0xabcd, all);
        assert_eq!(r.apply(7), Some(0xabcd));
        r.add_swap_mask = 0xff;
        assert_eq!(r.apply(0x1100), Some(0x11cd));
        r.op = AtomicOp::CmpSwap;
        (r.compare_data, r.compare_mask, r.add_swap_mask) = (7, all, all);
        assert_eq!(r.apply(7), Some(0xabcd));
        assert_eq!(r.apply(8), Some(8));
        // Only the compared bits count.
        (r.compare_data, r.compare_mask) = (0xff07, 0xff);
        assert_eq!(r.apply(0x0007), Some(0xabcd));
    }

    #[test]
    fn masked_add_keeps_fields_apart() {
        // Two 32-bit counters: the low one wraps without carrying.
        let mask = 1u64 << 31;
        let a = 0x0000_0001_ffff_ffff;
        assert_eq!(masked_add(a, 1, mask), 0x0000_0001_0000_0000);
        assert_eq!(masked_add(a, 1 << 32, mask), 0x0000_0002_ffff_ffff);
        // Every bit its own field: addition becomes xor.
        assert_eq!(masked_add(0b1011, 0b0110, u64::MAX), 0b1101);
        // The top bit marked: the same as no mask.
        assert_eq!(masked_add(u64::MAX, 2, 1 << 63), 1);
    }

    proptest! {
        #[test]
        fn requests_round_trip(op in 0u8..16, id in any::<u32>(), stag in any::<u32>(), to in any::<u64>(),
                               a in any::<u64>(), b in any::<u64>(), c in any::<u64>(), d in any::<u64>()) {
            let r = AtomicRequestRepr { op: AtomicOp::from_bits(op), reserved: id >> 4, request_id: id, stag: STag(stag), to,
                add_swap_data: a, add_swap_mask: b, compare_data: c, compare_mask: d };
            let mut out = [0xa5u8; REQUEST_LEN];
            prop_assert_eq!(r.emit(&mut out), Ok(REQUEST_LEN));
            prop_assert_eq!(AtomicRequestRepr::parse(&AtomicRequest::new_checked(&out[..]).unwrap()), Ok(r));
        }

        #[test]
        fn responses_round_trip(id in any::<u32>(), v in any::<u64>()) {
            let r = AtomicResponseRepr { request_id: id, original: v };
            let mut out = [0xa5u8; RESPONSE_LEN];
            prop_assert_eq!(r.emit(&mut out), Ok(RESPONSE_LEN));
            prop_assert_eq!(AtomicResponseRepr::parse(&AtomicResponse::new_checked(&out[..]).unwrap()), Ok(r));
        }

        #[test]
        fn short_buffers_are_refused_untouched(n in 0usize..REQUEST_LEN) {
            let mut out = vec![0xa5u8; n];
            prop_assert_eq!(request(AtomicOp::Swap).emit(&mut out), Err(EmitError { len: n, needed: REQUEST_LEN }));
            prop_assert!(out.iter().all(|&b| b == 0xa5));
            prop_assert!(AtomicRequest::new_checked(&out[..]).is_err());
            let r = AtomicResponseRepr { request_id: 1, original: 2 };
            let m = n.min(RESPONSE_LEN - 1);
            let mut short = vec![0xa5u8; m];
            prop_assert_eq!(r.emit(&mut short), Err(EmitError { len: m, needed: RESPONSE_LEN }));
            prop_assert!(short.iter().all(|&b| b == 0xa5));
            prop_assert!(AtomicResponse::new_checked(&short[..]).is_err());
        }

        #[test]
        fn masked_add_is_fieldwise(a in any::<u64>(), b in any::<u64>(), mask in any::<u64>()) {
            let sum = masked_add(a, b, mask);
            // Each field computed on its own equals the same bits of the result.
            let mut start = 0u32;
            while start < 64 {
                let rest = mask >> start;
                let end = if rest == 0 { 63 } else { start + rest.trailing_zeros() };
                let width = end - start + 1;
                let m = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
                let want = ((a >> start) & m).wrapping_add((b >> start) & m) & m;
                prop_assert_eq!((sum >> start) & m, want);
                start = end + 1;
            }
            if mask == 0 { prop_assert_eq!(sum, a.wrapping_add(b)); }
        }
    }
}
