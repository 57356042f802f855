//! Reading the reference captures: a pcapng (or classic pcap) walker,
//! IPv4/TCP dissection and in-order stream reassembly, just enough to get
//! each direction's byte stream back. The captures live beside the
//! repository (`../shared/captures`); tests skip when it is absent.

use std::collections::BTreeMap;
use std::path::PathBuf;

pub fn dir() -> Option<PathBuf> {
    let d = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/captures"
    ));
    if d.is_dir() {
        Some(d)
    } else {
        println!("skipping: no reference captures at {}", d.display());
        None
    }
}

fn u32le(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Link-layer frames of a pcapng or classic pcap file (little-endian).
fn frames(file: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    match u32le(file, 0) {
        Some(0x0a0d_0d0a) => {
            let mut at = 0;
            while let (Some(kind), Some(len)) = (u32le(file, at), u32le(file, at + 4)) {
                let len = len as usize;
                if kind == 6 {
                    let cap = u32le(file, at + 20).unwrap() as usize;
                    out.push(file[at + 28..at + 28 + cap].to_vec());
                }
                if len == 0 {
                    break;
                }
                at += len;
            }
        }
        Some(0xa1b2_c3d4) => {
            let mut at = 24;
            while let Some(cap) = u32le(file, at + 8) {
                let cap = cap as usize;
                out.push(file[at + 16..at + 16 + cap].to_vec());
                at += 16 + cap;
            }
        }
        other => panic!("not a capture: {other:x?}"),
    }
    out
}

/// One direction of one TCP connection: (src addr, src port, dst port).
pub type Flow = ([u8; 4], u16, u16);

/// Each direction's payload stream, reassembled in sequence order; keyed by
/// flow, in order of first appearance.
pub fn streams(name: &str) -> Option<Vec<(Flow, Vec<u8>)>> {
    let path = dir()?.join(name);
    let file = std::fs::read(&path).unwrap();
    let mut order = Vec::new();
    let mut flows: BTreeMap<Flow, (u32, Vec<u8>)> = BTreeMap::new();
    for f in frames(&file) {
        if f.len() < 14 || f[12..14] != [0x08, 0x00] {
            continue;
        }
        let ip = &f[14..];
        if ip[9] != 6 {
            continue;
        }
        let ihl = usize::from(ip[0] & 0xf) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let tcp = &ip[ihl..total];
        let src: [u8; 4] = ip[12..16].try_into().unwrap();
        let sport = u16::from_be_bytes([tcp[0], tcp[1]]);
        let dport = u16::from_be_bytes([tcp[2], tcp[3]]);
        let seq = u32::from_be_bytes(tcp[4..8].try_into().unwrap());
        let syn = tcp[13] & 0x02 != 0;
        let payload = &tcp[usize::from(tcp[12] >> 4) * 4..];
        let key = (src, sport, dport);
        if syn {
            flows.insert(key, (seq.wrapping_add(1), Vec::new()));
            order.push(key);
            continue;
        }
        let Some((next, data)) = flows.get_mut(&key) else {
            continue;
        };
        if payload.is_empty() {
            // Pure ACKs, and the ones after a FIN (which took a number).
            continue;
        }
        let off = seq.wrapping_sub(*next) as i32;
        if off > 0 {
            panic!(
                "{name}: gap in {key:?}: seq {seq} next {next} len {}",
                payload.len()
            );
        }
        let skip = (-off) as usize;
        if skip < payload.len() {
            data.extend_from_slice(&payload[skip..]);
            *next = next.wrapping_add((payload.len() - skip) as u32);
        }
    }
    Some(
        order
            .into_iter()
            .map(|k| (k, flows.remove(&k).unwrap().1))
            .collect(),
    )
}

/// Length of the MPA Request/Reply at the front of a stream.
pub fn mpa_frame_len(stream: &[u8]) -> usize {
    assert_eq!(&stream[..4], b"MPA ");
    20 + usize::from(u16::from_be_bytes([stream[18], stream[19]]))
}

/// The FPDUs of a stream (after its MPA frame), without markers.
pub fn fpdus(stream: &[u8]) -> Vec<&[u8]> {
    let mut rest = &stream[mpa_frame_len(stream)..];
    let mut out = Vec::new();
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        let n = ((2 + len).div_ceil(4) * 4 + 4).min(rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

/// The ULPDU inside an FPDU.
pub fn ulpdu(fpdu: &[u8]) -> &[u8] {
    let len = usize::from(u16::from_be_bytes([fpdu[0], fpdu[1]]));
    &fpdu[2..2 + len]
}
