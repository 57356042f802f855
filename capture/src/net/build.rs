//! Frame builders: Ethernet/IPv4/IPv6/TCP with chosen fields, for tests
//! and tools that write captures of their own.

use std::net::{IpAddr, SocketAddr};

/// Builds the TCP header plus payload (checksum left 0: we never verify it).
pub fn tcp(src_port: u16, dst_port: u16, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&src_port.to_be_bytes());
    t.extend_from_slice(&dst_port.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.push(5 << 4);
    t.push(flags);
    t.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(payload);
    t
}

/// An IP packet (v4 or v6 per the addresses) around `transport`.
pub fn ip(src: IpAddr, dst: IpAddr, protocol: u8, transport: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            p.extend_from_slice(&[0x45, 0]);
            p.extend_from_slice(&((20 + transport.len()) as u16).to_be_bytes());
            p.extend_from_slice(&[0, 1, 0x40, 0, 64, protocol, 0, 0]);
            p.extend_from_slice(&s.octets());
            p.extend_from_slice(&d.octets());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            p.extend_from_slice(&[0x60, 0, 0, 0]);
            p.extend_from_slice(&(transport.len() as u16).to_be_bytes());
            p.extend_from_slice(&[protocol, 64]);
            p.extend_from_slice(&s.octets());
            p.extend_from_slice(&d.octets());
        }
        _ => panic!("mixed address families"),
    }
    p.extend_from_slice(transport);
    p
}

/// An Ethernet frame around `ip` (ethertype from the IP version).
pub fn ethernet(ip: &[u8]) -> Vec<u8> {
    let mut f = vec![0x52, 0x54, 0, 0x99, 0, 2, 0x52, 0x54, 0, 0x99, 0, 3];
    let v6 = ip.first().is_some_and(|b| b >> 4 == 6);
    f.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
    f.extend_from_slice(ip);
    f
}

/// A whole Ethernet/IP/TCP frame.
pub fn frame(
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    ethernet(&ip(
        src.ip(),
        dst.ip(),
        6,
        &tcp(src.port(), dst.port(), seq, ack, flags, payload),
    ))
}
