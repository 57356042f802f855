//! The seed pipeline on traffic made here, so it is tested on a clone
//! without the reference captures too, and on what those captures lack:
//! TCP segments out of order, retransmitted and missing; MPA markers; a
//! broken CRC; messages the retargeting must cut and renumber.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Instant;

use capture::pcap::{LinkType, PcapWriter, Timestamp};
use capture::reassembly::Direction::{ClientToServer as C2S, ServerToClient as S2C};
use ddp::wire::{SegmentRepr, TaggedRepr, UntaggedRepr};
use ddp::STag;
use iwarp_tests::fuzz_seeds::capture::{read_conversations, TcpConversation};
use iwarp_tests::fuzz_seeds::conversation::MpaConversation;
use iwarp_tests::fuzz_seeds::retarget::{frame_all, retarget};
use iwarp_tests::fuzz_seeds::seeds::{conversation_seeds, startup_choices};
use iwarp_tests::fuzz_seeds::Target;
use mpa::{CrcPolicy, Framer, InitiatorConfig, ReplyParams, ResponderConfig, Rtr, RtrSet, Startup};
use rdmap::wire::{Body, MessageRepr, ReadRequestRepr};
use rdmap::Opcode;

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH_ACK: u8 = 0x18;

/// An Ethernet + IPv4 + TCP frame (checksums are not checked on read).
fn frame(client: bool, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let ((src, sport), (dst, dport)) = if client {
        ((a, 40000u16), (b, 7174u16))
    } else {
        ((b, 7174), (a, 40000))
    };
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + 20 + payload.len()) as u16;
    f.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0]);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

fn write_pcap(name: &str, frames: &[Vec<u8>]) -> PathBuf {
    let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET).expect("header");
    for (i, f) in frames.iter().enumerate() {
        w.packet(Timestamp::new(1, i as u32 * 1000), f)
            .expect("packet");
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(name);
    std::fs::write(&path, w.into_inner()).expect("writes");
    path
}

/// A negotiated start-up: the Request and Reply bytes.
fn startup(crc: CrcPolicy, markers: bool, p2p: Option<RtrSet>) -> (Vec<u8>, Vec<u8>) {
    let now = Instant::now();
    let icfg = InitiatorConfig {
        crc,
        markers_rx: markers,
        markers_tx: markers,
        peer_to_peer: p2p,
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        crc,
        markers_rx: markers,
        markers_tx: markers,
        rtr: p2p.unwrap_or(RtrSet::EMPTY),
        ..ResponderConfig::default()
    };
    let mut init = Startup::initiator(icfg, now).expect("config");
    let mut resp = Startup::responder(rcfg, now).expect("config");
    let mut request = Vec::new();
    init.poll_transmit(&mut request);
    resp.handle_bytes(&request, now).expect("request");
    resp.accept(
        ReplyParams {
            ird: 4,
            ord: 4,
            private_data: b"hi".to_vec(),
        },
        now,
    )
    .expect("accept");
    let mut reply = Vec::new();
    resp.poll_transmit(&mut reply);
    (request, reply)
}

fn send(msn: u32, mo: u32, last: bool, payload: &[u8]) -> Vec<u8> {
    message(
        UntaggedRepr::new(last, 0x43, 0, 0, msn, mo).into(),
        Body::Data(payload),
    )
}

fn write(stag: u32, to: u64, payload: &[u8]) -> Vec<u8> {
    message(
        TaggedRepr::new(true, 0x40, STag(stag), to).into(),
        Body::Data(payload),
    )
}

fn read_request(msn: u32, source: u32, to: u64, size: u32) -> Vec<u8> {
    let r = ReadRequestRepr {
        sink_stag: STag(0x77),
        sink_to: 0x10,
        size,
        source_stag: STag(source),
        source_to: to,
    };
    message(
        UntaggedRepr::new(true, 0x41, 0, 1, msn, 0).into(),
        Body::ReadRequest(r),
    )
}

