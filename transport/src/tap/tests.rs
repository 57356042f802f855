//! The TAP transport against kernel TCP inside a network namespace the test
//! creates and always deletes. Skips (with a printed line) without root,
//! /dev/net/tun or iproute2.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::*;
use crate::testutil::SharedBuf;
use crate::testutil::{drive, Pattern, Receiver, Sender};
use crate::{StreamState, Transport};
use capture::netns::Netns;
use capture::pcap::PcapSink;

const KERNEL_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
const LIMIT: Duration = Duration::from_secs(60);
const MIB: u64 = 1 << 20;

/// Opens the TAP transport in `ns` and gives the kernel side its address.
fn tap_in(ns: &Netns, pcap: bool) -> (TapTransport, Option<SharedBuf>) {
    let cfg = TapConfig {
        ifname: "iwtap0".into(),
        netns: Some(ns.name().to_owned()),
        ..Default::default()
    };
    let mut t = TapTransport::open(&cfg).unwrap();
    ns.ip(&["addr", "add", "10.77.1.1/24", "dev", "iwtap0"])
        .unwrap();
    let buf = pcap.then(|| {
        let b = SharedBuf::default();
        t.device_mut()
            .set_pcap(Some(PcapSink::new(Box::new(b.clone())).unwrap()));
        b
    });
    (t, buf)
}

fn kernel_listener(ns: &Netns) -> TcpListener {
    let l = netns::in_netns(ns.name(), || {
        TcpListener::bind(SocketAddr::from((KERNEL_IP, 0))).unwrap()
    })
    .unwrap();
    l.set_nonblocking(true).unwrap();
    l
}

/// Accepts one connection within `LIMIT`, as a blocking stream with timeouts.
fn accept_bounded(l: &TcpListener) -> TcpStream {
    let deadline = Instant::now() + LIMIT;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(LIMIT)).unwrap();
                s.set_write_timeout(Some(LIMIT)).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "no connection arrived");
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Kernel side: read `incoming` pattern bytes and check them, then write
/// `outgoing` bytes of another pattern, then read to EOF.
fn kernel_peer(mut s: TcpStream, incoming: u64, outgoing: u64) -> (u64, u64) {
    let p_in = Pattern::new(21);
    let p_out = Pattern::new(22);
    let mut buf = vec![0u8; 256 * 1024];
    let (mut got, mut bad) = (0u64, 0u64);
    while got < incoming {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "EOF after {got} bytes");
        bad += p_in.mismatches(got, &buf[..n]);
        got += n as u64;
    }
    let mut sent = 0u64;
    while sent < outgoing {
        let n = buf.len().min((outgoing - sent) as usize);
        p_out.fill(sent, &mut buf[..n]);
        s.write_all(&buf[..n]).unwrap();
        sent += n as u64;
    }
    while s.read(&mut buf).unwrap() > 0 {}
    (got, bad)
}

/// smoltcp side of the same exchange on stream `c`, then a clean close.
fn smol_side(t: &mut TapTransport, c: crate::StreamId, out: u64, inc: u64) -> f64 {
    let mut tx = Sender::new(21, out);
    let mut rx = Receiver::new(22, inc);
    let start = Instant::now();
    assert!(
        drive(t, LIMIT, |t| {
            if t.state(c) == StreamState::Connecting {
                return false;
            }
            tx.pump(t, c).unwrap();
            rx.drain(t, c).unwrap();
            rx.done()
        }),
        "sent {}/{out}, received {}/{inc}",
        tx.sent,
        rx.received
    );
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(rx.bad_bytes, 0);
    t.close(c);
    assert!(drive(t, LIMIT, |t| t.state(c) == StreamState::Closed));
    (out + inc) as f64 * 8.0 / secs / 1e9
}

#[test]
fn smoltcp_connects_to_kernel_tcp_over_tap() {
    let Some(ns) = Netns::for_test("smoltcp_connects_to_kernel_tcp_over_tap") else {
        return;
    };
    let (mut t, _) = tap_in(&ns, false);
    assert_eq!(t.device().ifname(), "iwtap0");
    assert_eq!(t.device().mtu(), 1500);
    let l = kernel_listener(&ns);
    let remote = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || kernel_peer(accept_bounded(&l), 8 * MIB, 8 * MIB));
    let c = t.connect(remote).unwrap();
    let gbps = smol_side(&mut t, c, 8 * MIB, 8 * MIB);
    let (got, bad) = peer.join().unwrap();
    assert_eq!((got, bad), (8 * MIB, 0));
    let st = t.device().stats();
    println!("TAP, smoltcp↔kernel, MTU 1500: {gbps:.2} Gbit/s both ways together; {st:?}");
    assert_eq!(st.rx_errors + st.tx_errors, 0);
    // Offloads on (the default): the kernel took super-frames from us and
    // handed its own TSO super-frames up whole, checksums vouched for.
    assert!(t.device().offload());
    assert!(st.super_frames_sent > 0, "{st:?}");
    assert!(st.super_frames_received > 0, "{st:?}");
    assert_eq!(st.rx_bad_checksum, 0);
}

