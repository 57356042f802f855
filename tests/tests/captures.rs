//! `iwarp decode` over the reference captures of real siw traffic.
//!
//! The expected counts come from what each run does (the capture README and
//! the rping/perftest message flow), and were checked against tshark's
//! iwarp dissectors (`tshark_agrees_with_us` repeats that check whenever
//! tshark is installed). Per rping iteration the client SENDs its source
//! buffer, the server READs it, SENDs "go", the client SENDs its sink
//! buffer, the server WRITEs it and SENDs "go". siw cuts each FPDU to the
//! 1448-byte MSS: 1428 payload bytes per tagged FPDU, 1424 per untagged.

use capture::reassembly::Direction::{self, ClientToServer as C2S, ServerToClient as S2C};
use iwarp_decode::{ConnectionKind, CrcStatus, Event, NoteKind, Severity, Summary};
use iwarp_tests::captures::{
    all_captures, capture, decode_file, have_captures, our_opcode_counts, tshark_available,
    tshark_opcode_counts,
};
use rdmap::Opcode::{self, RdmaWrite, ReadRequest, ReadResponse, Send, Terminate};

/// What one connection of a capture must contain.
struct Conn {
    server_port: u16,
    rev: u8,
    crc: bool,
    c2s: &'static [(Opcode, u64)],
    s2c: &'static [(Opcode, u64)],
    /// DDP payload bytes each way.
    payload: [u64; 2],
}

struct Capture {
    file: &'static str,
    conns: &'static [Conn],
}

/// rping -C 3 -S 64: three iterations of the six-message exchange.
const RPING_C2S: &[(Opcode, u64)] = &[(ReadResponse, 3), (Send, 6)];
const RPING_S2C: &[(Opcode, u64)] = &[(RdmaWrite, 3), (ReadRequest, 3), (Send, 6)];
/// rping's 16-byte buffer descriptors; the server's "go" SENDs carry them too.
const RPING_PAYLOAD: [u64; 2] = [6 * 16 + 3 * 64, 6 * 16 + 3 * 64 + 3 * 28];

/// perftest's exchange of QP and buffer details over its first connection
/// before and after the test (the count is what tshark sees too; the
/// payload totals, 458 and 418 bytes, are as read from the captures).
const PERFTEST_CTRL: &[(Opcode, u64)] = &[(Send, 16)];

