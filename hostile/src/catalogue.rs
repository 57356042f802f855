//! The hostile cases, each with the answer RFC 5040/5041/5044/6581 assign.
//!
//! Where an RFC names no single answer (a ULPDU too short for any header,
//! a Read Response nobody asked for, random input) the case lists every
//! outcome a careful implementation may choose; none of them allows the
//! target to accept what it should refuse or to answer with bytes that do
//! not parse.

use ddp::STag;

use rdmap::term::TermCode;
use rdmap::wire::{Body, ReadRequestRepr, TermControl};
use rdmap::Opcode;

use crate::build::{self, qn};
use crate::exchange;
use crate::expect::{Answer, End, Expectation, Outcome, TermMatch, Terminate};
use crate::script::{Case, Learned, Mangle, Step};
use crate::target::Target;

/// A STag no target registered (index and key chosen to be unlikely).
pub const UNKNOWN_STAG: STag = STag(0x00ba_d05a);
/// A second one, for Read Request sources.
pub const UNKNOWN_SOURCE_STAG: STag = STag(0x00ba_d15a);

/// Every case, in a fixed order.
pub fn catalogue(t: &Target) -> Vec<Case> {
    vec![
        garbage_request(t),
        bad_key(t),
        unknown_revision(t),
        huge_private_data(t),
        silence(t),
        bad_crc(t),
        write_to_unknown_stag(t),
        read_larger_than_any_region(t),
        bad_queue_number(t),
        msn_gap(t),
        wrong_ddp_version(t),
        wrong_rdmap_version(t),
        unknown_opcode(t),
        immediate_data_not_agreed(t),
        atomic_request_not_agreed(t),
        ulpdu_too_short(t),
        huge_ulpdu_then_silence(t),
        idle_flood(t),
        random_fpdus(t),
        unsolicited_read_response(t),
        terminate_mid_transfer(t),
        fin_mid_fpdu(t),
        write_beyond_region(t),
        read_beyond_region(t),
        opcode_changes_inside_a_send(t),
        invalidate_a_shared_region(t),
    ]
}

/// The cases played as the Responder, for a target that connects to us:
/// the Request-phase cases become their Reply-phase twins (a bad Reply,
/// no Reply), the FPDU cases follow a valid Reply instead of a valid
/// Request, and the idle flood (a client opens one connection at a time)
/// and invalidate-a-shared-region are left out.
pub fn responder_catalogue(t: &Target) -> Vec<Case> {
    let mut out = vec![
        garbage_reply(t),
        bad_reply_key(t),
        unknown_reply_revision(t),
        huge_reply_private_data(t),
        silent_responder(t),
    ];
    let left_out = [
        "garbage-request",
        "bad-key",
        "unknown-revision",
        "huge-private-data",
        "silence",
        "idle-flood",
        // rping's client has no receive posted for a second Send right
        // after our go-ahead: the Send would be refused for want of a
        // buffer before any invalidation is tried.
        "invalidate-a-shared-region",
    ];
    for mut c in catalogue(t) {
        if left_out.contains(&c.name) {
            continue;
        }
        for step in &mut c.script {
            if let Step::StartUp(cfg) = step {
                let mut r = t.responder();
                if cfg.crc.asks() {
                    r.crc = cfg.crc;
                }
                *step = Step::Accept(Box::new(r));
            }
            // The target's advert names its own buffer as rping's client.
            if let Step::Learned { what, .. } = step {
                *what = match *what {
                    Learned::WriteToReadSink { offset, len } => {
                        Learned::WriteToAdvert { offset, len }
                    }
                    // Our first half used Read Request message 1.
                    Learned::ReadFromReadSink { msn, offset, size } => Learned::ReadFromAdvert {
                        msn: msn + 1,
                        offset,
                        extra: size,
                    },
                    other => other,
                };
            }
        }
        if c.script.iter().any(|s| matches!(s, Step::Await(_))) {
            // Learning the target's buffer takes rping server's first half.
            c.script = responder_learning(c.script);
        }
        out.push(c);
    }
    out
}

/// A script whose rping client's first half is swapped for the server's.
fn responder_learning(script: Vec<Step>) -> Vec<Step> {
    let mut out = Vec::new();
    let mut it = script.into_iter();
    if let Some(first) = it.next() {
        out.push(first);
    }
    out.extend(exchange::server_first_half());
    // Skip the client's first half: its Send, Await, answer, Await.
    out.extend(it.skip(exchange::client_first_half().len()));
    out
}