#[test]
fn a_header_size_left_by_another_program_is_reset() {
    let Some(ns) = Netns::for_test("a_header_size_left_by_another_program_is_reset") else {
        return;
    };
    ns.ip(&["tuntap", "add", "dev", "iwtap0", "mode", "tap", "vnet_hdr"])
        .unwrap();
    // As qemu leaves it: a 12-byte header on the interface.
    netns::in_netns(ns.name(), || {
        let (fd, _) = sys::open_tap("iwtap0", true).unwrap();
        sys::set_vnet_hdr_size(&fd, 12).unwrap();
    })
    .unwrap();
    let (mut t, _) = tap_in(&ns, false);
    assert!(t.device().offload());
    let l = kernel_listener(&ns);
    let remote = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || kernel_peer(accept_bounded(&l), MIB, MIB));
    let c = t.connect(remote).unwrap();
    smol_side(&mut t, c, MIB, MIB);
    assert_eq!(peer.join().unwrap(), (MIB, 0));
    let st = t.device().stats();
    assert_eq!(st.rx_errors + st.rx_bad_checksum, 0, "{st:?}");
}

#[test]
fn offloads_end_with_the_transport() {
    let Some(ns) = Netns::for_test("offloads_end_with_the_transport") else {
        return;
    };
    // A persistent interface, as a harness makes: the next program to
    // open it without offloads must not get super-frames.
    ns.ip(&["tuntap", "add", "dev", "iwtap0", "mode", "tap"])
        .unwrap();
    let (t, _) = tap_in(&ns, false);
    assert!(t.device().offload());
    drop(t);
    let cfg = TapConfig {
        ifname: "iwtap0".into(),
        netns: Some(ns.name().to_owned()),
        offload: false,
        ..Default::default()
    };
    let mut t = TapTransport::open(&cfg).unwrap();
    let l = kernel_listener(&ns);
    let remote = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || kernel_peer(accept_bounded(&l), MIB, 4 * MIB));
    let c = t.connect(remote).unwrap();
    smol_side(&mut t, c, MIB, 4 * MIB);
    assert_eq!(peer.join().unwrap(), (MIB, 0));
    let st = t.device().stats();
    assert_eq!(st.rx_errors + st.super_frames_received, 0, "{st:?}");
}

#[test]
fn without_offloads_every_frame_fits_the_mtu() {
    let Some(ns) = Netns::for_test("without_offloads_every_frame_fits_the_mtu") else {
        return;
    };
    let cfg = TapConfig {
        ifname: "iwtap0".into(),
        netns: Some(ns.name().to_owned()),
        offload: false,
        ..Default::default()
    };
    let mut t = TapTransport::open(&cfg).unwrap();
    ns.ip(&["addr", "add", "10.77.1.1/24", "dev", "iwtap0"])
        .unwrap();
    let buf = SharedBuf::default();
    t.device_mut()
        .set_pcap(Some(PcapSink::new(Box::new(buf.clone())).unwrap()));
    assert!(!t.device().offload());
    let l = kernel_listener(&ns);
    let remote = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || kernel_peer(accept_bounded(&l), 2 * MIB, 2 * MIB));
    let c = t.connect(remote).unwrap();
    smol_side(&mut t, c, 2 * MIB, 2 * MIB);
    assert_eq!(peer.join().unwrap(), (2 * MIB, 0));
    let st = t.device().stats();
    assert_eq!(st.super_frames_sent + st.super_frames_received, 0, "{st:?}");
    drop(t.device_mut().take_pcap());
    let bytes = buf.0.lock().unwrap().clone();
    let (_, _, recs) = crate::testutil::parse(&bytes).unwrap();
    let largest = recs.iter().map(|r| r.2.len()).max().unwrap();
    assert!(largest <= 1514, "a {largest}-byte frame on a 1500-byte MTU");
}

