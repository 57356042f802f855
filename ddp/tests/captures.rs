//! DDP against real siw traffic: every header of every reference capture,
//! whole connections replayed through placement, siw's segmentation
//! reproduced, and siw's own TERMINATE for an overrun matched.
//!
//! The captures sit beside the repository (`../shared/captures`); without
//! them each test prints that it skips and passes.

mod common;

use std::collections::BTreeMap;

use common::{capture, client_server, MpaStream};
use ddp::memory::{Access, Memory, PdId, RegionTable, STag};
use ddp::segment::{Segmenter, TaggedSegments, UntaggedSegments};
use ddp::tagged::{place_tagged, TaggedSequence};
use ddp::untagged::{Placed, Sge, UntaggedQueues, QN_READ_REQUEST, QN_SEND, QN_TERMINATE};
use ddp::{parse_segment, SegmentRepr, TaggedRepr, TermCode, UntaggedRepr};

const ALL: [&str; 9] = [
    "rping-default.pcap",
    "rping-crc.pcap",
    "rping-cxgb.pcap",
    "rping-crc-8k.pcap",
    "rping-mismatch-crc.pcap",
    "rping-mpav1.pcap",
    "perftest-write-crc.pcap",
    "perftest-read.pcap",
    "perftest-send-cxgb.pcap",
];

const PD: PdId = PdId(0);

fn parse(ulpdu: &[u8]) -> (SegmentRepr, &[u8]) {
    parse_segment(ulpdu).unwrap_or_else(|e| panic!("{e}: {ulpdu:02x?}"))
}

#[test]
fn every_header_of_every_capture_round_trips() {
    let mut total = 0;
    for name in ALL {
        let Some(streams) = capture(name) else { return };
        let mut n = 0;
        for st in streams.values() {
            for u in &st.ulpdus {
                let (repr, payload) = parse(u);
                let mut out = vec![0xa5u8; repr.buffer_len()];
                repr.emit(&mut out).unwrap();
                assert_eq!(&out[..], &u[..repr.buffer_len()], "{name}");
                assert_eq!(payload, &u[repr.buffer_len()..]);
                n += 1;
            }
        }
        assert!(n > 0, "{name} has no FPDUs");
        total += n;
        eprintln!("{name}: {n} DDP segments");
    }
    assert!(total > 300, "only {total} segments");
}

#[test]
fn rping_default_sequence_numbers() {
    let Some(streams) = capture("rping-default.pcap") else {
        return;
    };
    let (client, server) = client_server(&streams);
    assert_eq!(&client.key, b"MPA ID Req Frame");
    assert_eq!(&server.key, b"MPA ID Rep Frame");

    // The client's first message: a Send on QN 0, MSN 1, rping's 16 bytes.
    let (repr, payload) = parse(&client.ulpdus[0]);
    assert_eq!(
        repr,
        SegmentRepr::Untagged(UntaggedRepr::new(true, 0x43, 0, QN_SEND, 1, 0))
    );
    assert_eq!(payload.len(), 16);

    // Per direction and queue, MSNs count 1, 2, 3, ...
    for st in [client, server] {
        let mut msns: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for u in &st.ulpdus {
            if let (SegmentRepr::Untagged(r), _) = parse(u) {
                assert!(r.last, "rping messages are single segments");
                msns.entry(r.qn).or_default().push(r.msn);
            }
        }
        for (qn, v) in msns {
            let want: Vec<u32> = (1..=v.len() as u32).collect();
            assert_eq!(v, want, "queue {qn}");
        }
    }
    // -C 3: three Read Requests from the server on QN 1.
    let reads = server
        .ulpdus
        .iter()
        .filter(|u| matches!(parse(u).0, SegmentRepr::Untagged(r) if r.qn == QN_READ_REQUEST))
        .count();
    assert_eq!(reads, 3);
}

/// A message as the receiver saw it complete.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Message {
    Tagged {
        stag: STag,
        to: u64,
        len: u64,
        opcode: u8,
    },
    Untagged {
        qn: u32,
        msn: u32,
        bytes: Vec<u8>,
        opcode: u8,
    },
}

/// One direction replayed through DDP receive processing: tagged segments
/// placed into regions registered over the ranges the traffic uses, Sends
/// into buffers posted as needed, Read Requests and Terminates inline.
struct Replay {
    mem: RegionTable,
    queues: UntaggedQueues,
    tagged: TaggedSequence,
    buffers: u32,
    inline: Vec<u8>,
    tagged_start: Option<(STag, u64, u8)>,
    messages: Vec<Message>,
}

