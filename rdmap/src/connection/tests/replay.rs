//! The reference captures of real siw traffic as test vectors: every FPDU
//! parses and re-emits exactly, and a `Connection` playing either rping
//! role against the other side's recorded stream produces, byte for byte
//! and CRC for CRC, the stream siw produced.

use core::ops::ControlFlow;

use ddp::memory::{Access, RegionTable, STag};
use mpa::Rtr;

use super::capture::{fpdus, mpa_frame_len, streams, ulpdu};
use crate::connection::{Connection, ConnectionConfig, Event, Negotiated, Role};
use crate::opcode::Opcode;
use crate::term::TermCode;
use crate::wire::{Body, Control, MessageRepr, TermLayout};
use crate::work_request::{RecvWr, SendOp, SendWr, Sge};
use crate::{WcOpcode, WcStatus};

const CAPTURES: [&str; 9] = [
    "rping-default.pcap",
    "rping-crc.pcap",
    "rping-cxgb.pcap",
    "rping-crc-8k.pcap",
    "rping-mismatch-crc.pcap",
    "rping-mpav1.pcap",
    "perftest-read.pcap",
    "perftest-write-crc.pcap",
    "perftest-send-cxgb.pcap",
];

/// Whether the connection of `stream` (and its reverse) runs with CRC: the
/// C bit of either MPA frame.
fn crc_of(a: &[u8], b: &[u8]) -> bool {
    (a[16] | b[16]) & 0x40 != 0
}

#[test]
fn every_fpdu_in_every_capture_parses_and_re_emits() {
    let mut total = 0;
    let mut terminates = 0;
    for name in CAPTURES {
        let Some(flows) = streams(name) else {
            return;
        };
        for (i, (flow, stream)) in flows.iter().enumerate() {
            if stream.len() < 20 || &stream[..4] != b"MPA " {
                continue;
            }
            let reverse = flows
                .iter()
                .find(|(f, _)| f.1 == flow.2 && f.2 == flow.1)
                .map(|(_, s)| s.as_slice())
                .unwrap_or(stream);
            let crc = crc_of(stream, reverse);
            let mut d = mpa::Deframer::new(crc, false, 65535);
            let body = &stream[mpa_frame_len(stream)..];
            let mut ulpdus = Vec::new();
            let used = d
                .feed(body, |u| {
                    ulpdus.push(u.to_vec());
                    ControlFlow::Continue(())
                })
                .unwrap_or_else(|e| panic!("{name} flow {i}: {e}"));
            assert_eq!(used, body.len());
            for u in &ulpdus {
                let m = MessageRepr::parse(u).unwrap_or_else(|e| panic!("{name}: {e}"));
                let mut out = vec![0xa5; m.buffer_len()];
                m.emit(&mut out).unwrap();
                assert_eq!(&out, u, "{name}: re-emit");
                if let Body::Terminate(t) = m.body {
                    assert_eq!(t.layout, TermLayout::Siw);
                    terminates += 1;
                }
            }
            total += ulpdus.len();
        }
    }
    assert!(total > 300, "only {total} FPDUs");
    assert_eq!(terminates, 1, "the one TERMINATE of rping-mismatch-crc");
}

/// rping's 16-byte buffer advertisement: BE64 address, BE32 rkey, BE32 size.
#[derive(Debug, Clone, Copy)]
struct Info {
    addr: u64,
    rkey: STag,
    size: u32,
}

fn info(b: &[u8]) -> Info {
    Info {
        addr: u64::from_be_bytes(b[..8].try_into().unwrap()),
        rkey: STag(u32::from_be_bytes(b[8..12].try_into().unwrap())),
        size: u32::from_be_bytes(b[12..16].try_into().unwrap()),
    }
}

fn messages(fpdus: &[&[u8]], op: Opcode) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut open = false;
    for f in fpdus {
        let u = ulpdu(f);
        if Control(u[1]).opcode() != op {
            continue;
        }
        let h = if u[0] & 0x80 != 0 { 14 } else { 18 };
        if !open {
            out.push(Vec::new());
        }
        out.last_mut().unwrap().extend_from_slice(&u[h..]);
        open = u[0] & 0x40 == 0;
    }
    out
}

fn negotiated(role: Role, crc: bool, rtr: Option<Rtr>) -> Negotiated {
    Negotiated {
        rev: 2,
        crc,
        markers_tx: false,
        markers_rx: false,
        ird: 1,
        ord: 1,
        rtr,
        peer_private_data: Vec::new(),
        role,
        peer_ird_ord: None,
    }
}

/// Sends what is due and handles events until nothing changes.
fn settle(
    conn: &mut Connection,
    mem: &mut RegionTable,
    out: &mut Vec<u8>,
    mut on_event: impl FnMut(Event, &mut Connection, &mut RegionTable),
) {
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..10_000 {
        let n = conn.poll_transmit(mem, &mut buf);
        out.extend_from_slice(&buf[..n]);
        let mut any = n > 0;
        while let Some(e) = conn.poll_event() {
            any = true;
            on_event(e, conn, mem);
        }
        if !any {
            return;
        }
    }
    panic!("no quiescence");
}

