//! Capture files: reading classic libpcap (both byte orders, micro- and
//! nanosecond magics) and pcapng (what dumpcap and tshark write by default);
//! writing classic pcap ([`PcapWriter`], and [`PcapSink`] for a transport's
//! traffic) and pcapng ([`PcapNgWriter`]).
//!
//! The reader streams: one packet's bytes are held at a time, in a buffer
//! that grows only as bytes actually arrive, and every record or block length
//! is capped before anything is read, so a lying length cannot exhaust memory.

mod classic;
mod endian;
mod error;
mod link_type;
mod ng_writer;
mod pcapng;
mod sink;
mod source;
mod timestamp;
mod writer;

use std::io::Read;

pub use classic::FileHeader;
pub use endian::Endian;
pub use error::PcapError;
pub use link_type::LinkType;
pub use ng_writer::PcapNgWriter;
pub use sink::PcapSink;
pub use timestamp::{Resolution, Timestamp};
pub use writer::{PcapWriter, MAX_SNAPLEN};

use endian::array_at;
use source::Source;

/// Largest record or block we accept. libpcap's own maximum snapshot length
/// is 256 KiB; GRO/TSO captures and pcapng options stay far below this.
pub const MAX_RECORD_LEN: u64 = 16 * 1024 * 1024;

/// Which container the file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A classic pcap file, and its header.
    Pcap(FileHeader),
    /// A pcapng file (its sections and interfaces say the rest).
    PcapNg,
}

/// One captured packet, borrowed from the reader until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// 1-based position in the file, as Wireshark numbers frames.
    pub number: u64,
    /// When the packet was captured.
    pub timestamp: Timestamp,
    /// What the captured bytes start with.
    pub link: LinkType,
    /// The captured bytes (possibly fewer than `original_len`).
    pub data: &'a [u8],
    /// The packet's length on the wire.
    pub original_len: u32,
}

enum State {
    Classic(FileHeader),
    Ng(Option<pcapng::Section>),
}

/// Streams packets out of a pcap or pcapng file.
pub struct CaptureReader<R> {
    src: Source<R>,
    state: State,
    buf: Vec<u8>,
    count: u64,
}

fn truncated(what: &'static str, offset: u64, needed: u64, got: u64) -> PcapError {
    PcapError::Truncated {
        what,
        offset,
        needed,
        got,
    }
}

impl<R: Read> CaptureReader<R> {
    /// Reads the file header and recognises the format.
    pub fn new(reader: R) -> Result<Self, PcapError> {
        let mut src = Source::new(reader);
        let mut magic = [0u8; 4];
        match src.fill(&mut magic)? {
            0 => return Err(PcapError::Empty),
            4 => {}
            got => return Err(truncated("file header", 0, 4, got as u64)),
        }
        let state = if u32::from_be_bytes(magic) == pcapng::SECTION_HEADER {
            State::Ng(None)
        } else if classic::detect(magic).is_some() {
            let mut header = [0u8; classic::FILE_HEADER_LEN];
            header[..4].copy_from_slice(&magic);
            let got = src.fill(&mut header[4..])?;
            if got < header.len() - 4 {
                return Err(truncated(
                    "pcap file header",
                    0,
                    classic::FILE_HEADER_LEN as u64,
                    4 + got as u64,
                ));
            }
            State::Classic(classic::parse_file_header(&header)?)
        } else {
            return Err(PcapError::UnknownMagic(u32::from_be_bytes(magic)));
        };
        let mut reader = CaptureReader {
            src,
            state,
            buf: Vec::new(),
            count: 0,
        };
        if let State::Ng(_) = reader.state {
            // The section header is read like any block; its type was consumed.
            reader.read_ng_block(Some(magic))?;
        }
        Ok(reader)
    }

    /// Which container the file uses (known once its first bytes were read).
    pub fn format(&self) -> Format {
        match self.state {
            State::Classic(h) => Format::Pcap(h),
            State::Ng(_) => Format::PcapNg,
        }
    }

    /// Byte offset of the next unread byte of the file.
    pub fn offset(&self) -> u64 {
        self.src.offset()
    }

