//! What the TAP device does to frames so the kernel can take over
//! checksums and segmentation, and what it does with the kernel's own
//! shortcuts on receive.
//!
//! Transmit: smoltcp leaves TCP checksums zero on an interface that offers
//! segmentation; the device writes the pseudo-header sum there and asks
//! the kernel to complete it (`NEEDS_CSUM`), and a super-segment longer
//! than the MSS smoltcp gave goes out as one frame the kernel cuts
//! (`GSO_TCPV4`). Receive: a frame whose checksum the kernel vouches for
//! (`DATA_VALID`, or `NEEDS_CSUM` from a local sender) is taken as is;
//! smoltcp verifies no TCP checksum on such an interface, so the device
//! verifies every other TCP frame itself. Captures get the frames the
//! wire carries: super-frames cut into segments, checksums completed.

use smoltcp::wire::{
    checksum, EthernetFrame, EthernetProtocol, IpAddress, IpProtocol, Ipv4Packet, Ipv6Packet,
    TcpPacket,
};

use super::vnet::{GsoType, PartialChecksum, Segmentation, VnetRepr};

const ETHERNET_HEADER_LEN: usize = 14;
/// The TCP checksum's offset in the TCP header.
const TCP_CHECKSUM_OFFSET: u16 = 16;
const TCP_FLAG_FIN: u8 = 0x01;
const TCP_FLAG_PSH: u8 = 0x08;
const TCP_FLAG_CWR: u8 = 0x80;
/// Byte 13 of the TCP header holds the flags.
const TCP_FLAGS_BYTE: usize = 13;

/// Where the TCP segment of an IPv4 Ethernet frame lies.
#[derive(Clone, Copy)]
struct TcpV4 {
    /// Offset of the TCP header in the frame.
    tcp_at: usize,
    /// Length of the TCP header and payload (within the IP total length).
    tcp_len: usize,
    src: smoltcp::wire::Ipv4Address,
    dst: smoltcp::wire::Ipv4Address,
}

fn tcp_v4(frame: &[u8]) -> Option<TcpV4> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != IpProtocol::Tcp || ip.more_frags() || ip.frag_offset() != 0 {
        return None;
    }
    let tcp_len = usize::from(ip.total_len()) - usize::from(ip.header_len());
    TcpPacket::new_checked(ip.payload()).ok()?;
    Some(TcpV4 {
        tcp_at: ETHERNET_HEADER_LEN + usize::from(ip.header_len()),
        tcp_len,
        src: ip.src_addr(),
        dst: ip.dst_addr(),
    })
}

/// Readies a frame smoltcp built for the kernel and returns the header to
/// write before it. `gso_size` is the MSS smoltcp asked the segments cut
/// at, if it handed over a super-segment.
pub(crate) fn prepare_tx(frame: &mut [u8], gso_size: Option<u16>) -> VnetRepr {
    let Some(t) = tcp_v4(frame) else {
        // ARP, ICMP: smoltcp filled their checksums.
        return VnetRepr::default();
    };
    let pseudo = checksum::pseudo_header_v4(&t.src, &t.dst, IpProtocol::Tcp, t.tcp_len as u32);
    let field = t.tcp_at + usize::from(TCP_CHECKSUM_OFFSET);
    frame[field..field + 2].copy_from_slice(&pseudo.to_be_bytes());
    let tcp_header_len = usize::from(frame[t.tcp_at + 12] >> 4) * 4;
    let payload = t.tcp_len.saturating_sub(tcp_header_len);
    let segmentation = gso_size
        .filter(|&g| g > 0 && payload > usize::from(g))
        .map(|size| Segmentation {
            kind: GsoType::TcpV4,
            ecn: false,
            hdr_len: (t.tcp_at + tcp_header_len) as u16,
            size,
        });
    VnetRepr {
        // Both fit: the TCP header starts within 14 + 60 bytes.
        checksum: Some(PartialChecksum {
            start: t.tcp_at as u16,
            offset: TCP_CHECKSUM_OFFSET,
        }),
        segmentation,
        ..VnetRepr::default()
    }
}

/// Why a received frame is not handed to smoltcp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RxDrop {
    /// A TCP checksum nobody vouched for is wrong.
    BadChecksum,
    /// `NEEDS_CSUM` pointing outside the frame.
    BadHeader,
}

/// Decides on a received frame, completing a partial checksum of a
/// protocol whose checksum smoltcp verifies itself.
pub(crate) fn accept_rx(hdr: &VnetRepr, frame: &mut [u8]) -> Result<(), RxDrop> {
    if let Some(c) = hdr.checksum {
        // A local sender left the checksum partial: the data never left
        // the host. TCP needs nothing (smoltcp does not check it here);
        // anything else gets its checksum completed for smoltcp to check.
        if tcp_v4(frame).is_some_and(|t| t.tcp_at == usize::from(c.start)) || is_tcp_v6(frame) {
            return Ok(());
        }
        return complete(frame, c).map_err(|()| RxDrop::BadHeader);
    }
    if hdr.data_valid {
        return Ok(());
    }
    if tcp_checksum_ok(frame) == Some(false) {
        return Err(RxDrop::BadChecksum);
    }
    Ok(())
}

