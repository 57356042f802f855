//! The fuzz targets' properties in the regular test suite: every seed the
//! corpus tool writes (from the reference captures and from the crates'
//! emit functions) and a few thousand seeded mutations of them go through
//! the same `fuzzing::*` functions cargo-fuzz runs, so CI checks them
//! without cargo-fuzz or a nightly compiler. Also checks that the seeds
//! mean what they claim: capture start-ups re-negotiate, re-aimed streams
//! reach placement, placement scripts place.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use capture::reassembly::Direction::{self, ClientToServer as C2S, ServerToClient as S2C};
use ddp::wire::SegmentRepr;
use ddp::STag;
use iwarp_tests::captures::captures_dir;
use iwarp_tests::fuzz_seeds::conversation::MpaConversation;
use iwarp_tests::fuzz_seeds::encode::{
    ConnectionInput, DeframerInput, InitiatorChoice, PlacementScript, RegionSpec, ResponderChoice,
    StartupInput,
};
use iwarp_tests::fuzz_seeds::mutate::{mutate, Rng};
use iwarp_tests::fuzz_seeds::retarget::retarget;
use iwarp_tests::fuzz_seeds::seeds::{startup_choices, Seed};
use iwarp_tests::fuzz_seeds::{capture_conversations, Corpus, Target};
use mpa::wire::FrameRepr;
use mpa::{CrcPolicy, Framer, Rtr, RtrSet, Startup, StartupEvent};
use rdmap::wire::{Body, MessageRepr};
use rdmap::{Opcode, WcStatus};

/// The captures' conversations, read once; `None` (and a printed skip
/// line) on a clone without ../shared/captures.
fn conversations() -> Option<&'static [MpaConversation]> {
    static CONVS: OnceLock<Option<Vec<MpaConversation>>> = OnceLock::new();
    let convs = CONVS.get_or_init(|| {
        captures_dir().map(|dir| capture_conversations(&dir).expect("the captures read"))
    });
    if convs.is_none() {
        capture::skip::skip("no ../shared/captures beside the repository");
    }
    convs.as_deref()
}

fn conversation(label: &str) -> Option<&'static MpaConversation> {
    let c = conversations()?;
    Some(
        c.iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no conversation {label}")),
    )
}

/// The corpus the seed tool writes: with the captures when present.
fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| match conversations() {
        Some(c) => Corpus::with_captures(c),
        None => Corpus::synthetic(),
    })
}

fn seed(target: Target, name: &str) -> &'static Seed {
    corpus()
        .get(target)
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no {target} seed {name}"))
}

fn opcodes(ulpdus: &[Vec<u8>]) -> Vec<Opcode> {
    ulpdus
        .iter()
        .map(|u| {
            MessageRepr::parse(u)
                .expect("captured ULPDUs parse")
                .opcode()
        })
        .collect()
}

fn count(ops: &[Opcode], op: Opcode) -> usize {
    ops.iter().filter(|&&o| o == op).count()
}

/// Runs `data` through `target`; on a failed property, saves the input
/// and fails with everything needed to replay it.
fn run_checked(target: Target, data: &[u8], what: &str) {
    if catch_unwind(AssertUnwindSafe(|| target.run(data))).is_ok() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{}-{}", target.name(), what.replace('/', "_")));
    let _ = std::fs::write(&path, data);
    let hex: String = data.iter().take(512).map(|b| format!("{b:02x}")).collect();
    panic!(
        "{target} property failed on {what} ({} bytes): {hex}{}\nsaved to {}; replay with \
         `cargo fuzz run -s none {target} {}` in fuzz/",
        data.len(),
        if data.len() > 512 { "..." } else { "" },
        path.display(),
        path.display(),
    );
}

// ---- The captures, read as iWARP -------------------------------------

