//! Seeded, structure-aware mutations of a valid session: each mutation
//! knows the layer it spoils (the MPA Request, an FPDU's framing, a DDP or
//! RDMAP header field, the order of messages), so a mutant breaks rules
//! one at a time instead of being noise. Pure: a session (script steps
//! built with the project's wire types, or read from a capture) and a
//! seed in, mutated steps out.

use core::fmt;

use mpa::wire::FrameRepr;
use mpa::Deframer;
use transport::SplitMix64;

use crate::build::{self, OUR_SOURCE};
use crate::script::{Mangle, Step};
use crate::target::Target;

/// A DDP header field, at its offset in the tagged or untagged layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Untagged: queue number; tagged: STag.
    QnOrStag,
    /// Untagged: message sequence number; tagged: TO, high half.
    MsnOrToHigh,
    /// Untagged: message offset; tagged: TO, low half.
    MoOrToLow,
}

/// One change to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// An octet of the MPA Request XORed (key, flags, revision,
    /// PD_Length, IRD/ORD); the session's FPDUs are dropped, since no
    /// framing can be assumed after a Request the target may refuse.
    Request {
        /// Which octet of the Request.
        at: u8,
        /// The bits flipped.
        mask: u8,
    },
    /// FPDU `fpdu`'s framing spoiled (ULPDU_Length, CRC, a cut, any octet).
    Framing {
        /// Which FPDU, counted from 0.
        fpdu: u16,
        /// How its framing is spoiled.
        mangle: Mangle,
    },
    /// An octet of the DDP/RDMAP headers of FPDU `fpdu` XORed (control
    /// bits, version, opcode, reserved fields).
    Header {
        /// Which FPDU, counted from 0.
        fpdu: u16,
        /// Which header octet.
        at: u8,
        /// The bits flipped.
        mask: u8,
    },
    /// A DDP header field of FPDU `fpdu` set to `value`.
    Field {
        /// Which FPDU, counted from 0.
        fpdu: u16,
        /// Which field.
        field: Field,
        /// The value written.
        value: u32,
    },
    /// FPDU `fpdu`'s ULPDU cut to `len` octets (then framed validly).
    Truncate {
        /// Which FPDU, counted from 0.
        fpdu: u16,
        /// Octets kept.
        len: u16,
    },
    /// FPDU `fpdu` sent twice.
    Duplicate {
        /// Which FPDU, counted from 0.
        fpdu: u16,
    },
    /// FPDU `fpdu` left out.
    Drop {
        /// Which FPDU, counted from 0.
        fpdu: u16,
    },
    /// FPDU `fpdu` and the next one swapped (the last and the one
    /// before it).
    Swap {
        /// Which FPDU, counted from 0.
        fpdu: u16,
    },
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mutation::Request { at, mask } => write!(f, "request[{at}]^={mask:#04x}"),
            Mutation::Framing { fpdu, mangle } => write!(f, "fpdu{fpdu}:{mangle:?}"),
            Mutation::Header { fpdu, at, mask } => {
                write!(f, "fpdu{fpdu}:header[{at}]^={mask:#04x}")
            }
            Mutation::Field { fpdu, field, value } => {
                write!(f, "fpdu{fpdu}:{field:?}={value:#x}")
            }
            Mutation::Truncate { fpdu, len } => write!(f, "fpdu{fpdu}:truncate({len})"),
            Mutation::Duplicate { fpdu } => write!(f, "fpdu{fpdu}:duplicate"),
            Mutation::Drop { fpdu } => write!(f, "fpdu{fpdu}:drop"),
            Mutation::Swap { fpdu } => write!(f, "fpdu{fpdu}:swap-with-next"),
        }
    }
}

/// A valid session built with the project's own wire types: rping's
/// first advert, a two-segment Send, a one-segment Send, then FIN. The
/// target may answer (an rping server reads the advert); nothing here is
/// wrong until it is mutated.
pub fn base_session(t: &Target) -> Vec<Step> {
    vec![
        Step::StartUp(Box::new(t.initiator())),
        Step::fpdu(build::send(1, &OUR_SOURCE.to_bytes(), true)),
        Step::fpdu(build::untagged(
            rdmap::Opcode::Send,
            build::qn::SEND,
            2,
            0,
            false,
            rdmap::wire::Body::Data(b"first half of a"),
        )),
        Step::fpdu(build::untagged(
            rdmap::Opcode::Send,
            build::qn::SEND,
            2,
            15,
            true,
            rdmap::wire::Body::Data(b" two-part send."),
        )),
        Step::fpdu(build::send(3, b"hostile peer....", true)),
        Step::Fin,
    ]
}

