//! The observer and the judge against scripted target responses: Replies
//! from `mpa`'s own Responder, TERMINATEs in both layouts, fed in every
//! cut of the stream.

use std::time::Instant;

use mpa::{ReplyParams, ResponderConfig, Startup, StartupEvent};
use rdmap::term::TermCode;
use rdmap::wire::{Body, TermControl, TermLayout, TerminateRepr};
use rdmap::Opcode;

use crate::build;
use crate::catalogue;
use crate::expect::{Answer, End, Outcome, Terminate};
use crate::judge::judge;
use crate::observe::{Ending, Observation, Observer};
use crate::target::Target;

/// How a scripted target answered.
struct Answered {
    bytes: Vec<u8>,
    ending: Ending,
}

/// A Responder's answer to our Request: the Reply (accepting or not),
/// then `ulpdus` framed as negotiated.
fn responder(accept: bool, ulpdus: &[Vec<u8>]) -> Vec<u8> {
    let now = Instant::now();
    let mut r = Startup::responder(ResponderConfig::default(), now).unwrap();
    r.handle_bytes(&build::request(&Target::default().initiator()), now)
        .unwrap();
    assert!(matches!(
        r.poll_event(),
        Some(StartupEvent::RequestReceived { .. })
    ));
    if accept {
        r.accept(
            ReplyParams {
                ird: 1,
                ord: 1,
                private_data: Vec::new(),
            },
            now,
        )
        .unwrap();
    } else {
        r.reject(b"no", now).unwrap();
    }
    let mut out = Vec::new();
    r.poll_transmit(&mut out);
    if let Some(n) = r.negotiated() {
        let mut f = n.framer();
        for u in ulpdus {
            f.frame_to_vec(u, &[], &mut out).unwrap();
        }
    }
    out
}

fn terminate(code: TermCode, layout: TermLayout) -> Vec<u8> {
    build::untagged(
        Opcode::Terminate,
        build::qn::TERMINATE,
        1,
        0,
        true,
        Body::Terminate(TerminateRepr {
            control: TermControl {
                layer: code.layer.bits(),
                etype: code.etype,
                code: code.code,
                ..TermControl::default()
            },
            layout,
            attached: None,
        }),
    )
}

/// Observes `a` delivered in chunks of `chunk` octets.
fn observe(a: &Answered, chunk: usize) -> Observation {
    let mut o = Observer::new();
    for c in a.bytes.chunks(chunk.max(1)) {
        o.on_bytes(c);
    }
    match a.ending {
        Ending::Fin => o.on_fin(),
        Ending::Reset => o.on_reset(),
        Ending::Open => {}
    }
    o.finish()
}

/// Judges `a` against case `name` in every chunking, and says whether
/// all agree on passing.
fn passes(name: &str, a: &Answered) -> bool {
    let case = catalogue::case(&Target::default(), name).unwrap();
    let results: Vec<bool> = [1, 2, 3, 7, 19, 64, usize::MAX]
        .iter()
        .map(|&c| judge(&case.expect, &observe(a, c)).is_ok())
        .collect();
    assert!(
        results.iter().all(|&r| r == results[0]),
        "{name}: chunking changed the verdict {results:?}"
    );
    results[0]
}

fn answered(bytes: Vec<u8>, ending: Ending) -> Answered {
    Answered { bytes, ending }
}

#[test]
fn the_assigned_terminate_then_a_close_passes() {
    for layout in [TermLayout::Rfc5040, TermLayout::Siw] {
        let t = terminate(TermCode::DDP_T_INVALID_STAG, layout);
        for ending in [Ending::Fin, Ending::Reset] {
            let a = answered(responder(true, std::slice::from_ref(&t)), ending);
            assert!(passes("write-unknown-stag", &a), "{layout:?} {ending:?}");
        }
    }
}