#[test]
fn every_capture_yields_whole_conversations() {
    let Some(convs) = conversations() else { return };
    let dir = captures_dir().expect("present");
    let stems: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("captures directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
        .collect();
    for stem in &stems {
        let n = convs
            .iter()
            .filter(|c| c.label.rsplit_once('-').is_some_and(|(s, _)| s == stem))
            .count();
        // perftest runs its rdma_cm control connection beside the data one.
        let expected = if stem.starts_with("perftest") { 2 } else { 1 };
        assert_eq!(n, expected, "iWARP connections in {stem}");
    }
    for c in convs {
        for dir in Direction::BOTH {
            let side = c.side(dir);
            assert_eq!(side.error, None, "{} {dir:?} deframes cleanly", c.label);
            assert_eq!(side.fpdus.len(), side.ulpdus.len());
            let mut at = 0;
            for r in &side.fpdus {
                assert_eq!(r.start, at, "{}: FPDUs are contiguous", c.label);
                at = r.end;
            }
            assert_eq!(at, side.fpdu_stream.len());
            opcodes(&side.ulpdus);
        }
        let crc_build = ["-crc", "cxgb", "mpav1"]
            .iter()
            .any(|b| c.label.contains(b));
        assert_eq!(
            c.settled.crc, crc_build,
            "{}: CRC as the README says",
            c.label
        );
        assert_eq!(c.settled.markers, [false, false], "siw sends no markers");
    }
}

#[test]
fn captured_fpdus_reframe_byte_for_byte() {
    // Our Framer, given the captured ULPDUs, writes what siw sent: length
    // and the CRC (or the zero field) in siw's byte order. Only the pad
    // may differ: siw does not always zero it, and receivers ignore it.
    let Some(convs) = conversations() else { return };
    let mut dirty_pads = 0;
    for c in convs {
        for dir in Direction::BOTH {
            let side = c.side(dir);
            let mut framer = Framer::new(c.settled.crc, c.settled.markers[dir.index()]);
            for (u, range) in side.ulpdus.iter().zip(&side.fpdus) {
                let mut ours = Vec::new();
                framer.frame_to_vec(u, &[], &mut ours).expect("frames");
                let theirs = &side.fpdu_stream[range.clone()];
                assert_eq!(ours.len(), theirs.len(), "{}", c.label);
                let pad = 2 + u.len()..2 + u.len() + (4 - (2 + u.len()) % 4) % 4;
                assert!(
                    ours[pad.clone()].iter().all(|&b| b == 0),
                    "we pad with zeros"
                );
                // The CRC covers the pad, so it only matches a clean one.
                let dirty = theirs[pad.clone()].iter().any(|&b| b != 0);
                dirty_pads += usize::from(dirty);
                let end = if dirty { pad.end } else { ours.len() };
                for i in (0..end).filter(|i| !pad.contains(i)) {
                    assert_eq!(
                        ours[i], theirs[i],
                        "{} {dir:?} byte {i} of an FPDU",
                        c.label
                    );
                }
            }
        }
    }
    println!("{dirty_pads} captured FPDUs had a pad that was not zero");
}

#[test]
fn rping_conversation_has_rpings_message_flow() {
    let Some(c) = conversation("rping-default-1") else {
        return;
    };
    let c2s = opcodes(&c.side(C2S).ulpdus);
    let s2c = opcodes(&c.side(S2C).ulpdus);
    assert_eq!(
        (count(&c2s, Opcode::Send), count(&c2s, Opcode::ReadResponse)),
        (6, 3)
    );
    assert_eq!(c2s.len(), 9);
    assert_eq!(
        (
            count(&s2c, Opcode::Send),
            count(&s2c, Opcode::ReadRequest),
            count(&s2c, Opcode::RdmaWrite)
        ),
        (6, 3, 3)
    );
    assert_eq!(s2c.len(), 12);
    assert_eq!((c.settled.request_rev, c.settled.reply_rev), (2, 2));
    assert!(c.settled.request_ird_ord.is_some() && c.settled.rtr.is_none());
}

#[test]
fn cxgb_conversation_opens_with_a_write_rtr() {
    let Some(c) = conversation("rping-cxgb-1") else {
        return;
    };
    assert_eq!(c.settled.rtr, Some(Rtr::Write));
    let first = MessageRepr::parse(&c.side(C2S).ulpdus[0]).expect("parses");
    assert_eq!(first.opcode(), Opcode::RdmaWrite);
    assert_eq!(first.body, Body::Data(&[]));
}

#[test]
fn mismatch_capture_carries_a_terminate() {
    let Some(c) = conversation("rping-mismatch-crc-1") else {
        return;
    };
    let all: Vec<Opcode> = Direction::BOTH
        .iter()
        .flat_map(|&d| opcodes(&c.side(d).ulpdus))
        .collect();
    assert_eq!(count(&all, Opcode::Terminate), 1);
}

// ---- The seeds mean what they claim -------------------------------------

#[test]
fn startup_choices_renegotiate_every_captured_handshake() {
    let Some(convs) = conversations() else { return };
    let now = Instant::now();
    for c in convs {
        let (i, r) = startup_choices(c);
        let request = &c.side(C2S).frame;
        let reply = &c.side(S2C).frame;

        // Our Initiator sends the flags the capture's client sent, and
        // accepts the capture's Reply with the same outcome.
        let mut init = Startup::initiator(i.config(), now).expect("valid config");
        let mut ours = Vec::new();
        init.poll_transmit(&mut ours);
        let (ours, _) = FrameRepr::parse_bytes(&ours).expect("our request parses");
        let (theirs, _) = FrameRepr::parse_bytes(request).expect("captured request parses");
        assert_eq!(
            (ours.crc, ours.markers, ours.rev, ours.enhanced),
            (theirs.crc, theirs.markers, theirs.rev, theirs.enhanced),
            "{}: same Request",
            c.label
        );
        let used = init.handle_bytes(reply, now).expect("reply accepted");
        assert_eq!(used, reply.len());
        assert!(init.is_established(), "{}: initiator established", c.label);
        let Some(StartupEvent::Established(n)) = core::iter::from_fn(|| init.poll_event()).last()
        else {
            panic!("{}: no Established event", c.label);
        };
        assert_eq!(
            (n.crc, n.rtr),
            (c.settled.crc, c.settled.rtr),
            "{}",
            c.label
        );

        // Our Responder takes the capture's Request and answers as siw did.
        let mut resp = Startup::responder(r.config(), now).expect("valid config");
        resp.handle_bytes(request, now).expect("request accepted");
        assert!(resp.is_awaiting_decision(), "{}", c.label);
        let rep = c.settled.reply_ird_ord.unwrap_or_default();
        resp.accept(
            mpa::ReplyParams {
                ird: rep.ird,
                ord: rep.ord,
                private_data: Vec::new(),
            },
            now,
        )
        .expect("accepts");
        let mut ours = Vec::new();
        resp.poll_transmit(&mut ours);
        let (ours, _) = FrameRepr::parse_bytes(&ours).expect("our reply parses");
        let (theirs, _) = FrameRepr::parse_bytes(reply).expect("captured reply parses");
        assert_eq!(
            (ours.crc, ours.markers, ours.rev, ours.enhanced),
            (theirs.crc, theirs.markers, theirs.rev, theirs.enhanced),
            "{}: same Reply",
            c.label
        );
    }
}

#[test]
fn startup_seeds_carry_the_captured_frames() {
    let Some(c) = conversation("rping-crc-1") else {
        return;
    };
    let s = seed(Target::MpaStartup, "rping-crc-1-initiator");
    let reply = &c.side(S2C).frame;
    assert_eq!(&s.data[15..15 + reply.len()], &reply[..]);
    assert_eq!(s.data[9], 255, "256-byte chunks");
    let bytewise = seed(Target::MpaStartup, "rping-crc-1-responder-bytewise");
    let request = &c.side(C2S).frame;
    assert_eq!(&bytewise.data[15..15 + request.len()], &request[..]);
    assert_eq!(bytewise.data[9], 0, "1-byte chunks");
}

#[test]
fn aimed_rping_server_stream_reaches_placement_and_completion() {
    let Some(c) = conversation("rping-default-1") else {
        return;
    };
    let o = rdmap::fuzzing::connection_outcome(
        &seed(Target::RdmapConnection, "rping-default-1-s2c-aimed").data,
    );
    // Six Sends into four receive buffers: the fifth ends the stream, so
    // the window holds the last WRITE before it.
    let mut sends = 0;
    let mut last_write = None;
    for u in &c.side(S2C).ulpdus {
        let m = MessageRepr::parse(u).expect("parses");
        match (m.opcode(), m.body) {
            (Opcode::Send, _) => {
                sends += 1;
                if sends == 5 {
                    break;
                }
            }
            (Opcode::RdmaWrite, Body::Data(d)) => last_write = Some(d.to_vec()),
            _ => {}
        }
    }
    let write = last_write.expect("rping writes");
    assert_eq!(write.len(), 64);
    assert_eq!(&o.mem.bytes(STag(0x100)).expect("window")[..64], &write[..]);
    // Its Sends completed our receives, its Read Requests were answered.
    let ok_recvs = o
        .completions
        .iter()
        .filter(|w| (100..=103).contains(&w.wr_id) && w.status == WcStatus::Success)
        .count();
    assert_eq!(ok_recvs, 4, "{:?}", o.completions);
    assert!(o.sent > 0);
    assert!(o.terminated);
}

#[test]
fn aimed_rping_client_stream_completes_sends_and_the_read() {
    let Some(c) = conversation("rping-default-1") else {
        return;
    };
    let o = rdmap::fuzzing::connection_outcome(
        &seed(Target::RdmapConnection, "rping-default-1-c2s-aimed").data,
    );
    let ok: BTreeSet<u64> = o
        .completions
        .iter()
        .filter(|w| w.status == WcStatus::Success)
        .map(|w| w.wr_id)
        .collect();
    // The client's Sends fill three receives; its first Read Response
    // completes the fuzzed side's own Read (its own Send and Write went out
    // before it).
    assert_eq!(ok, [1, 2, 3, 100, 101, 102].into(), "{:?}", o.completions);
    let response = c
        .side(C2S)
        .ulpdus
        .iter()
        .find_map(|u| match MessageRepr::parse(u) {
            Ok(
                m @ MessageRepr {
                    body: Body::Data(d),
                    ..
                },
            ) if m.opcode() == Opcode::ReadResponse => Some(d.to_vec()),
            _ => None,
        })
        .expect("rping answers reads");
    let sink = o.mem.bytes(STag(0x200)).expect("the Read's sink");
    assert_eq!(&sink[128..192], &response[..]);
    // The second Read Response answers no Read: the stream ends there.
    assert!(o.terminated);
}

#[test]
fn raw_capture_streams_are_refused_at_foreign_stags() {
    // As captured, the STags are siw's, unknown to the fuzzed connection:
    // it must terminate (and the harness checks nothing protected changed).
    if conversations().is_none() {
        return;
    }
    let o = rdmap::fuzzing::connection_outcome(
        &seed(Target::RdmapConnection, "rping-default-1-s2c-raw").data,
    );
    assert!(o.terminated);
    assert_eq!(o.mem.bytes(STag(0x100)).expect("window")[..4], [1, 0, 3, 2]);
}

#[test]
fn capture_placement_scripts_place_both_kinds() {
    if conversations().is_none() {
        return;
    }
    let (tagged, untagged) = ddp::fuzzing::placement_accepted(
        &seed(Target::DdpPlacement, "rping-default-1-s2c-script").data,
    );
    assert_eq!(tagged, 3, "rping's three WRITEs");
    assert!(
        untagged >= 6,
        "six Sends and three Read Requests: {untagged}"
    );
    let (tagged, _) = ddp::fuzzing::placement_accepted(
        &seed(Target::DdpPlacement, "rping-crc-8k-1-c2s-script").data,
    );
    assert!(tagged > 3, "multi-segment READ responses: {tagged}");
}

#[test]
fn retargeted_ulpdus_aim_at_the_fuzzed_regions() {
    let Some(convs) = conversations() else { return };
    for c in convs {
        for dir in Direction::BOTH {
            let aimed = retarget(&c.side(dir).ulpdus);
            let mut msn = [0u32; 3];
            for u in &aimed {
                let m = MessageRepr::parse(u).expect("re-aimed ULPDUs parse");
                match (m.ddp, m.body) {
                    (SegmentRepr::Tagged(t), Body::Data(d)) if !d.is_empty() => {
                        let (base, len) = match t.stag.0 {
                            0x100 => (0x1000, 256),
                            0x200 => (0x2080, 64),
                            other => panic!("{}: STag {other:#x}", c.label),
                        };
                        assert!(t.to >= base && t.to + d.len() as u64 <= base + len);
                    }
                    (SegmentRepr::Untagged(h), body) if !matches!(body, Body::Data(&[])) => {
                        let q = h.qn as usize;
                        msn[q] += 1;
                        assert_eq!(h.msn, msn[q], "{}: MSNs from 1", c.label);
                        if let Body::ReadRequest(r) = body {
                            assert_eq!(r.source_stag, STag(0x300));
                            assert!(r.source_to - 0x3000 + u64::from(r.size) <= 256);
                        }
                        if let Body::Data(d) = body {
                            assert!(d.len() <= 32 && h.last);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

#[test]
fn synthetic_seeds_reach_deep_states() {
    let good = rdmap::fuzzing::connection_outcome(
        &seed(Target::RdmapConnection, "synthetic-work-crc1").data,
    );
    assert!(!good.terminated, "{:?}", good.completions);
    let inv = good
        .completions
        .iter()
        .find(|w| w.wr_id == 102)
        .expect("third receive");
    assert_eq!(
        inv.invalidated,
        Some(STag(0x100)),
        "the Send invalidated the window"
    );
    let read = good
        .completions
        .iter()
        .find(|w| w.wr_id == 3)
        .expect("our Read completed");
    assert_eq!(read.status, WcStatus::Success);
    assert!(good.sent > 0);
    for bad in [
        "foreign",
        "readonly",
        "overrun",
        "unread",
        "msn",
        "read-none",
        "invalidated",
    ] {
        let o = rdmap::fuzzing::connection_outcome(
            &seed(Target::RdmapConnection, &format!("synthetic-{bad}-crc0")).data,
        );
        assert!(o.terminated, "{bad} terminates");
        // The Write ahead of the refused message landed all the same (or
        // the window was invalidated, taking its memory along).
        match o.mem.bytes(STag(0x100)) {
            Some(window) => assert_eq!(window[..16], [0xee; 16], "{bad}"),
            None => assert_eq!(bad, "invalidated"),
        }
    }
    let placed =
        ddp::fuzzing::placement_accepted(&seed(Target::DdpPlacement, "synthetic-exchange").data);
    assert_eq!(placed, (1, 1));
    let (_, untagged) =
        ddp::fuzzing::placement_accepted(&seed(Target::DdpPlacement, "synthetic-queues").data);
    assert_eq!(
        untagged, 2,
        "the two Send segments; the early MSN is refused"
    );
}

// ---- Every seed, and mutations of them, through every target ------------

#[test]
fn corpus_covers_every_target() {
    let c = corpus();
    let with_captures = conversations().is_some();
    for t in Target::ALL {
        let n = c.get(t).len();
        let min = if with_captures { 20 } else { 3 };
        assert!(n >= min, "{t}: {n} seeds");
        let names: BTreeSet<&str> = c.get(t).iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names.len(), n, "{t}: seed names are unique");
    }
}

#[test]
fn every_seed_passes_its_target() {
    for t in Target::ALL {
        for s in corpus().get(t) {
            run_checked(t, &s.data, &s.name);
        }
    }
}

/// Mutations per target: tens of thousands in all, a few seconds in the
/// test profile. `FUZZ_SEEDS_SCALE=<n>` multiplies them for a longer run.
fn mutations(t: Target) -> usize {
    let scale = std::env::var("FUZZ_SEEDS_SCALE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1);
    scale
        * match t {
            Target::RdmapConnection | Target::RdmapRfc7306 => 4_000,
            Target::MpaDeframer => 4_000,
            Target::DdpPlacement | Target::MpaStartup => 8_000,
            Target::DdpHeaders | Target::RdmapHeaders => 20_000,
            // A whole endpoint on the memory link per run.
            Target::VerbsEngine => 600,
        }
}

fn mutate_target(t: Target, seeds: &[Seed], rng_seed: u64) {
    let mut rng = Rng::new(rng_seed ^ t as u64);
    let n = mutations(t);
    let started = Instant::now();
    for i in 0..n {
        let a = &seeds[rng.below(seeds.len())];
        let b = &seeds[rng.below(seeds.len())];
        let data = mutate(&mut rng, &a.data, &b.data, 4096);
        run_checked(t, &data, &format!("mutation-{i}-of-{}", a.name));
    }
    println!(
        "{t}: {n} mutations of {} seeds in {:.2?}",
        seeds.len(),
        started.elapsed()
    );
}

#[test]
fn mutated_seeds_pass_mpa_targets() {
    for t in [Target::MpaStartup, Target::MpaDeframer] {
        mutate_target(t, corpus().get(t), 0x6d70_615f_7365_6564);
    }
}

#[test]
fn mutated_seeds_pass_ddp_targets() {
    for t in [Target::DdpHeaders, Target::DdpPlacement] {
        mutate_target(t, corpus().get(t), 0x6464_705f_7365_6564);
    }
}

#[test]
fn mutated_seeds_pass_rdmap_targets() {
    for t in [
        Target::RdmapHeaders,
        Target::RdmapConnection,
        Target::RdmapRfc7306,
    ] {
        mutate_target(t, corpus().get(t), 0x7264_6d61_705f_7364);
    }
}

#[test]
fn mutated_seeds_pass_the_verbs_engine_target() {
    let t = Target::VerbsEngine;
    mutate_target(t, corpus().get(t), 0x7665_7262_735f_7364);
}

#[test]
fn mutated_synthetic_seeds_pass_every_target() {
    // What a clone without the captures checks.
    let synthetic = Corpus::synthetic();
    for t in Target::ALL {
        let seeds = synthetic.get(t);
        assert!(!seeds.is_empty(), "{t}");
        let mut rng = Rng::new(0x5359_4e54 ^ t as u64);
        for i in 0..200 {
            let a = &seeds[rng.below(seeds.len())];
            let b = &seeds[rng.below(seeds.len())];
            let data = mutate(&mut rng, &a.data, &b.data, 4096);
            run_checked(t, &data, &format!("synthetic-mutation-{i}-of-{}", a.name));
        }
    }
}

// ---- The input layouts and tools ----------------------------------------

#[test]
fn placement_script_matches_ddps_own_scripted_exchange() {
    // The byte string of ddp's `placement_runs_a_scripted_exchange` test.
    let mut expected = vec![0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1];
    expected.extend_from_slice(&[5, 2, 0, 4, 6, 1, 0, 10]);
    expected.extend_from_slice(&[3, 4, 0, 0, 12]);
    expected.extend_from_slice(b"hello world!");
    expected.push(1);
    expected.extend_from_slice(&[0, 2, 0, 3, 4]);
    expected.extend_from_slice(b"abcd");
    expected.push(0);
    let mut s = PlacementScript::new(
        [RegionSpec {
            extra: 0,
            ..RegionSpec::PLAIN
        }; 3],
    );
    s.post(&[(0, 4, 6), (1, 0, 10)])
        .untagged(0, b"hello world!", true)
        .tagged(2, 3, b"abcd", true);
    assert_eq!(s.bytes(), &expected[..]);
    assert_eq!(s.ops(), 3);
}

#[test]
fn placement_script_stops_at_the_operation_cap() {
    let mut s = PlacementScript::new([RegionSpec::PLAIN; 3]);
    for _ in 0..300 {
        s.deregister(0);
    }
    assert_eq!(s.ops(), 256);
    assert_eq!(s.bytes().len(), 3 * 4 + 256 * 2);
}

#[test]
fn startup_input_layout() {
    let input = StartupInput {
        initiator: InitiatorChoice {
            rev1: false,
            crc: CrcPolicy::Required,
            markers_rx: true,
            markers_tx: false,
            peer_to_peer: Some(RtrSet::only(Rtr::Write)),
            ird: 0x0102,
            ord: 0x0304,
            private_data: 7,
            accept_rev1_reply: true,
        },
        responder: ResponderChoice {
            rev1: true,
            crc: CrcPolicy::Never,
            markers_rx: false,
            markers_tx: true,
            rtr: RtrSet::ALL,
        },
        chunk: 9,
        reply_ird: 0x0a0b,
        reply_ord: 0x0c0d,
        reply_private_data: 3,
        stream: b"MPA".to_vec(),
    };
    assert_eq!(
        input.encode(),
        [
            0x02 | 0x04 | 0x10 | 0x20,
            0x02,
            1,
            2,
            3,
            4,
            7,
            0x80 | 0x03 | 0x08,
            0x07,
            9,
            0x0a,
            0x0b,
            0x0c,
            0x0d,
            3,
            b'M',
            b'P',
            b'A'
        ]
    );
    let cfg = input.initiator.config();
    assert_eq!(
        (cfg.rev, cfg.ird, cfg.ord, cfg.private_data.len()),
        (2, 0x102, 0x304, 7)
    );
    assert_eq!(cfg.peer_to_peer, Some(RtrSet::only(Rtr::Write)));
    assert_eq!(input.responder.config().max_rev, 1);
    assert_eq!(input.reply_params().private_data, [0xa5; 3]);
}

#[test]
fn deframer_and_connection_input_layouts() {
    let d = DeframerInput {
        crc: true,
        markers: true,
        chunk: 4,
        max_ulpdu: 0x1234,
        start_words: 0x5678,
        flip: 0x9abc,
        stream: vec![0xee],
    };
    assert_eq!(d.encode(), [3, 4, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xee]);
    // rdmap's own test streams start with 0x30: no CRC, IRD 3.
    let c = ConnectionInput {
        crc: false,
        markers: false,
        rtr: None,
        ird: 3,
        chunk_seed: 7,
        stream: vec![1, 2],
    };
    assert_eq!(c.encode(), [0x30, 7, 1, 2]);
    let c = ConnectionInput {
        crc: true,
        markers: true,
        rtr: Some(Rtr::Read),
        ird: 1,
        ..c
    };
    assert_eq!(c.config_byte(), 0x1f);
}

#[test]
fn mutator_is_deterministic_and_bounded() {
    let seed = b"MPA ID Req Frame\x90\x02\x00\x08";
    let other = [0xffu8; 40];
    let run = |s| {
        let mut rng = Rng::new(s);
        (0..500)
            .map(|_| mutate(&mut rng, seed, &other, 32))
            .collect::<Vec<_>>()
    };
    let a = run(1);
    assert_eq!(a, run(1), "same seed, same mutations");
    assert_ne!(a, run(2));
    assert!(a.iter().all(|m| m.len() <= 32));
    let changed = a.iter().filter(|m| m[..] != seed[..]).count();
    assert!(changed > 450, "{changed} of 500 differ from the seed");
    let lens: BTreeSet<usize> = a.iter().map(Vec::len).collect();
    assert!(lens.len() > 10, "lengths vary: {lens:?}");
    assert!(
        a.iter().any(|m| m.windows(4).any(|w| w == [0xff; 4])),
        "splices happen"
    );
}

#[test]
fn corpus_writes_one_file_per_seed() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-seeds-corpus");
    let _ = std::fs::remove_dir_all(&dir);
    let c = corpus();
    let written = c.write(&dir).expect("writes");
    for t in Target::ALL {
        assert_eq!(written[&t], c.get(t).len());
        let mut files: Vec<Vec<u8>> = std::fs::read_dir(dir.join(t.name()))
            .expect("target directory")
            .map(|e| std::fs::read(e.expect("entry").path()).expect("reads"))
            .collect();
        let mut seeds: Vec<Vec<u8>> = c.get(t).iter().map(|s| s.data.clone()).collect();
        files.sort();
        seeds.sort();
        assert_eq!(files, seeds, "{t}");
    }
    // Writing again replaces, never duplicates.
    c.write(&dir).expect("rewrites");
    let n = std::fs::read_dir(dir.join("mpa_startup"))
        .expect("dir")
        .count();
    assert_eq!(n, c.get(Target::MpaStartup).len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mutations_reach_past_the_first_check() {
    // Mutations that all die at the first length or CRC check would test
    // little: most mutated connection streams must still complete a
    // receive, most mutated scripts still place something.
    let mut rng = Rng::new(0x6465_6570);
    let seeds = corpus().get(Target::RdmapConnection);
    let n = 2_000;
    let mut received = 0;
    for _ in 0..n {
        let a = &seeds[rng.below(seeds.len())];
        let b = &seeds[rng.below(seeds.len())];
        let data = mutate(&mut rng, &a.data, &b.data, 4096);
        let o = rdmap::fuzzing::connection_outcome(&data);
        received += usize::from(
            o.completions
                .iter()
                .any(|w| (100..=103).contains(&w.wr_id) && w.status == WcStatus::Success),
        );
    }
    let seeds = corpus().get(Target::DdpPlacement);
    let mut placed = 0;
    for _ in 0..n {
        let a = &seeds[rng.below(seeds.len())];
        let b = &seeds[rng.below(seeds.len())];
        let data = mutate(&mut rng, &a.data, &b.data, 4096);
        let (t, u) = ddp::fuzzing::placement_accepted(&data);
        placed += usize::from(t + u > 0);
    }
    println!("of {n} mutations: {received} completed a receive, {placed} placed data");
    assert!(received > n / 4, "{received} of {n} completed a receive");
    assert!(placed > n / 2, "{placed} of {n} placed data");
}

#[test]
fn targets_match_the_cargo_fuzz_package() {
    // Target::run must call what each fuzz/fuzz_targets/<name>.rs calls,
    // and every target there must be known here (and in Cargo.toml).
    let fuzz = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz"));
    let mut files: Vec<String> = std::fs::read_dir(fuzz.join("fuzz_targets"))
        .expect("fuzz/fuzz_targets")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    files.sort();
    let mut names: Vec<String> = Target::ALL.iter().map(|t| format!("{t}.rs")).collect();
    names.sort();
    assert_eq!(files, names);
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for t in Target::ALL {
        let src =
            std::fs::read_to_string(fuzz.join(format!("fuzz_targets/{t}.rs"))).expect("reads");
        assert!(
            src.contains(&format!("{}(data)", t.function())),
            "{t}.rs calls {}",
            t.function()
        );
        assert!(manifest.contains(&format!("name = \"{t}\"\npath = \"fuzz_targets/{t}.rs\"")));
        assert_eq!(Target::from_name(t.name()), Some(t));
    }
}