const EXPECTED: &[Capture] = &[
    Capture {
        file: "rping-default.pcap",
        conns: &[Conn {
            server_port: 7174,
            rev: 2,
            crc: false,
            c2s: RPING_C2S,
            s2c: RPING_S2C,
            payload: RPING_PAYLOAD,
        }],
    },
    Capture {
        file: "rping-crc.pcap",
        conns: &[Conn {
            server_port: 7174,
            rev: 2,
            crc: true,
            c2s: RPING_C2S,
            s2c: RPING_S2C,
            payload: RPING_PAYLOAD,
        }],
    },
    Capture {
        // Peer-to-peer: the client's zero-length WRITE RTR comes first.
        file: "rping-cxgb.pcap",
        conns: &[Conn {
            server_port: 7174,
            rev: 2,
            crc: true,
            c2s: &[(RdmaWrite, 1), (ReadResponse, 3), (Send, 6)],
            s2c: RPING_S2C,
            payload: RPING_PAYLOAD,
        }],
    },
    Capture {
        // rping -C 2 -S 8000: each 8000-byte READ response and WRITE takes
        // ceil(8000 / 1428) = 6 FPDUs.
        file: "rping-crc-8k.pcap",
        conns: &[Conn {
            server_port: 7174,
            rev: 2,
            crc: true,
            c2s: &[(ReadResponse, 12), (Send, 4)],
            s2c: &[(RdmaWrite, 12), (ReadRequest, 2), (Send, 4)],
            payload: [4 * 16 + 2 * 8000, 4 * 16 + 2 * 8000 + 2 * 28],
        }],
    },
    Capture {
        // ib_write_bw -R -s 16384 -n 5: 5 WRITEs of ceil(16384 / 1428) = 12 FPDUs.
        file: "perftest-write-crc.pcap",
        conns: &[
            Conn {
                server_port: 18515,
                rev: 2,
                crc: true,
                c2s: PERFTEST_CTRL,
                s2c: PERFTEST_CTRL,
                payload: [458, 458],
            },
            Conn {
                server_port: 18515,
                rev: 2,
                crc: true,
                c2s: &[(RdmaWrite, 60)],
                s2c: &[],
                payload: [5 * 16384, 0],
            },
        ],
    },
    Capture {
        // ib_read_bw -R -s 16384 -n 5: 5 READ requests, 60 response FPDUs.
        file: "perftest-read.pcap",
        conns: &[
            Conn {
                server_port: 18515,
                rev: 2,
                crc: false,
                c2s: PERFTEST_CTRL,
                s2c: PERFTEST_CTRL,
                payload: [458, 458],
            },
            Conn {
                server_port: 18515,
                rev: 2,
                crc: false,
                c2s: &[(ReadRequest, 5)],
                s2c: &[(ReadResponse, 60)],
                payload: [5 * 28, 5 * 16384],
            },
        ],
    },
    Capture {
        // ib_send_bw -R -s 4096 -n 5 between peer-to-peer peers: a WRITE
        // RTR opens each connection; 4096-byte SENDs take 3 FPDUs each.
        file: "perftest-send-cxgb.pcap",
        conns: &[
            Conn {
                server_port: 18515,
                rev: 2,
                crc: true,
                c2s: &[(RdmaWrite, 1), (Send, 11)],
                s2c: &[(Send, 11)],
                payload: [418, 418],
            },
            Conn {
                server_port: 18515,
                rev: 2,
                crc: true,
                c2s: &[(RdmaWrite, 1), (Send, 15)],
                s2c: &[(RdmaWrite, 2)],
                payload: [5 * 4096, 8],
            },
        ],
    },
    Capture {
        // Server buffer 64, client 100: the server READs 100 bytes into a
        // 64-byte sink and TERMINATEs.
        file: "rping-mismatch-crc.pcap",
        conns: &[Conn {
            server_port: 7174,
            rev: 2,
            crc: true,
            c2s: &[(ReadResponse, 1), (Send, 1)],
            s2c: &[(ReadRequest, 1), (Terminate, 1)],
            payload: [16 + 100, 28 + 20],
        }],
    },
    Capture {
        // MPA rev 1: setup, the client's first SEND, then siw's rping gives up.
        file: "rping-mpav1.pcap",
        conns: &[Conn {
            server_port: 7174,
            rev: 1,
            crc: true,
            c2s: &[(Send, 1)],
            s2c: &[],
            payload: [16, 0],
        }],
    },
];

fn check_direction(
    summary: &Summary,
    conn_index: usize,
    dir: Direction,
    want: &[(Opcode, u64)],
    payload: u64,
    file: &str,
) {
    let c = &summary.connections[conn_index];
    let d = c.direction(dir);
    let got: Vec<(Opcode, u64)> = d.opcode_counts().collect();
    let mut want = want.to_vec();
    want.sort_by_key(|(op, _)| op.bits());
    assert_eq!(got, want, "{file} connection {} {}", c.number, dir.arrow());
    assert_eq!(d.fpdus, want.iter().map(|(_, n)| n).sum::<u64>(), "{file}");
    assert_eq!(
        d.payload_bytes,
        payload,
        "{file} connection {} {} payload",
        c.number,
        dir.arrow()
    );
    if c.crc == Some(true) {
        assert_eq!(
            (d.crc_good, d.crc_bad, d.crc_off),
            (d.fpdus, 0, 0),
            "{file}"
        );
    } else {
        assert_eq!(
            (d.crc_good, d.crc_bad, d.crc_off),
            (0, 0, d.fpdus),
            "{file}"
        );
    }
    // Every byte read: nothing left undecoded, no partial FPDU, no gaps.
    assert_eq!(d.malformed, 0, "{file}");
    assert_eq!(d.undecoded_bytes, 0, "{file}");
    assert_eq!(d.trailing_partial_bytes, 0, "{file}");
    assert_eq!((d.tcp.gaps, d.tcp.gap_bytes), (0, 0), "{file}");
}