#[test]
fn the_siw_layout_is_decoded_to_the_same_triple() {
    let a = answered(
        responder(
            true,
            &[terminate(TermCode::DDP_UT_MSN_RANGE, TermLayout::Siw)],
        ),
        Ending::Fin,
    );
    let obs = observe(&a, 5);
    assert_eq!(obs.terminates.len(), 1);
    let t = obs.terminates[0];
    assert_eq!(
        (t.layer, t.etype, t.code, t.layout),
        (1, 2, 3, TermLayout::Siw)
    );
}

#[test]
fn a_word_either_layout_could_have_written_matches_in_either() {
    // siw's 0/2/0x05 with no flags reads 2/0/0x05 by the RFC layout, also
    // a defined cause: both readings are kept, and the judge takes either.
    let t = terminate(TermCode::RDMAP_INVALID_VERSION, TermLayout::Siw);
    let a = answered(responder(true, &[t]), Ending::Fin);
    let obs = observe(&a, 3);
    let seen = obs.terminates[0];
    assert_eq!((seen.layer, seen.etype, seen.code), (2, 0, 5));
    assert_eq!(seen.other, Some((0, 2, 5)));
    assert!(passes("wrong-rdmap-version", &a));
    // A word only one layout explains has one reading.
    let t = terminate(TermCode::DDP_UT_MSN_RANGE, TermLayout::Rfc5040);
    let obs = observe(&answered(responder(true, &[t]), Ending::Fin), 3);
    assert_eq!(obs.terminates[0].other, None);
    // And a code neither reading gives still fails.
    let t = terminate(TermCode::RDMAP_UNEXPECTED_OPCODE, TermLayout::Siw);
    assert!(!passes(
        "wrong-rdmap-version",
        &answered(responder(true, &[t]), Ending::Fin)
    ));
}

#[test]
fn another_terminate_fails() {
    let a = answered(
        responder(
            true,
            &[terminate(TermCode::DDP_T_BASE_BOUNDS, TermLayout::Rfc5040)],
        ),
        Ending::Fin,
    );
    assert!(!passes("write-unknown-stag", &a));
}

#[test]
fn a_terminate_without_the_close_fails() {
    let t = terminate(TermCode::DDP_T_INVALID_STAG, TermLayout::Rfc5040);
    let a = answered(responder(true, &[t]), Ending::Open);
    assert!(!passes("write-unknown-stag", &a));
}

#[test]
fn two_terminates_fail() {
    let t = terminate(TermCode::DDP_T_INVALID_STAG, TermLayout::Rfc5040);
    let a = answered(responder(true, &[t.clone(), t]), Ending::Fin);
    assert!(!passes("write-unknown-stag", &a));
}

#[test]
fn a_close_without_the_terminate_fails() {
    let a = answered(responder(true, &[]), Ending::Fin);
    assert!(!passes("write-unknown-stag", &a));
    assert!(passes("terminate-mid-transfer", &a));
}

#[test]
fn an_unknown_revision_must_be_rejected_not_accepted() {
    let rejected = answered(responder(false, &[]), Ending::Fin);
    assert!(passes("unknown-revision", &rejected));
    let accepted = answered(responder(true, &[]), Ending::Fin);
    assert!(!passes("unknown-revision", &accepted));
    let silent_close = answered(Vec::new(), Ending::Fin);
    assert!(!passes("unknown-revision", &silent_close));
}

#[test]
fn garbage_may_be_closed_or_rejected_but_never_accepted() {
    assert!(passes(
        "garbage-request",
        &answered(Vec::new(), Ending::Reset)
    ));
    assert!(passes(
        "garbage-request",
        &answered(responder(false, &[]), Ending::Fin)
    ));
    assert!(!passes(
        "garbage-request",
        &answered(responder(true, &[]), Ending::Fin)
    ));
    assert!(!passes(
        "garbage-request",
        &answered(Vec::new(), Ending::Open)
    ));
}

