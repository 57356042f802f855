//! The virtio-net header (`struct virtio_net_hdr`, 10 bytes) that a TAP
//! opened with `IFF_VNET_HDR` puts before every frame, both ways.
//!
//! It carries what a NIC's offloads would: on transmit, "complete the
//! checksum from `csum_start`, storing it at `csum_offset`" and "cut this
//! super-frame into segments of `gso_size` payload bytes behind the
//! `hdr_len` bytes of headers"; on receive, "the checksum was verified"
//! or "the checksum is still partial (the sender was local)" and "this
//! frame was coalesced from segments of `gso_size`". The fields are
//! little-endian (the legacy virtio layout on a little-endian host;
//! `TUNSETVNETLE` makes it so on others).
//!
//! Panic contract: once `VnetHeader::new_checked` succeeds no accessor
//! panics; `VnetRepr::emit` checks its buffer and never panics.

use std::fmt;

mod field {
    use std::ops::Range;
    pub const FLAGS: usize = 0;
    pub const GSO_TYPE: usize = 1;
    pub const HDR_LEN: Range<usize> = 2..4;
    pub const GSO_SIZE: Range<usize> = 4..6;
    pub const CSUM_START: Range<usize> = 6..8;
    pub const CSUM_OFFSET: Range<usize> = 8..10;
}

/// Bytes of the header before each frame.
pub const HEADER_LEN: usize = field::CSUM_OFFSET.end;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at `csum_start` +
/// `csum_offset` holds only the pseudo-header sum; the rest is to be added.
const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_F_DATA_VALID`: the checksum was verified already.
const F_DATA_VALID: u8 = 2;
/// `VIRTIO_NET_HDR_GSO_ECN`: the segments carry ECN's CWR on the first.
const GSO_ECN: u8 = 0x80;

/// What the header asks of segmentation, or says of coalescing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GsoType {
    /// A single frame.
    None,
    /// TCP over IPv4.
    TcpV4,
    /// UDP fragmentation offload.
    Udp,
    /// TCP over IPv6.
    TcpV6,
    /// UDP segmentation (`GSO_UDP_L4`).
    UdpL4,
    /// A type this code does not know, kept as read.
    Unknown(u8),
}

impl GsoType {
    fn from_wire(v: u8) -> GsoType {
        match v {
            0 => GsoType::None,
            1 => GsoType::TcpV4,
            3 => GsoType::Udp,
            4 => GsoType::TcpV6,
            5 => GsoType::UdpL4,
            v => GsoType::Unknown(v),
        }
    }

    fn to_wire(self) -> u8 {
        match self {
            GsoType::None => 0,
            GsoType::TcpV4 => 1,
            GsoType::Udp => 3,
            GsoType::TcpV6 => 4,
            GsoType::UdpL4 => 5,
            GsoType::Unknown(v) => v,
        }
    }
}

/// The header was shorter than [`HEADER_LEN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated {
    /// Bytes there were.
    pub len: usize,
}

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "virtio-net header needs {HEADER_LEN} bytes, got {}",
            self.len
        )
    }
}

impl std::error::Error for Truncated {}

/// A checked view of a virtio-net header at the start of a buffer.
#[derive(Debug, Clone, Copy)]
pub struct VnetHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VnetHeader<T> {
    /// A view whose accessors cannot panic: the buffer holds a header.
    pub fn new_checked(buffer: T) -> Result<Self, Truncated> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Truncated { len });
        }
        Ok(VnetHeader { buffer })
    }

    fn u16_at(&self, r: std::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[r];
        u16::from_le_bytes([b[0], b[1]])
    }

    /// The flags byte (`NEEDS_CSUM`, `DATA_VALID`).
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The raw GSO type byte.
    #[inline]
    pub fn gso_type(&self) -> u8 {
        self.buffer.as_ref()[field::GSO_TYPE]
    }

    /// Bytes of headers before the payload.
    #[inline]
    pub fn hdr_len(&self) -> u16 {
        self.u16_at(field::HDR_LEN)
    }

    /// Payload bytes per segment.
    #[inline]
    pub fn gso_size(&self) -> u16 {
        self.u16_at(field::GSO_SIZE)
    }

    /// Where checksumming starts.
    #[inline]
    pub fn csum_start(&self) -> u16 {
        self.u16_at(field::CSUM_START)
    }

    /// Where the checksum goes, from `csum_start`.
    #[inline]
    pub fn csum_offset(&self) -> u16 {
        self.u16_at(field::CSUM_OFFSET)
    }

    /// The frame behind the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VnetHeader<T> {
    fn set_u16_at(&mut self, r: std::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_le_bytes());
    }

    /// Writes the flags byte.
    #[inline]
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }

    /// Writes the GSO type byte.
    #[inline]
    pub fn set_gso_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::GSO_TYPE] = v;
    }

    /// Writes the header length.
    #[inline]
    pub fn set_hdr_len(&mut self, v: u16) {
        self.set_u16_at(field::HDR_LEN, v);
    }

    /// Writes the segment size.
    #[inline]
    pub fn set_gso_size(&mut self, v: u16) {
        self.set_u16_at(field::GSO_SIZE, v);
    }

    /// Writes the checksum start.
    #[inline]
    pub fn set_csum_start(&mut self, v: u16) {
        self.set_u16_at(field::CSUM_START, v);
    }

    /// Writes the checksum offset.
    #[inline]
    pub fn set_csum_offset(&mut self, v: u16) {
        self.set_u16_at(field::CSUM_OFFSET, v);
    }
}