fn assert_same_stream(name: &str, ours: &[u8], theirs: &[u8]) {
    assert!(theirs.len() > 100, "{name}: a real stream to compare with");
    if ours != theirs {
        let at = ours.iter().zip(theirs).position(|(a, b)| a != b);
        panic!(
            "{name}: streams differ at byte {at:?} (ours {} bytes, siw {} bytes)",
            ours.len(),
            theirs.len()
        );
    }
}

const RECV: STag = STag(0x00ff_0000);
const SEND_BASE: u32 = 0x00fe_0000;

fn post_recv(conn: &mut Connection) {
    conn.post_recv(RecvWr {
        wr_id: 0,
        sgl: vec![Sge {
            stag: RECV,
            to: 0,
            len: 16,
        }],
    })
    .unwrap();
}

fn post_send_bytes(conn: &mut Connection, mem: &mut RegionTable, k: u32, payload: &[u8]) {
    let stag = STag(SEND_BASE + (k << 8));
    let pd = super::util::PD;
    mem.register(stag, pd, 0, Access::NONE, payload.to_vec(), false);
    conn.post_send(SendWr {
        wr_id: 1000 + u64::from(k),
        op: SendOp::Send {
            solicited: false,
            invalidate: None,
        },
        sgl: vec![Sge {
            stag,
            to: 0,
            len: payload.len() as u32,
        }],
        signaled: true,
        fence: false,
        inline: Vec::new(),
    })
    .unwrap();
}

/// Plays the rping client against the server's recorded stream; returns
/// the cause of the peer's TERMINATE, if it sent one.
fn emulate_client(name: &str, rtr: Option<Rtr>, max_fpdu: usize) -> Option<(TermCode, TermLayout)> {
    let flows = streams(name)?;
    let (client, server) = (&flows[0].1, &flows[1].1);
    let crc = crc_of(client, server);
    let (cf, sf) = (fpdus(client), fpdus(server));
    let sends = messages(&cf, Opcode::Send);
    let read_data = messages(&cf, Opcode::ReadResponse);

    let pd = super::util::PD;
    let mut conn = Connection::new(ConnectionConfig::new(
        negotiated(Role::Initiator, crc, rtr),
        pd,
        max_fpdu,
    ));
    let mut mem = RegionTable::new();
    mem.register(RECV, pd, 0, Access::LOCAL_WRITE, vec![0; 16], false);
    // The client advertises its source, then its sink, each iteration; it
    // fills the source before advertising it.
    let mut next_send = 0usize;
    let mut reads = 0usize;
    let mut advertise = |conn: &mut Connection, mem: &mut RegionTable| {
        let Some(payload) = sends.get(next_send) else {
            return;
        };
        let i = info(payload);
        if next_send.is_multiple_of(2) {
            let data = read_data[reads].clone();
            reads += 1;
            assert_eq!(data.len(), i.size as usize);
            mem.register(i.rkey, pd, i.addr, Access::REMOTE_READ, data, false);
        } else {
            mem.register(
                i.rkey,
                pd,
                i.addr,
                Access::REMOTE_WRITE,
                vec![0; i.size as usize],
                false,
            );
        }
        post_send_bytes(conn, mem, next_send as u32, payload);
        next_send += 1;
    };
    post_recv(&mut conn);
    advertise(&mut conn, &mut mem);
    let mut out = Vec::new();
    let mut terminated = None;
    let mut on_event = |e: Event, conn: &mut Connection, mem: &mut RegionTable| match e {
        Event::Completion(c) if terminated.is_some() => {
            assert_eq!(c.status, WcStatus::WrFlushErr)
        }
        Event::Completion(c) if c.opcode == WcOpcode::Recv => {
            assert_eq!(c.status, WcStatus::Success);
            post_recv(conn);
            advertise(conn, mem);
        }
        Event::Completion(c) => assert_eq!(c.status, WcStatus::Success),
        Event::Terminated {
            by_peer: true,
            cause,
            peer: Some(p),
        } => terminated = Some((cause, p.layout)),
        other => panic!("{name}: {other:?}"),
    };
    settle(&mut conn, &mut mem, &mut out, &mut on_event);
    for f in &sf {
        assert_eq!(conn.handle_bytes(&mut mem, f), f.len());
        settle(&mut conn, &mut mem, &mut out, &mut on_event);
    }
    assert_same_stream(name, &out, &client[mpa_frame_len(client)..]);
    terminated
}