#[test]
fn kernel_tcp_connects_to_smoltcp_over_tap() {
    let Some(ns) = Netns::for_test("kernel_tcp_connects_to_smoltcp_over_tap") else {
        return;
    };
    let (mut t, _) = tap_in(&ns, false);
    let l = t.listen(7174).unwrap();
    let addr = SocketAddr::from((t.ipv4_addr().unwrap(), 7174));
    let peer = {
        let name = ns.name().to_owned();
        std::thread::spawn(move || {
            // The socket is created in the namespace; the connect blocks
            // until the main thread's polling answers the SYN.
            let s = netns::in_netns(&name, || {
                TcpStream::connect_timeout(&addr, Duration::from_secs(30))
            })
            .unwrap()
            .unwrap();
            s.set_read_timeout(Some(LIMIT)).unwrap();
            s.set_write_timeout(Some(LIMIT)).unwrap();
            kernel_peer(s, 2 * MIB, 3 * MIB)
        })
    };
    let mut s = None;
    assert!(drive(&mut t, LIMIT, |t| {
        s = s.or_else(|| t.accept(l));
        s.is_some()
    }));
    smol_side(&mut t, s.unwrap(), 2 * MIB, 3 * MIB);
    assert_eq!(peer.join().unwrap(), (2 * MIB, 0));
}

#[test]
fn mtu_is_read_from_an_existing_interface() {
    let Some(ns) = Netns::for_test("mtu_is_read_from_an_existing_interface") else {
        return;
    };
    ns.ip(&["tuntap", "add", "dev", "iwjumbo", "mode", "tap"])
        .unwrap();
    ns.ip(&["link", "set", "iwjumbo", "mtu", "9000"]).unwrap();
    let cfg = TapConfig {
        ifname: "iwjumbo".into(),
        netns: Some(ns.name().to_owned()),
        ..Default::default()
    };
    let mut t = TapTransport::open(&cfg).unwrap();
    ns.ip(&["addr", "add", "10.77.1.1/24", "dev", "iwjumbo"])
        .unwrap();
    assert_eq!(t.device().mtu(), 9000);
    let l = kernel_listener(&ns);
    let remote = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || kernel_peer(accept_bounded(&l), 8 * MIB, 8 * MIB));
    let c = t.connect(remote).unwrap();
    assert!(drive(&mut t, LIMIT, |t| t.state(c) != StreamState::Connecting));
    assert_eq!(t.mss(c), 8960);
    let gbps = smol_side(&mut t, c, 8 * MIB, 8 * MIB);
    assert_eq!(peer.join().unwrap(), (8 * MIB, 0));
    println!("TAP, smoltcp↔kernel, MTU 9000: {gbps:.2} Gbit/s both ways together");
}

#[test]
fn tap_capture_is_well_formed() {
    let Some(ns) = Netns::for_test("tap_capture_is_well_formed") else {
        return;
    };
    let (mut t, buf) = tap_in(&ns, true);
    let l = kernel_listener(&ns);
    let remote = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || kernel_peer(accept_bounded(&l), 300_000, 100_000));
    let c = t.connect(remote).unwrap();
    smol_side(&mut t, c, 300_000, 100_000);
    peer.join().unwrap();
    drop(t.device_mut().take_pcap());
    let bytes = buf.unwrap().0.lock().unwrap().clone();
    let (_, link, recs) = crate::testutil::parse(&bytes).unwrap();
    assert_eq!(link, 1);
    // ARP both ways, the handshake, data, FINs: well over a hundred frames.
    assert!(recs.len() > 100, "{}", recs.len());
    // Offloads on: super-frames both ways, recorded as the segments the
    // wire carries.
    let st = t.device().stats();
    assert!(
        st.super_frames_sent > 0 && st.super_frames_received > 0,
        "{st:?}"
    );
    let largest = recs.iter().map(|r| r.2.len()).max().unwrap();
    assert!(largest <= 1514, "a {largest}-byte frame recorded");
    crate::pcap_check::tshark_accepts(&bytes, "tap");
}

#[test]
fn opening_fails_cleanly_without_a_namespace() {
    let cfg = TapConfig {
        netns: Some("no-such-namespace-iwarp".into()),
        ..Default::default()
    };
    assert!(matches!(
        TapTransport::open(&cfg),
        Err(crate::TransportError::Io { .. })
    ));
    let bad = TapConfig {
        prefix_len: 33,
        ..Default::default()
    };
    assert!(TapTransport::open(&bad).is_err());
}

#[test]
fn window_is_fitted_to_the_queue() {
    let cfg = TapConfig::default();
    let t = fitted_tuning(&cfg, 1500, 500);
    assert_eq!(t.rx_buffer, 500 * 1460);
    let t = fitted_tuning(&cfg, 1500, 1000);
    assert_eq!(t.rx_buffer, 1 << 20, "queue holds more than the buffer");
    let t = fitted_tuning(&cfg, 1500, 0);
    assert_eq!(t.rx_buffer, 4 * 1460);
    let off = TapConfig {
        fit_window_to_queue: false,
        ..Default::default()
    };
    assert_eq!(fitted_tuning(&off, 1500, 1).rx_buffer, 1 << 20);
}
