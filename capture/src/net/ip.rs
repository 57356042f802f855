//! IPv4 and IPv6 headers down to the transport payload.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{be16, NetworkLayer, Skip};
use crate::bytes::array;

const PROTO_TCP: u8 = 6;
const IPV4_MIN_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
/// Extension headers walked before giving up (each is at least 8 bytes).
const MAX_IPV6_EXTENSIONS: usize = 8;

/// The transport bytes of one IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpPayload<'a> {
    /// Sender's address.
    pub src: IpAddr,
    /// Receiver's address.
    pub dst: IpAddr,
    /// The IP protocol number of the payload (6 for TCP).
    pub protocol: u8,
    /// Captured transport bytes (Ethernet padding removed).
    pub bytes: &'a [u8],
    /// Transport length the IP header declares; larger than `bytes.len()`
    /// when the snapshot length cut the frame.
    pub declared_len: usize,
}

pub fn parse(net: NetworkLayer<'_>) -> Result<IpPayload<'_>, Skip> {
    let b = net.bytes;
    let first = *b.first().ok_or(Skip::Truncated {
        layer: "IP",
        needed: 1,
        got: 0,
    })?;
    match first >> 4 {
        4 => ipv4(b),
        6 => ipv6(b),
        v => Err(Skip::BadIpVersion(v)),
    }
}

fn cut(layer: &'static str, needed: usize, got: usize) -> Skip {
    Skip::Truncated { layer, needed, got }
}

fn ipv4(b: &[u8]) -> Result<IpPayload<'_>, Skip> {
    let header_len = usize::from(b.first().copied().unwrap_or(0) & 0x0f) * 4;
    if header_len < IPV4_MIN_HEADER {
        return Err(Skip::BadIpv4HeaderLen(header_len));
    }
    if b.len() < header_len {
        return Err(cut("IPv4", header_len, b.len()));
    }
    let total = usize::from(be16(b, 2, "IPv4")?);
    let flags_frag = be16(b, 6, "IPv4")?;
    let more_fragments = flags_frag & 0x2000 != 0;
    if more_fragments || flags_frag & 0x1fff != 0 {
        return Err(Skip::Fragment);
    }
    // Total length 0 comes from segmentation offload: trust the capture.
    let total = if total == 0 { b.len() } else { total };
    if total < header_len {
        return Err(Skip::BadIpv4TotalLen {
            total,
            header: header_len,
        });
    }
    let protocol = b.get(9).copied().unwrap_or(0);
    let src = Ipv4Addr::from(array::<4>(b, 12).unwrap_or_default());
    let dst = Ipv4Addr::from(array::<4>(b, 16).unwrap_or_default());
    let end = total.min(b.len());
    Ok(IpPayload {
        src: src.into(),
        dst: dst.into(),
        protocol,
        bytes: b.get(header_len..end).unwrap_or_default(),
        declared_len: total - header_len,
    })
}

fn ipv6(b: &[u8]) -> Result<IpPayload<'_>, Skip> {
    if b.len() < IPV6_HEADER {
        return Err(cut("IPv6", IPV6_HEADER, b.len()));
    }
    let payload_len = usize::from(be16(b, 4, "IPv6")?);
    let mut next = b.get(6).copied().unwrap_or(0);
    let src = Ipv6Addr::from(array::<16>(b, 8).unwrap_or_default());
    let dst = Ipv6Addr::from(array::<16>(b, 24).unwrap_or_default());
    if payload_len == 0 && next == 0 {
        // Hop-by-hop with payload length 0: a jumbogram.
        return Err(Skip::Jumbogram);
    }
    let end = (IPV6_HEADER + payload_len).min(b.len());
    let mut at = IPV6_HEADER;
    for _ in 0..MAX_IPV6_EXTENSIONS {
        let len = match next {
            // Hop-by-hop, routing, destination options: (len + 1) * 8.
            0 | 43 | 60 => {
                (usize::from(b.get(at + 1).copied().ok_or(cut(
                    "IPv6 extension",
                    at + 2,
                    b.len(),
                ))?) + 1)
                    * 8
            }
            // Authentication header: (len + 2) * 4.
            51 => {
                (usize::from(b.get(at + 1).copied().ok_or(cut(
                    "IPv6 extension",
                    at + 2,
                    b.len(),
                ))?) + 2)
                    * 4
            }
            44 => return Err(Skip::Fragment),
            _ => break,
        };
        next = b.get(at).copied().unwrap_or(0);
        at += len;
        if at > end {
            return Err(cut("IPv6 extension", at, end));
        }
    }
    Ok(IpPayload {
        src: src.into(),
        dst: dst.into(),
        protocol: next,
        bytes: b.get(at..end).unwrap_or_default(),
        declared_len: (IPV6_HEADER + payload_len).saturating_sub(at),
    })
}

/// Whether this IP payload carries TCP.
pub(crate) fn is_tcp(p: &IpPayload<'_>) -> bool {
    p.protocol == PROTO_TCP
}
