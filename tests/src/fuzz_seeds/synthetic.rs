//! Seeds built with the protocol crates' own emit paths, for every target:
//! what the corpus holds on a clone without the reference captures, and
//! the shapes the captures lack (markers, rev 1 refusals, Terminates of
//! either layout, deregistration, foreign protection domains).

use std::time::Instant;

use ddp::wire::{SegmentRepr, TaggedRepr, UntaggedRepr};
use ddp::STag;
use mpa::{CrcPolicy, Framer, Rtr, RtrSet, Startup, StreamOffset};
use rdmap::wire::TerminateRepr;
use rdmap::wire::{
    AtomicOp, AtomicRequestRepr, AtomicResponseRepr, Attached, Body, ImmediateDataRepr,
    MessageRepr, ReadRequestRepr, TermControl, TermLayout,
};
use rdmap::Opcode;

use super::encode::{
    ConnectionInput, DeframerInput, InitiatorChoice, PlacementScript, RegionBase, RegionSpec,
    ResponderChoice, StartupInput,
};
use super::seeds::Seed;
use super::targets::Target;

/// RDMAP version 1 in the top bits of the DDP header's ULP octet.
const RDMAP_V1: u8 = 0x40;

fn message(ddp: SegmentRepr, body: Body<'_>) -> Vec<u8> {
    let m = MessageRepr { ddp, body };
    let mut out = vec![0u8; m.buffer_len()];
    let n = m.emit(&mut out).expect("sized by buffer_len");
    out.truncate(n);
    out
}

fn tagged(op: Opcode, last: bool, stag: u32, to: u64, payload: &[u8]) -> Vec<u8> {
    let h = TaggedRepr::new(last, RDMAP_V1 | op.bits(), STag(stag), to);
    message(h.into(), Body::Data(payload))
}

fn untagged(op: Opcode, qn: u32, msn: u32, mo: u32, last: bool, body: Body<'_>) -> Vec<u8> {
    let inv = match op {
        Opcode::SendInvalidate | Opcode::SendSolicitedInvalidate => 0x100,
        _ => 0,
    };
    let h = UntaggedRepr::new(last, RDMAP_V1 | op.bits(), inv, qn, msn, mo);
    message(h.into(), body)
}

fn read_request(msn: u32, source: u32, source_to: u64, size: u32) -> Vec<u8> {
    let r = ReadRequestRepr {
        sink_stag: STag(0x1234_5600),
        sink_to: 0x7f00_0000_1000,
        size,
        source_stag: STag(source),
        source_to,
    };
    untagged(Opcode::ReadRequest, 1, msn, 0, true, Body::ReadRequest(r))
}

fn terminate(layout: TermLayout, attached: Option<&[u8]>) -> Vec<u8> {
    let t = TerminateRepr {
        control: TermControl {
            layer: 1,
            etype: 2,
            code: 1,
            m: attached.is_some(),
            d: attached.is_some(),
            r: false,
            reserved: 0,
        },
        layout,
        attached: attached.map(|h| Attached {
            segment_len: 32,
            ddp_header: Some(h),
            rdma_header: None,
        }),
    };
    untagged(Opcode::Terminate, 2, 1, 0, true, Body::Terminate(t))
}

/// One of every message shape RDMAP sends.
pub fn ulpdus() -> Vec<(&'static str, Vec<u8>)> {
    let write = tagged(Opcode::RdmaWrite, true, 0x100, 0x1000, &[0xee; 16]);
    let send = |op, p: &[u8]| untagged(op, 0, 1, 0, true, Body::Data(p));
    vec![
        ("write", write.clone()),
        (
            "write-middle",
            tagged(Opcode::RdmaWrite, false, 0x100, 0x1008, b"middle"),
        ),
        ("write-rtr", tagged(Opcode::RdmaWrite, true, 1, 0, &[])),
        (
            "read-response",
            tagged(Opcode::ReadResponse, true, 0x200, 0x2080, &[0x42; 24]),
        ),
        ("read-request", read_request(1, 0x300, 0x3000, 16)),
        ("send", send(Opcode::Send, b"a sixteen byte m")),
        ("send-empty", send(Opcode::Send, b"")),
        ("send-invalidate", send(Opcode::SendInvalidate, b"inv")),
        ("send-solicited", send(Opcode::SendSolicited, b"se")),
        (
            "send-solicited-invalidate",
            send(Opcode::SendSolicitedInvalidate, b"sei"),
        ),
        (
            "send-first",
            untagged(Opcode::Send, 0, 1, 0, false, Body::Data(b"first")),
        ),
        (
            "send-second",
            untagged(Opcode::Send, 0, 1, 5, true, Body::Data(b"second")),
        ),
        ("terminate-bare", terminate(TermLayout::Rfc5040, None)),
        (
            "terminate-rfc",
            terminate(TermLayout::Rfc5040, Some(&write[..14])),
        ),
        (
            "terminate-siw",
            terminate(TermLayout::Siw, Some(&write[..14])),
        ),
    ]
}