/// A session from a capture's two streams: the Initiator's MPA Request
/// (its revision and CRC wish become our start-up) and its FPDUs,
/// deframed as the Responder's Reply settled; `None` if the streams do
/// not start with a Request and a Reply. Markers in the captured stream
/// are removed; ours are added as the target negotiates.
pub fn session_from_streams(t: &Target, initiator: &[u8], responder: &[u8]) -> Option<Vec<Step>> {
    let (req, req_len) = FrameRepr::parse_bytes(initiator).ok()?;
    let (rep, _) = FrameRepr::parse_bytes(responder).ok()?;
    let mut cfg = t.initiator();
    cfg.rev = req.rev;
    if req.crc && !cfg.crc.asks() {
        cfg.crc = mpa::CrcPolicy::Preferred;
    }
    let mut steps = vec![Step::StartUp(Box::new(cfg))];
    let mut d = Deframer::new(rep.crc, rep.markers, 65535);
    let _ = d.feed(&initiator[req_len..], |u| {
        steps.push(Step::fpdu(u.to_vec()));
        core::ops::ControlFlow::Continue(())
    });
    steps.push(Step::Fin);
    Some(steps)
}

/// The mutants' draws; a seed replays the same mutants.
struct Rng(SplitMix64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.below_by_remainder(n)
    }
    fn bit(&mut self) -> u8 {
        1 << self.below(8)
    }
}

/// Values that sit on the edges of the fields' ranges.
const EDGES: [u32; 9] = [
    0,
    1,
    2,
    5,
    0xff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
];

/// Indexes of the FPDU steps of `session`.
fn fpdus(session: &[Step]) -> Vec<usize> {
    session
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Step::Fpdu { .. }))
        .map(|(i, _)| i)
        .collect()
}

/// Iteration `iteration` of the run seeded `seed`: one to three
/// mutations of `session`, the same ones every time.
pub fn generate(session: &[Step], seed: u64, iteration: u64) -> Vec<Mutation> {
    let mut rng = Rng(SplitMix64::new(
        seed ^ iteration.wrapping_mul(0x2545_f491_4f6c_dd1d),
    ));
    let n = fpdus(session).len() as u64;
    let count = 1 + rng.below(3);
    (0..count)
        .map(|_| {
            let fpdu = rng.below(n.max(1)) as u16;
            match rng.below(if n == 0 { 1 } else { 16 }) {
                0 => Mutation::Request {
                    at: rng.below(24) as u8,
                    mask: rng.bit(),
                },
                1 | 2 => Mutation::Framing {
                    fpdu,
                    mangle: match rng.below(4) {
                        0 => Mangle::FlipCrc,
                        1 => Mangle::Length(EDGES[rng.below(9) as usize] as u16),
                        2 => Mangle::Cut(rng.below(24) as usize),
                        _ => Mangle::Xor {
                            at: rng.below(40) as usize,
                            mask: rng.bit(),
                        },
                    },
                },
                3..=6 => Mutation::Header {
                    fpdu,
                    at: rng.below(28) as u8,
                    mask: rng.bit(),
                },
                7..=10 => Mutation::Field {
                    fpdu,
                    field: match rng.below(3) {
                        0 => Field::QnOrStag,
                        1 => Field::MsnOrToHigh,
                        _ => Field::MoOrToLow,
                    },
                    value: EDGES[rng.below(9) as usize],
                },
                11 => Mutation::Truncate {
                    fpdu,
                    len: rng.below(18) as u16,
                },
                12 => Mutation::Duplicate { fpdu },
                13 => Mutation::Drop { fpdu },
                14 => Mutation::Swap { fpdu },
                _ => Mutation::Framing {
                    fpdu,
                    mangle: Mangle::FlipCrc,
                },
            }
        })
        .collect()
}

/// `session` with `mutations` applied in order; one that names an FPDU
/// the session no longer has changes nothing.
pub fn apply(session: &[Step], mutations: &[Mutation]) -> Vec<Step> {
    let mut s = session.to_vec();
    for m in mutations {
        let idx = fpdus(&s);
        let at = |fpdu: u16| idx.get(usize::from(fpdu)).copied();
        match *m {
            Mutation::Request { at: off, mask } => {
                if let Some(Step::StartUp(cfg)) = s.first() {
                    let mut req = build::request(cfg);
                    if let Some(b) = req.get_mut(usize::from(off)) {
                        *b ^= mask;
                    }
                    s = vec![Step::Bytes(req)];
                }
            }
            Mutation::Framing { fpdu, mangle } => {
                if let Some(Step::Fpdu { mangle: m, .. }) = at(fpdu).and_then(|i| s.get_mut(i)) {
                    *m = mangle;
                }
            }
            Mutation::Header {
                fpdu,
                at: off,
                mask,
            } => {
                if let Some(Step::Fpdu { ulpdu, .. }) = at(fpdu).and_then(|i| s.get_mut(i)) {
                    if let Some(b) = ulpdu.get_mut(usize::from(off)) {
                        *b ^= mask;
                    }
                }
            }
            Mutation::Field { fpdu, field, value } => {
                if let Some(Step::Fpdu { ulpdu, .. }) = at(fpdu).and_then(|i| s.get_mut(i)) {
                    set_field(ulpdu, field, value);
                }
            }
            Mutation::Truncate { fpdu, len } => {
                if let Some(Step::Fpdu { ulpdu, .. }) = at(fpdu).and_then(|i| s.get_mut(i)) {
                    ulpdu.truncate(usize::from(len));
                }
            }
            Mutation::Duplicate { fpdu } => {
                if let Some(i) = at(fpdu) {
                    let copy = s[i].clone();
                    s.insert(i + 1, copy);
                }
            }
            Mutation::Drop { fpdu } => {
                if let Some(i) = at(fpdu) {
                    s.remove(i);
                }
            }
            Mutation::Swap { fpdu } => {
                // The last one swaps with the one before it.
                let pair = match (at(fpdu), at(fpdu + 1)) {
                    (Some(i), Some(j)) => Some((i, j)),
                    (Some(i), None) => fpdu.checked_sub(1).and_then(at).map(|j| (j, i)),
                    _ => None,
                };
                if let Some((i, j)) = pair {
                    s.swap(i, j);
                }
            }
        }
    }
    s
}

