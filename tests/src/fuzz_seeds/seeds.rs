//! Seeds cut from a real conversation, one family per fuzz target, each in
//! the byte layout its target reads (see [`super::encode`]).

use std::collections::HashMap;

use capture::reassembly::Direction;
use mpa::{CrcPolicy, RtrSet};
use rdmap::wire::{Body, MessageRepr};
use rdmap::Opcode;

use super::conversation::{MpaConversation, Side};
use super::encode::{
    ConnectionInput, DeframerInput, InitiatorChoice, PlacementScript, RegionSpec, ResponderChoice,
    StartupInput,
};
use super::retarget::{frame_all, retarget};
use super::targets::Target;

/// One input for one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    pub target: Target,
    /// A file name that says where the seed came from.
    pub name: String,
    pub data: Vec<u8>,
}

impl Seed {
    pub fn new(target: Target, name: impl Into<String>, data: Vec<u8>) -> Seed {
        Seed {
            target,
            name: name.into(),
            data,
        }
    }
}

/// Connection streams are cut to whole FPDUs within this many bytes:
/// longer inputs only slow every run of the fuzzer down.
pub const MAX_CONNECTION_STREAM: usize = 16 * 1024;
/// Deframer seeds likewise.
pub const MAX_DEFRAMER_STREAM: usize = 8 * 1024;
/// Messages a retargeted connection seed keeps.
pub const MAX_RETARGETED: usize = 48;
/// Header seeds kept per opcode and direction of a conversation.
pub const HEADERS_PER_OPCODE: usize = 3;
/// Data payload kept in a header seed.
pub const HEADER_PAYLOAD: usize = 32;

fn dir_name(dir: Direction) -> &'static str {
    match dir {
        Direction::ClientToServer => "c2s",
        Direction::ServerToClient => "s2c",
    }
}

/// The first FPDUs of `side` that fit in `max` bytes (at least one).
fn fpdus_within(side: &Side, max: usize) -> &[u8] {
    let n = side.fpdus.iter().take_while(|r| r.end <= max).count();
    side.first_fpdus(n.max(1))
}

/// The Initiator and Responder that reproduce the capture's start-up.
pub fn startup_choices(c: &MpaConversation) -> (InitiatorChoice, ResponderChoice) {
    let s = &c.settled;
    let req = s.request_ird_ord;
    let initiator = InitiatorChoice {
        rev1: s.request_rev == 1,
        crc: match (s.request_crc, s.crc) {
            (false, _) => CrcPolicy::Off,
            (true, true) => CrcPolicy::Required,
            (true, false) => CrcPolicy::Preferred,
        },
        markers_rx: s.markers[Direction::ServerToClient.index()],
        markers_tx: s.markers[Direction::ClientToServer.index()],
        peer_to_peer: req.filter(|b| b.peer_to_peer).map(|b| {
            if b.rtr.is_empty() {
                RtrSet::ALL
            } else {
                b.rtr
            }
        }),
        ird: req.map_or(16, |b| b.ird),
        ord: req.map_or(16, |b| b.ord),
        private_data: (s.request_pd_len % 64) as u8,
        accept_rev1_reply: s.reply_rev < s.request_rev,
    };
    let responder = ResponderChoice {
        rev1: s.reply_rev == 1,
        crc: match (s.crc, s.request_crc) {
            (false, _) => CrcPolicy::Off,
            (true, true) => CrcPolicy::Preferred,
            (true, false) => CrcPolicy::Required,
        },
        markers_rx: s.markers[Direction::ClientToServer.index()],
        markers_tx: s.markers[Direction::ServerToClient.index()],
        rtr: s.rtr.map_or(RtrSet::EMPTY, RtrSet::only),
    };
    (initiator, responder)
}

