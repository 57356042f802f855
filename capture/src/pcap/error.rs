//! Why a capture file could not be read, with the byte offset where it went wrong.

use std::io;

/// A capture file that cannot be read (further). Every variant says where.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The file could not be read.
    #[error("read error: {0}")]
    Io(#[from] io::Error),
    /// Nothing at all to read.
    #[error("empty file: no capture header")]
    Empty,
    /// The first four bytes are neither a pcap nor a pcapng magic (as read).
    #[error("not a pcap or pcapng file (first bytes {0:#010x})")]
    UnknownMagic(u32),
    /// The file ends in the middle of something.
    #[error("file ends inside the {what} at byte {offset}: {got} of {needed} bytes present")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it started.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the file.
        got: u64,
    },
    /// A format version this reader does not know.
    #[error("unsupported {format} version {major}.{minor}")]
    UnsupportedVersion {
        /// "pcap" or "pcapng".
        format: &'static str,
        /// Major version.
        major: u16,
        /// Minor version.
        minor: u16,
    },
    /// A record longer than the reader accepts, refused before anything is buffered.
    #[error("record at byte {offset} claims {len} bytes, more than the {max}-byte limit")]
    TooLarge {
        /// Where the record starts.
        offset: u64,
        /// The length it claims.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A pcapng block length that cannot be (too short, or not a multiple of 4).
    #[error("pcapng block at byte {offset} has an invalid length {len}")]
    BadBlockLength {
        /// Where the block starts.
        offset: u64,
        /// The length it claims.
        len: u32,
    },
    /// A pcapng block whose two length fields disagree.
    #[error("pcapng block at byte {offset}: trailing length {trailer} differs from leading {len}")]
    BlockTrailerMismatch {
        /// Where the block starts.
        offset: u64,
        /// The leading length.
        len: u32,
        /// The trailing length.
        trailer: u32,
    },
    /// A pcapng section header whose byte-order magic is neither order.
    #[error("pcapng section at byte {offset} has a bad byte-order magic {magic:#010x}")]
    BadByteOrderMagic {
        /// Where the section starts.
        offset: u64,
        /// The value found.
        magic: u32,
    },
    /// A packet block naming an interface the section never described.
    #[error("pcapng block at byte {offset} names interface {interface}, which is not described")]
    UnknownInterface {
        /// Where the block starts.
        offset: u64,
        /// The interface id it names.
        interface: u32,
    },
    /// More interfaces than the reader keeps, refused to bound memory.
    #[error("pcapng section at byte {offset} describes more than {max} interfaces")]
    TooManyInterfaces {
        /// Where the section starts.
        offset: u64,
        /// The limit.
        max: usize,
    },
    /// A pcapng block whose contents do not fit its own layout.
    #[error("pcapng block at byte {offset} is malformed: {what}")]
    Malformed {
        /// Where the block starts.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// A timestamp resolution too fine to convert.
    #[error(
        "pcapng interface at byte {offset} has an unsupported timestamp resolution {tsresol:#04x}"
    )]
    UnsupportedResolution {
        /// Where the interface block starts.
        offset: u64,
        /// The `if_tsresol` value.
        tsresol: u8,
    },
}