const BUF: u32 = 1 << 16;

impl Replay {
    fn new(stream: &MpaStream) -> Self {
        // Register each sink STag over the span its segments touch.
        let mut spans: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for u in &stream.ulpdus {
            if let (SegmentRepr::Tagged(r), p) = parse(u) {
                if p.is_empty() {
                    continue;
                }
                let end = r.to + p.len() as u64;
                let e = spans.entry(r.stag.0).or_insert((r.to, end));
                e.0 = e.0.min(r.to);
                e.1 = e.1.max(end);
            }
        }
        let mut mem = RegionTable::new();
        for (stag, (lo, hi)) in spans {
            let bytes = vec![0u8; (hi - lo) as usize];
            mem.register(STag(stag), PD, lo, Access::ALL, bytes, false);
        }
        Replay {
            mem,
            queues: UntaggedQueues::rdmap(4, 2),
            tagged: TaggedSequence::new(),
            buffers: 0,
            inline: Vec::new(),
            tagged_start: None,
            messages: Vec::new(),
        }
    }

    fn segment(&mut self, ulpdu: &[u8]) {
        match parse(ulpdu) {
            (SegmentRepr::Tagged(r), payload) => {
                let done = self.tagged.accept(&r, payload.len()).unwrap();
                place_tagged(&mut self.mem, PD, &r, payload, Access::LOCAL_WRITE).unwrap();
                let start = *self.tagged_start.get_or_insert((r.stag, r.to, r.rsvd_ulp));
                if done {
                    self.tagged_start = None;
                    self.messages.push(Message::Tagged {
                        stag: start.0,
                        to: start.1,
                        len: r.to + payload.len() as u64 - start.1,
                        opcode: r.rsvd_ulp & 0x0f,
                    });
                }
            }
            (SegmentRepr::Untagged(r), payload) => {
                let q = self.queues.queue(r.qn).expect("RDMAP queue");
                if r.qn == QN_SEND && !q.in_progress() && q.posted() == 0 {
                    self.post();
                }
                match self.queues.place(&mut self.mem, PD, &r, payload) {
                    Ok(Placed::Complete(c)) => {
                        let mut bytes = vec![0; c.len as usize];
                        self.mem
                            .read(buffer_stag(c.id as u32), 0, &mut bytes)
                            .unwrap();
                        self.messages.push(Message::Untagged {
                            qn: c.qn,
                            msn: c.msn,
                            bytes,
                            opcode: c.rsvd_ulp & 0x0f,
                        });
                    }
                    Ok(Placed::Partial { .. }) => {}
                    Ok(Placed::Inline { qn, msn, last, .. }) => {
                        self.inline.extend_from_slice(payload);
                        if last {
                            self.messages.push(Message::Untagged {
                                qn,
                                msn,
                                bytes: std::mem::take(&mut self.inline),
                                opcode: r.rsvd_ulp & 0x0f,
                            });
                        }
                    }
                    Err(e) => panic!("{e} at {r:?}"),
                }
            }
        }
    }

    fn post(&mut self) {
        let id = self.buffers;
        self.buffers += 1;
        let stag = buffer_stag(id);
        self.mem.register(
            stag,
            PD,
            0,
            Access::LOCAL_WRITE,
            vec![0; BUF as usize],
            false,
        );
        let sge = Sge {
            stag,
            to: 0,
            len: BUF,
        };
        self.queues.post(QN_SEND, u64::from(id), &[sge]).unwrap();
    }

    fn run(stream: &MpaStream) -> Self {
        let mut r = Replay::new(stream);
        for u in &stream.ulpdus {
            r.segment(u);
        }
        assert!(!r.tagged.in_progress(), "capture ends mid-message");
        r
    }

    fn tagged_bytes(&self, stag: STag, to: u64, len: u64) -> Vec<u8> {
        let base = self.mem.region(stag).unwrap().base;
        let mut out = vec![0; len as usize];
        self.mem.read(stag, to - base, &mut out).unwrap();
        out
    }
}

fn buffer_stag(id: u32) -> STag {
    STag::new(0xf0_0000 + id, 0x5a)
}

