//! pcapng (draft-ietf-opsawg-pcapng): sections of typed blocks. We keep the
//! section's byte order and its interface descriptions, return packets from
//! Enhanced, Simple and (obsolete) Packet blocks, and skip every other block.
//!
//! This file parses block bodies; the reader in `mod.rs` does the I/O.

use std::ops::Range;

use super::endian::{Endian, Fields};
use super::{LinkType, PcapError, Resolution, Timestamp};

pub(crate) const SECTION_HEADER: u32 = 0x0a0d_0d0a;
pub(crate) const INTERFACE_DESCRIPTION: u32 = 1;
pub(crate) const OBSOLETE_PACKET: u32 = 2;
pub(crate) const SIMPLE_PACKET: u32 = 3;
pub(crate) const ENHANCED_PACKET: u32 = 6;
pub(crate) const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
/// Smallest block: type, length, trailing length.
pub(crate) const MIN_BLOCK_LEN: u32 = 12;
/// Smallest section header: the above plus magic, versions, section length.
pub(crate) const MIN_SECTION_HEADER_LEN: u32 = 28;
/// Interfaces one section may describe; bounds memory on garbage input.
pub(crate) const MAX_INTERFACES: usize = 4096;

const OPT_END: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// What an Interface Description Block says about that interface's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interface {
    pub(crate) link: LinkType,
    pub(crate) snaplen: u32,
    pub(crate) resolution: Resolution,
    pub(crate) offset_secs: i64,
}

/// Where a packet's bytes sit inside a block body, and what we know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PacketMeta {
    pub(crate) link: LinkType,
    pub(crate) timestamp: Timestamp,
    pub(crate) data: Range<usize>,
    pub(crate) original_len: u32,
}

/// The state one Section Header Block starts.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub(crate) endian: Endian,
    interfaces: Vec<Interface>,
}

/// Byte order from the section header's byte-order magic, as stored.
pub(crate) fn endian_from_magic(magic: [u8; 4]) -> Option<Endian> {
    [Endian::Little, Endian::Big]
        .into_iter()
        .find(|e| e.u32(magic) == BYTE_ORDER_MAGIC)
}

fn malformed(offset: u64, what: &'static str) -> PcapError {
    PcapError::Malformed { offset, what }
}

/// Walks a block's options: (code, value) pairs, each padded to 4 bytes.
fn options(
    f: Fields<'_>,
    start: usize,
    offset: u64,
) -> impl Iterator<Item = Result<(u16, &[u8]), PcapError>> + '_ {
    let mut at = start;
    let mut done = false;
    std::iter::from_fn(move || {
        if done || at >= f.bytes.len() {
            return None;
        }
        let (Some(code), Some(len)) = (f.u16(at), f.u16(at + 2)) else {
            done = true;
            return Some(Err(malformed(offset, "option header cut short")));
        };
        if code == OPT_END {
            done = true;
            return None;
        }
        let value_start = at + 4;
        let value_end = value_start + usize::from(len);
        let Some(value) = f.bytes.get(value_start..value_end) else {
            done = true;
            return Some(Err(malformed(offset, "option value runs past the block")));
        };
        at = value_end.next_multiple_of(4);
        Some(Ok((code, value)))
    })
}

impl Section {
    /// Starts a section from the Section Header Block body after the magic.
    pub(crate) fn start(endian: Endian, body: &[u8], offset: u64) -> Result<Section, PcapError> {
        let f = Fields {
            bytes: body,
            endian,
        };
        let (Some(major), Some(minor)) = (f.u16(0), f.u16(2)) else {
            return Err(malformed(offset, "section header too short"));
        };
        if major != 1 {
            return Err(PcapError::UnsupportedVersion {
                format: "pcapng",
                major,
                minor,
            });
        }
        Ok(Section {
            endian,
            interfaces: Vec::new(),
        })
    }