/// The case called `name`, in either role.
pub fn case_in(t: &Target, name: &str, responder: bool) -> Option<Case> {
    let all = if responder {
        responder_catalogue(t)
    } else {
        catalogue(t)
    };
    all.into_iter().find(|c| c.name == name)
}

/// The case called `name`.
pub fn case(t: &Target, name: &str) -> Option<Case> {
    catalogue(t).into_iter().find(|c| c.name == name)
}

fn one(
    t: &Target,
    name: &'static str,
    about: &'static str,
    script: Vec<Step>,
    expect: Expectation,
) -> Case {
    Case {
        name,
        about,
        script,
        expect,
        patience: t.answer_within,
        connections: 1,
    }
}

/// A Request the target refuses: a close, a Reply with R, or (RFC 6581
/// section 7) a TERMINATE "invalid MPA Request" in place of the Reply.
fn refused_request() -> Expectation {
    Expectation::any_of(&[
        Outcome::CLOSED_UNANSWERED,
        Outcome::REJECTED,
        Outcome {
            answer: Answer::None,
            terminate: Terminate::Matching(TermMatch::exactly(TermCode::LLP_INVALID_REQ_REP)),
            end: End::Closed,
        },
    ])
}

fn start(t: &Target) -> Step {
    Step::StartUp(Box::new(t.initiator()))
}

/// Start-up, then `fpdus`; the target must answer with `code`.
fn after_startup(
    t: &Target,
    name: &'static str,
    about: &'static str,
    fpdus: Vec<Vec<u8>>,
    expect: Expectation,
) -> Case {
    let mut script = vec![start(t)];
    script.extend(fpdus.into_iter().map(Step::fpdu));
    one(t, name, about, script, expect)
}

fn terminated(code: TermCode) -> Expectation {
    Expectation::only(Outcome::terminated(TermMatch::exactly(code)))
}

/// Rping's info message is 16 bytes; these fit any receive it posts.
const SMALL: &[u8] = b"hostile peer....";

/// The `garbage-request` case: text instead of an MPA Request (RFC 5044 7.1: the key does not
/// match).
pub fn garbage_request(t: &Target) -> Case {
    one(
        t,
        "garbage-request",
        "text instead of an MPA Request (RFC 5044 7.1: the key does not match)",
        vec![Step::Bytes(
            b"GET / HTTP/1.1\r\nHost: iwarp\r\n\r\n".to_vec(),
        )],
        refused_request(),
    )
}

/// The `bad-key` case: a Request whose key differs in its last octet (RFC 5044 7.1).
pub fn bad_key(t: &Target) -> Case {
    let frame = build::request(&t.initiator());
    let frame = build::with_key(frame, b"MPA ID Req Fram!");
    one(
        t,
        "bad-key",
        "a Request whose key differs in its last octet (RFC 5044 7.1)",
        vec![Step::Bytes(frame)],
        refused_request(),
    )
}

/// The `unknown-revision` case: a Request with Rev 3, which no RFC defines (RFC 6581 7:
/// reject).
pub fn unknown_revision(t: &Target) -> Case {
    let frame = build::patch_request(build::request(&t.initiator()), |f| f.set_rev(3));
    one(
        t,
        "unknown-revision",
        "a Request with Rev 3, which no RFC defines (RFC 6581 7: reject)",
        vec![Step::Bytes(frame)],
        Expectation::only(Outcome::REJECTED),
    )
}

/// The `huge-private-data` case: PD_Length 65535 where RFC 5044 7.1 allows 512.
pub fn huge_private_data(t: &Target) -> Case {
    let mut frame = build::patch_request(build::request(&t.initiator()), |f| {
        f.set_pd_length(u16::MAX)
    });
    // Some of the announced private data, so a target that buffers it
    // before checking the limit has something to buffer.
    frame.extend_from_slice(&[0x5a; 1024]);
    one(
        t,
        "huge-private-data",
        "PD_Length 65535 where RFC 5044 7.1 allows 512",
        vec![Step::Bytes(frame)],
        refused_request(),
    )
}

/// The `silence` case: a TCP connection that never sends a Request (RFC 5044 7.1: the Responder
/// times out).
pub fn silence(t: &Target) -> Case {
    Case {
        patience: t.outlast_request_timeout(),
        ..one(
            t,
            "silence",
            "a TCP connection that never sends a Request (RFC 5044 7.1: the Responder times out)",
            Vec::new(),
            Expectation::only(Outcome::CLOSED_UNANSWERED),
        )
    }
}