#[test]
fn every_capture_replays_through_placement_without_error() {
    for name in ALL {
        let Some(streams) = capture(name) else { return };
        for st in streams.values() {
            let r = Replay::run(st);
            // Queue MSNs of completed messages count up from 1.
            for qn in [QN_SEND, QN_READ_REQUEST, QN_TERMINATE] {
                let msns: Vec<u32> = r
                    .messages
                    .iter()
                    .filter_map(|m| match m {
                        Message::Untagged { qn: q, msn, .. } if *q == qn => Some(*msn),
                        _ => None,
                    })
                    .collect();
                let want: Vec<u32> = (1..=msns.len() as u32).collect();
                assert_eq!(msns, want, "{name} queue {qn}");
            }
            // Read Requests carry 28 bytes; Terminates appear at most once.
            for m in &r.messages {
                if let Message::Untagged {
                    qn: 1,
                    bytes,
                    opcode,
                    ..
                } = m
                {
                    assert_eq!((bytes.len(), *opcode), (28, 1), "{name}");
                }
            }
        }
    }
}

#[test]
fn rping_8k_write_carries_what_the_read_fetched() {
    // rping's server READs the client's 8000-byte source buffer into its
    // own, then WRITEs that buffer into the client's sink: both tagged
    // messages must hold the same bytes, placed from six segments each.
    let Some(streams) = capture("rping-crc-8k.pcap") else {
        return;
    };
    let (client, server) = client_server(&streams);
    let at_server = Replay::run(client);
    let at_client = Replay::run(server);
    let msgs = |r: &Replay, opcode: u8| -> Vec<Vec<u8>> {
        r.messages
            .iter()
            .filter_map(|m| match *m {
                Message::Tagged {
                    stag,
                    to,
                    len,
                    opcode: o,
                } if o == opcode => Some(r.tagged_bytes(stag, to, len)),
                _ => None,
            })
            .collect()
    };
    let read_responses = msgs(&at_server, 2);
    let writes = msgs(&at_client, 0);
    assert_eq!(read_responses.len(), 2, "rping -C 2");
    assert_eq!(writes.len(), 2);
    for (rr, w) in read_responses.iter().zip(&writes) {
        assert_eq!(rr.len(), 8000);
        assert_eq!(rr, w);
        assert!(rr.starts_with(b"rdma-ping-"));
    }
}

/// Groups the segments of one direction into messages (one model and
/// queue at a time, as siw sends them).
fn messages(stream: &MpaStream) -> Vec<Vec<(SegmentRepr, usize)>> {
    let mut out = Vec::new();
    let mut open: BTreeMap<(bool, u32), Vec<(SegmentRepr, usize)>> = BTreeMap::new();
    for u in &stream.ulpdus {
        let (repr, payload) = parse(u);
        let key = match repr {
            SegmentRepr::Tagged(_) => (true, 0),
            SegmentRepr::Untagged(r) => (false, r.qn),
        };
        let m = open.entry(key).or_default();
        m.push((repr, payload.len()));
        if repr.last() {
            out.push(open.remove(&key).unwrap());
        }
    }
    out
}