/// Plays the rping server against the client's recorded stream.
fn emulate_server(name: &str, rtr: Option<Rtr>, max_fpdu: usize) {
    let Some(flows) = streams(name) else {
        return;
    };
    let (client, server) = (&flows[0].1, &flows[1].1);
    let crc = crc_of(client, server);
    let (cf, sf) = (fpdus(client), fpdus(server));
    let gos = messages(&sf, Opcode::Send);
    // The server reads into, and writes from, one buffer; its STag and
    // address are in its Read Requests.
    let rr = sf
        .iter()
        .map(|f| ulpdu(f))
        .find(|u| Control(u[1]).opcode() == Opcode::ReadRequest)
        .unwrap();
    let buf_stag = STag(u32::from_be_bytes(rr[18..22].try_into().unwrap()));
    let buf_to = u64::from_be_bytes(rr[22..30].try_into().unwrap());

    let pd = super::util::PD;
    let mut conn = Connection::new(ConnectionConfig::new(
        negotiated(Role::Responder, crc, rtr),
        pd,
        max_fpdu,
    ));
    let mut mem = RegionTable::new();
    mem.register(RECV, pd, 0, Access::LOCAL_WRITE, vec![0; 16], false);
    mem.register(
        buf_stag,
        pd,
        buf_to,
        Access::LOCAL_WRITE,
        vec![0; 1 << 16],
        false,
    );
    post_recv(&mut conn);
    let mut recvs = 0usize;
    let mut next_go = 0u32;
    let mut out = Vec::new();
    let mut on_event = |e: Event, conn: &mut Connection, mem: &mut RegionTable| {
        let Event::Completion(c) = e else {
            panic!("{name}: {e:?}");
        };
        assert_eq!(c.status, WcStatus::Success, "{name}: {c:?}");
        match c.opcode {
            WcOpcode::Recv => {
                let i = info(mem.bytes(RECV).unwrap());
                post_recv(conn);
                let local = Sge {
                    stag: buf_stag,
                    to: buf_to,
                    len: i.size,
                };
                let op = if recvs.is_multiple_of(2) {
                    SendOp::Read {
                        remote_stag: i.rkey,
                        remote_to: i.addr,
                    }
                } else {
                    SendOp::Write {
                        remote_stag: i.rkey,
                        remote_to: i.addr,
                    }
                };
                recvs += 1;
                conn.post_send(SendWr {
                    wr_id: 1,
                    op,
                    sgl: vec![local],
                    signaled: true,
                    fence: false,
                    inline: Vec::new(),
                })
                .unwrap();
            }
            WcOpcode::RdmaRead | WcOpcode::RdmaWrite => {
                post_send_bytes(conn, mem, next_go, &gos[next_go as usize]);
                next_go += 1;
            }
            WcOpcode::Send => {}
            other => panic!("{name}: no RFC 7306 in the capture: {other:?}"),
        }
    };
    settle(&mut conn, &mut mem, &mut out, &mut on_event);
    assert!(out.is_empty(), "the responder waits for the first FPDU");
    for f in &cf {
        assert_eq!(conn.handle_bytes(&mut mem, f), f.len());
        settle(&mut conn, &mut mem, &mut out, &mut on_event);
    }
    assert_same_stream(name, &out, &server[mpa_frame_len(server)..]);
}

#[test]
fn rping_client_default_byte_for_byte() {
    assert_eq!(emulate_client("rping-default.pcap", None, 1448), None);
}

#[test]
fn rping_server_default_byte_for_byte() {
    emulate_server("rping-default.pcap", None, 1448);
}

#[test]
fn rping_client_crc_byte_for_byte() {
    assert_eq!(emulate_client("rping-crc.pcap", None, 1448), None);
}

#[test]
fn rping_server_crc_byte_for_byte() {
    emulate_server("rping-crc.pcap", None, 1448);
}

#[test]
fn rping_client_peer_to_peer_byte_for_byte() {
    assert_eq!(
        emulate_client("rping-cxgb.pcap", Some(Rtr::Write), 1448),
        None
    );
}

#[test]
fn rping_server_peer_to_peer_byte_for_byte() {
    emulate_server("rping-cxgb.pcap", Some(Rtr::Write), 1448);
}

#[test]
fn rping_client_8k_segmentation_byte_for_byte() {
    assert_eq!(emulate_client("rping-crc-8k.pcap", None, 1448), None);
}

#[test]
fn rping_server_8k_segmentation_byte_for_byte() {
    emulate_server("rping-crc-8k.pcap", None, 1448);
}

#[test]
fn rping_client_against_a_server_that_terminates() {
    // siw's server read 100 bytes into a 64-byte buffer and sent a
    // TERMINATE (DDP tagged buffer error, base or bounds) in its layout.
    if super::capture::dir().is_none() {
        return;
    }
    assert_eq!(
        emulate_client("rping-mismatch-crc.pcap", None, 1448),
        Some((TermCode::DDP_T_BASE_BOUNDS, TermLayout::Siw))
    );
}
