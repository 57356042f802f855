//! The first octet of every DDP header (RFC 5041 sections 4.2 and 4.3):
//!
//! ```text
//!  0 1 2 3 4 5 6 7
//! +-+-+-+-+-+-+-+-+
//! |T|L| Rsvd  | DV|
//! +-+-+-+-+-+-+-+-+
//! ```
//!
//! The octet after it (RsvdULP) belongs to the ULP: RDMAP puts its version
//! and opcode there. DDP carries it opaque.

/// T: the segment uses the tagged buffer model.
pub const FLAG_TAGGED: u8 = 0x80;
/// L: the last segment of a DDP message.
pub const FLAG_LAST: u8 = 0x40;
/// Rsvd: sent as zero, not checked on receipt, kept by [`Control`].
pub const RSVD_MASK: u8 = 0x3c;
/// Where the reserved bits start in the control byte.
pub const RSVD_SHIFT: u32 = 2;
/// DV: the DDP version.
pub const VERSION_MASK: u8 = 0x03;

/// The one DDP version there is (RFC 5041).
pub const DDP_VERSION: u8 = 1;

/// A decoded control octet. Every bit of the octet is kept, so
/// `Control::from_byte(b).to_byte() == b` for all `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Control {
    /// T: the segment is tagged (placed by STag) rather than untagged (queued).
    pub tagged: bool,
    /// L: the segment ends its message.
    pub last: bool,
    /// The 4 reserved bits, `0..=0xf`.
    pub rsvd: u8,
    /// The DDP version, `0..=3`.
    pub version: u8,
}

impl Control {
    /// The fields of a control byte; reserved bits are kept.
    #[inline]
    pub const fn from_byte(b: u8) -> Self {
        Control {
            tagged: b & FLAG_TAGGED != 0,
            last: b & FLAG_LAST != 0,
            rsvd: (b & RSVD_MASK) >> RSVD_SHIFT,
            version: b & VERSION_MASK,
        }
    }

    /// The octet. Out-of-range `rsvd`/`version` values are masked to their
    /// field widths.
    #[inline]
    pub const fn to_byte(self) -> u8 {
        (if self.tagged { FLAG_TAGGED } else { 0 })
            | (if self.last { FLAG_LAST } else { 0 })
            | ((self.rsvd << RSVD_SHIFT) & RSVD_MASK)
            | (self.version & VERSION_MASK)
    }

    /// The header length this octet announces, if its version is known.
    #[inline]
    pub const fn header_len(self) -> Option<usize> {
        if self.version != DDP_VERSION {
            None
        } else if self.tagged {
            Some(super::TAGGED_HEADER_LEN)
        } else {
            Some(super::UNTAGGED_HEADER_LEN)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_octet_round_trips() {
        for b in 0..=255u8 {
            assert_eq!(Control::from_byte(b).to_byte(), b);
        }
    }

    #[test]
    fn siw_octets_decode() {
        // Tagged, last, DV 1: an RDMA Write or the last Read Response segment.
        let c = Control::from_byte(0xc1);
        assert!(c.tagged && c.last);
        assert_eq!((c.rsvd, c.version), (0, 1));
        // Untagged, last, DV 1: a Send, Read Request or Terminate.
        let c = Control::from_byte(0x41);
        assert!(!c.tagged && c.last);
        // Tagged, more to come: a middle Read Response segment.
        let c = Control::from_byte(0x81);
        assert!(c.tagged && !c.last);
    }

    #[test]
    fn reserved_bits_are_kept() {
        let c = Control::from_byte(0x3d);
        assert_eq!(c.rsvd, 0xf);
        assert_eq!(c.version, 1);
        assert!(!c.tagged && !c.last);
    }

    #[test]
    fn header_len_depends_on_model_and_version() {
        assert_eq!(Control::from_byte(0x81).header_len(), Some(14));
        assert_eq!(Control::from_byte(0x01).header_len(), Some(18));
        assert_eq!(Control::from_byte(0x80).header_len(), None);
        assert_eq!(Control::from_byte(0x42).header_len(), None);
        assert_eq!(Control::from_byte(0x43).header_len(), None);
    }

    #[test]
    fn to_byte_masks_wide_values() {
        let c = Control {
            tagged: false,
            last: false,
            rsvd: 0xff,
            version: 0xff,
        };
        assert_eq!(c.to_byte(), 0x3f);
    }
}
