//! The Immediate Data header (RFC 7306): the 8-byte payload of an
//! Immediate Data or Immediate Data with Solicited Event message, a single
//! untagged DDP segment on queue 0.
//!
//! ```text
//! +-------------------------------+
//! | Immediate Data          (u64) |
//! +-------------------------------+
//! ```
//!
//! The verbs interface carries 32 bits of immediate data (`imm_data` of
//! `ibv_send_wr`/`ibv_wc`); they travel in the first four bytes, big
//! endian, and the other four are sent as zero and ignored on receipt
//! (the layout of Chelsio's completion entry, whose 64-bit immediate field
//! holds the 32-bit value first).

use ddp::wire::EmitError;

use super::WireError;

mod field {
    use core::ops::Range;
    pub const DATA: Range<usize> = 0..8;
}

/// Length of the header in bytes.
pub const HEADER_LEN: usize = field::DATA.end;

/// A checked view over an Immediate Data header.
///
/// After [`ImmediateData::new_checked`] succeeds no accessor can panic.
#[derive(Debug, Clone, Copy)]
pub struct ImmediateData<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ImmediateData<T> {
    /// A view without a length check: accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        ImmediateData { buffer }
    }

    /// A view after a length check: no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let v = Self::new_unchecked(buffer);
        v.check_len()?;
        Ok(v)
    }

    /// At least [`HEADER_LEN`] bytes.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// The 8 bytes of the message, as one big-endian number.
    #[inline]
    pub fn data(&self) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.buffer.as_ref()[field::DATA]);
        u64::from_be_bytes(a)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ImmediateData<T> {
    /// Writes the 8 bytes.
    #[inline]
    pub fn set_data(&mut self, v: u64) {
        self.buffer.as_mut()[field::DATA].copy_from_slice(&v.to_be_bytes());
    }
}

/// The immediate data one message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImmediateDataRepr {
    /// All 64 bits as on the wire.
    pub data: u64,
}

impl ImmediateDataRepr {
    /// The 32-bit verbs value in the first four bytes.
    pub const fn from_imm(imm: u32) -> Self {
        ImmediateDataRepr {
            data: (imm as u64) << 32,
        }
    }

    /// The 32-bit verbs value: the first four bytes.
    pub const fn imm(&self) -> u32 {
        (self.data >> 32) as u32
    }

    /// Reads a checked Immediate Data header.
    pub fn parse<T: AsRef<[u8]>>(view: &ImmediateData<T>) -> Result<Self, WireError> {
        view.check_len()?;
        Ok(ImmediateDataRepr { data: view.data() })
    }

    /// Bytes it takes on the wire.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the front of `out`. A buffer shorter than
    /// [`HEADER_LEN`] is refused with nothing written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, EmitError> {
        EmitError::check(out, HEADER_LEN)?;
        ImmediateData::new_unchecked(&mut out[..HEADER_LEN]).set_data(self.data);
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_verbs_value_travels_first() {
        let r = ImmediateDataRepr::from_imm(0x1122_3344);
        let mut out = [0xa5u8; 9];
        assert_eq!(r.emit(&mut out), Ok(8));
        assert_eq!(out, [0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 0xa5]);
        let back = ImmediateDataRepr::parse(&ImmediateData::new_checked(&out[..8]).unwrap());
        assert_eq!(back.map(|r| r.imm()), Ok(0x1122_3344));
    }

    #[test]
    fn the_low_word_is_kept_but_not_the_verbs_value() {
        let b = [0, 0, 0, 7, 0xde, 0xad, 0xbe, 0xef];
        let r = ImmediateDataRepr::parse(&ImmediateData::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!((r.data, r.imm()), (0x0000_0007_dead_beef, 7));
    }

    proptest! {
        #[test]
        fn round_trip(data in any::<u64>()) {
            let r = ImmediateDataRepr { data };
            let mut out = [0xa5u8; HEADER_LEN];
            prop_assert_eq!(r.emit(&mut out), Ok(HEADER_LEN));
            prop_assert_eq!(ImmediateDataRepr::parse(&ImmediateData::new_checked(&out[..]).unwrap()), Ok(r));
        }

        #[test]
        fn short_buffers_are_refused_untouched(data in any::<u64>(), n in 0usize..HEADER_LEN) {
            let r = ImmediateDataRepr { data };
            let mut out = vec![0xa5u8; n];
            prop_assert_eq!(r.emit(&mut out), Err(EmitError { len: n, needed: HEADER_LEN }));
            prop_assert!(out.iter().all(|&b| b == 0xa5));
            prop_assert_eq!(ImmediateData::new_checked(&out[..]).err(), Some(WireError::Truncated));
        }
    }
}