/// Where the checksum still to be completed lies (`NEEDS_CSUM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartialChecksum {
    /// Offset in the frame where the summing starts.
    pub start: u16,
    /// Offset from `start` of the 16-bit checksum field.
    pub offset: u16,
}

/// Segmentation asked for (transmit) or coalescing done (receive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segmentation {
    /// [`GsoType::None`] only beside `ecn` (a header that sets the ECN
    /// bit alone, kept as read); otherwise its absence is this struct's.
    pub kind: GsoType,
    /// The ECN bit of the GSO type: the segments carry CWR as the first did.
    pub ecn: bool,
    /// Bytes of headers repeated before each segment.
    pub hdr_len: u16,
    /// Payload bytes per segment: the MSS.
    pub size: u16,
}

/// The meaning of a virtio-net header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VnetRepr {
    /// A checksum the receiver (or device) must fill in.
    pub checksum: Option<PartialChecksum>,
    /// The sender verified the checksum (`DATA_VALID`).
    pub data_valid: bool,
    /// Segmentation asked for, or coalescing done.
    pub segmentation: Option<Segmentation>,
    /// Flag bits this code does not know, kept as read.
    pub other_flags: u8,
    /// `hdr_len` of a header without segmentation (the kernel may fill it
    /// in as a hint), kept as read.
    pub plain_hdr_len: u16,
}

impl VnetRepr {
    /// Reads a header. Every bit pattern has a meaning (unknown types and
    /// flags are kept), so only a short buffer is an error.
    pub fn parse<T: AsRef<[u8]>>(h: &VnetHeader<T>) -> VnetRepr {
        let flags = h.flags();
        let raw_type = h.gso_type();
        let kind = GsoType::from_wire(raw_type & !GSO_ECN);
        let segmentation =
            (kind != GsoType::None || raw_type & GSO_ECN != 0).then(|| Segmentation {
                kind,
                ecn: raw_type & GSO_ECN != 0,
                hdr_len: h.hdr_len(),
                size: h.gso_size(),
            });
        VnetRepr {
            checksum: (flags & F_NEEDS_CSUM != 0).then(|| PartialChecksum {
                start: h.csum_start(),
                offset: h.csum_offset(),
            }),
            data_valid: flags & F_DATA_VALID != 0,
            other_flags: flags & !(F_NEEDS_CSUM | F_DATA_VALID),
            plain_hdr_len: if segmentation.is_none() {
                h.hdr_len()
            } else {
                0
            },
            segmentation,
        }
    }