fn startup_pairs() -> Vec<(&'static str, InitiatorChoice, ResponderChoice)> {
    let i = InitiatorChoice {
        rev1: false,
        crc: CrcPolicy::Preferred,
        markers_rx: false,
        markers_tx: false,
        peer_to_peer: None,
        ird: 16,
        ord: 16,
        private_data: 0,
        accept_rev1_reply: false,
    };
    let r = ResponderChoice {
        rev1: false,
        crc: CrcPolicy::Preferred,
        markers_rx: false,
        markers_tx: false,
        rtr: RtrSet::EMPTY,
    };
    vec![
        ("plain", i, r),
        (
            "no-crc",
            InitiatorChoice {
                crc: CrcPolicy::Off,
                ..i
            },
            ResponderChoice {
                crc: CrcPolicy::Off,
                ..r
            },
        ),
        (
            "p2p-write",
            InitiatorChoice {
                crc: CrcPolicy::Required,
                peer_to_peer: Some(RtrSet::only(Rtr::Write)),
                private_data: 9,
                ..i
            },
            ResponderChoice {
                rtr: RtrSet::ALL,
                ..r
            },
        ),
        (
            "p2p-any",
            InitiatorChoice {
                peer_to_peer: Some(RtrSet::ALL),
                ..i
            },
            ResponderChoice {
                rtr: RtrSet::only(Rtr::Read),
                ..r
            },
        ),
        (
            "markers",
            InitiatorChoice {
                markers_rx: true,
                markers_tx: true,
                ..i
            },
            ResponderChoice {
                markers_rx: true,
                markers_tx: true,
                ..r
            },
        ),
        (
            "rev1",
            InitiatorChoice { rev1: true, ..i },
            ResponderChoice { rev1: true, ..r },
        ),
        (
            "rev1-reply",
            InitiatorChoice {
                accept_rev1_reply: true,
                ..i
            },
            ResponderChoice { rev1: true, ..r },
        ),
        (
            "crc-refused",
            InitiatorChoice {
                crc: CrcPolicy::Required,
                ..i
            },
            ResponderChoice {
                crc: CrcPolicy::Never,
                ..r
            },
        ),
        ("ird-short", InitiatorChoice { ird: 1, ..i }, r),
    ]
}

fn startup_seeds(out: &mut Vec<Seed>) {
    let now = Instant::now();
    for (name, i, r) in startup_pairs() {
        let template = StartupInput {
            initiator: i,
            responder: r,
            chunk: 255,
            reply_ird: 16,
            reply_ord: 16,
            reply_private_data: 5,
            stream: Vec::new(),
        };
        let (Ok(mut init), Ok(mut resp)) = (
            Startup::initiator(i.config(), now),
            Startup::responder(r.config(), now),
        ) else {
            continue;
        };
        let mut request = Vec::new();
        init.poll_transmit(&mut request);
        // A refused Request still gets a Reply (a rejecting one): keep it.
        let _ = resp.handle_bytes(&request, now);
        if resp.is_awaiting_decision() {
            let _ = resp.accept(template.reply_params(), now);
        }
        let mut reply = Vec::new();
        resp.poll_transmit(&mut reply);
        for (who, frame) in [("initiator", &reply), ("responder", &request)] {
            if frame.is_empty() {
                continue;
            }
            // The frame followed by an FPDU, as a peer sends them.
            let mut stream = frame.clone();
            let first = untagged(Opcode::Send, 0, 1, 0, true, Body::Data(b"first"));
            Framer::new(false, false)
                .frame_to_vec(&first, &[], &mut stream)
                .expect("a small ULPDU frames");
            for (how, chunk) in [("", 255u8), ("-bytewise", 0)] {
                let input = StartupInput {
                    chunk,
                    stream: stream.clone(),
                    ..template.clone()
                };
                out.push(Seed::new(
                    Target::MpaStartup,
                    format!("synthetic-{name}-{who}{how}"),
                    input.encode(),
                ));
            }
        }
    }
}

