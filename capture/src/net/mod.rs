//! From a captured frame to a TCP segment: link header (Ethernet with VLAN
//! tags, Linux cooked v1/v2, BSD loopback, raw IP), IPv4 or IPv6, then TCP.
//!
//! These are our own small parsers rather than `etherparse` or smoltcp's
//! `wire` views, because a dissector of captures needs what those do not
//! give: a typed reason for every skipped frame (fragment, snaplen cut, bad
//! header length, unsupported link) that can be counted and printed, and
//! tolerance for capture artefacts — Ethernet padding, IPv4 total length 0
//! from segmentation offload, frames cut by the snapshot length (the missing
//! payload is then reported as a stream gap, not silently dropped).
//! Checksums are not verified: with checksum offload, a capture taken on the
//! sending host carries placeholder checksums on every outgoing segment.
//!
//! Every field is read through bounds-checked accessors; nothing here can
//! panic on any input.

mod ip;
mod link;
mod tcp;

use std::net::SocketAddr;

pub use ip::IpPayload;
pub use link::NetworkLayer;
pub use tcp::{TcpFlags, TcpSegment};

use crate::pcap::LinkType;

/// Why a frame is not a TCP segment we can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    /// A link type this dissector does not read (its number).
    #[error("unsupported link type {0}")]
    UnsupportedLink(LinkType),
    /// A header shorter than its layer needs.
    #[error("{layer} header cut short: {got} of {needed} bytes")]
    Truncated {
        /// Which header.
        layer: &'static str,
        /// Bytes the header needs.
        needed: usize,
        /// Bytes captured.
        got: usize,
    },
    /// Not an IP packet (its ethertype).
    #[error("not IP (ethertype {0:#06x})")]
    NotIp(u16),
    /// An IP header whose version is neither 4 nor 6.
    #[error("IP version {0} in an IP packet")]
    BadIpVersion(u8),
    /// An IPv4 IHL below the minimum 20 bytes (the length it gave).
    #[error("IPv4 header length {0} bytes")]
    BadIpv4HeaderLen(usize),
    /// An IPv4 total length shorter than the header it contains.
    #[error("IPv4 total length {total} shorter than its header ({header})")]
    BadIpv4TotalLen {
        /// The total length field.
        total: usize,
        /// The header length.
        header: usize,
    },
    /// A fragment: TCP cannot be read without reassembling IP first.
    #[error("IP fragment (reassembly unsupported)")]
    Fragment,
    /// An IPv6 jumbogram: its length is elsewhere, and unsupported.
    #[error("IPv6 jumbogram (unsupported)")]
    Jumbogram,
    /// Not TCP (its IP protocol number).
    #[error("not TCP (IP protocol {0})")]
    NotTcp(u8),
    /// A TCP data offset below the minimum 20 bytes (the offset it gave).
    #[error("TCP data offset {0} bytes")]
    BadTcpDataOffset(usize),
}

impl Skip {
    /// True for frames that are fine but simply not TCP (ARP, UDP, ...);
    /// false for damage or limits worth reporting.
    pub fn is_uninteresting(&self) -> bool {
        matches!(self, Skip::NotIp(_) | Skip::NotTcp(_))
    }

    /// A fixed label per kind of reason, for counting in a summary.
    pub fn label(&self) -> &'static str {
        match self {
            Skip::UnsupportedLink(_) => "unsupported link type",
            Skip::Truncated { .. } => "header cut short",
            Skip::NotIp(_) => "not IP",
            Skip::BadIpVersion(_) => "bad IP version",
            Skip::BadIpv4HeaderLen(_) | Skip::BadIpv4TotalLen { .. } => "bad IPv4 header",
            Skip::Fragment => "IP fragment (unsupported)",
            Skip::Jumbogram => "IPv6 jumbogram (unsupported)",
            Skip::NotTcp(_) => "not TCP",
            Skip::BadTcpDataOffset(_) => "bad TCP header",
        }
    }
}

/// Dissects one captured frame down to its TCP segment.
pub fn tcp_segment(link: LinkType, frame: &[u8]) -> Result<TcpSegment<'_>, Skip> {
    let network = link::strip(link, frame)?;
    let ip = ip::parse(network)?;
    let seg = tcp::parse(&ip)?;
    Ok(seg)
}

/// Reads a big-endian u16 at `at`, or reports `layer` as cut short.
fn be16(b: &[u8], at: usize, layer: &'static str) -> Result<u16, Skip> {
    crate::bytes::be16(b, at).ok_or(Skip::Truncated {
        layer,
        needed: at + 2,
        got: b.len(),
    })
}

/// The address pair a segment travels between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoints {
    /// Where the segment comes from.
    pub src: SocketAddr,
    /// Where it goes.
    pub dst: SocketAddr,
}

impl Endpoints {
    /// The same pair seen from the other side: the reply's endpoints.
    pub fn reversed(self) -> Endpoints {
        Endpoints {
            src: self.dst,
            dst: self.src,
        }
    }
}

pub mod build;
#[cfg(test)]
mod tests;