#[test]
fn every_capture_decodes_to_the_expected_messages() {
    if !have_captures() {
        return;
    }
    let files = all_captures();
    assert_eq!(
        files.len(),
        EXPECTED.len(),
        "a capture without expectations: {files:?}"
    );
    for cap in EXPECTED {
        let path = capture(cap.file).unwrap();
        let (events, summary) = decode_file(&path);
        assert!(summary.is_clean(), "{}: {:?}", cap.file, summary.problems());
        assert_eq!(summary.connections.len(), cap.conns.len(), "{}", cap.file);
        assert_eq!(
            summary.skipped.len(),
            0,
            "{}: {:?}",
            cap.file,
            summary.skipped
        );
        for (i, want) in cap.conns.iter().enumerate() {
            let c = &summary.connections[i];
            assert_eq!(c.kind, ConnectionKind::Iwarp, "{}", cap.file);
            assert_eq!(c.client.ip().to_string(), "10.99.0.3", "{}", cap.file);
            assert_eq!(
                c.server.to_string(),
                format!("10.99.0.2:{}", want.server_port)
            );
            assert_eq!(c.mpa_rev, Some(want.rev), "{}", cap.file);
            assert_eq!(c.crc, Some(want.crc), "{}", cap.file);
            assert_eq!(c.errors, 0);
            check_direction(&summary, i, C2S, want.c2s, want.payload[0], cap.file);
            check_direction(&summary, i, S2C, want.s2c, want.payload[1], cap.file);
        }
        // Nothing worth a warning anywhere.
        for e in &events {
            if let Event::Note(n) = e {
                assert_eq!(n.severity, Severity::Info, "{}: {n:?}", cap.file);
            }
        }
    }
}

#[test]
fn every_stream_byte_is_an_mpa_frame_or_an_fpdu() {
    for path in all_captures() {
        let (events, summary) = decode_file(&path);
        for (i, c) in summary.connections.iter().enumerate() {
            for dir in Direction::BOTH {
                let frame: u64 = events
                    .iter()
                    .filter_map(|e| match e {
                        Event::Mpa(m) if m.at.connection == i + 1 && m.at.direction == dir => {
                            Some(20 + m.pd_length as u64)
                        }
                        _ => None,
                    })
                    .sum();
                let fpdus: u64 = events
                    .iter()
                    .filter_map(|e| match e {
                        Event::Fpdu(f) if f.at.connection == i + 1 && f.at.direction == dir => {
                            Some(f.wire_len as u64)
                        }
                        _ => None,
                    })
                    .sum();
                assert_eq!(
                    frame + fpdus,
                    c.direction(dir).tcp.bytes,
                    "{} connection {} {}",
                    path.display(),
                    c.number,
                    dir.arrow()
                );
            }
        }
    }
}

#[test]
fn fpdus_are_contiguous_and_well_formed() {
    for path in all_captures() {
        let (events, _) = decode_file(&path);
        let mut next = std::collections::HashMap::new();
        for e in &events {
            match e {
                Event::Mpa(m) => {
                    next.insert(
                        (m.at.connection, m.at.direction),
                        m.at.offset + 20 + m.pd_length as u64,
                    );
                }
                Event::Fpdu(f) => {
                    let key = (f.at.connection, f.at.direction);
                    assert_eq!(next.get(&key), Some(&f.at.offset), "{}", path.display());
                    next.insert(key, f.at.offset + f.wire_len as u64);
                    assert!(f.error.is_none(), "{}: {:?}", path.display(), f.error);
                    // length field, ULPDU, pad to 4, CRC.
                    assert_eq!(f.wire_len, (2 + f.ulpdu_len).next_multiple_of(4) + 4);
                    assert!(f.ddp.is_some() && f.opcode.is_some());
                }
                _ => {}
            }
        }
    }
}

#[test]
fn mpa_start_up_of_each_build() {
    if !have_captures() {
        return;
    }
    let frames = |file: &str| -> Vec<iwarp_decode::MpaFrame> {
        let (events, _) = decode_file(&capture(file).unwrap());
        events
            .iter()
            .filter_map(|e| match e {
                Event::Mpa(m) => Some(*m),
                _ => None,
            })
            .collect()
    };
    use mpa::wire::FrameKind::{Reply, Request};

    // Default build: rev 2, CRC off, IRD = ORD = 1, client/server model.
    let f = frames("rping-default.pcap");
    assert_eq!(f.len(), 2);
    assert_eq!((f[0].kind, f[0].at.direction), (Request, C2S));
    assert_eq!((f[1].kind, f[1].at.direction), (Reply, S2C));
    for m in &f {
        assert_eq!(
            (m.rev, m.markers, m.crc, m.reject, m.pd_length),
            (2, false, false, false, 4)
        );
        let e = m.enhanced.unwrap();
        assert_eq!((e.ird, e.ord, e.peer_to_peer), (1, 1, false));
        assert!(e.rtr.is_empty());
    }

    // CRC build: C set on both frames.
    assert!(frames("rping-crc.pcap").iter().all(|m| m.crc));

    // Peer-to-peer build: the initiator offers WRITE and READ RTRs, the
    // responder picks WRITE.
    let f = frames("rping-cxgb.pcap");
    let (req, rep) = (f[0].enhanced.unwrap(), f[1].enhanced.unwrap());
    assert!(req.peer_to_peer && rep.peer_to_peer);
    assert!(req.rtr.write && req.rtr.read && !req.rtr.send);
    assert!(rep.rtr.write && !rep.rtr.read && !rep.rtr.send);

    // Rev 1: no enhanced block, no private data, CRC required.
    let f = frames("rping-mpav1.pcap");
    assert_eq!(f.len(), 2);
    for m in &f {
        assert_eq!((m.rev, m.crc, m.pd_length), (1, true, 0));
        assert!(m.enhanced.is_none());
    }
}