fn startup_seeds(c: &MpaConversation, out: &mut Vec<Seed>) {
    let (initiator, responder) = startup_choices(c);
    let rep = c.settled.reply_ird_ord;
    for (who, dir) in [
        ("initiator", Direction::ServerToClient),
        ("responder", Direction::ClientToServer),
    ] {
        let side = c.side(dir);
        let mut stream = side.frame.clone();
        stream.extend_from_slice(side.first_fpdus(1));
        for (how, chunk) in [("", 255), ("-bytewise", 0)] {
            let input = StartupInput {
                initiator,
                responder,
                chunk,
                reply_ird: rep.map_or(16, |b| b.ird),
                reply_ord: rep.map_or(16, |b| b.ord),
                reply_private_data: (c.settled.reply_pd_len % 32) as u8,
                stream: stream.clone(),
            };
            out.push(Seed::new(
                Target::MpaStartup,
                format!("{}-{who}{how}", c.label),
                input.encode(),
            ));
        }
    }
}

fn deframer_seeds(c: &MpaConversation, out: &mut Vec<Seed>) {
    for dir in Direction::BOTH {
        let side = c.side(dir);
        if side.fpdus.is_empty() {
            continue;
        }
        let crc = c.settled.crc;
        let markers = c.settled.markers[dir.index()];
        let mid = side.fpdus.len() / 2;
        let middle = {
            let end = side.fpdus[(mid + 3).min(side.fpdus.len()) - 1].end;
            let start = side.fpdus[mid].start;
            &side.fpdu_stream[start..end.min(start + MAX_DEFRAMER_STREAM)]
        };
        let variants: [(&str, u8, u16, &[u8]); 3] = [
            ("head", 255, 65535, side.first_fpdus(4)),
            ("bytewise", 0, 65535, side.first_fpdus(2)),
            ("capped", 99, 512, middle),
        ];
        for (what, chunk, max_ulpdu, stream) in variants {
            let stream = &stream[..stream.len().min(MAX_DEFRAMER_STREAM)];
            let input = DeframerInput {
                crc,
                markers,
                chunk,
                max_ulpdu,
                start_words: 0,
                flip: stream.len() as u16 ^ 0x5a5a,
                stream: stream.to_vec(),
            };
            out.push(Seed::new(
                Target::MpaDeframer,
                format!("{}-{}-{what}", c.label, dir_name(dir)),
                input.encode(),
            ));
        }
    }
}

/// A ULPDU with a data payload cut to [`HEADER_PAYLOAD`] bytes.
fn header_sample(u: &[u8]) -> Vec<u8> {
    let keep = match MessageRepr::parse(u) {
        Ok(MessageRepr {
            body: Body::Data(d),
            ..
        }) => u.len() - d.len().saturating_sub(HEADER_PAYLOAD),
        _ => u.len(),
    };
    u[..keep].to_vec()
}

fn header_seeds(c: &MpaConversation, out: &mut Vec<Seed>) {
    for dir in Direction::BOTH {
        let mut per_opcode: HashMap<(bool, u8), usize> = HashMap::new();
        for (i, u) in c.side(dir).ulpdus.iter().enumerate() {
            let (Some(&ctrl), Some(&ulp)) = (u.first(), u.get(1)) else {
                continue;
            };
            let n = per_opcode
                .entry((ctrl & 0x80 != 0, ulp & 0x0f))
                .or_default();
            if *n >= HEADERS_PER_OPCODE {
                continue;
            }
            *n += 1;
            let op = format!("{:?}", Opcode::from_bits(ulp)).to_lowercase();
            let name = format!("{}-{}-{i:04}-{op}", c.label, dir_name(dir));
            let sample = header_sample(u);
            out.push(Seed::new(Target::DdpHeaders, name.clone(), sample.clone()));
            out.push(Seed::new(Target::RdmapHeaders, name, sample));
        }
    }
}

