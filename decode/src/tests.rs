//! The dissector end to end over synthetic captures.

use mpa::wire::FrameKind;
use rdmap::Opcode;

use super::*;
use crate::testutil::*;
use capture::reassembly::Direction::{ClientToServer as C2S, ServerToClient as S2C};

/// Client stream, server stream, and the ULPDUs each carries.
type Streams = (Vec<u8>, Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Client and server byte streams of a small rping-like exchange.
fn rping_streams(crc: bool) -> Streams {
    let c_ulpdus = vec![
        send(1, &[1; 16]),
        read_response(0x1100, 0x1000, &[7; 64]),
        send(2, &[2; 16]),
    ];
    let s_ulpdus = vec![
        read_request(1, 0x1100, 64, 0x2200),
        send(1, b"go"),
        write(0x3300, 0x5000, true, &[9; 64]),
        send(2, b"go"),
    ];
    let mut c = request(crc);
    c.extend(fpdus(crc, false, &c_ulpdus));
    let mut s = reply(crc);
    s.extend(fpdus(crc, false, &s_ulpdus));
    (c, s, c_ulpdus, s_ulpdus)
}

fn opcodes(events: &[Event], dir: capture::reassembly::Direction) -> Vec<Opcode> {
    fpdus_of(events)
        .iter()
        .filter(|f| f.at.direction == dir)
        .map(|f| f.opcode.unwrap())
        .collect()
}

#[test]
fn a_whole_conversation() {
    let (c, s, _, _) = rping_streams(true);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake()
        .data(C2S, &c[..20 + 4])
        .data(S2C, &s[..24])
        .data(C2S, &c[24..])
        .data(S2C, &s[24..])
        .fin(C2S)
        .fin(S2C);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    let Event::Connection(first) = &events[0] else {
        panic!("{:?}", events[0])
    };
    assert_eq!(first.client, conv.client);
    assert!(first.handshake_seen);
    let mpa: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, Event::Mpa(_)))
        .collect();
    assert_eq!(mpa.len(), 2);
    let negotiated = events.iter().find_map(|e| match e {
        Event::Negotiated(n) => Some(*n),
        _ => None,
    });
    assert_eq!(
        negotiated,
        Some(Negotiated {
            connection: 1,
            crc: true,
            markers: [false, false],
            rejected: false
        })
    );
    assert_eq!(
        opcodes(&events, C2S),
        [Opcode::Send, Opcode::ReadResponse, Opcode::Send]
    );
    assert_eq!(
        opcodes(&events, S2C),
        [
            Opcode::ReadRequest,
            Opcode::Send,
            Opcode::RdmaWrite,
            Opcode::Send
        ]
    );
    let rr = fpdus_of(&events)
        .into_iter()
        .find_map(|f| f.read_request)
        .unwrap();
    assert_eq!(
        (rr.sink_stag.0, rr.size, rr.source_stag.0),
        (0x1100, 64, 0x2200)
    );
    assert!(fpdus_of(&events).iter().all(|f| f.crc == CrcStatus::Good));
    // FPDU offsets follow each other from the end of the 24-byte MPA frame.
    let mut at = 24;
    for f in fpdus_of(&events).iter().filter(|f| f.at.direction == C2S) {
        assert_eq!(f.at.offset, at);
        at += f.wire_len as u64;
    }
    assert_eq!(at, c.len() as u64);

    let conn = &summary.connections[0];
    assert_eq!(conn.kind, ConnectionKind::Iwarp);
    assert_eq!(conn.mpa_rev, Some(2));
    assert_eq!(conn.crc, Some(true));
    let c2s = conn.direction(C2S);
    assert_eq!((c2s.fpdus, c2s.crc_good), (3, 3));
    assert_eq!(c2s.opcode_count(Opcode::Send), 2);
    assert_eq!(c2s.payload_bytes, 16 + 64 + 16);
    assert_eq!(c2s.tcp.bytes, c.len() as u64);
    let s2c = conn.direction(S2C);
    assert_eq!(s2c.opcode_count(Opcode::ReadRequest), 1);
    assert_eq!(s2c.opcode_count(Opcode::RdmaWrite), 1);
    assert_eq!(summary.fpdus(), 7);
}