/// The `bad-crc` case: a Send whose CRC32c is off by one bit (RFC 5044 8: TERMINATE 2/0/2).
pub fn bad_crc(t: &Target) -> Case {
    let mut cfg = t.initiator();
    // C set: RFC 5044 7.1 obliges the Responder to use CRC then.
    if !cfg.crc.asks() {
        cfg.crc = mpa::CrcPolicy::Preferred;
    }
    one(
        t,
        "bad-crc",
        "a Send whose CRC32c is off by one bit (RFC 5044 8: TERMINATE 2/0/2)",
        vec![
            Step::StartUp(Box::new(cfg)),
            Step::Fpdu {
                ulpdu: build::send(1, SMALL, true),
                mangle: Mangle::FlipCrc,
            },
        ],
        terminated(TermCode::LLP_CRC),
    )
}

/// The `write-unknown-stag` case: an RDMA Write to a STag the target never registered (RFC 5041
/// 7.2: 1/1/0).
pub fn write_to_unknown_stag(t: &Target) -> Case {
    after_startup(
        t,
        "write-unknown-stag",
        "an RDMA Write to a STag the target never registered (RFC 5041 7.2: 1/1/0)",
        vec![build::write(UNKNOWN_STAG, 0x1000, SMALL)],
        terminated(TermCode::DDP_T_INVALID_STAG),
    )
}

/// The `read-larger-than-any-region` case: a Read Request for 4 GiB from an unknown source (RFC
/// 5040 4.8: remote protection error).
pub fn read_larger_than_any_region(t: &Target) -> Case {
    let req = ReadRequestRepr {
        sink_stag: STag(0x0000_0100),
        sink_to: 0,
        size: u32::MAX - 0xff,
        source_stag: UNKNOWN_SOURCE_STAG,
        source_to: 0,
    };
    after_startup(
        t,
        "read-larger-than-any-region",
        "a Read Request for 4 GiB from an unknown source (RFC 5040 4.8: remote protection error)",
        vec![build::read_request(1, req)],
        Expectation::only(Outcome::terminated(TermMatch::any_code_of(
            TermCode::RDMAP_INVALID_STAG,
        ))),
    )
}

/// The `bad-queue-number` case: a Send on untagged queue 5 (RFC 5041 7.2: 1/2/1).
pub fn bad_queue_number(t: &Target) -> Case {
    let ulpdu = build::untagged(Opcode::Send, 5, 1, 0, true, rdmap::wire::Body::Data(SMALL));
    after_startup(
        t,
        "bad-queue-number",
        "a Send on untagged queue 5 (RFC 5041 7.2: 1/2/1)",
        vec![ulpdu],
        terminated(TermCode::DDP_UT_INVALID_QN),
    )
}

/// The `msn-gap` case: a first Send numbered 5 instead of 1 (RFC 5041 7.2: 1/2/3).
pub fn msn_gap(t: &Target) -> Case {
    after_startup(
        t,
        "msn-gap",
        "a first Send numbered 5 instead of 1 (RFC 5041 7.2: 1/2/3)",
        vec![build::send(5, SMALL, true)],
        terminated(TermCode::DDP_UT_MSN_RANGE),
    )
}

/// The `wrong-ddp-version` case: an untagged Send with DDP version 2 (RFC 5041 7.2: 1/2/6).
pub fn wrong_ddp_version(t: &Target) -> Case {
    after_startup(
        t,
        "wrong-ddp-version",
        "an untagged Send with DDP version 2 (RFC 5041 7.2: 1/2/6)",
        vec![build::with_ddp_version(build::send(1, SMALL, true), 2)],
        terminated(TermCode::DDP_UT_INVALID_VERSION),
    )
}

/// The `wrong-rdmap-version` case: a Send with RDMAP version 0 (RFC 5040 4.8: 0/2/5).
pub fn wrong_rdmap_version(t: &Target) -> Case {
    let ulpdu = build::with_rdmap_control(
        build::send(1, SMALL, true),
        build::rdmap_control(0, Opcode::Send),
    );
    after_startup(
        t,
        "wrong-rdmap-version",
        "a Send with RDMAP version 0 (RFC 5040 4.8: 0/2/5)",
        vec![ulpdu],
        terminated(TermCode::RDMAP_INVALID_VERSION),
    )
}

