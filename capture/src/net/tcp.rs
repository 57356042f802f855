//! The TCP header: ports, sequence numbers, flags, payload.

use std::net::SocketAddr;

use super::ip::{is_tcp, IpPayload};
use super::{be16, Endpoints, Skip};
use crate::bytes::be32;

const TCP_MIN_HEADER: usize = 20;

/// TCP flag bits as they sit in byte 13 of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// No more data from the sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers: a connection opens.
    pub const SYN: u8 = 0x02;
    /// Reset: the connection ends at once.
    pub const RST: u8 = 0x04;
    /// Push: hand the data up now.
    pub const PSH: u8 = 0x08;
    /// The acknowledgement number is valid.
    pub const ACK: u8 = 0x10;

    /// Whether FIN is set.
    pub fn fin(self) -> bool {
        self.0 & Self::FIN != 0
    }
    /// Whether SYN is set.
    pub fn syn(self) -> bool {
        self.0 & Self::SYN != 0
    }
    /// Whether RST is set.
    pub fn rst(self) -> bool {
        self.0 & Self::RST != 0
    }
    /// Whether ACK is set.
    pub fn ack(self) -> bool {
        self.0 & Self::ACK != 0
    }
}

/// One TCP segment as captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment<'a> {
    /// Source and destination.
    pub endpoints: Endpoints,
    /// Sequence number of the first payload byte (of the SYN, if set).
    pub seq: u32,
    /// Next sequence number the sender expects (valid with ACK).
    pub ack: u32,
    /// The control flags.
    pub flags: TcpFlags,
    /// Captured payload bytes.
    pub payload: &'a [u8],
    /// Payload length per the IP header; more than `payload.len()` when the
    /// snapshot length cut the frame.
    pub payload_len: usize,
    /// The option bytes between the fixed header and the payload.
    pub options: &'a [u8],
}

impl TcpSegment<'_> {
    /// The Maximum Segment Size option (kind 2), where the segment carries
    /// one; an option list cut short ends the search.
    pub fn mss(&self) -> Option<u16> {
        let o = self.options;
        let mut at = 0;
        loop {
            match *o.get(at)? {
                0 => return None,
                1 => at += 1,
                kind => {
                    let len = usize::from(*o.get(at + 1)?);
                    if kind == 2 && len == 4 {
                        return be16(o, at + 2, "TCP option").ok();
                    }
                    at += len.max(2);
                }
            }
        }
    }
}

pub fn parse<'a>(ip: &IpPayload<'a>) -> Result<TcpSegment<'a>, Skip> {
    if !is_tcp(ip) {
        return Err(Skip::NotTcp(ip.protocol));
    }
    let b = ip.bytes;
    let src_port = be16(b, 0, "TCP")?;
    let dst_port = be16(b, 2, "TCP")?;
    let seq = be32(b, 4).unwrap_or(0);
    let ack = be32(b, 8).unwrap_or(0);
    let offset_byte = b.get(12).copied().ok_or(Skip::Truncated {
        layer: "TCP",
        needed: TCP_MIN_HEADER,
        got: b.len(),
    })?;
    let header_len = usize::from(offset_byte >> 4) * 4;
    if header_len < TCP_MIN_HEADER || header_len > ip.declared_len {
        return Err(Skip::BadTcpDataOffset(header_len));
    }
    if b.len() < header_len {
        return Err(Skip::Truncated {
            layer: "TCP",
            needed: header_len,
            got: b.len(),
        });
    }
    let flags = TcpFlags(b.get(13).copied().unwrap_or(0));
    Ok(TcpSegment {
        endpoints: Endpoints {
            src: SocketAddr::new(ip.src, src_port),
            dst: SocketAddr::new(ip.dst, dst_port),
        },
        seq,
        ack,
        flags,
        payload: b.get(header_len..).unwrap_or_default(),
        payload_len: ip.declared_len - header_len,
        options: b.get(TCP_MIN_HEADER..header_len).unwrap_or_default(),
    })
}
