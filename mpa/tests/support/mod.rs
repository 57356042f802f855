//! Reads the reference captures: a small pcapng walker and a TCP stream
//! reassembler, enough for the Ethernet/IPv4/TCP traffic in them.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The reference captures sit beside the repository; a clone without them
/// skips the tests that need them.
pub fn captures_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/captures"
    ));
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "skipping: reference captures not found at {}",
            dir.display()
        );
        None
    }
}

/// Every capture file in the directory, sorted by name.
pub fn capture_files() -> Vec<(String, Vec<u8>)> {
    let Some(dir) = captures_dir() else {
        return Vec::new();
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("captures directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, std::fs::read(&p).expect("readable capture"))
        })
        .collect()
}

fn u16_at(b: &[u8], at: usize, le: bool) -> u16 {
    let v = [b[at], b[at + 1]];
    if le {
        u16::from_le_bytes(v)
    } else {
        u16::from_be_bytes(v)
    }
}

fn u32_at(b: &[u8], at: usize, le: bool) -> u32 {
    let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if le {
        u32::from_le_bytes(v)
    } else {
        u32::from_be_bytes(v)
    }
}

/// Link-layer frames of a pcapng (or classic pcap) file, Ethernet only.
pub fn frames(file: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let magic = u32_at(file, 0, true);
    if magic == 0xa1b2_c3d4 || magic == 0xd4c3_b2a1 {
        let le = magic == 0xa1b2_c3d4;
        let mut at = 24;
        while at + 16 <= file.len() {
            let incl = u32_at(file, at + 8, le) as usize;
            out.push(&file[at + 16..at + 16 + incl]);
            at += 16 + incl;
        }
        return out;
    }
    assert_eq!(magic, 0x0a0d_0d0a, "pcapng section header");
    let le = u32_at(file, 8, true) == 0x1a2b_3c4d;
    let mut link_types = Vec::new();
    let mut at = 0;
    while at + 12 <= file.len() {
        let kind = u32_at(file, at, le);
        let len = u32_at(file, at + 4, le) as usize;
        assert!(len >= 12 && at + len <= file.len(), "block length");
        let body = &file[at + 8..at + len - 4];
        match kind {
            // Interface description: link type.
            1 => link_types.push(u16_at(body, 0, le)),
            // Enhanced packet.
            6 => {
                let iface = u32_at(body, 0, le) as usize;
                let caplen = u32_at(body, 12, le) as usize;
                if link_types.get(iface) == Some(&1) {
                    out.push(&body[20..20 + caplen]);
                }
            }
            // Simple packet (interface 0).
            3 if link_types.first() == Some(&1) => out.push(&body[4..]),
            _ => {}
        }
        at += len;
    }
    out
}

/// One TCP segment.
#[derive(Debug, Clone)]
pub struct Segment {
    pub src: ([u8; 4], u16),
    pub dst: ([u8; 4], u16),
    pub seq: u32,
    pub syn: bool,
    /// The MSS option, on SYNs that carry one.
    pub mss: Option<u16>,
    pub payload: Vec<u8>,
}

/// TCP over IPv4 over Ethernet (with an optional 802.1Q tag).
pub fn tcp_segment(frame: &[u8]) -> Option<Segment> {
    let mut l3 = 14;
    let mut ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    if ethertype == 0x8100 {
        ethertype = u16::from_be_bytes([*frame.get(16)?, *frame.get(17)?]);
        l3 = 18;
    }
    if ethertype != 0x0800 {
        return None;
    }
    let ip = frame.get(l3..)?;
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    if *ip.get(9)? != 6 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let ip = ip.get(..total)?;
    let tcp = ip.get(ihl..)?;
    let doff = usize::from(tcp.get(12)? >> 4) * 4;
    let flags = *tcp.get(13)?;
    let mut mss = None;
    let mut opt = 20;
    while opt < doff {
        match tcp.get(opt) {
            Some(0) | None => break,
            Some(1) => opt += 1,
            Some(2) => {
                mss = Some(u16::from_be_bytes([*tcp.get(opt + 2)?, *tcp.get(opt + 3)?]));
                opt += 4;
            }
            Some(_) => opt += usize::from((*tcp.get(opt + 1)?).max(2)),
        }
    }
    Some(Segment {
        src: (
            ip[12..16].try_into().ok()?,
            u16::from_be_bytes([tcp[0], tcp[1]]),
        ),
        dst: (
            ip[16..20].try_into().ok()?,
            u16::from_be_bytes([tcp[2], tcp[3]]),
        ),
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        syn: flags & 0x02 != 0,
        mss,
        payload: tcp.get(doff..)?.to_vec(),
    })
}

