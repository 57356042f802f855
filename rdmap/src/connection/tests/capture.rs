//! Reading the reference captures: frames and TCP segments through the
//! `capture` crate, then in-order stream reassembly, just enough to get
//! each direction's byte stream back. The captures live beside the
//! repository (`../shared/captures`); tests skip when it is absent.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use capture::pcap::LinkType;

pub fn dir() -> Option<PathBuf> {
    let d = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/captures"
    ));
    if d.is_dir() {
        Some(d)
    } else {
        capture::skip::skip(&format!("no reference captures at {}", d.display()));
        None
    }
}

/// Link-layer frames of a pcapng or classic pcap file, Ethernet only.
fn frames(file: &[u8]) -> Vec<Vec<u8>> {
    capture::pcap::frames(file)
        .expect("a readable capture")
        .into_iter()
        .filter(|(link, _)| *link == LinkType::ETHERNET)
        .map(|(_, frame)| frame)
        .collect()
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
        let Ok(seg) = capture::net::tcp_segment(LinkType::ETHERNET, &f) else {
            continue;
        };
        let SocketAddr::V4(from) = seg.endpoints.src else {
            continue;
        };
        let (src, sport, dport) = (from.ip().octets(), from.port(), seg.endpoints.dst.port());
        let (seq, syn, payload) = (seg.seq, seg.flags.syn(), seg.payload);
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
    let frame = mpa::wire::Frame::new_checked(stream).expect("a whole MPA frame");
    assert!(frame.kind().is_some(), "the stream starts with an MPA key");
    frame.frame_len()
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