#[test]
fn every_split_of_the_client_stream_decodes_the_same() {
    let (c, s, c_ulpdus, _) = rping_streams(true);
    for cut in 1..c.len() {
        let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
        conv.handshake()
            .data(C2S, &c[..cut.min(24)])
            .data(S2C, &s[..24]);
        if cut > 24 {
            conv.data(C2S, &c[24..cut]);
        } else if cut < 24 {
            conv.data(C2S, &c[cut..24]);
        }
        conv.data(C2S, &c[cut.max(24)..]).data(S2C, &s[24..]);
        let (events, summary) = run(&conv.pcap());
        assert!(summary.is_clean(), "cut {cut}: {:?}", summary.problems());
        let got: Vec<usize> = fpdus_of(&events)
            .iter()
            .filter(|f| f.at.direction == C2S)
            .map(|f| f.ulpdu_len)
            .collect();
        let want: Vec<usize> = c_ulpdus.iter().map(Vec::len).collect();
        assert_eq!(got, want, "cut {cut}");
    }
}

#[test]
fn reordered_and_retransmitted_segments() {
    let (c, s, _, _) = rping_streams(false);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake()
        .data_at(C2S, 40, &c[40..]) // ahead of a hole
        .data_at(C2S, 0, &c[..30])
        .data_at(C2S, 0, &c[..30]) // duplicate
        .data_at(C2S, 25, &c[25..45]) // overlaps both sides of the hole
        .skip_to(C2S, c.len())
        .data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert_eq!(
        opcodes(&events, C2S),
        [Opcode::Send, Opcode::ReadResponse, Opcode::Send]
    );
    let tcp = summary.connections[0].direction(C2S).tcp;
    assert_eq!(tcp.out_of_order, 1);
    assert_eq!(tcp.retransmitted, 1);
    assert_eq!(tcp.overlap_bytes, 5 + 5);
    assert!(fpdus_of(&events).iter().all(|f| f.crc == CrcStatus::Off));
}

#[test]
fn missing_handshake_takes_the_request_sender_as_client() {
    let (c, s, _, _) = rping_streams(true);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    // The capture starts with a bare ACK from the server, then data.
    conv.raw(S2C, 0xf000_0001, ACK, &[])
        .data(C2S, &c)
        .data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    let Event::Connection(first) = &events[0] else {
        panic!()
    };
    assert_eq!(first.client, conv.client);
    assert!(!first.handshake_seen);
    assert_eq!(opcodes(&events, C2S).len(), 3);
    assert_eq!(opcodes(&events, S2C).len(), 4);
    let conn = &summary.connections[0];
    assert_eq!(conn.client, conv.client);
    assert!(conn.direction(C2S).tcp.started_mid_stream);
}

#[test]
fn non_iwarp_connections_are_listed_and_skipped() {
    let mut conv = Conv::new("10.0.0.3:40001", "10.0.0.2:80");
    conv.handshake()
        .data(C2S, b"GET / HTTP/1.1\r\n\r\n")
        .data(S2C, b"HTTP/1.1 200 OK\r\n\r\n")
        .fin(C2S)
        .fin(S2C);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean());
    assert_eq!(summary.connections[0].kind, ConnectionKind::NotMpa);
    let notes = notes_of(&events);
    assert_eq!(notes.len(), 2);
    assert!(notes
        .iter()
        .all(|n| n.kind == NoteKind::NotMpa && n.severity == Severity::Info));
    assert_eq!(summary.iwarp_connections().count(), 0);
}

#[test]
fn a_prefix_of_the_key_is_not_enough() {
    let mut conv = Conv::new("10.0.0.3:40001", "10.0.0.2:7174");
    conv.handshake()
        .data(C2S, b"MPA ID Req")
        .data(C2S, b" Frome");
    let (events, _) = run(&conv.pcap());
    assert_eq!(notes_of(&events)[0].kind, NoteKind::NotMpa);
}

#[test]
fn a_gap_breaks_the_stream() {
    let (c, s, _, _) = rping_streams(true);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake()
        .data(C2S, &c[..24])
        .data(S2C, &s)
        .data(C2S, &c[24..50])
        .skip_to(C2S, 60)
        .data(C2S, &c[60..])
        .fin(C2S);
    let (events, summary) = run(&conv.pcap());
    assert!(!summary.is_clean());
    let gap = notes_of(&events)
        .into_iter()
        .find(|n| matches!(n.kind, NoteKind::Gap { .. }))
        .unwrap();
    assert_eq!(gap.kind, NoteKind::Gap { len: 10 });
    assert_eq!(gap.severity, Severity::Error);
    assert_eq!(gap.at.offset, 50);
    let d = summary.connections[0].direction(C2S);
    assert_eq!(d.fpdus, 0);
    // The 26 bytes of the partial FPDU before the gap, and all after it.
    assert_eq!(d.undecoded_bytes, 26 + (c.len() - 60) as u64);
    assert_eq!(d.tcp.gap_bytes, 10);
}