/// The `unknown-opcode` case: an untagged message with the reserved opcode 0xd (RFC 5040 4.8:
/// 0/2/6).
pub fn unknown_opcode(t: &Target) -> Case {
    let ulpdu = build::with_rdmap_control(
        build::send(1, SMALL, true),
        build::rdmap_control(1, Opcode::Unknown(0xd)),
    );
    after_startup(
        t,
        "unknown-opcode",
        "an untagged message with the reserved opcode 0xd (RFC 5040 4.8: 0/2/6)",
        vec![ulpdu],
        terminated(TermCode::RDMAP_UNEXPECTED_OPCODE),
    )
}

/// RFC 7306 Immediate Data (opcode 0x8) on queue 0, message 1, to a
/// target whose application did not agree to RFC 7306 (MPA cannot
/// negotiate it). To an RFC 5040 RDMAP the code point is reserved: the
/// same answer as any unexpected opcode.
pub fn immediate_data_not_agreed(t: &Target) -> Case {
    let ulpdu = build::untagged(
        Opcode::ImmediateData,
        build::qn::SEND,
        1,
        0,
        true,
        rdmap::wire::Body::Immediate(rdmap::wire::ImmediateDataRepr::from_imm(0x7306)),
    );
    after_startup(
        t,
        "immediate-data-not-agreed",
        "RFC 7306 Immediate Data to a peer that did not agree to RFC 7306 (RFC 5040 4.8: 0/2/6)",
        vec![ulpdu],
        terminated(TermCode::RDMAP_UNEXPECTED_OPCODE),
    )
}

/// An RFC 7306 Atomic Request (Fetch and Add, opcode 0xA) on queue 1,
/// message 1, to a target that did not agree to RFC 7306: a reserved
/// opcode to it, answered as one, whatever the body's length would mean
/// on the Read Request queue.
pub fn atomic_request_not_agreed(t: &Target) -> Case {
    let ulpdu = build::untagged(
        Opcode::AtomicRequest,
        build::qn::READ_REQUEST,
        1,
        0,
        true,
        rdmap::wire::Body::AtomicRequest(rdmap::wire::AtomicRequestRepr {
            op: rdmap::wire::AtomicOp::FetchAdd,
            reserved: 0,
            request_id: 1,
            stag: UNKNOWN_STAG,
            to: 0,
            add_swap_data: 1,
            add_swap_mask: 0,
            compare_data: 0,
            compare_mask: 0,
        }),
    );
    after_startup(
        t,
        "atomic-request-not-agreed",
        "an RFC 7306 Fetch and Add to a peer that did not agree to RFC 7306 (RFC 5040 4.8: 0/2/6)",
        vec![ulpdu],
        terminated(TermCode::RDMAP_UNEXPECTED_OPCODE),
    )
}

/// The `ulpdu-too-short` case: a 6-octet ULPDU, shorter than any DDP header.
pub fn ulpdu_too_short(t: &Target) -> Case {
    let mut ulpdu = build::send(1, SMALL, true);
    ulpdu.truncate(6);
    // No RFC code for a segment too short for its header: the stream
    // cannot go on, a catastrophic error at the layer that found it.
    let expect = Expectation::any_of(&[
        Outcome::terminated(TermMatch::any_code_of(TermCode::DDP_CATASTROPHIC)),
        Outcome::terminated(TermMatch::any_code_of(
            TermCode::RDMAP_OPERATION_UNSPECIFIED,
        )),
    ]);
    after_startup(
        t,
        "ulpdu-too-short",
        "a 6-octet ULPDU, shorter than any DDP header",
        vec![ulpdu],
        expect,
    )
}

/// The `huge-ulpdu-then-silence` case: ULPDU_Length 65535, 256 octets of it, then nothing.
pub fn huge_ulpdu_then_silence(t: &Target) -> Case {
    // The largest ULPDU MPA can announce, cut after 256 octets: the target
    // may wait for the rest (holding at most 64 KiB) or refuse the length.
    let ulpdu = build::send(1, &vec![0x5a; usize::from(u16::MAX) - 18], true);
    let expect = Expectation::any_of(&[
        Outcome::ACCEPTED_THEN_WAITING,
        Outcome::terminated(TermMatch::exactly(TermCode::LLP_MARKER_MISMATCH)),
    ]);
    one(
        t,
        "huge-ulpdu-then-silence",
        "ULPDU_Length 65535, 256 octets of it, then nothing",
        vec![
            start(t),
            Step::Fpdu {
                ulpdu,
                mangle: Mangle::Cut(256),
            },
        ],
        expect,
    )
}

