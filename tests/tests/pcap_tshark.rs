//! Captures written by the transports' pcap sinks for RDMA runs with CRC
//! on decode cleanly in tshark (good TCP checksums, good MPA CRCs, no
//! malformed frames) and in our own `iwarp_decode`, with the message
//! counts the workload implies. tshark is optional: without it the tshark
//! half prints a line and skips (CI installs it).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::capture::{fpdus, terminates};
use common::suite::{guarded, holding, REMOTE};
use common::*;
use iwarp_decode::ConnectionKind;
use iwarp_tests::captures::{our_opcode_counts, tshark_available, tshark_opcode_counts};
use rdmap::Opcode;
use verbs::{wr, Access, STag};

/// Payload bytes per FPDU at MTU 1500 with CRC: FPDUs fill the 1460-byte
/// MSS, so ULPDUs are at most 1454 bytes, less the 18-byte untagged or
/// 14-byte tagged DDP header.
const UNTAGGED_PAYLOAD: usize = 1436;
const TAGGED_PAYLOAD: usize = 1440;

fn segments(len: usize, per: usize) -> u64 {
    len.div_ceil(per).max(1) as u64
}

const SENDS: &[usize] = &[0, 1, 100, 1436, 1437, 5000, 70_000];
const WRITES: &[usize] = &[1, 1440, 1441, 10_000, 200_000];
const READS: &[usize] = &[0, 1, 1440, 1441, 10_000, 200_000];

/// FPDUs the workload puts on the wire, per (sent by client, opcode).
fn expected() -> BTreeMap<(bool, u8), u64> {
    let mut m = BTreeMap::new();
    let sends: u64 = SENDS.iter().map(|&n| segments(n, UNTAGGED_PAYLOAD)).sum();
    let writes: u64 = WRITES.iter().map(|&n| segments(n, TAGGED_PAYLOAD)).sum();
    let responses: u64 = READS.iter().map(|&n| segments(n, TAGGED_PAYLOAD)).sum();
    m.insert((true, Opcode::Send.bits()), sends);
    m.insert((true, Opcode::RdmaWrite.bits()), writes);
    m.insert((true, Opcode::ReadRequest.bits()), READS.len() as u64);
    m.insert((false, Opcode::ReadResponse.bits()), responses);
    m
}

/// Runs the workload over `net` with CRC required and returns the pair.
fn run_workload(net: Net) -> Pair {
    let p = connect(net, Opts::crc());
    assert!(p.client_info.crc && p.server_info.crc);
    let total = 1 << 20;
    let src = holding(&p.client_pd, 0, &pattern(total, 1), 0, Access::NONE);
    let rx = guarded(&p.server_pd, total, Access::LOCAL_WRITE);
    let target = guarded(&p.server_pd, total, REMOTE);
    let read_src = holding(&p.server_pd, 0, &pattern(total, 2), 0, REMOTE);
    let sink = guarded(&p.client_pd, total, Access::LOCAL_WRITE);
    let mut ids = 0u64;
    for &n in SENDS {
        p.server_qp
            .post_recv(wr::recv(ids, vec![rx.sge(0, n).unwrap()]))
            .unwrap();
        p.client_qp
            .post_send(wr::send(ids, vec![src.sge(0, n).unwrap()]))
            .unwrap();
        ids += 1;
    }
    for &n in WRITES {
        p.client_qp
            .post_send(wr::write(
                ids,
                vec![src.sge(0, n).unwrap()],
                target.rkey(),
                target.addr(),
            ))
            .unwrap();
        ids += 1;
    }
    for &n in READS {
        p.client_qp
            .post_send(wr::read(
                ids,
                sink.sge(0, n).unwrap(),
                read_src.rkey(),
                read_src.addr(),
            ))
            .unwrap();
        ids += 1;
    }
    let c = p.client_completions(ids as usize);
    assert!(c.iter().all(|w| w.is_success()), "{c:?}");
    let r = p.server_completions(SENDS.len());
    assert!(r.iter().all(|w| w.is_success()), "{r:?}");
    // Close cleanly so both directions end with a FIN in the capture.
    p.client_qp.disconnect();
    p.disconnected(Side::Client);
    p.disconnected(Side::Server);
    p.settle(&p.client_cq, 50);
    p
}

/// Our decoder: one iWARP connection, clean, with exactly the FPDUs the
/// workload implies.
fn check_our_decode(p: &Pair) {
    let cap = p.capture.as_ref().unwrap();
    let (events, summary) = cap.decode();
    assert!(summary.is_clean(), "{}: {:?}", p.name, summary.problems());
    assert_eq!(summary.connections.len(), 1);
    let conn = &summary.connections[0];
    assert_eq!(conn.kind, ConnectionKind::Iwarp);
    assert_eq!((conn.mpa_rev, conn.crc), (Some(2), Some(true)));
    let mut got = BTreeMap::new();
    for ((sender, op), n) in our_opcode_counts(&events, &summary) {
        got.insert((sender == conn.client, op), n);
    }
    assert_eq!(got, expected(), "{}: FPDUs per sender and opcode", p.name);
    let all = fpdus(&events);
    assert!(all.iter().all(|f| f.crc == iwarp_decode::CrcStatus::Good));
    assert!(terminates(&events).is_empty());
}