#[test]
fn capture_ending_inside_an_fpdu_is_not_an_error() {
    let (c, s, _, _) = rping_streams(true);
    let cut = c.len() - 7;
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c[..cut]).data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    let d = summary.connections[0].direction(C2S);
    assert_eq!(d.fpdus, 2);
    let last_len = (c.len() - 24) - (d.ulpdu_bytes as usize) - 2 * 2 - 2 * 4;
    assert_eq!(d.trailing_partial_bytes, (last_len - 7) as u64);
    let note = notes_of(&events).pop().unwrap();
    assert_eq!(note.severity, Severity::Info);
    assert!(matches!(note.kind, NoteKind::PartialFpduAtEnd { .. }));
}

#[test]
fn fin_inside_an_fpdu_is_an_error() {
    let (c, s, _, _) = rping_streams(true);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake()
        .data(C2S, &c[..c.len() - 3])
        .data(S2C, &s)
        .fin(C2S);
    let (events, summary) = run(&conv.pcap());
    assert!(!summary.is_clean());
    assert!(notes_of(&events)
        .iter()
        .any(|n| matches!(n.kind, NoteKind::PartialFpduAtFin { .. })
            && n.severity == Severity::Error));
}

#[test]
fn a_bad_crc_is_counted_and_decoding_goes_on() {
    let (mut c, s, _, _) = rping_streams(true);
    // The last byte of the first FPDU's CRC.
    let first_end = 24 + 2 + 34 + 4;
    c[first_end - 1] ^= 0x80;
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert_eq!(summary.crc_errors(), 1);
    assert!(summary.problems().iter().any(|p| p.contains("CRC")));
    let f = fpdus_of(&events);
    assert!(matches!(f[0].crc, CrcStatus::Bad { .. }));
    assert_eq!(f[0].opcode, Some(Opcode::Send));
    assert_eq!(opcodes(&events, C2S).len(), 3);
}

#[test]
fn a_rejected_connection() {
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake()
        .data(C2S, &request(false))
        .data(S2C, &mpa_frame(FrameKind::Reply, false, false, true, 2))
        .fin(S2C);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert_eq!(summary.connections[0].kind, ConnectionKind::Rejected);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Negotiated(n) if n.rejected)));

    // Bytes after a rejection are an error.
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    let mut rejected = mpa_frame(FrameKind::Reply, false, false, true, 2);
    rejected.extend_from_slice(&fpdus(false, false, &[send(1, b"x")]));
    conv.handshake()
        .data(C2S, &request(false))
        .data(S2C, &rejected);
    let (events, summary) = run(&conv.pcap());
    assert!(!summary.is_clean());
    assert!(notes_of(&events)
        .iter()
        .any(|n| matches!(n.kind, NoteKind::DataAfterReject { bytes: 28 })));
}

#[test]
fn markers_go_to_whoever_asked() {
    // The client asks for markers: the server's FPDUs carry them.
    let server_ulpdus: Vec<Vec<u8>> = (1..=6).map(|m| send(m, &[m as u8; 300])).collect();
    let mut c = mpa_frame(FrameKind::Request, true, true, false, 2);
    c.extend(fpdus(true, false, &[send(1, b"hi")]));
    let mut s = reply(true);
    s.extend(fpdus(true, true, &server_ulpdus));
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake()
        .data(C2S, &c)
        .data(S2C, &s[..700])
        .data(S2C, &s[700..]);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Negotiated(n) if n.markers == [false, true])));
    let s2c: Vec<_> = fpdus_of(&events)
        .into_iter()
        .filter(|f| f.at.direction == S2C)
        .collect();
    assert_eq!(s2c.len(), 6);
    assert!(s2c
        .iter()
        .all(|f| f.payload_len == 300 && f.crc == CrcStatus::Good));
    let wire: usize = s2c.iter().map(|f| f.wire_len).sum();
    assert_eq!(wire, s.len() - 24);
}

