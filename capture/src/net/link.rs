//! Link-layer headers down to the network-layer bytes.

use super::{be16, Skip};
use crate::pcap::LinkType;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
/// 802.1Q, 802.1ad (QinQ) and the pre-standard QinQ value.
const ETHERTYPE_VLAN: [u16; 3] = [0x8100, 0x88a8, 0x9100];
/// Stacked tags we walk before giving up.
const MAX_VLAN_TAGS: usize = 4;
const ETHERNET_HEADER_LEN: usize = 14;
const SLL_HEADER_LEN: usize = 16;
const SLL2_HEADER_LEN: usize = 20;
const NULL_HEADER_LEN: usize = 4;

/// Network-layer bytes, with the version the link header announced if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkLayer<'a> {
    /// The link header stripped: an IPv4 or IPv6 packet, or something else to be refused.
    pub bytes: &'a [u8],
}

fn after<'a>(frame: &'a [u8], at: usize, layer: &'static str) -> Result<&'a [u8], Skip> {
    frame.get(at..).ok_or(Skip::Truncated {
        layer,
        needed: at,
        got: frame.len(),
    })
}

fn by_ethertype(ethertype: u16, rest: &[u8]) -> Result<NetworkLayer<'_>, Skip> {
    match ethertype {
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Ok(NetworkLayer { bytes: rest }),
        other => Err(Skip::NotIp(other)),
    }
}

/// Removes the link header of `link` from `frame`.
pub fn strip(link: LinkType, frame: &[u8]) -> Result<NetworkLayer<'_>, Skip> {
    match link {
        LinkType::ETHERNET => ethernet(frame),
        LinkType::RAW
        | LinkType::RAW_BSD
        | LinkType::RAW_OPENBSD
        | LinkType::IPV4
        | LinkType::IPV6 => Ok(NetworkLayer { bytes: frame }),
        LinkType::LINUX_SLL => {
            let ethertype = be16(frame, 14, "Linux cooked")?;
            by_ethertype(ethertype, after(frame, SLL_HEADER_LEN, "Linux cooked")?)
        }
        LinkType::LINUX_SLL2 => {
            let ethertype = be16(frame, 0, "Linux cooked v2")?;
            if frame.len() < SLL2_HEADER_LEN {
                return Err(Skip::Truncated {
                    layer: "Linux cooked v2",
                    needed: SLL2_HEADER_LEN,
                    got: frame.len(),
                });
            }
            by_ethertype(ethertype, after(frame, SLL2_HEADER_LEN, "Linux cooked v2")?)
        }
        LinkType::NULL => {
            let family = crate::bytes::array::<4>(frame, 0).ok_or(Skip::Truncated {
                layer: "loopback",
                needed: NULL_HEADER_LEN,
                got: frame.len(),
            })?;
            // Host byte order of the capturing machine: accept either.
            let family = u32::from_le_bytes(family).min(u32::from_be_bytes(family));
            let rest = after(frame, NULL_HEADER_LEN, "loopback")?;
            match family {
                // AF_INET everywhere; AF_INET6 is 10, 24, 28 or 30 by OS.
                2 | 10 | 24 | 28 | 30 => Ok(NetworkLayer { bytes: rest }),
                other => Err(Skip::NotIp(other as u16)),
            }
        }
        other => Err(Skip::UnsupportedLink(other)),
    }
}

fn ethernet(frame: &[u8]) -> Result<NetworkLayer<'_>, Skip> {
    let mut at = ETHERNET_HEADER_LEN - 2;
    let mut ethertype = be16(frame, at, "Ethernet")?;
    let mut tags = 0;
    while ETHERTYPE_VLAN.contains(&ethertype) && tags < MAX_VLAN_TAGS {
        at += 4;
        ethertype = be16(frame, at, "VLAN tag")?;
        tags += 1;
    }
    by_ethertype(ethertype, after(frame, at + 2, "Ethernet")?)
}