    /// The next packet, `Ok(None)` at a clean end of file.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, PcapError> {
        let meta = match self.state {
            State::Classic(h) => self.next_classic(h)?,
            State::Ng(_) => self.next_ng()?,
        };
        let Some(meta) = meta else { return Ok(None) };
        self.count += 1;
        let data = self.buf.get(meta.data).unwrap_or_default();
        Ok(Some(Packet {
            number: self.count,
            timestamp: meta.timestamp,
            link: meta.link,
            data,
            original_len: meta.original_len,
        }))
    }

    fn next_classic(&mut self, h: FileHeader) -> Result<Option<pcapng::PacketMeta>, PcapError> {
        let offset = self.src.offset();
        let mut rec = [0u8; classic::RECORD_HEADER_LEN];
        match self.src.fill(&mut rec)? {
            0 => return Ok(None),
            n if n < rec.len() => {
                return Err(truncated(
                    "record header",
                    offset,
                    rec.len() as u64,
                    n as u64,
                ))
            }
            _ => {}
        }
        let rec = classic::parse_record_header(&h, &rec);
        let len = u64::from(rec.captured_len);
        if len > MAX_RECORD_LEN {
            return Err(PcapError::TooLarge {
                offset,
                len,
                max: MAX_RECORD_LEN,
            });
        }
        let got = self.src.read_into(&mut self.buf, len)?;
        if got < len {
            return Err(truncated("packet data", offset, len, got));
        }
        Ok(Some(pcapng::PacketMeta {
            link: h.link,
            timestamp: rec.timestamp,
            data: 0..self.buf.len(),
            original_len: rec.original_len,
        }))
    }

    fn next_ng(&mut self) -> Result<Option<pcapng::PacketMeta>, PcapError> {
        loop {
            let offset = self.src.offset();
            let mut block_type = [0u8; 4];
            match self.src.fill(&mut block_type)? {
                0 => return Ok(None),
                4 => {}
                n => return Err(truncated("pcapng block header", offset, 8, n as u64)),
            }
            if let Some(meta) = self.read_ng_block(Some(block_type))? {
                return Ok(Some(meta));
            }
        }
    }

    /// Reads one block whose 4 type bytes were already consumed; returns the
    /// packet it carries, if any.
    fn read_ng_block(
        &mut self,
        type_bytes: Option<[u8; 4]>,
    ) -> Result<Option<pcapng::PacketMeta>, PcapError> {
        let offset = self.src.offset().saturating_sub(4);
        let type_bytes = type_bytes.unwrap_or_default();
        let mut len_bytes = [0u8; 4];
        let n = self.src.fill(&mut len_bytes)?;
        if n < 4 {
            return Err(truncated("pcapng block header", offset, 8, 4 + n as u64));
        }
        let is_section = u32::from_be_bytes(type_bytes) == pcapng::SECTION_HEADER;
        let mut consumed = 8u64;
        let endian = if is_section {
            let mut magic = [0u8; 4];
            let n = self.src.fill(&mut magic)?;
            if n < 4 {
                return Err(truncated("pcapng section header", offset, 12, 8 + n as u64));
            }
            consumed = 12;
            pcapng::endian_from_magic(magic).ok_or(PcapError::BadByteOrderMagic {
                offset,
                magic: u32::from_be_bytes(magic),
            })?
        } else {
            match &self.state {
                State::Ng(Some(section)) => section.endian,
                _ => {
                    return Err(PcapError::Malformed {
                        offset,
                        what: "block before the first section header",
                    })
                }
            }
        };
        let block_type = endian.u32(type_bytes);
        let len = endian.u32(len_bytes);
        let min = if is_section {
            pcapng::MIN_SECTION_HEADER_LEN
        } else {
            pcapng::MIN_BLOCK_LEN
        };
        if len < min || len % 4 != 0 {
            return Err(PcapError::BadBlockLength { offset, len });
        }
        if u64::from(len) > MAX_RECORD_LEN {
            return Err(PcapError::TooLarge {
                offset,
                len: u64::from(len),
                max: MAX_RECORD_LEN,
            });
        }
        let rest = u64::from(len) - consumed;
        let got = self.src.read_into(&mut self.buf, rest)?;
        if got < rest {
            return Err(truncated(
                "pcapng block",
                offset,
                u64::from(len),
                consumed + got,
            ));
        }
        let body_len = self.buf.len().saturating_sub(4);
        let trailer = endian.u32(array_at(&self.buf, body_len).unwrap_or_default());
        if trailer != len {
            return Err(PcapError::BlockTrailerMismatch {
                offset,
                len,
                trailer,
            });
        }
        let body = self.buf.get(..body_len).unwrap_or_default();
        let State::Ng(section) = &mut self.state else {
            return Ok(None);
        };
        if is_section {
            *section = Some(pcapng::Section::start(endian, body, offset)?);
            return Ok(None);
        }
        let Some(section) = section else {
            return Ok(None);
        };
        match block_type {
            pcapng::INTERFACE_DESCRIPTION => {
                section.add_interface(body, offset)?;
                Ok(None)
            }
            pcapng::ENHANCED_PACKET => section.enhanced_packet(body, offset).map(Some),
            pcapng::SIMPLE_PACKET => section.simple_packet(body, offset).map(Some),
            pcapng::OBSOLETE_PACKET => section.obsolete_packet(body, offset).map(Some),
            _ => Ok(None),
        }
    }
}

/// Every packet of a capture held in memory, with its link type: for tests
/// and small files (a large file is better streamed with [`CaptureReader`]).
pub fn frames(file: &[u8]) -> Result<Vec<(LinkType, Vec<u8>)>, PcapError> {
    let mut reader = CaptureReader::new(file)?;
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet()? {
        out.push((p.link, p.data.to_vec()));
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests;