#[test]
fn two_requests_break_both_streams() {
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake()
        .data(C2S, &request(false))
        .data(S2C, &request(false));
    let (events, summary) = run(&conv.pcap());
    assert!(!summary.is_clean());
    let broken = notes_of(&events)
        .into_iter()
        .filter(|n| matches!(&n.kind, NoteKind::Broken(w) if w.contains("both sides")))
        .count();
    assert_eq!(broken, 2);
}

#[test]
fn fpdus_without_the_peers_frame_are_an_error() {
    let (c, _, _, _) = rping_streams(true);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c);
    let (events, summary) = run(&conv.pcap());
    assert_eq!(summary.connections[0].kind, ConnectionKind::MpaIncomplete);
    assert!(!summary.is_clean());
    let n = notes_of(&events).pop().unwrap();
    assert_eq!(
        n.kind,
        NoteKind::PeerFrameMissing {
            bytes: c.len() as u64 - 24
        }
    );

    // A Request left unanswered with nothing after it is fine.
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &request(true));
    let (_, summary) = run(&conv.pcap());
    assert!(summary.is_clean());
    assert_eq!(summary.connections[0].kind, ConnectionKind::MpaIncomplete);
}

#[test]
fn malformed_ulpdus_are_shown_and_counted() {
    let mut bad = send(1, b"x");
    bad[0] = (bad[0] & !3) | 2; // DDP version 2
    let mut unknown = send(2, b"y");
    unknown[1] = 0x4c; // RDMAP opcode 0xc
    let mut c = request(false);
    c.extend(fpdus(false, false, &[bad, unknown]));
    let mut s = reply(false);
    s.extend(fpdus(false, false, &[send(1, b"ok")]));
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert_eq!(summary.malformed(), 2);
    assert!(!summary.is_clean());
    let f = fpdus_of(&events);
    assert!(f[0].error.is_some() && f[0].ddp.is_none());
    assert!(f[1].error.is_some());
    assert_eq!(f[1].opcode, Some(Opcode::Unknown(0xc)));
    assert!(f[1].ddp.is_some());
    assert!(f[2].error.is_none());
}

#[test]
fn a_reused_address_pair_is_a_new_connection() {
    let mut first = Conv::with_isn("10.0.0.3:40000", "10.0.0.2:7174", 100, 200);
    let (c, s, _, _) = rping_streams(false);
    first
        .handshake()
        .data(C2S, &c)
        .data(S2C, &s)
        .fin(C2S)
        .fin(S2C);
    let mut second = Conv::with_isn("10.0.0.3:40000", "10.0.0.2:7174", 90_000, 80_000);
    second.handshake().data(C2S, &c).data(S2C, &s);
    let mut all = first.frames.clone();
    all.extend(second.frames.clone());
    first.frames = all;
    let (events, summary) = run(&first.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert_eq!(summary.connections.len(), 2);
    assert_eq!(summary.fpdus(), 14);
    let conns: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            Event::Connection(c) => Some(c.number),
            _ => None,
        })
        .collect();
    assert_eq!(conns, [1, 2]);
}

#[test]
fn interleaved_connections_keep_their_own_state() {
    let (c, s, _, _) = rping_streams(true);
    let mut a = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    let mut b = Conv::new("10.0.0.4:40000", "10.0.0.2:7174");
    for conv in [&mut a, &mut b] {
        conv.handshake();
        for i in (0..c.len()).step_by(7) {
            conv.data(C2S, &c[i..(i + 7).min(c.len())]);
        }
        conv.data(S2C, &s);
    }
    let (events, summary) = run(&interleave(&[&a, &b]));
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert_eq!(summary.connections.len(), 2);
    for conn in &summary.connections {
        assert_eq!(conn.fpdus(), 7);
    }
    assert_eq!(fpdus_of(&events).len(), 14);
}

#[test]
fn ipv6_and_wrapping_sequence_numbers() {
    let (c, s, _, _) = rping_streams(true);
    let mut conv = Conv::with_isn("[fd00::3]:40000", "[fd00::2]:7174", u32::MAX - 30, u32::MAX);
    conv.handshake()
        .data(C2S, &c[..50])
        .data(C2S, &c[50..])
        .data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert_eq!(fpdus_of(&events).len(), 7);
    assert_eq!(summary.connections[0].client.to_string(), "[fd00::3]:40000");
}

