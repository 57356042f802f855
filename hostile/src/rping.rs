//! The one message rping exchanges: `struct rping_rdma_info` from
//! rdma-core's rping.c, a buffer advertisement of 16 bytes.
//!
//! ```text
//!  0               8          12         16
//! +---------------+----------+----------+
//! | buf (BE64)    | rkey BE32| size BE32|
//! +---------------+----------+----------+
//! ```
//!
//! The client sends one per phase of a ping (its source buffer, then its
//! sink buffer); the server's "go ahead" messages are the same 16 bytes,
//! never filled in by rping (all zero), and only their length is checked.
//! `iwarp rping` speaks it, and the hostile peer plays rping's halves with
//! it around its cases.

/// Bytes in every rping message; a receive of any other length is bogus.
pub const INFO_LEN: usize = 16;

mod field {
    use core::ops::Range;
    pub const BUF: Range<usize> = 0..8;
    pub const RKEY: Range<usize> = 8..12;
    pub const SIZE: Range<usize> = 12..16;
}

/// A buffer advertisement: where the peer may read or write, and how much.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RdmaInfo {
    /// Tagged offset (virtual address) of the buffer's first byte.
    pub addr: u64,
    /// The STag (rkey) naming the buffer.
    pub rkey: u32,
    /// Bytes the peer is told to move.
    pub size: u32,
}

/// Why 16 bytes could not be read as an [`RdmaInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rping message of {0} bytes (expected {INFO_LEN})")]
pub struct WrongLength(pub usize);

impl RdmaInfo {
    /// The server's "go ahead": rping never formats the server's send
    /// buffer, so every field is zero on the wire.
    pub const GO_AHEAD: RdmaInfo = RdmaInfo {
        addr: 0,
        rkey: 0,
        size: 0,
    };

    /// Reads a message; it must be exactly [`INFO_LEN`] bytes.
    pub fn parse(bytes: &[u8]) -> Result<RdmaInfo, WrongLength> {
        let b: &[u8; INFO_LEN] = bytes.try_into().map_err(|_| WrongLength(bytes.len()))?;
        let (buf, rest) = b.split_at(8);
        let (rkey, size) = rest.split_at(4);
        Ok(RdmaInfo {
            addr: u64::from_be_bytes(buf.try_into().unwrap_or_default()),
            rkey: u32::from_be_bytes(rkey.try_into().unwrap_or_default()),
            size: u32::from_be_bytes(size.try_into().unwrap_or_default()),
        })
    }

    /// The message's bytes.
    pub fn to_bytes(self) -> [u8; INFO_LEN] {
        let mut out = [0u8; INFO_LEN];
        self.emit(&mut out);
        out
    }

    /// Writes the message into exactly [`INFO_LEN`] bytes.
    pub fn emit(self, out: &mut [u8; INFO_LEN]) {
        out[field::BUF].copy_from_slice(&self.addr.to_be_bytes());
        out[field::RKEY].copy_from_slice(&self.rkey.to_be_bytes());
        out[field::SIZE].copy_from_slice(&self.size.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The first SEND of rping-default.pcap (client source buffer, 64 bytes).
    const CAPTURED_SOURCE: [u8; 16] = [
        0x00, 0x00, 0x55, 0x80, 0x8d, 0xd2, 0x83, 0x70, 0xbd, 0x94, 0xaf, 0x00, 0x00, 0x00, 0x00,
        0x40,
    ];
    /// The second SEND (client sink buffer).
    const CAPTURED_SINK: [u8; 16] = [
        0x00, 0x00, 0x55, 0x80, 0x8d, 0xd2, 0x85, 0x50, 0x02, 0xfd, 0x5f, 0x00, 0x00, 0x00, 0x00,
        0x40,
    ];

    #[test]
    fn parses_the_captured_adverts() {
        assert_eq!(
            RdmaInfo::parse(&CAPTURED_SOURCE).unwrap(),
            RdmaInfo {
                addr: 0x5580_8dd2_8370,
                rkey: 0xbd94_af00,
                size: 64
            }
        );
        assert_eq!(
            RdmaInfo::parse(&CAPTURED_SINK).unwrap(),
            RdmaInfo {
                addr: 0x5580_8dd2_8550,
                rkey: 0x02fd_5f00,
                size: 64
            }
        );
    }

    #[test]
    fn emits_byte_exact_over_a_filled_buffer() {
        let mut out = [0xa5u8; INFO_LEN];
        RdmaInfo::parse(&CAPTURED_SOURCE).unwrap().emit(&mut out);
        assert_eq!(out, CAPTURED_SOURCE);
        let mut out = [0xa5u8; INFO_LEN];
        RdmaInfo::GO_AHEAD.emit(&mut out);
        assert_eq!(
            out, [0; 16],
            "the server's go-ahead is all zero on the wire"
        );
    }

    #[test]
    fn every_other_length_is_refused() {
        for len in (0..64).filter(|&l| l != INFO_LEN) {
            assert_eq!(RdmaInfo::parse(&vec![0; len]), Err(WrongLength(len)));
        }
    }

    proptest! {
        #[test]
        fn round_trips(addr: u64, rkey: u32, size: u32) {
            let i = RdmaInfo { addr, rkey, size };
            prop_assert_eq!(RdmaInfo::parse(&i.to_bytes()).unwrap(), i);
        }

        #[test]
        fn parse_then_emit_is_identity(bytes: [u8; 16]) {
            prop_assert_eq!(RdmaInfo::parse(&bytes).unwrap().to_bytes(), bytes);
        }
    }
}
