//! Writing pcapng files in memory, block by block: sections in either byte
//! order, interfaces with their timestamp resolution, enhanced packets.
//! Readers of captures are tested with it, and tools that need pcapng
//! rather than classic pcap can write it.

use super::{Endian, LinkType};

/// Builds a pcapng file in memory.
pub struct PcapNgWriter {
    endian: Endian,
    /// The file so far; tests damage it in place.
    pub(crate) bytes: Vec<u8>,
}

impl PcapNgWriter {
    /// A file in `endian` byte order, its first section header written.
    pub fn new(endian: Endian) -> Self {
        let mut w = PcapNgWriter {
            endian,
            bytes: Vec::new(),
        };
        w.section();
        w
    }

    fn enc32(&self, v: u32) -> [u8; 4] {
        match self.endian {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    fn enc16(&self, v: u16) -> [u8; 2] {
        match self.endian {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// Any block, its body padded to 4 bytes.
    pub fn block(&mut self, block_type: u32, body: &[u8]) -> &mut Self {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let len = (body.len() + 12) as u32;
        let t = self.enc32(block_type);
        let l = self.enc32(len);
        self.bytes.extend_from_slice(&t);
        self.bytes.extend_from_slice(&l);
        self.bytes.extend_from_slice(&body);
        self.bytes.extend_from_slice(&l);
        self
    }

    /// A new section (in this writer's byte order).
    pub fn section(&mut self) -> &mut Self {
        let mut body = self.enc32(0x1a2b_3c4d).to_vec();
        body.extend_from_slice(&self.enc16(1));
        body.extend_from_slice(&self.enc16(0));
        body.extend_from_slice(&[0xff; 8]);
        self.block(0x0a0d_0d0a, &body)
    }

    /// An interface with `if_tsresol` = `tsresol` (None: the default µs).
    pub fn interface(&mut self, link: LinkType, tsresol: Option<u8>) -> &mut Self {
        let mut body = self.enc16(link.0).to_vec();
        body.extend_from_slice(&[0, 0]);
        body.extend_from_slice(&self.enc32(0));
        if let Some(r) = tsresol {
            body.extend_from_slice(&self.enc16(9));
            body.extend_from_slice(&self.enc16(1));
            body.extend_from_slice(&[r, 0, 0, 0]);
            body.extend_from_slice(&[0, 0, 0, 0]);
        }
        self.block(1, &body)
    }

    /// An Enhanced Packet Block: `units` of the interface's resolution
    /// since the epoch.
    pub fn enhanced(&mut self, iface: u32, units: u64, data: &[u8]) -> &mut Self {
        let mut body = self.enc32(iface).to_vec();
        body.extend_from_slice(&self.enc32((units >> 32) as u32));
        body.extend_from_slice(&self.enc32(units as u32));
        body.extend_from_slice(&self.enc32(data.len() as u32));
        body.extend_from_slice(&self.enc32(data.len() as u32));
        body.extend_from_slice(data);
        self.block(6, &body)
    }

    /// The byte order of the blocks that follow (start a new section).
    pub fn set_endian(&mut self, endian: Endian) -> &mut Self {
        self.endian = endian;
        self
    }

    /// The file so far.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The file written so far, taking it.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}