fn message(ddp: SegmentRepr, body: Body<'_>) -> Vec<u8> {
    let m = MessageRepr { ddp, body };
    let mut out = vec![0; m.buffer_len()];
    m.emit(&mut out).expect("sized");
    out
}

fn framed(ulpdus: &[Vec<u8>], crc: bool, markers: bool) -> Vec<u8> {
    let mut f = Framer::new(crc, markers);
    let mut out = Vec::new();
    for u in ulpdus {
        f.frame_to_vec(u, &[], &mut out).expect("frames");
    }
    out
}

fn client_ulpdus() -> Vec<Vec<u8>> {
    vec![
        send(1, 0, true, b"the first message"),
        write(0x5500, 0x7000_0000, &[0x11; 700]),
        send(2, 0, true, &[0x22; 300]),
        read_request(1, 0x9900, 0x4000_0000, 1000),
    ]
}

fn server_ulpdus() -> Vec<Vec<u8>> {
    vec![
        send(1, 0, false, b"first half, "),
        send(1, 12, true, b"second half"),
        write(0x6600, 0x10, b"a write"),
    ]
}

#[test]
fn a_capture_with_reordering_and_retransmission_reads_whole() {
    let (request, reply) = startup(CrcPolicy::Required, false, None);
    let mut c2s = request.clone();
    c2s.extend(framed(&client_ulpdus(), true, false));
    let mut s2c = reply.clone();
    s2c.extend(framed(&server_ulpdus(), true, false));
    let (ci, si) = (1000u32, 9000u32);
    let cut = c2s.len() / 3;
    let frames = vec![
        frame(true, ci, SYN, &[]),
        frame(false, si, SYN | ACK, &[]),
        frame(true, ci + 1, ACK, &[]),
        // The client's second third arrives before its first...
        frame(true, ci + 1 + cut as u32, PSH_ACK, &c2s[cut..2 * cut]),
        frame(true, ci + 1, PSH_ACK, &c2s[..cut]),
        // ...and its first is sent again.
        frame(true, ci + 1, PSH_ACK, &c2s[..cut]),
        frame(false, si + 1, PSH_ACK, &s2c),
        frame(true, ci + 1 + 2 * cut as u32, PSH_ACK, &c2s[2 * cut..]),
    ];
    let path = write_pcap("fuzz-seed-sources-reordered.pcap", &frames);
    let tcp = read_conversations(&path).expect("reads");
    assert_eq!(tcp.len(), 1);
    assert_eq!(tcp[0].stream(C2S), &c2s[..]);
    assert_eq!(tcp[0].stream(S2C), &s2c[..]);
    assert_eq!(tcp[0].truncated, [false, false]);

    let conv = MpaConversation::from_tcp("made-1".into(), &tcp[0]).expect("iWARP");
    assert!(conv.settled.crc);
    assert_eq!(conv.side(C2S).frame, request);
    assert_eq!(conv.side(S2C).frame, reply);
    assert_eq!(conv.side(C2S).ulpdus, client_ulpdus());
    assert_eq!(conv.side(S2C).ulpdus, server_ulpdus());
    assert_eq!(conv.settled.reply_pd_len, 2);
}

#[test]
fn a_hole_in_the_capture_cuts_the_stream_there() {
    let (request, reply) = startup(CrcPolicy::Off, false, None);
    let mut s2c = reply.clone();
    s2c.extend(framed(&server_ulpdus(), false, false));
    let frames = vec![
        frame(true, 99, SYN, &[]),
        frame(false, 499, SYN | ACK, &[]),
        frame(true, 100, PSH_ACK, &request),
        frame(false, 500, PSH_ACK, &s2c[..reply.len() + 10]),
        // 10 bytes never captured.
        frame(
            false,
            500 + reply.len() as u32 + 20,
            PSH_ACK,
            &s2c[reply.len() + 20..],
        ),
    ];
    let path = write_pcap("fuzz-seed-sources-hole.pcap", &frames);
    let tcp = read_conversations(&path).expect("reads");
    assert_eq!(tcp[0].stream(S2C), &s2c[..reply.len() + 10]);
    assert_eq!(tcp[0].truncated, [false, true]);
    // The partial FPDU before the hole is not one.
    let conv = MpaConversation::from_tcp("hole-1".into(), &tcp[0]).expect("iWARP");
    assert!(conv.side(S2C).ulpdus.is_empty());
    assert!(conv.side(S2C).fpdu_stream.is_empty());
}