#[test]
fn a_truncated_capture_keeps_what_came_before() {
    let (c, s, _, _) = rping_streams(true);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s).fin(S2C);
    let pcap = conv.pcap();
    // Cut inside the last record, the server's FIN.
    let (events, summary) = run(&pcap[..pcap.len() - 10]);
    assert!(matches!(
        summary.capture_error,
        Some(capture::pcap::PcapError::Truncated { .. })
    ));
    assert!(!summary.is_clean());
    assert_eq!(opcodes(&events, C2S).len(), 3);
    assert!(summary.problems()[0].starts_with("capture unreadable"));
}

#[test]
fn garbage_is_unreadable() {
    let (events, summary) = run(b"this is not a capture file at all");
    assert!(events.is_empty());
    assert!(matches!(
        summary.capture_error,
        Some(capture::pcap::PcapError::UnknownMagic(_))
    ));
}

#[test]
fn text_and_json_lines_for_each_event() {
    let (c, s, _, _) = rping_streams(true);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    let base = conv.frames[0].0;
    let lines: Vec<String> = events.iter().map(|e| text::event(e, base)).collect();
    assert_eq!(lines[0], "connection #1 10.0.0.3:40000 -> 10.0.0.2:7174");
    assert_eq!(
        lines[1],
        "   0.003000000       4 #1 c>s MPA Request rev 2 M=0 C=1 R=0 enhanced ird 1 ord 1 p2p=0 rtr=- private data 4 bytes"
    );
    assert!(lines.iter().any(|l| l.ends_with(
        "#1 s>c read_req   untagged L qn 1 msn 1 mo 0 ulpdu 46 payload 28 crc good sink 0x00001100:0x1000 len 64 source 0x00002200:0x2000"
    )), "{lines:#?}");
    for e in &events {
        let j = json::event(e, base);
        assert!(j.starts_with("{\"type\":\"") && j.ends_with('}'), "{j}");
    }
    let js = json::summary(&summary);
    assert!(js.last().unwrap().contains("\"ok\":true"));
    let ts = text::summary(&summary);
    assert!(ts[0].starts_with("summary: 5 packet(s)"), "{}", ts[0]);
    assert!(
        ts[2].contains("send 2") && ts[2].contains("CRC good 3 bad 0 off 0"),
        "{}",
        ts[2]
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// (direction, offset, ULPDU length, opcode, CRC) of every FPDU.
    fn fingerprint(events: &[Event]) -> Vec<(usize, u64, usize, Option<Opcode>, CrcStatus)> {
        fpdus_of(events)
            .iter()
            .map(|f| {
                (
                    f.at.direction.index(),
                    f.at.offset,
                    f.ulpdu_len,
                    f.opcode,
                    f.crc,
                )
            })
            .collect()
    }

    fn in_order(c: &[u8], s: &[u8]) -> Vec<Event> {
        let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
        conv.handshake().data(C2S, c).data(S2C, s);
        run(&conv.pcap()).0
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// However the client's stream is cut, reordered and re-sent, the
        /// dissection is the one of the stream sent in order.
        #[test]
        fn segmentation_reordering_and_duplicates_do_not_matter(
            crc in any::<bool>(),
            cuts in proptest::collection::vec(1usize..400, 0..25),
            swaps in proptest::collection::vec((0usize..30, 0usize..30), 0..10),
            dups in proptest::collection::vec(0usize..30, 0..5),
        ) {
            let (c, s, _, _) = rping_streams(crc);
            let want = fingerprint(&in_order(&c, &s));
            let mut bounds: Vec<usize> = cuts.iter().map(|x| x % c.len()).collect();
            bounds.extend([0, c.len()]);
            bounds.sort_unstable();
            bounds.dedup();
            let mut segs: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
            for (a, b) in swaps {
                let n = segs.len();
                segs.swap(a % n, b % n);
            }
            for d in dups {
                let n = segs.len();
                segs.push(segs[d % n]);
            }
            let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
            conv.handshake().data(S2C, &s);
            for (a, b) in segs {
                conv.data_at(C2S, a, &c[a..b]);
            }
            let (events, summary) = run(&conv.pcap());
            prop_assert!(summary.is_clean(), "{:?}", summary.problems());
            let mut got = fingerprint(&events);
            let mut want = want;
            got.sort_by_key(|f| (f.0, f.1));
            want.sort_by_key(|f| (f.0, f.1));
            prop_assert_eq!(got, want);
        }

        /// Whatever follows a valid start-up, every captured byte of the
        /// stream is accounted for: frame, FPDUs, undecoded or partial.
        #[test]
        fn arbitrary_fpdu_streams_are_accounted_for(
            crc in any::<bool>(),
            markers in any::<bool>(),
            garbage in proptest::collection::vec(any::<u8>(), 0..2000),
            chunk in 1usize..600,
            fin in any::<bool>(),
        ) {
            let mut c = mpa_frame(FrameKind::Request, crc, false, false, 2);
            c.extend_from_slice(&garbage);
            let s = mpa_frame(FrameKind::Reply, crc, markers, false, 2);
            let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
            conv.handshake().data(S2C, &s);
            for part in c.chunks(chunk) {
                conv.data(C2S, part);
            }
            if fin {
                conv.fin(C2S);
            }
            let (events, summary) = run(&conv.pcap());
            let d = summary.connections[0].direction(C2S);
            let wire: u64 = fpdus_of(&events)
                .iter()
                .filter(|f| f.at.direction == C2S)
                .map(|f| f.wire_len as u64)
                .sum();
            prop_assert_eq!(24 + wire + d.undecoded_bytes + d.trailing_partial_bytes, d.tcp.bytes);
            prop_assert_eq!(d.tcp.bytes, c.len() as u64);
        }

        /// A real-looking capture with bytes flipped anywhere (headers,
        /// sequence numbers, MPA frames, FPDUs, pcap records): no panic, and
        /// the totals stay consistent with the events.
        #[test]
        fn mutated_captures_never_panic(
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..20),
            crc in any::<bool>(),
        ) {
            let (c, s, _, _) = rping_streams(crc);
            let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
            conv.handshake().data(C2S, &c[..30]).data(S2C, &s).data(C2S, &c[30..]).fin(C2S).fin(S2C);
            let mut pcap = conv.pcap();
            for (at, x) in flips {
                let i = at % pcap.len();
                pcap[i] ^= x | 1;
            }
            let (events, summary) = run(&pcap);
            let fpdus = fpdus_of(&events).len() as u64;
            prop_assert_eq!(fpdus, summary.fpdus());
            let bad = fpdus_of(&events).iter().filter(|f| matches!(f.crc, CrcStatus::Bad { .. })).count() as u64;
            prop_assert_eq!(bad, summary.crc_errors());
        }

        /// Any bytes at all, either way, from the first byte: no panic, and
        /// a stream that is not MPA is skipped without an error.
        #[test]
        fn arbitrary_streams_never_panic(
            a in proptest::collection::vec(any::<u8>(), 0..700),
            b in proptest::collection::vec(any::<u8>(), 0..700),
            key_prefix in 0usize..17,
        ) {
            let mut a2 = b"MPA ID Req Frame"[..key_prefix].to_vec();
            a2.extend_from_slice(&a);
            let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
            conv.handshake().data(C2S, &a2).data(S2C, &b);
            let (_, summary) = run(&conv.pcap());
            prop_assert_eq!(summary.connections.len(), 1);
            if summary.connections[0].kind == ConnectionKind::NotMpa {
                prop_assert!(summary.is_clean());
            }
        }
    }
}