/// tshark reads the file with TCP checksum validation on; returns its
/// verbose output after checking for damage.
fn check_tshark(path: &Path, name: &str) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "--disable-protocol",
            "rpcordma",
            "-V",
        ])
        .output()
        .expect("running tshark");
    assert!(
        out.status.success(),
        "{name}: tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for bad in [
        "Bad CRC32",
        "Malformed",
        "[Checksum Status: Bad]",
        "incorrect",
    ] {
        assert!(!text.contains(bad), "{name}: tshark reports {bad:?}");
    }
    assert!(
        text.contains("[Checksum Status: Good]"),
        "{name}: tshark verified the TCP checksums"
    );
    text
}

fn tshark_round(net: Net, file: &str) {
    let p = run_workload(net);
    check_our_decode(&p);
    if !tshark_available() {
        ::capture::skip::skip("the tshark half: tshark is not installed");
        return;
    }
    let path = p.capture.as_ref().unwrap().to_file(file);
    let text = check_tshark(&path, &p.name);
    let good = text.matches("Good CRC32").count() as u64;
    let fpdu_total: u64 = expected().values().sum();
    assert_eq!(
        good, fpdu_total,
        "{}: tshark checked every FPDU's CRC",
        p.name
    );
    assert!(text.contains("Request frame header") && text.contains("Reply frame header"));
    // tshark's opcode counts agree with ours (and so with the workload).
    let (events, summary) = p.capture.as_ref().unwrap().decode();
    let ours = our_opcode_counts(&events, &summary);
    let theirs = tshark_opcode_counts(&path).unwrap();
    assert_eq!(ours, theirs, "{}", p.name);
    let _ = std::fs::remove_file(path);
}

#[test]
fn memory_link_capture_decodes_in_tshark() {
    tshark_round(Net::memory(&MemoryLinkConfig::default()), "iwarp-memory");
}

/// The kernel transport's capture is synthesized from the bytes it wrote
/// and read; it must be just as valid (its MSS is loopback's, so only the
/// totals are compared, not the segment counts).
#[test]
fn kernel_capture_decodes_in_tshark() {
    let p = run_workload(Net::kernel());
    let cap = p.capture.as_ref().unwrap();
    let (events, summary) = cap.decode();
    assert!(summary.is_clean(), "{:?}", summary.problems());
    let ours = our_opcode_counts(&events, &summary);
    let reads: u64 = ours
        .iter()
        .filter(|((_, op), _)| *op == Opcode::ReadRequest.bits())
        .map(|(_, n)| n)
        .sum();
    assert_eq!(reads, READS.len() as u64);
    if !tshark_available() {
        ::capture::skip::skip("the tshark half: tshark is not installed");
        return;
    }
    let path = cap.to_file("iwarp-kernel");
    check_tshark(&path, "kernel");
    assert_eq!(tshark_opcode_counts(&path).unwrap(), ours);
    let _ = std::fs::remove_file(path);
}

/// A run that ends in a TERMINATE: tshark decodes it as one, with no
/// malformed frame, and so do we (RFC 5040 layout: DDP layer, tagged
/// buffer error, invalid STag, with the offending DDP header attached).
#[test]
fn terminate_capture_decodes_in_tshark() {
    let p = connect(Net::memory(&MemoryLinkConfig::default()), Opts::crc());
    let src = holding(&p.client_pd, 0, &pattern(64, 1), 0, Access::NONE);
    p.client_qp
        .post_send(wr::write(
            1,
            vec![src.sge_all()],
            STag::new(0x1234, 5),
            0x1000,
        ))
        .unwrap();
    common::suite::errors::expect_terminate(
        &p,
        Side::Server,
        ddp::error::TermCode::DDP_T_INVALID_STAG,
    );
    let cap = p.capture.as_ref().unwrap();
    let (events, summary) = cap.decode();
    assert!(summary.is_clean(), "{:?}", summary.problems());
    let term = fpdus(&events)
        .into_iter()
        .find_map(|f| f.terminate)
        .expect("a TERMINATE");
    assert_eq!(term.layout, rdmap::wire::TermLayout::Rfc5040);
    assert!(term.control.m && term.control.d && !term.control.r);
    match term.ddp_header {
        Some(ddp::wire::SegmentRepr::Tagged(t)) => {
            assert_eq!((t.stag, t.to), (STag::new(0x1234, 5), 0x1000))
        }
        other => panic!("{other:?}"),
    }
    if !tshark_available() {
        ::capture::skip::skip("the tshark half: tshark is not installed");
        return;
    }
    let path = cap.to_file("iwarp-terminate");
    let text = check_tshark(&path, "terminate");
    assert!(text.contains("Terminate"), "tshark names the TERMINATE");
    let theirs = tshark_opcode_counts(&path).unwrap();
    assert_eq!(theirs, our_opcode_counts(&events, &summary));
    let _ = std::fs::remove_file(path);
}