#[test]
fn a_target_that_answers_with_broken_bytes_fails() {
    // A Reply, then an FPDU whose CRC is wrong.
    let mut bytes = responder(true, &[terminate(TermCode::LLP_CRC, TermLayout::Rfc5040)]);
    let last = bytes.len() - 1;
    bytes[last] ^= 0x80;
    let obs = observe(&answered(bytes.clone(), Ending::Fin), 1);
    assert!(obs.malformed.is_some(), "{obs}");
    assert!(!passes("bad-crc", &answered(bytes, Ending::Fin)));
    // Not a Reply at all.
    let obs = observe(
        &answered(b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec(), Ending::Fin),
        3,
    );
    assert!(obs.malformed.is_some());
    assert!(!passes(
        "garbage-request",
        &answered(b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec(), Ending::Fin)
    ));
}

#[test]
fn waiting_for_the_rest_of_a_huge_ulpdu_is_allowed() {
    let a = answered(responder(true, &[]), Ending::Open);
    assert!(passes("huge-ulpdu-then-silence", &a));
    let t = terminate(TermCode::LLP_MARKER_MISMATCH, TermLayout::Rfc5040);
    assert!(passes(
        "huge-ulpdu-then-silence",
        &answered(responder(true, &[t]), Ending::Fin)
    ));
}

#[test]
fn random_input_needs_a_terminate_the_rfcs_define() {
    let known = terminate(TermCode::DDP_UT_INVALID_QN, TermLayout::Rfc5040);
    assert!(passes(
        "random-fpdus",
        &answered(responder(true, &[known]), Ending::Fin)
    ));
    let unknown = terminate(
        TermCode::new(rdmap::term::Layer::Ddp, 2, 0x77),
        TermLayout::Rfc5040,
    );
    assert!(!passes(
        "random-fpdus",
        &answered(responder(true, &[unknown]), Ending::Fin)
    ));
}

#[test]
fn other_messages_are_recorded_and_allowed() {
    // A target that answers a Send with a Read Request before failing.
    let rr = build::read_request(
        1,
        rdmap::wire::ReadRequestRepr {
            sink_stag: ddp::STag(0x100),
            sink_to: 0,
            size: 16,
            source_stag: ddp::STag(0x200),
            source_to: 0,
        },
    );
    let a = answered(responder(true, &[rr]), Ending::Fin);
    let obs = observe(&a, 4);
    assert_eq!(obs.messages, vec![Opcode::ReadRequest]);
    assert!(passes("random-fpdus", &a));
}

#[test]
fn outcomes_print_what_they_require() {
    let o = Outcome {
        answer: Answer::Accept,
        terminate: Terminate::Matching(crate::TermMatch::exactly(TermCode::LLP_CRC)),
        end: End::Closed,
    };
    assert_eq!(o.to_string(), "Reply, TERMINATE 2/0/0x02, close");
}

/// A TERMINATE framed as the target's own policy frames it, with no Reply.
fn bare_terminate(code: TermCode, crc: bool) -> Vec<u8> {
    let mut out = Vec::new();
    mpa::Framer::new(crc, false)
        .frame_to_vec(&terminate(code, TermLayout::Rfc5040), &[], &mut out)
        .unwrap();
    out
}

#[test]
fn a_terminate_in_place_of_the_reply_is_read_with_or_without_crc() {
    for crc in [true, false] {
        let bytes = bare_terminate(TermCode::LLP_INVALID_REQ_REP, crc);
        let a = answered(bytes, Ending::Fin);
        let obs = observe(&a, 3);
        assert_eq!(obs.reply, None);
        assert_eq!(obs.terminates.len(), 1, "crc {crc}: {obs}");
        assert!(passes("bad-key", &a), "crc {crc}");
        assert!(passes("garbage-request", &a), "crc {crc}");
        // Not an answer to a Request the target should reject with R.
        assert!(!passes("unknown-revision", &a), "crc {crc}");
    }
}

