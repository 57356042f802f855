//! Classic libpcap files: a 24-byte file header, then 16-byte record headers
//! each followed by the captured bytes. Both byte orders, and both the
//! microsecond (0xa1b2c3d4) and nanosecond (0xa1b23c4d) magics.

use super::endian::{array_at, Endian};
use super::{LinkType, PcapError, Resolution, Timestamp};

pub(crate) const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
pub(crate) const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
pub(crate) const FILE_HEADER_LEN: usize = 24;
pub(crate) const RECORD_HEADER_LEN: usize = 16;

/// What the file header says about every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Byte order the file was written in.
    pub endian: Endian,
    /// Units of the records' sub-second timestamps (the magic tells).
    pub resolution: Resolution,
    /// Format version (major, minor), 2.4 in practice.
    pub version: (u16, u16),
    /// Longest record the capture kept.
    pub snaplen: u32,
    /// What every record's bytes start with.
    pub link: LinkType,
}

/// Recognises the magic number in the file's first four bytes (as stored).
pub(crate) fn detect(first: [u8; 4]) -> Option<(Endian, Resolution)> {
    [Endian::Little, Endian::Big]
        .into_iter()
        .find_map(|endian| match endian.u32(first) {
            MAGIC_MICROS => Some((endian, Resolution::MICROS)),
            MAGIC_NANOS => Some((endian, Resolution::NANOS)),
            _ => None,
        })
}

/// Parses the whole 24-byte file header.
pub(crate) fn parse_file_header(b: &[u8; FILE_HEADER_LEN]) -> Result<FileHeader, PcapError> {
    let magic = array_at(b, 0).unwrap_or_default();
    let (endian, resolution) =
        detect(magic).ok_or(PcapError::UnknownMagic(u32::from_be_bytes(magic)))?;
    let major = endian.u16(array_at(b, 4).unwrap_or_default());
    let minor = endian.u16(array_at(b, 6).unwrap_or_default());
    if major != 2 {
        return Err(PcapError::UnsupportedVersion {
            format: "pcap",
            major,
            minor,
        });
    }
    let snaplen = endian.u32(array_at(b, 16).unwrap_or_default());
    // The top bits of the link-type word may carry FCS information (pcap
    // format spec, "LinkType and additional information"); the type is the low 16.
    let link = LinkType(endian.u32(array_at(b, 20).unwrap_or_default()) as u16);
    Ok(FileHeader {
        endian,
        resolution,
        version: (major, minor),
        snaplen,
        link,
    })
}

/// One record header: when, how many bytes follow, how long the packet was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordHeader {
    pub(crate) timestamp: Timestamp,
    pub(crate) captured_len: u32,
    pub(crate) original_len: u32,
}

pub(crate) fn parse_record_header(h: &FileHeader, b: &[u8; RECORD_HEADER_LEN]) -> RecordHeader {
    let field = |at| h.endian.u32(array_at(b, at).unwrap_or_default());
    let (secs, frac) = (field(0), field(4));
    let frac_nanos = match h.resolution {
        Resolution::NANOS => u64::from(frac),
        _ => u64::from(frac) * 1000,
    };
    // A sub-second field past one second (seen in broken writers) carries over.
    let timestamp = Timestamp::new(
        u64::from(secs).saturating_add(frac_nanos / 1_000_000_000),
        (frac_nanos % 1_000_000_000) as u32,
    );
    RecordHeader {
        timestamp,
        captured_len: field(8),
        original_len: field(12),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(endian: Endian, magic: u32, link: u32) -> [u8; 24] {
        let mut b = [0u8; 24];
        let put32 = |b: &mut [u8; 24], at: usize, v: u32| {
            let bytes = match endian {
                Endian::Little => v.to_le_bytes(),
                Endian::Big => v.to_be_bytes(),
            };
            b[at..at + 4].copy_from_slice(&bytes);
        };
        put32(&mut b, 0, magic);
        let v = match endian {
            Endian::Little => [2, 0, 4, 0],
            Endian::Big => [0, 2, 0, 4],
        };
        b[4..8].copy_from_slice(&v);
        put32(&mut b, 16, 65535);
        put32(&mut b, 20, link);
        b
    }

    #[test]
    fn all_four_magics() {
        for endian in [Endian::Little, Endian::Big] {
            for (magic, res) in [
                (MAGIC_MICROS, Resolution::MICROS),
                (MAGIC_NANOS, Resolution::NANOS),
            ] {
                let h = parse_file_header(&header(endian, magic, 1)).unwrap();
                assert_eq!(h.endian, endian);
                assert_eq!(h.resolution, res);
                assert_eq!(h.version, (2, 4));
                assert_eq!(h.snaplen, 65535);
                assert_eq!(h.link, LinkType::ETHERNET);
            }
        }
    }

    #[test]
    fn fcs_bits_do_not_change_the_link_type() {
        let h = parse_file_header(&header(Endian::Little, MAGIC_MICROS, 0x1400_0071)).unwrap();
        assert_eq!(h.link, LinkType::LINUX_SLL);
    }

    #[test]
    fn unknown_magic_and_version() {
        let mut b = header(Endian::Little, MAGIC_MICROS, 1);
        b[0] = 0;
        assert!(matches!(
            parse_file_header(&b),
            Err(PcapError::UnknownMagic(0x00c3_b2a1))
        ));
        let mut b = header(Endian::Big, MAGIC_MICROS, 1);
        b[5] = 1;
        assert!(matches!(
            parse_file_header(&b),
            Err(PcapError::UnsupportedVersion { major: 1, .. })
        ));
    }

    #[test]
    fn record_header_units() {
        let h = parse_file_header(&header(Endian::Big, MAGIC_MICROS, 1)).unwrap();
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&100u32.to_be_bytes());
        r[4..8].copy_from_slice(&250_000u32.to_be_bytes());
        r[8..12].copy_from_slice(&60u32.to_be_bytes());
        r[12..16].copy_from_slice(&1514u32.to_be_bytes());
        let rec = parse_record_header(&h, &r);
        assert_eq!(rec.timestamp, Timestamp::new(100, 250_000_000));
        assert_eq!((rec.captured_len, rec.original_len), (60, 1514));

        let h = parse_file_header(&header(Endian::Little, MAGIC_NANOS, 1)).unwrap();
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&7u32.to_le_bytes());
        r[4..8].copy_from_slice(&1_500_000_001u32.to_le_bytes());
        let rec = parse_record_header(&h, &r);
        assert_eq!(rec.timestamp, Timestamp::new(8, 500_000_001));
    }
}