#[test]
fn an_rfc_layout_terminate_with_its_read_request() {
    let failed = read_request(1, 0x1100, 64, 0xdead00);
    let mut c = request(true);
    c.extend(fpdus(true, false, std::slice::from_ref(&failed)));
    let mut s = reply(true);
    s.extend(fpdus(true, false, &[terminate_rfc(&failed)]));
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    let term = fpdus_of(&events)[1].terminate.unwrap();
    assert_eq!(term.layout, rdmap::wire::TermLayout::Rfc5040);
    assert_eq!(
        (term.control.layer, term.control.etype, term.control.code),
        (0, 1, 0)
    );
    assert!(term.control.m && term.control.d && term.control.r);
    assert_eq!(term.segment_len, Some(46));
    let rr = term.read_request.unwrap();
    assert_eq!(
        (rr.sink_stag.0, rr.size, rr.source_stag.0),
        (0x1100, 64, 0xdead00)
    );
    let line = text::terminate(&term);
    assert_eq!(
        line,
        "layer 0 (RDMAP) etype 1 (remote protection) code 0x00 (invalid STag), RFC 5040 layout, \
         hdrct MDR, segment len 46, terminated read_req untagged L qn 1 msn 1 mo 0, \
         read request sink 0x00001100:0x1000 len 64 source 0x00dead00:0x2000"
    );
    let json = json::event(&Event::Fpdu(fpdus_of(&events)[1].clone()), conv.frames[0].0);
    assert!(json.contains(r#""terminate":{"layer":0,"layer_name":"RDMAP","etype":1,"etype_name":"remote protection","code":0,"code_name":"invalid STag","layout":"rfc5040","m":true,"d":true,"r":true,"segment_len":46,"ddp_header":{"ddp":"untagged""#), "{json}");
}

#[test]
fn multi_segment_sends_and_send_variants() {
    let c_ulpdus = vec![
        send_segment(Opcode::Send, 0, 1, 0, false, &[1; 100]),
        send_segment(Opcode::Send, 0, 1, 100, true, &[1; 50]),
        send_segment(Opcode::SendInvalidate, 0x4400, 2, 0, true, b"inv"),
        send_segment(Opcode::SendSolicited, 0, 3, 0, true, b"se"),
        send_segment(
            Opcode::SendSolicitedInvalidate,
            0x5500,
            4,
            0,
            true,
            b"seinv",
        ),
    ];
    let mut c = request(false);
    c.extend(fpdus(false, false, &c_ulpdus));
    let mut s = reply(false);
    s.extend(fpdus(false, false, &[send(1, b"ok")]));
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    let d = summary.connections[0].direction(C2S);
    assert_eq!(d.opcode_count(Opcode::Send), 2);
    assert_eq!(d.opcode_count(Opcode::SendInvalidate), 1);
    assert_eq!(d.opcode_count(Opcode::SendSolicited), 1);
    assert_eq!(d.opcode_count(Opcode::SendSolicitedInvalidate), 1);
    assert_eq!(d.payload_bytes, 100 + 50 + 3 + 2 + 5);
    let f = fpdus_of(&events);
    let line = text::event(&Event::Fpdu(f[1].clone()), conv.frames[0].0);
    assert!(
        line.ends_with("send       untagged L qn 0 msn 1 mo 100 ulpdu 68 payload 50 crc off"),
        "{line}"
    );
    let line = text::event(&Event::Fpdu(f[2].clone()), conv.frames[0].0);
    assert!(
        line.contains("send_inv   untagged L qn 0 msn 2 mo 0 inval 0x00004400"),
        "{line}"
    );
    let first = text::event(&Event::Fpdu(f[0].clone()), conv.frames[0].0);
    assert!(
        first.contains("send       untagged qn 0 msn 1 mo 0 "),
        "{first}"
    );
}

#[test]
fn pcapng_input_and_non_tcp_frames() {
    use capture::pcap::Endian;
    use capture::pcap::PcapNgWriter as NgWriter;
    let (c, s, _, _) = rping_streams(true);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s);
    let mut w = NgWriter::new(Endian::Big);
    w.interface(capture::pcap::LinkType::ETHERNET, Some(9));
    // An ARP frame, a UDP datagram and an IPv4 fragment among the TCP ones.
    let mut arp = vec![0xff; 12];
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);
    w.enhanced(0, 1, &arp);
    let udp = capture::net::build::ethernet(&capture::net::build::ip(
        "10.0.0.3".parse().unwrap(),
        "10.0.0.2".parse().unwrap(),
        17,
        &[0; 12],
    ));
    w.enhanced(0, 2, &udp);
    let mut frag = udp.clone();
    frag[14 + 6] = 0x20;
    w.enhanced(0, 3, &frag);
    for (i, (_, f)) in conv.frames.iter().enumerate() {
        w.enhanced(0, 10 + i as u64, f);
    }
    let (events, summary) = run(w.bytes());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert_eq!(summary.format, Some(capture::pcap::Format::PcapNg));
    assert_eq!(summary.packets, 3 + conv.frames.len() as u64);
    assert_eq!(summary.skipped.get("not IP"), Some(&1));
    assert_eq!(summary.skipped.get("not TCP"), Some(&1));
    assert_eq!(summary.skipped.get("IP fragment (unsupported)"), Some(&1));
    assert_eq!(fpdus_of(&events).len(), 7);
    // Frame numbers count every record, skipped ones too.
    assert_eq!(fpdus_of(&events)[0].at.frame, 4 + 4);
}