fn deframer_seeds(out: &mut Vec<Seed>) {
    let ulpdus = ulpdus();
    let big = vec![0x3c; 1000];
    for crc in [false, true] {
        for markers in [false, true] {
            // Stream offsets just before a marker, on one, and near the
            // 32-bit wrap.
            for start_words in [0u16, 127, 0xffff] {
                let mut framer =
                    Framer::at(crc, markers, StreamOffset(u32::from(start_words) << 2));
                let mut stream = Vec::new();
                for (_, u) in &ulpdus {
                    framer
                        .frame_to_vec(u, &[], &mut stream)
                        .expect("small ULPDUs frame");
                }
                framer
                    .frame_to_vec(&big, &[], &mut stream)
                    .expect("1000 bytes frame");
                let input = DeframerInput {
                    crc,
                    markers,
                    chunk: 6,
                    max_ulpdu: 65535,
                    start_words,
                    flip: 0x1234,
                    stream,
                };
                out.push(Seed::new(
                    Target::MpaDeframer,
                    format!(
                        "synthetic-crc{}-markers{}-at{start_words}",
                        u8::from(crc),
                        u8::from(markers)
                    ),
                    input.encode(),
                ));
            }
        }
    }
}

fn header_seeds(out: &mut Vec<Seed>) {
    for (name, u) in ulpdus() {
        for target in [Target::DdpHeaders, Target::RdmapHeaders] {
            out.push(Seed::new(target, format!("synthetic-{name}"), u.clone()));
        }
    }
}

fn placement_seeds(out: &mut Vec<Seed>) {
    let plain = RegionSpec {
        extra: 0,
        ..RegionSpec::PLAIN
    };
    // The scripted exchange of ddp's own test: a Send scattered over two
    // elements, then a Write.
    let mut s = PlacementScript::new([plain; 3]);
    s.post(&[(0, 4, 6), (1, 0, 10)])
        .untagged(0, b"hello world!", true)
        .tagged(2, 3, b"abcd", true);
    out.push(Seed::new(
        Target::DdpPlacement,
        "synthetic-exchange",
        s.into_bytes(),
    ));

    // A Send in two segments, an MSN from the future, Read Request and
    // Terminate queues, then a Write into a deregistered region.
    let mut s = PlacementScript::new([RegionSpec::PLAIN; 3]);
    s.post(&[(0, 0, 15), (1, 0, 15), (2, 0, 15)])
        .untagged(0, b"first half ", false)
        .untagged(0, b"second half", true)
        .untagged_skipping(0, b"too early")
        .untagged(1, &[0; 23], true)
        .untagged(2, &[0x11; 4], true)
        .deregister(1)
        .tagged(1, 0, b"into a hole", true)
        .post(&[(1, 0, 8)])
        .untagged(0, b"lands nowhere", true);
    out.push(Seed::new(
        Target::DdpPlacement,
        "synthetic-queues",
        s.into_bytes(),
    ));

    // Regions at the top of the address space, at an exact base, with
    // only some rights and in another protection domain.
    let regions = [
        RegionSpec {
            base: RegionBase::Top,
            ..RegionSpec::PLAIN
        },
        RegionSpec {
            base: RegionBase::Exact(0xffff_ffff_0000_0000),
            access: Some(0b0000_0100),
            ..RegionSpec::PLAIN
        },
        RegionSpec {
            base: RegionBase::Zero,
            foreign: true,
            ..RegionSpec::PLAIN
        },
    ];
    let mut s = PlacementScript::new(regions);
    s.tagged(0, 60, b"past the end of memory", true)
        .tagged(0, 0, b"at the top", false)
        .tagged(1, 8, b"no remote write", true)
        .tagged(1, 8, b"local write", false)
        .tagged(2, 0, b"wrong domain", true)
        .tagged_raw(0x0001, u64::MAX - 3, b"wraps")
        .tagged_raw(0x0200, 0x1000, b"unknown stag");
    out.push(Seed::new(
        Target::DdpPlacement,
        "synthetic-rights",
        s.into_bytes(),
    ));
}