/// Both directions of one TCP connection, reassembled.
#[derive(Debug, Default, Clone)]
pub struct Connection {
    /// The side that sent the first SYN (or the first segment seen).
    pub client: ([u8; 4], u16),
    pub server: ([u8; 4], u16),
    pub client_stream: Vec<u8>,
    pub server_stream: Vec<u8>,
    /// MSS each side announced in its SYN.
    pub client_mss: Option<u16>,
    pub server_mss: Option<u16>,
}

/// Reassembles every TCP connection in the file, in order of appearance.
pub fn connections(file: &[u8]) -> Vec<Connection> {
    type Key = (([u8; 4], u16), ([u8; 4], u16));
    let mut order: Vec<Key> = Vec::new();
    let mut by_dir: BTreeMap<Key, Vec<Segment>> = BTreeMap::new();
    for seg in frames(file).into_iter().filter_map(tcp_segment) {
        let key = (seg.src, seg.dst);
        let rev = (seg.dst, seg.src);
        if !order.contains(&key) && !order.contains(&rev) {
            order.push(key);
        }
        by_dir.entry(key).or_default().push(seg);
    }
    order
        .into_iter()
        .map(|(a, b)| {
            let (client, server) = match by_dir.get(&(a, b)).and_then(|s| s.first()) {
                Some(first) if first.syn || !by_dir.contains_key(&(b, a)) => (a, b),
                _ if by_dir
                    .get(&(b, a))
                    .and_then(|s| s.first())
                    .is_some_and(|s| s.syn) =>
                {
                    (b, a)
                }
                _ => (a, b),
            };
            let empty = Vec::new();
            let cs = by_dir.get(&(client, server)).unwrap_or(&empty);
            let ss = by_dir.get(&(server, client)).unwrap_or(&empty);
            Connection {
                client,
                server,
                client_stream: reassemble(cs),
                server_stream: reassemble(ss),
                client_mss: cs.iter().find(|s| s.syn).and_then(|s| s.mss),
                server_mss: ss.iter().find(|s| s.syn).and_then(|s| s.mss),
            }
        })
        .collect()
}

/// Orders one direction's payload by sequence number, dropping
/// retransmitted bytes; stops at a gap.
fn reassemble(segments: &[Segment]) -> Vec<u8> {
    let isn = match segments.iter().find(|s| s.syn) {
        Some(syn) => syn.seq.wrapping_add(1),
        None => match segments.iter().find(|s| !s.payload.is_empty()) {
            Some(s) => s.seq,
            None => return Vec::new(),
        },
    };
    let mut pieces: Vec<(u32, &[u8])> = segments
        .iter()
        .filter(|s| !s.payload.is_empty())
        .map(|s| (s.seq.wrapping_sub(isn), &s.payload[..]))
        .collect();
    pieces.sort_by_key(|p| p.0);
    let mut stream = Vec::new();
    for (rel, data) in pieces {
        let rel = rel as usize;
        if rel > stream.len() {
            break;
        }
        let skip = stream.len() - rel;
        if skip < data.len() {
            stream.extend_from_slice(&data[skip..]);
        }
    }
    stream
}