#[test]
fn a_bare_terminate_with_another_code_or_a_bad_crc_fails() {
    let other = answered(bare_terminate(TermCode::LLP_CRC, true), Ending::Fin);
    assert!(!passes("bad-key", &other));
    let mut bytes = bare_terminate(TermCode::LLP_INVALID_REQ_REP, true);
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let broken = answered(bytes, Ending::Fin);
    assert!(observe(&broken, 64).malformed.is_some());
    assert!(!passes("bad-key", &broken));
}

#[test]
fn a_close_inside_a_reply_or_fpdu_is_malformed() {
    let reply = responder(false, &[]);
    let cut = answered(reply[..reply.len() - 1].to_vec(), Ending::Fin);
    assert!(observe(&cut, 5).malformed.is_some());
    assert!(!passes("garbage-request", &cut));
    let short = answered(b"no".to_vec(), Ending::Reset);
    assert!(!passes("garbage-request", &short));
    // Still open: the rest may be on its way, nothing to judge yet.
    let open = answered(reply[..10].to_vec(), Ending::Open);
    assert!(observe(&open, 5).malformed.is_none());
}

#[test]
fn markers_in_the_targets_fpdus_are_read_out_when_asked_for() {
    let mut framer = mpa::Framer::new(false, true);
    let mut stream = Vec::new();
    for msn in 1..=3 {
        framer
            .frame_to_vec(&build::send(msn, &[0x61; 300], true), &[], &mut stream)
            .unwrap();
    }
    let t = terminate(TermCode::DDP_UT_MSN_RANGE, TermLayout::Rfc5040);
    framer.frame_to_vec(&t, &[], &mut stream).unwrap();
    for chunk in [1, 7, 512, usize::MAX] {
        let mut o = Observer::new();
        o.expect_markers(true);
        o.established(crate::observe::ReplySeen {
            reject: false,
            rev: 2,
            crc: false,
        });
        for c in stream.chunks(chunk.min(stream.len())) {
            o.on_bytes(c);
        }
        o.on_fin();
        let obs = o.finish();
        assert_eq!((obs.send_count, obs.terminates.len()), (3, 1), "{obs}");
        assert!(obs.malformed.is_none(), "{obs}");
    }
}

#[test]
fn rfc7306_opcodes_to_a_peer_that_did_not_agree_need_unexpected_opcode() {
    for name in ["immediate-data-not-agreed", "atomic-request-not-agreed"] {
        let case = catalogue::case(&Target::default(), name).unwrap();
        // The case sends exactly one FPDU, carrying the RFC 7306 opcode.
        let sent: Vec<_> = case
            .script
            .iter()
            .filter_map(|s| match s {
                crate::script::Step::Fpdu { ulpdu, .. } => Some(ulpdu.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(sent.len(), 1, "{name}");
        let op = Opcode::from_bits(sent[0][1]);
        assert!(
            matches!(op, Opcode::ImmediateData | Opcode::AtomicRequest),
            "{name}: {op:?}"
        );
        for layout in [TermLayout::Rfc5040, TermLayout::Siw] {
            let t = terminate(TermCode::RDMAP_UNEXPECTED_OPCODE, layout);
            let a = answered(responder(true, &[t]), Ending::Fin);
            assert!(passes(name, &a), "{name}: 0/2/6 in {layout:?}");
        }
        // Accepting it silently, or any other cause, fails.
        assert!(!passes(name, &answered(responder(true, &[]), Ending::Open)));
        assert!(!passes(name, &answered(responder(true, &[]), Ending::Fin)));
        for other in [TermCode::DDP_UT_TOO_LONG, TermCode::RDMAP_INVALID_STAG] {
            let t = terminate(other, TermLayout::Rfc5040);
            let a = answered(responder(true, &[t]), Ending::Fin);
            assert!(!passes(name, &a), "{name}: {other:?}");
        }
    }
}
