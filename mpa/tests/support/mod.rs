//! Reads the reference captures (with the `capture` crate's reader and frame
//! parser) and puts each TCP connection's two byte streams back together.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;

use capture::pcap::LinkType;
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
        capture::skip::skip(&format!(
            "reference captures not found at {}",
            dir.display()
        ));
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

/// Link-layer frames of a pcapng (or classic pcap) file, Ethernet only.
pub fn frames(file: &[u8]) -> Vec<Vec<u8>> {
    capture::pcap::frames(file)
        .expect("a readable capture")
        .into_iter()
        .filter(|(link, _)| *link == LinkType::ETHERNET)
        .map(|(_, frame)| frame)
        .collect()
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
    let seg = capture::net::tcp_segment(LinkType::ETHERNET, frame).ok()?;
    let (SocketAddr::V4(src), SocketAddr::V4(dst)) = (seg.endpoints.src, seg.endpoints.dst) else {
        return None;
    };
    Some(Segment {
        src: (src.ip().octets(), src.port()),
        dst: (dst.ip().octets(), dst.port()),
        seq: seg.seq,
        syn: seg.flags.syn(),
        mss: seg.mss(),
        payload: seg.payload.to_vec(),
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
    for seg in frames(file).iter().filter_map(|f| tcp_segment(f)) {
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