    /// Always [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the start of `buf`; every byte of the
    /// header is written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), Truncated> {
        let len = buf.len();
        let mut h = VnetHeader::new_checked(buf).map_err(|_| Truncated { len })?;
        let mut flags = self.other_flags & !(F_NEEDS_CSUM | F_DATA_VALID);
        if self.checksum.is_some() {
            flags |= F_NEEDS_CSUM;
        }
        if self.data_valid {
            flags |= F_DATA_VALID;
        }
        h.set_flags(flags);
        let c = self.checksum.unwrap_or(PartialChecksum {
            start: 0,
            offset: 0,
        });
        h.set_csum_start(c.start);
        h.set_csum_offset(c.offset);
        match self.segmentation {
            Some(s) => {
                let ecn = if s.ecn { GSO_ECN } else { 0 };
                h.set_gso_type(s.kind.to_wire() | ecn);
                h.set_hdr_len(s.hdr_len);
                h.set_gso_size(s.size);
            }
            None => {
                h.set_gso_type(0);
                h.set_hdr_len(self.plain_hdr_len);
                h.set_gso_size(0);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header tun writes before a TCP/IPv4 super-frame from a local
    /// socket: NEEDS_CSUM from the TCP header (14 + 20 bytes in) at
    /// offset 16, TCPV4 with 66 bytes of headers (Ethernet, IPv4, TCP
    /// with timestamps) and a 1448-byte MSS.
    const TSO_FRAME: [u8; 10] = [0x01, 0x01, 0x42, 0x00, 0xa8, 0x05, 0x22, 0x00, 0x10, 0x00];

    #[test]
    fn parses_a_kernel_super_frame_header() {
        let h = VnetHeader::new_checked(&TSO_FRAME[..]).unwrap();
        let r = VnetRepr::parse(&h);
        assert_eq!(
            r,
            VnetRepr {
                checksum: Some(PartialChecksum {
                    start: 34,
                    offset: 16
                }),
                data_valid: false,
                segmentation: Some(Segmentation {
                    kind: GsoType::TcpV4,
                    ecn: false,
                    hdr_len: 66,
                    size: 1448,
                }),
                other_flags: 0,
                plain_hdr_len: 0,
            }
        );
    }

    #[test]
    fn emit_writes_every_byte_and_round_trips() {
        let cases = [
            VnetRepr::default(),
            VnetRepr {
                data_valid: true,
                ..VnetRepr::default()
            },
            VnetRepr::parse(&VnetHeader::new_checked(&TSO_FRAME[..]).unwrap()),
            VnetRepr {
                checksum: Some(PartialChecksum {
                    start: 0xfffe,
                    offset: 6,
                }),
                segmentation: Some(Segmentation {
                    kind: GsoType::Unknown(0x21),
                    ecn: true,
                    hdr_len: 0x1234,
                    size: 0xfedc,
                }),
                other_flags: 0x04,
                ..VnetRepr::default()
            },
            VnetRepr {
                plain_hdr_len: 54,
                ..VnetRepr::default()
            },
        ];
        for r in cases {
            let mut buf = [0xa5u8; HEADER_LEN + 3];
            r.emit(&mut buf).unwrap();
            assert_eq!(&buf[HEADER_LEN..], &[0xa5; 3], "wrote past the header");
            let back = VnetRepr::parse(&VnetHeader::new_checked(&buf[..]).unwrap());
            assert_eq!(back, r);
            let mut again = [0u8; HEADER_LEN];
            back.emit(&mut again).unwrap();
            assert_eq!(again, buf[..HEADER_LEN], "{r:?}");
        }
        let mut tso = [0xa5u8; HEADER_LEN];
        VnetRepr::parse(&VnetHeader::new_checked(&TSO_FRAME[..]).unwrap())
            .emit(&mut tso)
            .unwrap();
        assert_eq!(tso, TSO_FRAME);
    }

    #[test]
    fn every_header_parses_and_re_emits_its_meaning() {
        // Any 10 bytes have a meaning; walk the type and flag bytes and a
        // spread of the 16-bit fields.
        for flags in 0..=255u8 {
            for gso in [0u8, 1, 2, 3, 4, 5, 6, 0x80, 0x81, 0x84, 0xff] {
                let bytes = [flags, gso, 0x36, 0x00, 0xb4, 0x05, 0x22, 0x00, 0x10, 0x00];
                let r = VnetRepr::parse(&VnetHeader::new_checked(&bytes[..]).unwrap());
                let mut out = [0u8; HEADER_LEN];
                r.emit(&mut out).unwrap();
                let expect = if r.checksum.is_some() {
                    bytes
                } else {
                    // Without NEEDS_CSUM the checksum fields mean nothing
                    // and are written as zero.
                    [flags, gso, 0x36, 0x00, 0xb4, 0x05, 0, 0, 0, 0]
                };
                let expect = if r.segmentation.is_none() {
                    [
                        expect[0], expect[1], expect[2], expect[3], 0, 0, expect[6], expect[7],
                        expect[8], expect[9],
                    ]
                } else {
                    expect
                };
                assert_eq!(out, expect, "{bytes:02x?} -> {r:?}");
            }
        }
    }

    #[test]
    fn short_buffers_are_refused() {
        for len in 0..HEADER_LEN {
            let buf = vec![0u8; len];
            assert_eq!(
                VnetHeader::new_checked(&buf[..]).unwrap_err(),
                Truncated { len }
            );
            let mut out = vec![0xa5u8; len];
            assert_eq!(VnetRepr::default().emit(&mut out), Err(Truncated { len }));
            assert!(out.iter().all(|&b| b == 0xa5), "nothing written");
        }
    }
}
