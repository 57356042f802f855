//! Reads the siw reference captures: pcapng -> Ethernet/IPv4/TCP -> one
//! byte stream per direction -> MPA startup frame and FPDUs -> ULPDUs.
//! Just enough of each format for these files; a malformed file fails the
//! test rather than being guessed around.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;

use capture::pcap::LinkType;
use std::path::PathBuf;

/// Where the captures live beside the repository, if they do.
pub fn captures_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/captures"
    ));
    if dir.is_dir() {
        Some(dir)
    } else {
        capture::skip::skip(&format!(
            "no reference captures at {} (they sit beside the repository)",
            dir.display()
        ));
        None
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(b[at..at + 2].try_into().unwrap())
}

/// The Ethernet frames of a capture file, in order.
pub fn pcapng_frames(file: &[u8]) -> Vec<Vec<u8>> {
    capture::pcap::frames(file)
        .expect("a readable capture")
        .into_iter()
        .map(|(link, frame)| {
            assert_eq!(link, LinkType::ETHERNET, "not Ethernet");
            frame
        })
        .collect()
}

/// One TCP segment with payload.
#[derive(Debug, Clone)]
pub struct TcpSegment {
    pub frame: usize,
    pub src: ([u8; 4], u16),
    pub dst: ([u8; 4], u16),
    pub seq: u32,
    pub syn: bool,
    pub payload: Vec<u8>,
}

pub fn tcp_segments(frames: &[Vec<u8>]) -> Vec<TcpSegment> {
    let mut out = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let Ok(seg) = capture::net::tcp_segment(LinkType::ETHERNET, f) else {
            continue;
        };
        let (SocketAddr::V4(src), SocketAddr::V4(dst)) = (seg.endpoints.src, seg.endpoints.dst)
        else {
            continue;
        };
        out.push(TcpSegment {
            frame: i + 1,
            src: (src.ip().octets(), src.port()),
            dst: (dst.ip().octets(), dst.port()),
            seq: seg.seq,
            syn: seg.flags.syn(),
            payload: seg.payload.to_vec(),
        });
    }
    out
}

pub type Flow = (([u8; 4], u16), ([u8; 4], u16));

/// The in-order byte stream of each direction, keyed by (source, dest),
/// with retransmitted bytes dropped. A hole fails the test.
pub fn streams(segments: &[TcpSegment]) -> BTreeMap<Flow, Vec<u8>> {
    let mut next: BTreeMap<Flow, u32> = BTreeMap::new();
    let mut data: BTreeMap<Flow, Vec<u8>> = BTreeMap::new();
    for s in segments {
        let flow = (s.src, s.dst);
        if s.syn {
            next.insert(flow, s.seq.wrapping_add(1));
            data.entry(flow).or_default();
            continue;
        }
        if s.payload.is_empty() {
            continue;
        }
        let expect = *next.entry(flow).or_insert(s.seq);
        let ahead = s.seq.wrapping_sub(expect) as i32;
        assert!(ahead <= 0, "hole of {ahead} bytes before frame {}", s.frame);
        let skip = (-ahead) as usize;
        if skip < s.payload.len() {
            data.entry(flow)
                .or_default()
                .extend_from_slice(&s.payload[skip..]);
            next.insert(flow, expect.wrapping_add((s.payload.len() - skip) as u32));
        }
    }
    data
}

/// One direction of an MPA connection after its startup frame.
#[derive(Debug, Clone)]
pub struct MpaStream {
    /// "MPA ID Req Frame" or "MPA ID Rep Frame".
    pub key: [u8; 16],
    pub flags: u8,
    pub revision: u8,
    pub private_data: Vec<u8>,
    pub ulpdus: Vec<Vec<u8>>,
}

/// Splits a stream into its MPA request/reply and its FPDUs' ULPDUs
/// (no markers: siw never uses them). A trailing partial FPDU (capture cut
/// short) is ignored.
pub fn mpa_stream(bytes: &[u8]) -> Option<MpaStream> {
    if bytes.len() < 20 || !bytes.starts_with(b"MPA ID R") {
        return None;
    }
    let pd_len = usize::from(be16(bytes, 18));
    let mut at = 20 + pd_len;
    let mut ulpdus = Vec::new();
    while at + 2 <= bytes.len() {
        let len = usize::from(be16(bytes, at));
        let body = 2 + len;
        let fpdu = body + (4 - body % 4) % 4 + 4;
        if at + fpdu > bytes.len() {
            break;
        }
        ulpdus.push(bytes[at + 2..at + 2 + len].to_vec());
        at += fpdu;
    }
    Some(MpaStream {
        key: bytes[..16].try_into().unwrap(),
        flags: bytes[16],
        revision: bytes[17],
        private_data: bytes[20..20 + pd_len.min(bytes.len() - 20)].to_vec(),
        ulpdus,
    })
}

/// Every MPA stream of a capture file, by direction.
pub fn capture(name: &str) -> Option<BTreeMap<Flow, MpaStream>> {
    let dir = captures_dir()?;
    let file = std::fs::read(dir.join(name)).expect("capture readable");
    let segments = tcp_segments(&pcapng_frames(&file));
    Some(
        streams(&segments)
            .into_iter()
            .filter_map(|(flow, bytes)| Some((flow, mpa_stream(&bytes)?)))
            .collect(),
    )
}

/// The client (10.99.0.3) to server direction and back, for captures with
/// a single connection.
pub fn client_server(streams: &BTreeMap<Flow, MpaStream>) -> (&MpaStream, &MpaStream) {
    assert_eq!(streams.len(), 2, "one connection expected");
    let mut c = None;
    let mut s = None;
    for ((src, _), st) in streams {
        if src.0 == [10, 99, 0, 3] {
            c = Some(st);
        } else {
            s = Some(st);
        }
    }
    (c.unwrap(), s.unwrap())
}