/// The `idle-flood` case: hundreds of connections that never send a Request, all at once.
pub fn idle_flood(t: &Target) -> Case {
    Case {
        patience: t.outlast_request_timeout(),
        connections: t.flood,
        ..one(
            t,
            "idle-flood",
            "hundreds of connections that never send a Request, all at once",
            Vec::new(),
            Expectation::only(Outcome::CLOSED_UNANSWERED),
        )
    }
}

/// The `random-fpdus` case: eight FPDUs of random octets, each with a valid CRC.
pub fn random_fpdus(t: &Target) -> Case {
    let mut fpdus = Vec::new();
    let mut seed = t.seed;
    for _ in 0..8 {
        seed = seed.wrapping_add(1);
        let len = 1 + usize::from(build::seeded_bytes(seed ^ 0xa5a5, 1)[0]);
        fpdus.push(build::seeded_bytes(seed, len));
    }
    // Random bytes with valid CRCs: whichever check fires first, the
    // answer is one TERMINATE the RFCs define, or a plain close.
    let expect = Expectation::any_of(&[
        Outcome {
            answer: Answer::Accept,
            terminate: Terminate::AnyKnown,
            end: End::Closed,
        },
        Outcome::ACCEPTED_THEN_CLOSED,
    ]);
    after_startup(
        t,
        "random-fpdus",
        "eight FPDUs of random octets, each with a valid CRC",
        fpdus,
        expect,
    )
}

/// The `unsolicited-read-response` case: a Read Response nobody asked for.
pub fn unsolicited_read_response(t: &Target) -> Case {
    let ulpdu = build::tagged(Opcode::ReadResponse, UNKNOWN_STAG, 0, SMALL);
    // RFC 5040 6.4: a Read Response with no Read outstanding is an
    // unexpected opcode; its unknown STag is a tagged buffer error.
    let expect = Expectation::any_of(&[
        Outcome::terminated(TermMatch::exactly(TermCode::RDMAP_UNEXPECTED_OPCODE)),
        Outcome::terminated(TermMatch::exactly(TermCode::DDP_T_INVALID_STAG)),
    ]);
    after_startup(
        t,
        "unsolicited-read-response",
        "a Read Response nobody asked for",
        vec![ulpdu],
        expect,
    )
}

/// The `terminate-mid-transfer` case: the first half of a Send, then a TERMINATE.
pub fn terminate_mid_transfer(t: &Target) -> Case {
    let control = TermControl {
        layer: TermCode::RDMAP_OPERATION_UNSPECIFIED.layer.bits(),
        etype: TermCode::RDMAP_OPERATION_UNSPECIFIED.etype,
        code: TermCode::RDMAP_OPERATION_UNSPECIFIED.code,
        ..TermControl::default()
    };
    // RFC 5040 5.4: a TERMINATE is not answered with another one.
    after_startup(
        t,
        "terminate-mid-transfer",
        "the first half of a Send, then a TERMINATE",
        vec![
            build::send(1, &SMALL[..8], false),
            build::terminate(1, control),
        ],
        Expectation::only(Outcome::ACCEPTED_THEN_CLOSED),
    )
}

/// The `fin-mid-fpdu` case: ten octets of a Send's FPDU, then FIN.
pub fn fin_mid_fpdu(t: &Target) -> Case {
    // The write side may still carry a TERMINATE (LLP, stream lost).
    let expect = Expectation::any_of(&[
        Outcome::ACCEPTED_THEN_CLOSED,
        Outcome::terminated(TermMatch::exactly(TermCode::LLP_TCP_STREAM_LOST)),
    ]);
    one(
        t,
        "fin-mid-fpdu",
        "ten octets of a Send's FPDU, then FIN",
        vec![
            start(t),
            Step::Fpdu {
                ulpdu: build::send(1, SMALL, true),
                mangle: Mangle::Cut(10),
            },
            Step::Fin,
        ],
        expect,
    )
}