fn fpdus(crc: bool, ulpdus: &[Vec<u8>]) -> Vec<u8> {
    let mut framer = Framer::new(crc, false);
    let mut out = Vec::new();
    for u in ulpdus {
        framer
            .frame_to_vec(u, &[], &mut out)
            .expect("small ULPDUs frame");
    }
    out
}

fn connection_seeds(out: &mut Vec<Seed>) {
    let send = |msn, p: &[u8]| untagged(Opcode::Send, 0, msn, 0, true, Body::Data(p));
    // Work the fuzzed Responder accepts: a Write into its window, Sends
    // into its receive buffers, a Read of its readable region, the Read
    // Response to its own Read, a Send that invalidates the window.
    let good = vec![
        tagged(Opcode::RdmaWrite, true, 0x100, 0x1000, &[0xee; 16]),
        send(1, &[0xdd; 8]),
        read_request(1, 0x300, 0x3000, 16),
        tagged(Opcode::ReadResponse, true, 0x200, 0x2080, &[0x42; 64]),
        send(2, b"second"),
        untagged(
            Opcode::SendInvalidate,
            0,
            3,
            0,
            true,
            Body::Data(b"invalidate"),
        ),
    ];
    // A Write into the window after the Send with Invalidate took it away.
    let invalidated = tagged(Opcode::RdmaWrite, true, 0x100, 0x1000, b"too late");
    // ...and what it must refuse without touching memory.
    let bad = [
        (
            "foreign",
            tagged(Opcode::RdmaWrite, true, 0x600, 0x6000, &[0xcc; 16]),
        ),
        (
            "readonly",
            tagged(Opcode::RdmaWrite, true, 0x300, 0x3000, &[0xcc; 16]),
        ),
        (
            "overrun",
            tagged(Opcode::RdmaWrite, true, 0x100, 0x10f8, &[0xcc; 16]),
        ),
        (
            "unread",
            tagged(Opcode::ReadResponse, true, 0x200, 0x2080, &[0x42; 8]),
        ),
        ("msn", send(9, b"out of order")),
        ("read-none", read_request(1, 0x400, 0x4000, 16)),
        ("terminate", terminate(TermLayout::Siw, None)),
    ];
    for crc in [false, true] {
        let input = ConnectionInput {
            crc,
            markers: false,
            rtr: None,
            ird: 3,
            chunk_seed: 7,
            stream: fpdus(crc, &good),
        };
        out.push(Seed::new(
            Target::RdmapConnection,
            format!("synthetic-work-crc{}", u8::from(crc)),
            input.encode(),
        ));
        for (name, u) in &bad {
            let mut msgs = good[..2].to_vec();
            msgs.push(u.clone());
            let input = ConnectionInput {
                stream: fpdus(crc, &msgs),
                chunk_seed: 3,
                ..input.clone()
            };
            out.push(Seed::new(
                Target::RdmapConnection,
                format!("synthetic-{name}-crc{}", u8::from(crc)),
                input.encode(),
            ));
        }
        let mut msgs = good.clone();
        msgs.push(invalidated.clone());
        let input = ConnectionInput {
            stream: fpdus(crc, &msgs),
            ..input
        };
        out.push(Seed::new(
            Target::RdmapConnection,
            format!("synthetic-invalidated-crc{}", u8::from(crc)),
            input.encode(),
        ));
    }
    // Peer-to-peer: each RTR kind as the first FPDU.
    for (rtr, first) in [
        (Rtr::Write, tagged(Opcode::RdmaWrite, true, 1, 0, &[])),
        (Rtr::Read, read_request(1, 0x300, 0x3000, 0)),
        (Rtr::Send, send(1, &[])),
    ] {
        let mut msgs = vec![first];
        msgs.extend(good.iter().take(2).cloned());
        let input = ConnectionInput {
            crc: true,
            markers: false,
            rtr: Some(rtr),
            ird: 1,
            chunk_seed: 11,
            stream: fpdus(true, &msgs),
        };
        out.push(Seed::new(
            Target::RdmapConnection,
            format!("synthetic-rtr-{}", rtr.to_string().to_lowercase()),
            input.encode(),
        ));
    }
}