/// Writes `value` into `field` of the DDP header at the front of `ulpdu`
/// (tagged or untagged, by its T bit), or one more if it holds that
/// already; a ULPDU too short is left alone.
fn set_field(ulpdu: &mut [u8], field: Field, value: u32) {
    let tagged = ulpdu.first().is_some_and(|b| b & 0x80 != 0);
    let at = match (tagged, field) {
        (true, Field::QnOrStag) => 2,
        (true, Field::MsnOrToHigh) => 6,
        (true, Field::MoOrToLow) => 10,
        (false, Field::QnOrStag) => 6,
        (false, Field::MsnOrToHigh) => 10,
        (false, Field::MoOrToLow) => 14,
    };
    if let Some(b) = ulpdu.get_mut(at..at + 4) {
        // A field that already holds the value moves one past it, so a
        // mutation always mutates.
        let value = if b == value.to_be_bytes() {
            value.wrapping_add(1)
        } else {
            value
        };
        b.copy_from_slice(&value.to_be_bytes());
    }
}

/// Mutations as text, one argument of a replay command line.
pub fn describe(mutations: &[Mutation]) -> String {
    mutations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdmap::wire::MessageRepr;

    fn ulpdus(s: &[Step]) -> Vec<Vec<u8>> {
        s.iter()
            .filter_map(|s| match s {
                Step::Fpdu { ulpdu, .. } => Some(ulpdu.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_base_session_is_valid_rdmap() {
        let s = base_session(&Target::default());
        let u = ulpdus(&s);
        assert_eq!(u.len(), 4);
        assert!(u.iter().all(|b| MessageRepr::parse(b).is_ok()));
    }

    #[test]
    fn generation_is_reproducible_and_varies() {
        let s = base_session(&Target::default());
        assert_eq!(generate(&s, 9, 3), generate(&s, 9, 3));
        let distinct: std::collections::HashSet<String> =
            (0..50).map(|i| describe(&generate(&s, 9, i))).collect();
        assert!(distinct.len() > 40, "{}", distinct.len());
    }

    #[test]
    fn every_mutation_changes_the_session() {
        let s = base_session(&Target::default());
        for i in 0..200 {
            for m in generate(&s, 1, i) {
                assert_ne!(apply(&s, &[m]), s, "{m}");
            }
        }
    }

    #[test]
    fn a_field_lands_where_the_parser_reads_it() {
        let s = base_session(&Target::default());
        let m = Mutation::Field {
            fpdu: 0,
            field: Field::MsnOrToHigh,
            value: 77,
        };
        let u = ulpdus(&apply(&s, &[m]));
        let parsed = MessageRepr::parse(&u[0]).unwrap();
        match parsed.ddp {
            ddp::wire::SegmentRepr::Untagged(h) => assert_eq!(h.msn, 77),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn order_mutations_move_whole_fpdus() {
        let s = base_session(&Target::default());
        let base = ulpdus(&s);
        let swapped = ulpdus(&apply(&s, &[Mutation::Swap { fpdu: 1 }]));
        assert_eq!(
            (swapped[1].clone(), swapped[2].clone()),
            (base[2].clone(), base[1].clone())
        );
        assert_eq!(ulpdus(&apply(&s, &[Mutation::Drop { fpdu: 0 }])).len(), 3);
        assert_eq!(
            ulpdus(&apply(&s, &[Mutation::Duplicate { fpdu: 3 }])).len(),
            5
        );
    }

    #[test]
    fn a_session_is_read_back_from_its_streams() {
        let t = Target::default();
        let s = base_session(&t);
        let mut initiator = build::request(&t.initiator());
        // The default Target asks for CRC; the Reply below keeps C set.
        let mut framer = mpa::Framer::new(true, false);
        for u in ulpdus(&s) {
            framer.frame_to_vec(&u, &[], &mut initiator).unwrap();
        }
        let reply = {
            let mut r = build::request(&t.initiator());
            let mut f = mpa::wire::Frame::new_unchecked(&mut r);
            f.set_kind(mpa::wire::FrameKind::Reply);
            r
        };
        let back = session_from_streams(&t, &initiator, &reply).unwrap();
        assert_eq!(ulpdus(&back), ulpdus(&s));
    }
}