/// A Reply the Initiator must refuse: it closes, with (RFC 6581 section 7)
/// or without a TERMINATE "invalid MPA Reply".
fn refused_reply() -> Expectation {
    Expectation::any_of(&[
        Outcome::CLOSED_UNANSWERED,
        Outcome {
            answer: Answer::None,
            terminate: Terminate::Matching(TermMatch::exactly(TermCode::LLP_INVALID_REQ_REP)),
            end: End::Closed,
        },
    ])
}

/// A valid Reply to whatever Request comes, as bytes to patch.
fn reply_frame(t: &Target) -> Vec<u8> {
    let mut r = t.responder();
    r.crc = mpa::CrcPolicy::Preferred;
    let mut st = match mpa::Startup::responder(r, std::time::Instant::now()) {
        Ok(s) => s,
        Err(_) => return Vec::new(),
    };
    // A Request like the one a default Initiator sends.
    let _ = st.handle_bytes(&build::request(&t.initiator()), std::time::Instant::now());
    while let Some(ev) = st.poll_event() {
        if let mpa::StartupEvent::RequestReceived { .. } = ev {
            let params = mpa::ReplyParams {
                ird: 1,
                ord: 1,
                private_data: Vec::new(),
            };
            let _ = st.accept(params, std::time::Instant::now());
        }
    }
    let mut out = Vec::new();
    st.poll_transmit(&mut out);
    out
}

fn reply_case(t: &Target, name: &'static str, about: &'static str, reply: Vec<u8>) -> Case {
    one(
        t,
        name,
        about,
        vec![Step::AwaitRequest, Step::Bytes(reply)],
        refused_reply(),
    )
}

/// The `garbage-reply` case: text instead of an MPA Reply (RFC 5044 7.1: the key does not
/// match).
pub fn garbage_reply(t: &Target) -> Case {
    reply_case(
        t,
        "garbage-reply",
        "text instead of an MPA Reply (RFC 5044 7.1: the key does not match)",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec(),
    )
}

/// The `bad-reply-key` case: a Reply whose key differs in its last octet (RFC 5044 7.1).
pub fn bad_reply_key(t: &Target) -> Case {
    reply_case(
        t,
        "bad-reply-key",
        "a Reply whose key differs in its last octet (RFC 5044 7.1)",
        build::with_key(reply_frame(t), b"MPA ID Rep Fram!"),
    )
}

/// The `unknown-reply-revision` case: a Reply with Rev 3, which no RFC defines and the Request
/// did not ask for.
pub fn unknown_reply_revision(t: &Target) -> Case {
    reply_case(
        t,
        "unknown-reply-revision",
        "a Reply with Rev 3, which no RFC defines and the Request did not ask for",
        build::patch_request(reply_frame(t), |f| f.set_rev(3)),
    )
}

/// The `huge-reply-private-data` case: a Reply announcing PD_Length 65535 where RFC 5044 7.1
/// allows 512.
pub fn huge_reply_private_data(t: &Target) -> Case {
    let mut frame = build::patch_request(reply_frame(t), |f| f.set_pd_length(u16::MAX));
    frame.extend_from_slice(&[0x5a; 1024]);
    reply_case(
        t,
        "huge-reply-private-data",
        "a Reply announcing PD_Length 65535 where RFC 5044 7.1 allows 512",
        frame,
    )
}

/// The `silent-responder` case: a Responder that takes the Request and never answers (RFC 5044
/// 7.1: the Initiator times out).
pub fn silent_responder(t: &Target) -> Case {
    Case {
        patience: t.outlast_request_timeout(),
        ..one(
            t,
            "silent-responder",
            "a Responder that takes the Request and never answers (RFC 5044 7.1: the Initiator times out)",
            vec![Step::AwaitRequest],
            Expectation::only(Outcome::CLOSED_UNANSWERED),
        )
    }
}

/// Start-up, rping's client first half (so the target's Read Request
/// names a buffer of its own), then `last`.
fn after_learning(
    t: &Target,
    name: &'static str,
    about: &'static str,
    last: Learned,
    expect: Expectation,
) -> Case {
    let mut script = vec![start(t)];
    script.extend(exchange::client_first_half());
    script.push(Step::Learned {
        what: last,
        mangle: Mangle::None,
    });
    one(t, name, about, script, expect)
}

