//! Link-layer header type codes (tcpdump.org LINKTYPE_* values).

use std::fmt;

/// The link-layer header type of a packet, kept as its number so that
/// unknown types are reported, not lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkType(pub u16);

impl LinkType {
    /// BSD loopback: a 4-byte host-order address family.
    pub const NULL: LinkType = LinkType(0);
    /// Ethernet II (what veth and TAP captures carry).
    pub const ETHERNET: LinkType = LinkType(1);
    /// Raw IP as some platforms wrote it (DLT_RAW 12; 14 on OpenBSD).
    pub const RAW_BSD: LinkType = LinkType(12);
    /// Raw IP as OpenBSD numbered DLT_RAW.
    pub const RAW_OPENBSD: LinkType = LinkType(14);
    /// Raw IPv4 or IPv6, no link header.
    pub const RAW: LinkType = LinkType(101);
    /// Linux "cooked" capture v1 (`tcpdump -i any`).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// Raw IPv4, no link header.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6, no link header.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux "cooked" capture v2.
    pub const LINUX_SLL2: LinkType = LinkType(276);
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            LinkType::NULL => "NULL",
            LinkType::ETHERNET => "ETHERNET",
            LinkType::RAW_BSD | LinkType::RAW_OPENBSD | LinkType::RAW => "RAW",
            LinkType::LINUX_SLL => "LINUX_SLL",
            LinkType::IPV4 => "IPV4",
            LinkType::IPV6 => "IPV6",
            LinkType::LINUX_SLL2 => "LINUX_SLL2",
            _ => return write!(f, "LINKTYPE {}", self.0),
        };
        write!(f, "{name} ({})", self.0)
    }
}
