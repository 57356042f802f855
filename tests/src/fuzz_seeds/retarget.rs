//! Captured ULPDUs rewritten to aim at the memory `rdmap::fuzzing::connection`
//! registers, so capture-shaped traffic gets past the STag checks and into
//! placement, completion and Read Response generation instead of stopping
//! at the first unknown STag.
//!
//! The fuzzed Responder's layout (see rdmap/src/fuzzing.rs): STag 0x100 is a
//! remotely writable 256-byte window at 0x1000; four 32-byte receive buffers
//! sit at 0x2000; its own 64-byte Read lands at 0x2080; STag 0x300 is a
//! remotely readable 256-byte region at 0x3000.

use std::collections::HashMap;

use ddp::wire::{SegmentRepr, TaggedRepr, UntaggedRepr};
use ddp::STag;
use rdmap::wire::{Body, MessageRepr, ReadRequestRepr};
use rdmap::Opcode;

const WINDOW: (u32, u64, usize) = (0x100, 0x1000, 256);
const READ_SINK: (u32, u64, usize) = (0x200, 0x2080, 64);
const READABLE: (u32, u64, usize) = (0x300, 0x3000, 256);
const RECV_LEN: usize = 32;

/// Offsets of each STag's segments from the first offset seen with it.
#[derive(Default)]
struct Origins(HashMap<u32, u64>);

impl Origins {
    fn offset(&mut self, stag: STag, to: u64) -> u64 {
        to.wrapping_sub(*self.0.entry(stag.0).or_insert(to))
    }
}

/// Places `payload` at `offset` (modulo the region) into `region`, cut to
/// fit; returns the new tagged offset and payload.
fn aim(region: (u32, u64, usize), offset: u64, payload: &[u8]) -> (u64, &[u8]) {
    let off = (offset % region.2 as u64) as usize;
    let n = payload.len().min(region.2 - off);
    (region.1 + off as u64, &payload[..n])
}

/// Rewrites one direction's ULPDUs. Zero-length messages (RTRs) and
/// ULPDUs that do not parse are kept as they are; Send segments past the
/// first of their message are dropped and the first is cut to one receive
/// buffer and made the last, so each Send is one whole message; MSNs are
/// renumbered per queue from 1.
pub fn retarget(ulpdus: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut origins = Origins::default();
    let mut read_origins = Origins::default();
    let mut msn = [0u32; 3];
    let mut out = Vec::new();
    for u in ulpdus {
        let Ok(m) = MessageRepr::parse(u) else {
            out.push(u.clone());
            continue;
        };
        let payload_len = match m.body {
            Body::Data(d) => d.len(),
            _ => usize::MAX,
        };
        if payload_len == 0 {
            out.push(u.clone());
            continue;
        }
        let (ddp, body): (SegmentRepr, Body<'_>) = match (m.ddp, m.body) {
            (SegmentRepr::Tagged(t), Body::Data(d)) => {
                let off = origins.offset(t.stag, t.to);
                let region = if m.opcode() == Opcode::ReadResponse {
                    READ_SINK
                } else {
                    WINDOW
                };
                let (to, d) = aim(region, off, d);
                let t = TaggedRepr {
                    stag: STag(region.0),
                    to,
                    ..t
                };
                (t.into(), Body::Data(d))
            }
            (SegmentRepr::Untagged(h), Body::Data(d)) => {
                if h.mo != 0 {
                    continue;
                }
                msn[0] += 1;
                let h = UntaggedRepr {
                    last: true,
                    msn: msn[0],
                    ..h
                };
                (h.into(), Body::Data(&d[..d.len().min(RECV_LEN)]))
            }
            (SegmentRepr::Untagged(h), Body::ReadRequest(r)) => {
                msn[1] += 1;
                let off = read_origins.offset(r.source_stag, r.source_to);
                let start = off % READABLE.2 as u64;
                let room = READABLE.2 as u32 - start as u32;
                let r = ReadRequestRepr {
                    source_stag: STag(READABLE.0),
                    source_to: READABLE.1 + start,
                    size: r.size.min(room),
                    ..r
                };
                let h = UntaggedRepr { msn: msn[1], ..h };
                (h.into(), Body::ReadRequest(r))
            }
            (SegmentRepr::Untagged(h), body @ Body::Terminate(_)) => {
                msn[2] += 1;
                let h = UntaggedRepr { msn: msn[2], ..h };
                (h.into(), body)
            }
            (ddp, body) => (ddp, body),
        };
        let m = MessageRepr { ddp, body };
        let mut buf = vec![0u8; m.buffer_len()];
        match m.emit(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                out.push(buf);
            }
            Err(_) => out.push(u.clone()),
        }
    }
    out
}

/// Frames ULPDUs into one FPDU stream (no markers, as the fuzzed
/// connection's are counted from its first FPDU anyway).
pub fn frame_all(ulpdus: &[Vec<u8>], crc: bool) -> Vec<u8> {
    let mut framer = mpa::Framer::new(crc, false);
    let mut out = Vec::new();
    for u in ulpdus {
        // A ULPDU that came out of a deframer fits a frame.
        if framer.frame_to_vec(u, &[], &mut out).is_err() {
            break;
        }
    }
    out
}
