//! MPA start-up against a hand-written peer on kernel TCP over loopback:
//! what each refusal puts on the wire (a reject reply, an RFC 6581
//! TERMINATE) and that the stream then closes with a FIN, not a reset.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use mpa::wire::{FrameKind, FrameRepr};
use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::{CmEvent, ConnectParams, Device, ListenOptions, QpInit, Rtr, RtrSet};

use common::LIMIT;

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn device() -> Device {
    Device::new(Box::new(KernelTransport::new(
        KernelConfig::default().bind_ip(LOCALHOST),
    )))
}

/// How the peer's side of a stream ended.
#[derive(Debug, PartialEq)]
enum End {
    Fin,
    Reset,
}

/// Reads until the peer closes; the bytes and how it closed.
fn read_to_close(s: &mut TcpStream) -> (Vec<u8>, End) {
    s.set_read_timeout(Some(LIMIT)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (got, End::Fin),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return (got, End::Reset),
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// The LLP (layer, etype, code) of the one TERMINATE FPDU in `bytes`.
fn terminate_in(bytes: &[u8], crc: bool) -> (u8, u8, u8) {
    let mut ulpdus = Vec::new();
    let mut deframer = mpa::Deframer::new(crc, false, 65535);
    let used = deframer
        .feed(bytes, |u| {
            ulpdus.push(u.to_vec());
            ControlFlow::Continue(())
        })
        .expect("well-framed, CRC as expected");
    assert_eq!(used, bytes.len(), "one whole FPDU");
    assert_eq!(ulpdus.len(), 1, "one FPDU");
    let u = &ulpdus[0];
    // Untagged, last, DDP and RDMAP version 1, opcode TERMINATE, queue 2.
    assert_eq!((u[0], u[1]), (0x41, 0x47), "{u:02x?}");
    assert_eq!(u[6..10], [0, 0, 0, 2], "QN 2");
    (u[18] >> 4, u[18] & 0xf, u[19])
}

/// Our listener, driven by a progress thread, and a raw connection to it.
fn listener_and_peer(opts: ListenOptions) -> (Device, verbs::Listener, TcpStream) {
    let dev = device();
    let listener = dev.listen(0, opts).unwrap();
    let peer = TcpStream::connect((LOCALHOST, listener.port())).unwrap();
    (dev, listener, peer)
}

#[test]
fn unknown_request_revision_gets_a_reject_reply_then_a_fin() {
    let (dev, _listener, mut peer) = listener_and_peer(ListenOptions::default());
    let _progress = dev.spawn_progress_thread();
    let mut request = b"MPA ID Req Frame".to_vec();
    request.extend_from_slice(&[0x10, 3, 0, 4, 0, 1, 0, 1]);
    peer.write_all(&request).unwrap();
    let (bytes, end) = read_to_close(&mut peer);
    let (reply, n) = FrameRepr::parse_bytes(&bytes).expect("an MPA Reply");
    assert_eq!(n, bytes.len(), "nothing after the reply: {bytes:02x?}");
    assert_eq!(reply.kind, FrameKind::Reply);
    assert!(reply.reject, "the R bit");
    assert_eq!(reply.rev, 2);
    assert_eq!(end, End::Fin);
}

#[test]
fn a_request_that_is_not_mpa_gets_a_terminate_then_a_fin() {
    let (dev, _listener, mut peer) = listener_and_peer(ListenOptions::default());
    let _progress = dev.spawn_progress_thread();
    peer.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let (bytes, end) = read_to_close(&mut peer);
    // Invalid MPA Request frame (0x04); CRC on as our policy prefers.
    assert_eq!(terminate_in(&bytes, true), (2, 0, 0x04));
    assert_eq!(end, End::Fin);
}

/// A hand-written responder answers our initiator's request with `reply`;
/// returns what our side sent after the request, how it closed, and the
/// queue pair's event.
fn initiator_facing(params: ConnectParams, reply: &[u8]) -> (Vec<u8>, End, CmEvent) {
    let raw = TcpListener::bind((LOCALHOST, 0)).unwrap();
    let addr = SocketAddr::new(LOCALHOST, raw.local_addr().unwrap().port());
    let dev = device();
    let pd = dev.alloc_pd();
    let cq = dev.create_cq(16);
    let qp = dev.create_qp(&pd, QpInit::new(&cq)).unwrap();
    qp.connect(addr, params).unwrap();
    let _progress = dev.spawn_progress_thread();
    let (mut s, _) = raw.accept().unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    let mut header = [0u8; 20];
    s.read_exact(&mut header).unwrap();
    let mut pd_bytes = vec![0u8; usize::from(u16::from_be_bytes([header[18], header[19]]))];
    s.read_exact(&mut pd_bytes).unwrap();
    s.write_all(reply).unwrap();
    let (bytes, end) = read_to_close(&mut s);
    let start = Instant::now();
    let ev = loop {
        if let Some(ev) = qp.try_event() {
            break ev;
        }
        assert!(start.elapsed() < LIMIT, "no event");
        std::thread::sleep(Duration::from_millis(1));
    };
    (bytes, end, ev)
}

fn reply(flags: u8, block: [u8; 4]) -> Vec<u8> {
    let mut r = b"MPA ID Rep Frame".to_vec();
    r.extend_from_slice(&[flags, 2, 0, 4]);
    r.extend_from_slice(&block);
    r
}

#[test]
fn insufficient_ird_gets_a_terminate_then_a_fin() {
    let params = ConnectParams::default().ird(2).ord(2);
    // CRC on; the reply's ORD 3 exceeds our IRD 2.
    let (bytes, end, ev) = initiator_facing(params, &reply(0x50, [0, 2, 0, 3]));
    assert_eq!(terminate_in(&bytes, true), (2, 0, 0x06));
    assert_eq!(end, End::Fin);
    assert!(matches!(ev, CmEvent::ConnectFailed(_)), "{ev:?}");
}

#[test]
fn no_matching_rtr_gets_a_terminate_then_a_fin() {
    let mut params = ConnectParams::default();
    params.mpa.p2p = RtrSet::only(Rtr::Write);
    // CRC off; peer-to-peer granted with a READ RTR we did not offer.
    let (bytes, end, ev) = initiator_facing(params, &reply(0x10, [0x80, 1, 0x40, 1]));
    assert_eq!(terminate_in(&bytes, false), (2, 0, 0x07));
    assert_eq!(end, End::Fin);
    assert!(matches!(ev, CmEvent::ConnectFailed(_)), "{ev:?}");
}

/// Connects a verbs client to `port` and serves it from `listener`:
/// whether it came up.
fn legitimate_client_connects(dev: &Device, listener: &verbs::Listener) -> bool {
    let client = device();
    let pd = client.alloc_pd();
    let cq = client.create_cq(16);
    let qp = client.create_qp(&pd, QpInit::new(&cq)).unwrap();
    let _client_progress = client.spawn_progress_thread();
    qp.connect(
        SocketAddr::new(LOCALHOST, listener.port()),
        ConnectParams::default(),
    )
    .unwrap();
    let spd = dev.alloc_pd();
    let scq = dev.create_cq(16);
    let sqp = dev.create_qp(&spd, QpInit::new(&scq)).unwrap();
    let start = Instant::now();
    let mut accepted = false;
    loop {
        if !accepted {
            if let Some(req) = listener.try_request() {
                req.accept(&sqp, verbs::AcceptParams::default()).unwrap();
                accepted = true;
            }
        }
        match qp.try_event() {
            Some(CmEvent::Established(_)) => return true,
            Some(ev) => {
                eprintln!("client: {ev:?}");
                return false;
            }
            None => {}
        }
        assert!(start.elapsed() < LIMIT, "no outcome");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Start-ups long enough that nothing here ends by timing out.
fn patient() -> ListenOptions {
    let mut opts = ListenOptions::default();
    opts.mpa.timeout = Duration::from_secs(120);
    opts
}

#[test]
fn a_startup_whose_peer_closed_ends_at_once() {
    let (dev, _listener, mut peer) = listener_and_peer(patient());
    let _progress = dev.spawn_progress_thread();
    peer.shutdown(std::net::Shutdown::Write).unwrap();
    // Our side closes too, long before the start-up timeout.
    let (bytes, end) = read_to_close(&mut peer);
    assert!(bytes.is_empty());
    assert_eq!(end, End::Fin);
}

/// 300 connections that open TCP and send nothing, then close: a client
/// right behind them connects.
#[test]
fn an_idle_flood_that_closed_leaves_no_lockout() {
    let dev = device();
    let listener = dev.listen(0, patient()).unwrap();
    let _progress = dev.spawn_progress_thread();
    let flood: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect((LOCALHOST, listener.port())).unwrap())
        .collect();
    drop(flood);
    assert!(legitimate_client_connects(&dev, &listener));
}

/// 300 connections that open TCP and stay silent: a client arriving while
/// they still hold every slot connects anyway.
#[test]
fn an_idle_flood_still_open_leaves_no_lockout() {
    let dev = device();
    let listener = dev.listen(0, patient()).unwrap();
    let _progress = dev.spawn_progress_thread();
    let flood: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect((LOCALHOST, listener.port())).unwrap())
        .collect();
    // Let the listener take them all (the flood fills the backlog).
    std::thread::sleep(Duration::from_millis(200));
    assert!(legitimate_client_connects(&dev, &listener));
    // A second client too: the first one's slot was not what let it in.
    assert!(legitimate_client_connects(&dev, &listener));
    drop(flood);
}