#[test]
fn markers_both_ways_deframe_and_reframe() {
    let (request, reply) = startup(CrcPolicy::Preferred, true, None);
    let big: Vec<Vec<u8>> = (0..6)
        .map(|i| send(i + 1, 0, true, &[i as u8; 777]))
        .collect();
    let mut c2s = request.clone();
    c2s.extend(framed(&big, true, true));
    let mut s2c = reply.clone();
    s2c.extend(framed(&server_ulpdus(), true, true));
    let tcp = TcpConversation {
        number: 1,
        streams: [c2s, s2c],
        truncated: [false, false],
    };
    let conv = MpaConversation::from_tcp("markers-1".into(), &tcp).expect("iWARP");
    assert_eq!(conv.settled.markers, [true, true]);
    assert_eq!(conv.side(C2S).ulpdus, big);
    assert_eq!(conv.side(S2C).ulpdus, server_ulpdus());
    // FPDU boundaries account for the markers inside them.
    let side = conv.side(C2S);
    assert_eq!(
        side.fpdus.last().map(|r| r.end),
        Some(side.fpdu_stream.len())
    );
    let unmarked = Framer::new(true, false).fpdu_len(big[0].len());
    assert!(side.fpdus.iter().any(|r| r.len() > unmarked));
    // Seeds from it keep the markers where the targets need them.
    let seeds = conversation_seeds(&conv);
    let deframer = seeds
        .iter()
        .find(|s| s.target == Target::MpaDeframer)
        .expect("a deframer seed");
    assert_eq!(deframer.data[0], 0b11, "CRC and markers");
    for s in &seeds {
        s.target.run(&s.data);
    }
}

#[test]
fn a_bad_crc_ends_the_side_at_the_last_good_fpdu() {
    let (request, reply) = startup(CrcPolicy::Required, false, None);
    let good = framed(&client_ulpdus(), true, false);
    let first_len = Framer::new(true, false).fpdu_len(client_ulpdus()[0].len());
    let mut bad = good.clone();
    bad[first_len + 20] ^= 0x04;
    let mut c2s = request;
    c2s.extend(bad);
    let tcp = TcpConversation {
        number: 1,
        streams: [c2s, reply],
        truncated: [false, false],
    };
    let conv = MpaConversation::from_tcp("crc-1".into(), &tcp).expect("iWARP");
    let side = conv.side(C2S);
    assert!(side.error.is_some());
    assert_eq!(side.ulpdus, client_ulpdus()[..1]);
    assert_eq!(side.fpdu_stream, good[..first_len]);
}

#[test]
fn not_iwarp_is_not_a_conversation() {
    let tcp = TcpConversation {
        number: 1,
        streams: [
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            b"HTTP/1.1 200 OK".to_vec(),
        ],
        truncated: [false, false],
    };
    assert!(MpaConversation::from_tcp("http-1".into(), &tcp).is_none());
    // A Reply that rejects carries no FPDUs to seed from.
    let now = Instant::now();
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    let mut request = Vec::new();
    init.poll_transmit(&mut request);
    resp.handle_bytes(&request, now).expect("request");
    resp.reject(b"no", now).expect("reject");
    let mut reply = Vec::new();
    resp.poll_transmit(&mut reply);
    let tcp = TcpConversation {
        number: 1,
        streams: [request, reply],
        truncated: [false, false],
    };
    assert!(MpaConversation::from_tcp("rejected-1".into(), &tcp).is_none());
}