fn atomic_request(msn: u32, op: AtomicOp, stag: u32, to: u64) -> Vec<u8> {
    let r = AtomicRequestRepr {
        op,
        reserved: 0,
        request_id: msn,
        stag: STag(stag),
        to,
        add_swap_data: 0x0101_0101_0101_0101,
        add_swap_mask: if op == AtomicOp::FetchAdd {
            1 << 31
        } else {
            u64::MAX
        },
        compare_data: 0,
        compare_mask: u64::MAX,
    };
    untagged(
        Opcode::AtomicRequest,
        1,
        msn,
        0,
        true,
        Body::AtomicRequest(r),
    )
}

/// One of every RFC 7306 message shape.
fn rfc7306_ulpdus() -> Vec<(&'static str, Vec<u8>)> {
    let imm = |op, msn| {
        untagged(
            op,
            0,
            msn,
            0,
            true,
            Body::Immediate(ImmediateDataRepr::from_imm(0xfeed)),
        )
    };
    let response = AtomicResponseRepr {
        request_id: 0,
        original: 42,
    };
    vec![
        ("imm", imm(Opcode::ImmediateData, 1)),
        ("imm-se", imm(Opcode::ImmediateDataSolicited, 1)),
        (
            "fetch-add",
            atomic_request(1, AtomicOp::FetchAdd, 0x700, 0x7000),
        ),
        ("swap", atomic_request(1, AtomicOp::Swap, 0x700, 0x7008)),
        (
            "cmp-swap",
            atomic_request(1, AtomicOp::CmpSwap, 0x700, 0x7010),
        ),
        (
            "aopcode-unknown",
            atomic_request(1, AtomicOp::Unknown(9), 0x700, 0x7000),
        ),
        (
            "atomic-misaligned",
            atomic_request(1, AtomicOp::FetchAdd, 0x700, 0x7004),
        ),
        (
            "atomic-no-right",
            atomic_request(1, AtomicOp::FetchAdd, 0x100, 0x1000),
        ),
        (
            "atomic-response",
            untagged(
                Opcode::AtomicResponse,
                3,
                1,
                0,
                true,
                Body::AtomicResponse(response),
            ),
        ),
    ]
}

/// RFC 7306 seeds: every ULPDU shape (the header checks), and streams to
/// the agreed Responder (the connection checks).
fn rfc7306_seeds(out: &mut Vec<Seed>) {
    let extended = rfc7306_ulpdus();
    for (name, u) in ulpdus().into_iter().chain(extended.iter().cloned()) {
        out.push(Seed::new(
            Target::RdmapRfc7306,
            format!("synthetic-{name}"),
            u,
        ));
    }
    let work = vec![
        atomic_request(1, AtomicOp::FetchAdd, 0x700, 0x7000),
        untagged(
            Opcode::ImmediateData,
            0,
            1,
            0,
            true,
            Body::Immediate(ImmediateDataRepr::from_imm(1)),
        ),
        atomic_request(2, AtomicOp::CmpSwap, 0x700, 0x7000),
        read_request(3, 0x300, 0x3000, 16),
    ];
    for crc in [false, true] {
        let input = ConnectionInput {
            crc,
            markers: false,
            rtr: None,
            ird: 3,
            chunk_seed: 5,
            stream: fpdus(crc, &work),
        };
        out.push(Seed::new(
            Target::RdmapRfc7306,
            format!("synthetic-stream-crc{}", u8::from(crc)),
            input.encode(),
        ));
        for (name, u) in &extended {
            let mut msgs = work[..2].to_vec();
            msgs.push(u.clone());
            let input = ConnectionInput {
                stream: fpdus(crc, &msgs),
                ..input.clone()
            };
            out.push(Seed::new(
                Target::RdmapRfc7306,
                format!("synthetic-stream-{name}-crc{}", u8::from(crc)),
                input.encode(),
            ));
        }
    }
}

/// The synthetic seeds of the seven protocol targets (the
/// `verbs_engine` ones, built from the same messages, are
/// [`engine_seeds`](super::engine::engine_seeds)).
pub fn synthetic_seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    startup_seeds(&mut out);
    deframer_seeds(&mut out);
    header_seeds(&mut out);
    placement_seeds(&mut out);
    connection_seeds(&mut out);
    rfc7306_seeds(&mut out);
    out
}