/// The `write-beyond-region` case: an RDMA Write to a valid STag the target handed out, 1 MiB
/// past its end (RFC 5041 7.2: 1/1/1).
pub fn write_beyond_region(t: &Target) -> Case {
    // The buffer the target's Read Request named is 64 octets or so: a
    // Write starting 1 MiB past its start is out of bounds whatever its size.
    let expect = Expectation::any_of(&[
        Outcome::terminated(TermMatch::exactly(TermCode::DDP_T_BASE_BOUNDS)),
        Outcome::terminated(TermMatch::any_code_of(TermCode::RDMAP_INVALID_STAG)),
    ]);
    after_learning(
        t,
        "write-beyond-region",
        "an RDMA Write to a valid STag the target handed out, 1 MiB past its end (RFC 5041 7.2: 1/1/1)",
        Learned::WriteToReadSink {
            offset: 1 << 20,
            len: 16,
        },
        expect,
    )
}

/// The `read-beyond-region` case: a Read Request of a valid STag for 1 MiB more than its buffer
/// (RFC 5040 4.8: 0/1/1).
pub fn read_beyond_region(t: &Target) -> Case {
    after_learning(
        t,
        "read-beyond-region",
        "a Read Request of a valid STag for 1 MiB more than its buffer (RFC 5040 4.8: 0/1/1)",
        Learned::ReadFromReadSink {
            msn: 1,
            offset: 0,
            size: 1 << 20,
        },
        Expectation::only(Outcome::terminated(TermMatch::any_code_of(
            TermCode::RDMAP_INVALID_STAG,
        ))),
    )
}

/// The `opcode-changes-inside-a-send` case: a two-segment Send whose last
/// segment says Send with Solicited Event (RFC 5040 4.1: every segment of
/// a message carries its opcode; 4.8: 0/2/6).
pub fn opcode_changes_inside_a_send(t: &Target) -> Case {
    let (head, tail) = SMALL.split_at(8);
    after_startup(
        t,
        "opcode-changes-inside-a-send",
        "a two-segment Send whose last segment says Send with Solicited Event (RFC 5040 4.1, 4.8: 0/2/6)",
        vec![
            build::untagged(Opcode::Send, qn::SEND, 1, 0, false, Body::Data(head)),
            build::untagged(Opcode::SendSolicited, qn::SEND, 1, 8, true, Body::Data(tail)),
        ],
        terminated(TermCode::RDMAP_UNEXPECTED_OPCODE),
    )
}

/// The `invalidate-a-shared-region` case: a Send with Invalidate naming
/// the buffer the target handed out (rping registers it with remote rights
/// only). A region the program did not open to remote invalidation (an
/// MR, as libibverbs sees it, rather than a type-2 window) stays valid,
/// and the Send gets a cannot-invalidate TERMINATE (RFC 5040 4.8: 0/2/9,
/// or 0/1/9 as a protection error). siw lets a peer invalidate any MR of
/// the stream's domain, so it fails this case by design.
pub fn invalidate_a_shared_region(t: &Target) -> Case {
    after_learning(
        t,
        "invalidate-a-shared-region",
        "a Send with Invalidate naming a buffer the target handed out without remote invalidation (RFC 5040 4.8: 0/2/9)",
        Learned::InvalidateReadSink { msn: 2 },
        Expectation::any_of(&[
            Outcome::terminated(TermMatch::exactly(
                TermCode::RDMAP_OPERATION_CANNOT_INVALIDATE,
            )),
            Outcome::terminated(TermMatch::exactly(
                TermCode::RDMAP_PROTECTION_CANNOT_INVALIDATE,
            )),
        ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::qn;
    use mpa::{InitiatorConfig, RtrSet};

    #[test]
    fn names_are_unique_and_every_case_allows_something() {
        let all = catalogue(&Target::default());
        let mut names: Vec<_> = all.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(all.iter().all(|c| !c.expect.outcomes.is_empty()));
        assert!(all.iter().all(|c| c.connections >= 1));
    }

    #[test]
    fn the_queue_numbers_are_rdmaps() {
        assert_eq!((qn::SEND, qn::READ_REQUEST, qn::TERMINATE), (0, 1, 2));
    }

    #[test]
    fn peer_to_peer_offers_narrow_to_a_write_rtr() {
        let t = Target {
            mpa: InitiatorConfig {
                peer_to_peer: Some(RtrSet::ALL),
                ..InitiatorConfig::default()
            },
            ..Target::default()
        };
        assert_eq!(
            t.initiator().peer_to_peer,
            Some(RtrSet::only(mpa::Rtr::Write))
        );
    }
}