#[test]
fn the_zero_length_write_rtr() {
    let Some(path) = capture("rping-cxgb.pcap") else {
        return;
    };
    let (events, _) = decode_file(&path);
    let first = events
        .iter()
        .find_map(|e| match e {
            Event::Fpdu(f) => Some(f.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(first.at.direction, C2S);
    assert_eq!(first.opcode, Some(RdmaWrite));
    assert_eq!((first.ulpdu_len, first.payload_len), (14, 0));
    match first.ddp {
        // siw uses STag 1 for its RTR; never 0 (Chelsio refuses that).
        Some(ddp::wire::SegmentRepr::Tagged(t)) => {
            assert_eq!((t.stag.0, t.to, t.last), (1, 0, true))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_terminate_of_the_overrun_read() {
    let Some(path) = capture("rping-mismatch-crc.pcap") else {
        return;
    };
    let (events, summary) = decode_file(&path);
    assert!(summary.is_clean());
    let fpdus: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Fpdu(f) => Some(f.clone()),
            _ => None,
        })
        .collect();
    let read = fpdus.iter().find_map(|f| f.read_request).unwrap();
    // The server asks for 100 bytes (the client's size) into its 64-byte buffer.
    assert_eq!(read.size, 100);
    let term = fpdus.last().unwrap();
    assert_eq!(term.opcode, Some(Terminate));
    assert_eq!(term.at.direction, S2C);
    assert_eq!(term.crc, CrcStatus::Good);
    match term.ddp {
        Some(ddp::wire::SegmentRepr::Untagged(u)) => {
            assert_eq!((u.qn, u.msn, u.mo, u.last), (2, 1, 0, true))
        }
        other => panic!("{other:?}"),
    }
    let t = term.terminate.unwrap();
    // DDP layer, tagged buffer error, base or bounds violation.
    assert_eq!(
        (t.control.layer, t.control.etype, t.control.code),
        (1, 1, 1)
    );
    assert_eq!(t.layout, rdmap::wire::TermLayout::Siw);
    assert!(t.control.m && t.control.d && !t.control.r);
    // siw puts the offending segment's payload length in the length field.
    assert_eq!(t.segment_len, Some(100));
    match t.ddp_header {
        Some(ddp::wire::SegmentRepr::Tagged(h)) => {
            assert_eq!(h.stag, read.sink_stag);
            assert_eq!(h.to, read.sink_to);
            assert_eq!(rdmap::wire::Control(h.rsvd_ulp).opcode(), ReadResponse);
        }
        other => panic!("{other:?}"),
    }
    assert!(t.read_request.is_none());
}

#[test]
fn no_capture_ends_inside_an_fpdu() {
    for path in all_captures() {
        let (events, _) = decode_file(&path);
        let partial = events
            .iter()
            .filter(|e| matches!(e, Event::Note(n) if matches!(n.kind, NoteKind::PartialFpduAtEnd { .. })))
            .count();
        assert_eq!(partial, 0, "{}", path.display());
    }
}

#[test]
fn tshark_agrees_with_us() {
    if !have_captures() {
        return;
    }
    if !tshark_available() {
        capture::skip::skip("tshark is not installed");
        return;
    }
    for path in all_captures() {
        let (events, summary) = decode_file(&path);
        let ours = our_opcode_counts(&events, &summary);
        let theirs = tshark_opcode_counts(&path).unwrap();
        assert_eq!(ours, theirs, "{}", path.display());
        assert!(!ours.is_empty());
    }
}