#[test]
fn startup_choices_follow_a_peer_to_peer_handshake() {
    let (request, reply) = startup(CrcPolicy::Required, false, Some(RtrSet::only(Rtr::Read)));
    let tcp = TcpConversation {
        number: 1,
        streams: [request, reply],
        truncated: [false, false],
    };
    let conv = MpaConversation::from_tcp("p2p-1".into(), &tcp).expect("iWARP");
    assert_eq!(conv.settled.rtr, Some(Rtr::Read));
    let (i, r) = startup_choices(&conv);
    assert_eq!(i.peer_to_peer, Some(RtrSet::only(Rtr::Read)));
    assert_eq!(i.crc, CrcPolicy::Required);
    assert_eq!(r.rtr, RtrSet::only(Rtr::Read));
    let offered = conv.settled.request_ird_ord.expect("rev 2 sends IRD/ORD");
    assert_eq!((i.ird, i.ord), (offered.ird, offered.ord));
}

#[test]
fn retarget_cuts_aims_and_renumbers() {
    let ulpdus = vec![
        write(1, 0, &[]),
        write(0x5500, 0x7000_0000, &[0x11; 700]),
        write(0x5500, 0x7000_0010, &[0x12; 8]),
        send(7, 0, false, &[0x22; 40]),
        send(7, 40, true, &[0x23; 5]),
        send(8, 0, true, b"short"),
        read_request(9, 0x9900, 0x4000_0000, 1000),
        message(
            TaggedRepr::new(true, 0x42, STag(0x4400), 0x99).into(),
            Body::Data(&[0x33; 100]),
        ),
        b"not a ULPDU".to_vec(),
    ];
    let aimed = retarget(&ulpdus);
    assert_eq!(
        aimed.len(),
        ulpdus.len() - 1,
        "the Send's second segment goes"
    );
    assert_eq!(aimed[0], ulpdus[0], "the zero-length RTR is kept");
    let m = MessageRepr::parse(&aimed[1]).expect("parses");
    assert_eq!(
        m.ddp,
        TaggedRepr::new(true, 0x40, STag(0x100), 0x1000).into()
    );
    assert_eq!(m.body, Body::Data(&[0x11; 256]));
    let m = MessageRepr::parse(&aimed[2]).expect("parses");
    assert_eq!(
        m.ddp,
        TaggedRepr::new(true, 0x40, STag(0x100), 0x1010).into()
    );
    let m = MessageRepr::parse(&aimed[3]).expect("parses");
    assert_eq!(m.ddp, UntaggedRepr::new(true, 0x43, 0, 0, 1, 0).into());
    assert_eq!(m.body, Body::Data(&[0x22; 32]));
    let m = MessageRepr::parse(&aimed[4]).expect("parses");
    assert_eq!(m.ddp, UntaggedRepr::new(true, 0x43, 0, 0, 2, 0).into());
    let Body::ReadRequest(r) = MessageRepr::parse(&aimed[5]).expect("parses").body else {
        panic!("a Read Request");
    };
    assert_eq!(
        (r.source_stag, r.source_to, r.size),
        (STag(0x300), 0x3000, 256)
    );
    assert_eq!(
        (r.sink_stag, r.sink_to),
        (STag(0x77), 0x10),
        "the sink is the peer's"
    );
    assert_eq!(
        MessageRepr::parse(&aimed[5]).expect("parses").opcode(),
        Opcode::ReadRequest
    );
    let m = MessageRepr::parse(&aimed[6]).expect("parses");
    assert_eq!(
        m.ddp,
        TaggedRepr::new(true, 0x42, STag(0x200), 0x2080).into()
    );
    assert_eq!(m.body, Body::Data(&[0x33; 64]));
    assert_eq!(aimed[7], b"not a ULPDU");

    // Framed, they deframe back unchanged.
    let stream = frame_all(&aimed, true);
    let mut d = mpa::Deframer::new(true, false, 65535);
    let mut back = Vec::new();
    d.feed(&stream, |u| {
        back.push(u.to_vec());
        core::ops::ControlFlow::Continue(())
    })
    .expect("deframes");
    assert_eq!(back, aimed);
}