/// The TCP checksum of an IPv4 or IPv6 frame verified; `None` if the
/// frame holds no TCP segment.
fn tcp_checksum_ok(frame: &[u8]) -> Option<bool> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    match eth.ethertype() {
        EthernetProtocol::Ipv4 => {
            let t = tcp_v4(frame)?;
            let tcp = TcpPacket::new_unchecked(&frame[t.tcp_at..t.tcp_at + t.tcp_len]);
            Some(tcp.verify_checksum(&IpAddress::Ipv4(t.src), &IpAddress::Ipv4(t.dst)))
        }
        EthernetProtocol::Ipv6 => {
            let ip = Ipv6Packet::new_checked(eth.payload()).ok()?;
            if ip.next_header() != IpProtocol::Tcp {
                return None;
            }
            let tcp = TcpPacket::new_checked(ip.payload()).ok()?;
            Some(tcp.verify_checksum(
                &IpAddress::Ipv6(ip.src_addr()),
                &IpAddress::Ipv6(ip.dst_addr()),
            ))
        }
        _ => None,
    }
}

fn is_tcp_v6(frame: &[u8]) -> bool {
    EthernetFrame::new_checked(frame)
        .ok()
        .filter(|e| e.ethertype() == EthernetProtocol::Ipv6)
        .and_then(|e| {
            Ipv6Packet::new_checked(e.payload())
                .ok()
                .map(|ip| ip.next_header())
        })
        == Some(IpProtocol::Tcp)
}

/// Completes a partial checksum as the kernel would: the ones' complement
/// of the sum from `start` to the end of the frame, the field holding the
/// pseudo-header sum.
fn complete(frame: &mut [u8], c: PartialChecksum) -> Result<(), ()> {
    let start = usize::from(c.start);
    let field = start.checked_add(usize::from(c.offset)).ok_or(())?;
    if field.checked_add(2).is_none_or(|end| end > frame.len()) {
        return Err(());
    }
    let sum = !checksum::data(&frame[start..]);
    frame[field..field + 2].copy_from_slice(&sum.to_be_bytes());
    Ok(())
}

/// Hands `emit` the frames the wire carries for one frame with its
/// header: each segment of a TCP/IPv4 super-frame with its own headers and
/// checksums, a partial checksum completed, anything else as it is.
pub(crate) fn wire_frames(hdr: &VnetRepr, frame: &[u8], emit: &mut dyn FnMut(&[u8])) {
    let mut copy = frame.to_vec();
    if let Some(c) = hdr.checksum {
        if let Some(t) = tcp_v4(&copy).filter(|t| t.tcp_at == usize::from(c.start)) {
            if let Some(s) = hdr
                .segmentation
                .filter(|s| s.kind == GsoType::TcpV4 && s.size > 0)
            {
                segment_tcp_v4(&copy, &t, usize::from(s.size), emit);
                return;
            }
            fill_tcp_v4_checksum(&mut copy, &t);
        } else {
            // Leave a frame the header misdescribes as it came.
            let _ = complete(&mut copy, c);
        }
    }
    emit(&copy);
}

fn fill_tcp_v4_checksum(frame: &mut [u8], t: &TcpV4) {
    let mut tcp = TcpPacket::new_unchecked(&mut frame[t.tcp_at..t.tcp_at + t.tcp_len]);
    tcp.fill_checksum(&IpAddress::Ipv4(t.src), &IpAddress::Ipv4(t.dst));
}

/// Cuts a TCP/IPv4 super-frame into segments of `mss` payload bytes, as
/// the kernel's GSO does: headers copied, sequence numbers advanced, IP
/// length and identification per segment, FIN and PSH on the last
/// segment only, CWR on the first only, every checksum computed.
fn segment_tcp_v4(frame: &[u8], t: &TcpV4, mss: usize, emit: &mut dyn FnMut(&[u8])) {
    let tcp_header_len = usize::from(frame[t.tcp_at + 12] >> 4) * 4;
    let headers = t.tcp_at + tcp_header_len;
    let payload = &frame[headers..t.tcp_at + t.tcp_len];
    let first = TcpPacket::new_unchecked(&frame[t.tcp_at..]);
    let (seq, ident) = (
        first.seq_number(),
        Ipv4Packet::new_unchecked(&frame[ETHERNET_HEADER_LEN..]).ident(),
    );
    let pieces = payload.len().div_ceil(mss).max(1);
    let mut out = Vec::with_capacity(headers + mss);
    for (i, chunk) in payload.chunks(mss).enumerate() {
        out.clear();
        out.extend_from_slice(&frame[..headers]);
        out.extend_from_slice(chunk);
        let ip_len = out.len() - ETHERNET_HEADER_LEN;
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut out[ETHERNET_HEADER_LEN..]);
            ip.set_total_len(ip_len as u16);
            ip.set_ident(ident.wrapping_add(i as u16));
            ip.fill_checksum();
        }
        let mut flags = out[t.tcp_at + TCP_FLAGS_BYTE];
        if i + 1 < pieces {
            flags &= !(TCP_FLAG_FIN | TCP_FLAG_PSH);
        }
        if i > 0 {
            flags &= !TCP_FLAG_CWR;
        }
        out[t.tcp_at + TCP_FLAGS_BYTE] = flags;
        let mut tcp = TcpPacket::new_unchecked(&mut out[t.tcp_at..]);
        tcp.set_seq_number(seq + i * mss);
        let piece = TcpV4 {
            tcp_len: tcp_header_len + chunk.len(),
            ..*t
        };
        fill_tcp_v4_checksum(&mut out, &piece);
        emit(&out);
    }
}

#[cfg(test)]
mod tests;