#[test]
fn segmenter_reproduces_siw_segmentation() {
    // Each multi-segment message siw sent, re-segmented from its length
    // and first ULPDU size, gives the same headers and payload sizes.
    let mut checked = 0;
    for name in [
        "rping-crc-8k.pcap",
        "perftest-write-crc.pcap",
        "perftest-read.pcap",
    ] {
        let Some(streams) = capture(name) else { return };
        for st in streams.values() {
            for msg in messages(st) {
                if msg.len() < 2 {
                    continue;
                }
                let len: usize = msg.iter().map(|&(_, n)| n).sum();
                let mulpdu = msg[0].0.buffer_len() + msg[0].1;
                let ours: Vec<(SegmentRepr, usize)> = match msg[0].0 {
                    SegmentRepr::Tagged(t) => TaggedSegments::new(
                        Segmenter::tagged(len as u32, mulpdu).unwrap(),
                        t.rsvd_ulp,
                        t.stag,
                        t.to,
                    )
                    .map(|(r, range)| (SegmentRepr::Tagged(r), range.len()))
                    .collect(),
                    SegmentRepr::Untagged(u) => UntaggedSegments::new(
                        Segmenter::untagged(len as u32, mulpdu).unwrap(),
                        u.rsvd_ulp,
                        u.rsvd_ulp2,
                        u.qn,
                        u.msn,
                    )
                    .map(|(r, range)| (SegmentRepr::Untagged(r), range.len()))
                    .collect(),
                };
                assert_eq!(ours, msg, "{name}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} multi-segment messages");
}

#[test]
fn overrunning_read_response_gets_the_terminate_siw_sent() {
    // rping-mismatch-crc.pcap: the client (-S 100) answers the server's
    // 100-byte Read Request (frame 9) with a 100-byte Read Response (frame
    // 10) into a sink the server registered for 64 bytes. siw answered
    // with a Terminate (frame 11): DDP layer, tagged buffer error, base or
    // bounds violation. Our placement must refuse the segment the same way.
    let Some(streams) = capture("rping-mismatch-crc.pcap") else {
        return;
    };
    let (client, server) = client_server(&streams);
    let rresp = client
        .ulpdus
        .iter()
        .find(|u| matches!(parse(u).0, SegmentRepr::Tagged(_)))
        .expect("a Read Response");
    let (SegmentRepr::Tagged(repr), payload) = parse(rresp) else {
        unreachable!()
    };
    assert_eq!(payload.len(), 100);
    assert_eq!(repr.rsvd_ulp & 0x0f, 2, "Read Response");

    let mut mem = RegionTable::new();
    mem.register(
        repr.stag,
        PD,
        repr.to,
        Access::LOCAL_WRITE,
        vec![0; 64],
        true,
    );
    let before = mem.clone();
    let e = place_tagged(&mut mem, PD, &repr, payload, Access::LOCAL_WRITE).unwrap_err();
    assert_eq!(mem.bytes(repr.stag), before.bytes(repr.stag));

    let term = server
        .ulpdus
        .iter()
        .find(|u| matches!(parse(u).0, SegmentRepr::Untagged(r) if r.qn == QN_TERMINATE))
        .expect("siw's Terminate");
    let (SegmentRepr::Untagged(t), body) = parse(term) else {
        unreachable!()
    };
    assert_eq!((t.msn, t.mo, t.rsvd_ulp & 0x0f), (1, 0, 7));
    // siw's control word swaps the layer/etype nibbles; here both are 1.
    let (layer, etype, code) = (body[0] & 0x0f, body[0] >> 4, body[1]);
    let ours = e.terminate();
    assert_eq!(ours, TermCode::DDP_T_BASE_BOUNDS);
    assert_eq!(
        (ours.layer.bits(), ours.etype, ours.code),
        (layer, etype, code)
    );
    // And siw quotes the header we refused.
    assert_eq!(&body[body.len() - 14..], &rresp[..14]);
}

#[test]
fn peer_to_peer_rtr_to_stag_one_is_accepted_unregistered() {
    // rping-cxgb.pcap: the client's first FPDU is a zero-length RDMA Write
    // to STag 1, TO 0 that nobody registered.
    let Some(streams) = capture("rping-cxgb.pcap") else {
        return;
    };
    let (client, _) = client_server(&streams);
    let (repr, payload) = parse(&client.ulpdus[0]);
    assert_eq!(
        repr,
        SegmentRepr::Tagged(TaggedRepr::new(true, 0x40, STag(1), 0))
    );
    let mut mem = RegionTable::new();
    place_tagged(
        &mut mem,
        PD,
        &TaggedRepr::new(true, 0x40, STag(1), 0),
        payload,
        Access::REMOTE_WRITE,
    )
    .unwrap();
    // The same segment with one byte would be an invalid STag.
    let e = place_tagged(
        &mut mem,
        PD,
        &TaggedRepr::new(true, 0x40, STag(1), 0),
        b"x",
        Access::REMOTE_WRITE,
    )
    .unwrap_err();
    assert_eq!(e.terminate(), TermCode::DDP_T_INVALID_STAG);
}

#[test]
fn every_ulpdu_split_at_every_offset_parses_only_when_whole() {
    // Headers cut short anywhere are "truncated", never misread.
    let Some(streams) = capture("rping-crc.pcap") else {
        return;
    };
    for st in streams.values() {
        for u in &st.ulpdus {
            let (repr, _) = parse(u);
            for cut in 0..repr.buffer_len() {
                assert!(parse_segment(&u[..cut]).is_err());
            }
            for cut in repr.buffer_len()..=u.len() {
                let (r, p) = parse_segment(&u[..cut]).unwrap();
                assert_eq!(r, repr);
                assert_eq!(p.len(), cut - repr.buffer_len());
            }
        }
    }
}
