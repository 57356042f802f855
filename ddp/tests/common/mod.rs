//! Reads the siw reference captures: pcapng -> Ethernet/IPv4/TCP -> one
//! byte stream per direction -> MPA startup frame and FPDUs -> ULPDUs.
//! Just enough of each format for these files; a malformed file fails the
//! test rather than being guessed around.
#![allow(dead_code)]

use std::collections::BTreeMap;
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
        eprintln!(
            "skipping: no reference captures at {} (they sit beside the repository)",
            dir.display()
        );
        None
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(b[at..at + 2].try_into().unwrap())
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// The Ethernet frames of a little-endian pcapng file, in order.
pub fn pcapng_frames(file: &[u8]) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut at = 0;
    while at + 12 <= file.len() {
        let kind = le32(file, at);
        let len = le32(file, at + 4) as usize;
        assert!(len >= 12 && at + len <= file.len(), "bad pcapng block");
        if kind == 0x0a0d_0d0a {
            assert_eq!(le32(file, at + 8), 0x1a2b_3c4d, "big-endian pcapng");
        }
        if kind == 1 {
            assert_eq!(
                u16::from_le_bytes([file[at + 8], file[at + 9]]),
                1,
                "not Ethernet"
            );
        }
        if kind == 6 {
            let caplen = le32(file, at + 20) as usize;
            frames.push(file[at + 28..at + 28 + caplen].to_vec());
        }
        at += len;
    }
    frames
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
        if f.len() < 14 + 20 || be16(f, 12) != 0x0800 {
            continue;
        }
        let ip = &f[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(be16(ip, 2));
        if ip[9] != 6 {
            continue;
        }
        let ip = &ip[..total];
        let tcp = &ip[ihl..];
        let doff = usize::from(tcp[12] >> 4) * 4;
        out.push(TcpSegment {
            frame: i + 1,
            src: (ip[12..16].try_into().unwrap(), be16(tcp, 0)),
            dst: (ip[16..20].try_into().unwrap(), be16(tcp, 2)),
            seq: be32(tcp, 4),
            syn: tcp[13] & 0x02 != 0,
            payload: tcp[doff..].to_vec(),
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