    pub(crate) fn interface(&self, id: u32, offset: u64) -> Result<&Interface, PcapError> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.interfaces.get(i))
            .ok_or(PcapError::UnknownInterface {
                offset,
                interface: id,
            })
    }

    /// Records an Interface Description Block.
    pub(crate) fn add_interface(&mut self, body: &[u8], offset: u64) -> Result<(), PcapError> {
        if self.interfaces.len() >= MAX_INTERFACES {
            return Err(PcapError::TooManyInterfaces {
                offset,
                max: MAX_INTERFACES,
            });
        }
        let f = self.fields(body);
        let (Some(link), Some(snaplen)) = (f.u16(0), f.u32(4)) else {
            return Err(malformed(offset, "interface description too short"));
        };
        let mut iface = Interface {
            link: LinkType(link),
            snaplen,
            resolution: Resolution::MICROS,
            offset_secs: 0,
        };
        for opt in options(f, 8, offset) {
            match opt? {
                (OPT_IF_TSRESOL, &[byte]) => {
                    iface.resolution =
                        Resolution::from_tsresol(byte).ok_or(PcapError::UnsupportedResolution {
                            offset,
                            tsresol: byte,
                        })?;
                }
                (OPT_IF_TSRESOL, _) => return Err(malformed(offset, "if_tsresol is not 1 byte")),
                (OPT_IF_TSOFFSET, value) => {
                    let v = self.fields(value);
                    let secs = v
                        .u64(0)
                        .filter(|_| value.len() == 8)
                        .ok_or(malformed(offset, "if_tsoffset is not 8 bytes"))?;
                    iface.offset_secs = secs as i64;
                }
                _ => {}
            }
        }
        self.interfaces.push(iface);
        Ok(())
    }

    fn stamp(iface: &Interface, high: u32, low: u32) -> Timestamp {
        let count = (u64::from(high) << 32) | u64::from(low);
        Timestamp::from_units(count, iface.resolution).offset_by(iface.offset_secs)
    }

    /// Reads `bytes` in this section's byte order.
    fn fields<'a>(&self, bytes: &'a [u8]) -> Fields<'a> {
        Fields {
            bytes,
            endian: self.endian,
        }
    }

    /// An Enhanced Packet Block: interface, 64-bit timestamp, lengths, data.
    pub(crate) fn enhanced_packet(
        &self,
        body: &[u8],
        offset: u64,
    ) -> Result<PacketMeta, PcapError> {
        let id = self.fields(body).u32(0);
        self.stamped_packet(body, offset, id, "enhanced packet block too short")
    }

    /// A Simple Packet Block: interface 0, no timestamp, data up to the snaplen.
    pub(crate) fn simple_packet(&self, body: &[u8], offset: u64) -> Result<PacketMeta, PcapError> {
        let f = self.fields(body);
        let original_len = f
            .u32(0)
            .ok_or(malformed(offset, "simple packet block too short"))?;
        let iface = self.interface(0, offset)?;
        let mut captured = (original_len as usize).min(body.len().saturating_sub(4));
        if iface.snaplen != 0 {
            captured = captured.min(iface.snaplen as usize);
        }
        Ok(PacketMeta {
            link: iface.link,
            timestamp: Timestamp::default(),
            data: 4..4 + captured,
            original_len,
        })
    }

    /// The obsolete Packet Block: a 16-bit interface id and a drop count first.
    pub(crate) fn obsolete_packet(
        &self,
        body: &[u8],
        offset: u64,
    ) -> Result<PacketMeta, PcapError> {
        let id = self.fields(body).u16(0).map(u32::from);
        self.stamped_packet(body, offset, id, "packet block too short")
    }

    /// The packet of an Enhanced or obsolete Packet Block: after the
    /// interface `id` (read by the caller, whose width differs), a 64-bit
    /// timestamp, the captured and original lengths, then the data.
    fn stamped_packet(
        &self,
        body: &[u8],
        offset: u64,
        id: Option<u32>,
        too_short: &'static str,
    ) -> Result<PacketMeta, PcapError> {
        let f = self.fields(body);
        let (Some(id), Some(high), Some(low), Some(captured), Some(original_len)) =
            (id, f.u32(4), f.u32(8), f.u32(12), f.u32(16))
        else {
            return Err(malformed(offset, too_short));
        };
        let iface = self.interface(id, offset)?;
        let data = 20..20usize.saturating_add(captured as usize);
        if data.end > body.len() {
            return Err(malformed(offset, "captured length runs past the block"));
        }
        Ok(PacketMeta {
            link: iface.link,
            timestamp: Self::stamp(iface, high, low),
            data,
            original_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le_idb(link: u16, opts: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&link.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&262_144u32.to_le_bytes());
        b.extend_from_slice(opts);
        b
    }

    #[test]
    fn magic_both_orders() {
        assert_eq!(
            endian_from_magic([0x4d, 0x3c, 0x2b, 0x1a]),
            Some(Endian::Little)
        );
        assert_eq!(
            endian_from_magic([0x1a, 0x2b, 0x3c, 0x4d]),
            Some(Endian::Big)
        );
        assert_eq!(endian_from_magic([0, 0, 0, 0]), None);
    }

    #[test]
    fn interface_with_nanosecond_resolution_and_offset() {
        let mut s = Section::start(Endian::Little, &[1, 0, 0, 0], 0).unwrap();
        // if_tsresol=9, if_tsoffset=-1, end of options.
        let mut opts = vec![9, 0, 1, 0, 9, 0, 0, 0, 14, 0, 8, 0];
        opts.extend_from_slice(&(-1i64).to_le_bytes());
        opts.extend_from_slice(&[0, 0, 0, 0]);
        s.add_interface(&le_idb(1, &opts), 0).unwrap();
        let iface = s.interface(0, 0).unwrap();
        assert_eq!(iface.resolution, Resolution::NANOS);
        assert_eq!(iface.offset_secs, -1);
        assert_eq!(iface.link, LinkType::ETHERNET);
    }

    #[test]
    fn malformed_options_are_errors() {
        let mut s = Section::start(Endian::Little, &[1, 0, 0, 0], 0).unwrap();
        // Option claims 8 bytes, block has 2.
        let opts = [9, 0, 8, 0, 9, 0];
        assert!(matches!(
            s.add_interface(&le_idb(1, &opts), 7),
            Err(PcapError::Malformed { offset: 7, .. })
        ));
        // if_tsresol of 2 bytes.
        let opts = [9, 0, 2, 0, 9, 9, 0, 0];
        assert!(s.add_interface(&le_idb(1, &opts), 0).is_err());
        // A resolution we cannot represent.
        let opts = [9, 0, 1, 0, 30, 0, 0, 0];
        assert!(matches!(
            s.add_interface(&le_idb(1, &opts), 0),
            Err(PcapError::UnsupportedResolution { tsresol: 30, .. })
        ));
        // Nothing was added by the failures.
        assert!(s.interface(0, 0).is_err());
    }

    #[test]
    fn enhanced_packet_checks_lengths_and_interface() {
        let mut s = Section::start(Endian::Big, &[0, 1, 0, 0], 0).unwrap();
        let mut idb = Vec::new();
        idb.extend_from_slice(&1u16.to_be_bytes());
        idb.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        s.add_interface(&idb, 0).unwrap();
        let mut epb = Vec::new();
        for v in [0u32, 0, 1_500_000, 3, 60] {
            epb.extend_from_slice(&v.to_be_bytes());
        }
        epb.extend_from_slice(&[0xaa, 0xbb, 0xcc, 0]);
        let meta = s.enhanced_packet(&epb, 0).unwrap();
        assert_eq!(meta.data, 20..23);
        assert_eq!(meta.original_len, 60);
        assert_eq!(meta.timestamp, Timestamp::new(1, 500_000_000));

        epb[15] = 5; // captured 5 > 4 bytes present
        assert!(s.enhanced_packet(&epb, 0).is_err());
        epb[15] = 3;
        epb[3] = 1; // interface 1 undescribed
        assert!(matches!(
            s.enhanced_packet(&epb, 9),
            Err(PcapError::UnknownInterface {
                offset: 9,
                interface: 1
            })
        ));
        assert!(s.enhanced_packet(&epb[..19], 0).is_err());
    }

    #[test]
    fn obsolete_packet_reads_a_16_bit_interface_id() {
        let mut s = Section::start(Endian::Big, &[0, 1, 0, 0], 0).unwrap();
        let mut idb = Vec::new();
        idb.extend_from_slice(&1u16.to_be_bytes());
        idb.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        s.add_interface(&idb, 0).unwrap();
        // Interface 0, drop count 7 (ignored), timestamp, captured, original.
        let mut pb = Vec::new();
        pb.extend_from_slice(&0u16.to_be_bytes());
        pb.extend_from_slice(&7u16.to_be_bytes());
        for v in [0u32, 2_000_000, 2, 90] {
            pb.extend_from_slice(&v.to_be_bytes());
        }
        pb.extend_from_slice(&[0x11, 0x22, 0, 0]);
        let meta = s.obsolete_packet(&pb, 0).unwrap();
        assert_eq!(meta.data, 20..22);
        assert_eq!(meta.original_len, 90);
        assert_eq!(meta.timestamp, Timestamp::new(2, 0));

        pb[1] = 1; // interface 1 undescribed
        assert!(matches!(
            s.obsolete_packet(&pb, 4),
            Err(PcapError::UnknownInterface {
                offset: 4,
                interface: 1
            })
        ));
        pb[1] = 0;
        pb[15] = 5; // captured 5 > 4 bytes present
        assert!(s.obsolete_packet(&pb, 0).is_err());
        assert!(matches!(
            s.obsolete_packet(&pb[..19], 3),
            Err(PcapError::Malformed { offset: 3, .. })
        ));
    }

    #[test]
    fn simple_packet_is_bounded_by_snaplen_and_block() {
        let mut s = Section::start(Endian::Little, &[1, 0, 0, 0], 0).unwrap();
        let mut idb = le_idb(101, &[]);
        idb[4..8].copy_from_slice(&2u32.to_le_bytes());
        s.add_interface(&idb, 0).unwrap();
        let mut spb = 100u32.to_le_bytes().to_vec();
        spb.extend_from_slice(&[1, 2, 3, 4]);
        let meta = s.simple_packet(&spb, 0).unwrap();
        assert_eq!(meta.data, 4..6);
        assert_eq!(meta.link, LinkType::RAW);
        assert!(s.simple_packet(&spb[..3], 0).is_err());
    }

    #[test]
    fn version_two_sections_are_refused() {
        assert!(matches!(
            Section::start(Endian::Little, &[2, 0, 0, 0], 0),
            Err(PcapError::UnsupportedVersion { major: 2, .. })
        ));
        assert!(Section::start(Endian::Little, &[1], 0).is_err());
    }
}