/// The capture's message sequence as a `ddp_placement` script: each
/// tagged STag gets a region, each Send a freshly posted buffer.
pub fn placement_script(side: &Side) -> PlacementScript {
    let mut script = PlacementScript::new([RegionSpec::PLAIN; 3]);
    let mut regions: HashMap<u32, (u8, u64)> = HashMap::new();
    for u in &side.ulpdus {
        if script.ops() >= 128 {
            break;
        }
        let Ok(m) = MessageRepr::parse(u) else {
            continue;
        };
        match (m.ddp, m.body) {
            (ddp::SegmentRepr::Tagged(t), Body::Data(d)) => {
                let next = regions.len() as u8;
                let (region, origin) = *regions.entry(t.stag.0).or_insert((next % 3, t.to));
                let off = (t.to.wrapping_sub(origin) % 32) as u8;
                let room = RegionSpec::PLAIN.size() - usize::from(off);
                let remote = m.opcode() == Opcode::RdmaWrite;
                script.tagged(region, off, &d[..d.len().min(room)], remote);
            }
            (ddp::SegmentRepr::Untagged(h), Body::Data(d)) => {
                if h.mo == 0 {
                    script.post(&[(0, 0, 15), (1, 0, 15)]);
                }
                script.untagged(0, d, h.last);
            }
            (ddp::SegmentRepr::Untagged(h), _) => {
                let payload = &u[ddp::UNTAGGED_HEADER_LEN.min(u.len())..];
                script.untagged(h.qn as u8, payload, true);
            }
            (ddp::SegmentRepr::Tagged(_), _) => {}
        }
    }
    script
}

fn placement_seeds(c: &MpaConversation, out: &mut Vec<Seed>) {
    for dir in Direction::BOTH {
        let script = placement_script(c.side(dir));
        if script.ops() > 0 {
            out.push(Seed::new(
                Target::DdpPlacement,
                format!("{}-{}-script", c.label, dir_name(dir)),
                script.into_bytes(),
            ));
        }
    }
}

/// An aimed connection input: `ulpdus` framed with or without CRC, and a
/// chunk seed that lets the fuzzed side send its own Read before the
/// second FPDU arrives.
fn aimed_input(base: &ConnectionInput, ulpdus: &[Vec<u8>], crc: bool) -> ConnectionInput {
    let framer = mpa::Framer::new(crc, false);
    let len = |i: usize| ulpdus.get(i).map_or(1, |u| framer.fpdu_len(u.len()));
    let (first, second) = (len(0), len(1));
    ConnectionInput {
        crc,
        markers: false,
        chunk_seed: ConnectionInput::seed_with_first_chunk_in(first..first + second).unwrap_or(7),
        stream: frame_all(ulpdus, crc),
        ..base.clone()
    }
}

fn connection_seeds(c: &MpaConversation, out: &mut Vec<Seed>) {
    for dir in Direction::BOTH {
        let side = c.side(dir);
        if side.fpdus.is_empty() {
            continue;
        }
        // Only the client's first FPDU is an RTR.
        let rtr = match dir {
            Direction::ClientToServer => c.settled.rtr,
            Direction::ServerToClient => None,
        };
        let base = ConnectionInput {
            crc: c.settled.crc,
            markers: c.settled.markers[dir.index()],
            rtr,
            ird: 3,
            chunk_seed: 7,
            stream: Vec::new(),
        };
        let name = format!("{}-{}", c.label, dir_name(dir));
        let raw = ConnectionInput {
            stream: fpdus_within(side, MAX_CONNECTION_STREAM).to_vec(),
            ..base.clone()
        };
        out.push(Seed::new(
            Target::RdmapConnection,
            format!("{name}-raw"),
            raw.encode(),
        ));
        let aimed = retarget(&side.ulpdus[..side.ulpdus.len().min(MAX_RETARGETED)]);
        out.push(Seed::new(
            Target::RdmapConnection,
            format!("{name}-aimed"),
            aimed_input(&base, &aimed, c.settled.crc).encode(),
        ));
        // A mutated byte breaks a CRC-protected FPDU at the CRC check; the
        // same traffic without CRC lets mutations reach the RDMAP checks.
        if c.settled.crc {
            out.push(Seed::new(
                Target::RdmapConnection,
                format!("{name}-aimed-nocrc"),
                aimed_input(&base, &aimed, false).encode(),
            ));
        }
    }
}

/// Every seed one conversation yields.
pub fn conversation_seeds(c: &MpaConversation) -> Vec<Seed> {
    let mut out = Vec::new();
    startup_seeds(c, &mut out);
    deframer_seeds(c, &mut out);
    header_seeds(c, &mut out);
    placement_seeds(c, &mut out);
    connection_seeds(c, &mut out);
    out
}
