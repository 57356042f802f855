//! The RDMAP control byte (RFC 5040): the second byte of every
//! DDP header, which DDP reserves for its upper layer.
//!
//! ```text
//!  0 1 2 3 4 5 6 7
//! +-+-+-+-+-+-+-+-+
//! |RV |RSV|OpCode |
//! +-+-+-+-+-+-+-+-+
//! ```

use crate::opcode::Opcode;

/// The only RDMAP version (RFC 5040).
pub const RDMAP_VERSION: u8 = 1;

const VERSION_SHIFT: u8 = 6;
const RESERVED_MASK: u8 = 0x30;
const OPCODE_MASK: u8 = 0x0f;

/// The raw control byte. Any byte is representable, so parsing a header
/// and emitting it again reproduces the reserved bits the peer sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Control(pub u8);

impl Control {
    /// Version 1, reserved bits zero, the given opcode.
    pub const fn new(opcode: Opcode) -> Control {
        Control((RDMAP_VERSION << VERSION_SHIFT) | opcode.bits())
    }

    /// The RDMAP version field (1 for RFC 5040).
    pub const fn version(self) -> u8 {
        self.0 >> VERSION_SHIFT
    }

    /// The two reserved bits, shifted down. Sent as zero, ignored on receipt.
    pub const fn reserved(self) -> u8 {
        (self.0 & RESERVED_MASK) >> 4
    }

    /// The operation the message carries.
    pub const fn opcode(self) -> Opcode {
        Opcode::from_bits(self.0 & OPCODE_MASK)
    }

    /// Whether this is an RDMAP version 1 header.
    pub const fn version_ok(self) -> bool {
        self.version() == RDMAP_VERSION
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn siw_send_byte() {
        // Byte 1 of every SEND in rping-default.pcap.
        let c = Control(0x43);
        assert_eq!(c.version(), 1);
        assert_eq!(c.opcode(), Opcode::Send);
        assert_eq!(c.reserved(), 0);
        assert_eq!(Control::new(Opcode::Send), c);
    }

    #[test]
    fn siw_bytes_from_captures() {
        assert_eq!(Control(0x40).opcode(), Opcode::RdmaWrite);
        assert_eq!(Control(0x41).opcode(), Opcode::ReadRequest);
        assert_eq!(Control(0x42).opcode(), Opcode::ReadResponse);
        assert_eq!(Control(0x47).opcode(), Opcode::Terminate);
    }

    #[test]
    fn other_versions_are_visible() {
        for v in [0u8, 2, 3] {
            let c = Control((v << 6) | 3);
            assert_eq!(c.version(), v);
            assert!(!c.version_ok());
        }
    }

    proptest! {
        #[test]
        fn new_has_version_one_and_no_reserved_bits(raw in 0u8..16) {
            let c = Control::new(Opcode::from_bits(raw));
            prop_assert!(c.version_ok());
            prop_assert_eq!(c.reserved(), 0);
            prop_assert_eq!(c.opcode().bits(), raw);
        }

        #[test]
        fn fields_recompose_the_byte(b in any::<u8>()) {
            let c = Control(b);
            prop_assert_eq!((c.version() << 6) | (c.reserved() << 4) | c.opcode().bits(), b);
        }
    }
}
