//! Why a capture file could not be read, with the byte offset where it went wrong.

use std::io;

/// A capture file that cannot be read (further). Every variant says where.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    #[error("read error: {0}")]
    Io(#[from] io::Error),
    #[error("empty file: no capture header")]
    Empty,
    #[error("not a pcap or pcapng file (first bytes {0:#010x})")]
    UnknownMagic(u32),
    #[error("file ends inside the {what} at byte {offset}: {got} of {needed} bytes present")]
    Truncated {
        what: &'static str,
        offset: u64,
        needed: u64,
        got: u64,
    },
    #[error("unsupported {format} version {major}.{minor}")]
    UnsupportedVersion {
        format: &'static str,
        major: u16,
        minor: u16,
    },
    #[error("record at byte {offset} claims {len} bytes, more than the {max}-byte limit")]
    TooLarge { offset: u64, len: u64, max: u64 },
    #[error("pcapng block at byte {offset} has an invalid length {len}")]
    BadBlockLength { offset: u64, len: u32 },
    #[error("pcapng block at byte {offset}: trailing length {trailer} differs from leading {len}")]
    BlockTrailerMismatch { offset: u64, len: u32, trailer: u32 },
    #[error("pcapng section at byte {offset} has a bad byte-order magic {magic:#010x}")]
    BadByteOrderMagic { offset: u64, magic: u32 },
    #[error("pcapng block at byte {offset} names interface {interface}, which is not described")]
    UnknownInterface { offset: u64, interface: u32 },
    #[error("pcapng section at byte {offset} describes more than {max} interfaces")]
    TooManyInterfaces { offset: u64, max: usize },
    #[error("pcapng block at byte {offset} is malformed: {what}")]
    Malformed { offset: u64, what: &'static str },
    #[error(
        "pcapng interface at byte {offset} has an unsupported timestamp resolution {tsresol:#04x}"
    )]
    UnsupportedResolution { offset: u64, tsresol: u8 },
}