#[test]
fn linux_cooked_captures() {
    let (c, s, _, _) = rping_streams(false);
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s);
    let mut w =
        capture::pcap::PcapWriter::new(Vec::new(), capture::pcap::LinkType::LINUX_SLL).unwrap();
    for (t, f) in &conv.frames {
        let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00];
        sll.extend_from_slice(&f[14..]);
        w.packet(*t, &sll).unwrap();
    }
    let (events, summary) = run(&w.into_inner());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert_eq!(fpdus_of(&events).len(), 7);
}

/// One RFC 7306 message as the rdmap crate emits it.
fn rfc7306_ulpdu(qn: u32, opcode: Opcode, body: rdmap::wire::Body<'_>) -> Vec<u8> {
    let m = rdmap::wire::MessageRepr {
        ddp: ddp::wire::SegmentRepr::Untagged(ddp::wire::UntaggedRepr::new(
            true,
            rdmap::wire::Control::new(opcode).0,
            0,
            qn,
            1,
            0,
        )),
        body,
    };
    let mut out = vec![0; m.buffer_len()];
    m.emit(&mut out).unwrap();
    out
}

#[test]
fn rfc7306_messages_are_named_with_their_fields() {
    use rdmap::wire::{AtomicOp, AtomicRequestRepr, AtomicResponseRepr, Body, ImmediateDataRepr};
    let atomic = AtomicRequestRepr {
        op: AtomicOp::CmpSwap,
        reserved: 0,
        request_id: 5,
        stag: ddp::memory::STag(0x2200),
        to: 0x7000,
        add_swap_data: 9,
        add_swap_mask: u64::MAX,
        compare_data: 3,
        compare_mask: u64::MAX,
    };
    let c_ulpdus = vec![
        rfc7306_ulpdu(
            0,
            Opcode::ImmediateDataSolicited,
            Body::Immediate(ImmediateDataRepr::from_imm(0xabcd_0123)),
        ),
        rfc7306_ulpdu(1, Opcode::AtomicRequest, Body::AtomicRequest(atomic)),
    ];
    let s_ulpdus = vec![rfc7306_ulpdu(
        3,
        Opcode::AtomicResponse,
        Body::AtomicResponse(AtomicResponseRepr {
            request_id: 5,
            original: 3,
        }),
    )];
    let mut c = request(true);
    c.extend(fpdus(true, false, &c_ulpdus));
    let mut s = reply(true);
    s.extend(fpdus(true, false, &s_ulpdus));
    let mut conv = Conv::new("10.0.0.3:40000", "10.0.0.2:7174");
    conv.handshake().data(C2S, &c).data(S2C, &s);
    let (events, summary) = run(&conv.pcap());
    assert!(summary.is_clean(), "{:?}", summary.problems());
    assert_eq!(
        opcodes(&events, C2S),
        [Opcode::ImmediateDataSolicited, Opcode::AtomicRequest]
    );
    let f = fpdus_of(&events);
    let base = conv.frames[0].0;
    let lines: Vec<_> = f
        .iter()
        .map(|f| text::event(&Event::Fpdu((*f).clone()), base))
        .collect();
    assert!(
        lines[0].contains("imm_data_se untagged L qn 0 msn 1 mo 0")
            && lines[0].ends_with("imm 0xabcd0123 (64-bit 0xabcd012300000000)"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with(
            "CmpSwap id 5 target 0x00002200:0x7000 add/swap 0x9 mask 0xffffffffffffffff \
             compare 0x3 mask 0xffffffffffffffff"
        ),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("atomic_resp untagged L qn 3") && lines[2].ends_with("id 5 original 0x3"),
        "{}",
        lines[2]
    );
    let json = json::event(&Event::Fpdu(f[1].clone()), base);
    assert!(
        json.contains(
            r#""atomic_request":{"op":"CmpSwap","aopcode":2,"request_id":5,"stag":8704,"to":28672"#
        ),
        "{json}"
    );
    let json = json::event(&Event::Fpdu(f[0].clone()), base);
    assert!(json.contains(r#""imm_data":2882339107"#), "{json}");
}
