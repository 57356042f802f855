//! Kernel TCP on loopback: the same contract as the memory link.

use super::*;
use crate::testutil::{drive, Pattern, Receiver, Sender};
use crate::testutil::{parse, SharedBuf};
use crate::CLOSE_LINGER;

const MIB: u64 = 1 << 20;
const LIMIT: Duration = Duration::from_secs(30);

fn loopback() -> KernelTransport {
    KernelTransport::new(KernelConfig {
        bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        ..Default::default()
    })
}

/// One transport holding both ends of a loopback connection.
fn connected(t: &mut KernelTransport) -> (StreamId, StreamId) {
    let l = t.listen(0).unwrap();
    let addr = t.listener_addr(l).unwrap();
    let c = t.connect(addr).unwrap();
    let mut s = None;
    assert!(drive(t, LIMIT, |t| {
        s = s.or_else(|| t.accept(l));
        s.is_some() && t.state(c) == StreamState::Established
    }));
    (c, s.unwrap())
}

fn transfer(
    t: &mut KernelTransport,
    (c, s): (StreamId, StreamId),
    ab: u64,
    ba: u64,
) -> (Receiver, Receiver) {
    let (mut tx_c, mut at_s) = (Sender::new(1, ab), Receiver::new(1, ab));
    let (mut tx_s, mut at_c) = (Sender::new(2, ba), Receiver::new(2, ba));
    assert!(
        drive(t, LIMIT, |t| {
            tx_c.pump(t, c).unwrap();
            tx_s.pump(t, s).unwrap();
            at_s.drain(t, s).unwrap();
            at_c.drain(t, c).unwrap();
            at_s.done() && at_c.done()
        }),
        "stalled at {}/{} and {}/{}",
        at_s.received,
        ab,
        at_c.received,
        ba
    );
    (at_s, at_c)
}

#[test]
fn handshake_addresses_and_mss() {
    let mut t = loopback();
    let (c, s) = connected(&mut t);
    assert_eq!(t.state(s), StreamState::Established);
    assert_eq!(t.peer_addr(c), t.local_addr(s));
    assert_eq!(t.peer_addr(s), t.local_addr(c));
    assert!(t.mss(c) >= 536, "{}", t.mss(c));
    assert_eq!(t.send_capacity(c), 1 << 20);
    // Loopback: two FPDUs of the reported size fill at most one segment
    // of the route (not one segment and a 53-byte one).
    for st in [c, s] {
        let sock = &t.streams.get(st.0).unwrap().sock;
        let route = sys::advertised_mss(sock).unwrap();
        assert!(2 * t.mss(st) <= route, "{} against {route}", t.mss(st));
        assert!(2 * t.mss(st) + 8 > route, "{} against {route}", t.mss(st));
    }
}

#[test]
fn a_connection_mss_cut_to_half_a_window_reports_half_the_route() {
    // Loopback at connection time: 32741 or 32768 against a route of 65483.
    assert_eq!(segment_payload(32768, Some(65483)), 32741);
    assert_eq!(segment_payload(32741, Some(65483)), 32741);
    // An ordinary link, a peer's smaller MSS, nothing known: as reported.
    assert_eq!(segment_payload(1448, Some(1448)), 1448);
    assert_eq!(segment_payload(1388, Some(1448)), 1388);
    assert_eq!(segment_payload(8948, Some(8948)), 8948);
    assert_eq!(segment_payload(32768, None), 32768);
}

#[test]
fn bulk_both_directions() {
    let mut t = loopback();
    let pair = connected(&mut t);
    let (at_s, at_c) = transfer(&mut t, pair, 16 * MIB, 8 * MIB);
    assert_eq!((at_s.received, at_c.received), (16 * MIB, 8 * MIB));
    assert_eq!(at_s.bad_bytes + at_c.bad_bytes, 0);
}

#[test]
fn two_transports_in_two_threads() {
    let mut server = loopback();
    let l = server.listen(0).unwrap();
    let addr = server.listener_addr(l).unwrap();
    let total = 8 * MIB;
    let h = std::thread::spawn(move || {
        let mut s = None;
        let mut rx = Receiver::new(3, total);
        drive(&mut server, LIMIT, |t| {
            s = s.or_else(|| t.accept(l));
            if let Some(s) = s {
                rx.drain(t, s).unwrap();
            }
            rx.done()
        });
        (rx.received, rx.bad_bytes)
    });
    let mut client = loopback();
    let c = client.connect(addr).unwrap();
    let mut tx = Sender::new(3, total);
    assert!(drive(&mut client, LIMIT, |t| {
        if t.state(c) == StreamState::Established {
            tx.pump(t, c).unwrap();
        }
        tx.done() && t.send_capacity(c) == 1 << 20
    }));
    let (received, bad) = h.join().unwrap();
    assert_eq!((received, bad), (total, 0));
}

#[test]
fn many_connections_keep_their_streams_apart() {
    let mut t = loopback();
    let l = t.listen(0).unwrap();
    let addr = t.listener_addr(l).unwrap();
    let clients: Vec<StreamId> = (0..8).map(|_| t.connect(addr).unwrap()).collect();
    let mut servers = Vec::new();
    assert!(drive(&mut t, LIMIT, |t| {
        while let Some(s) = t.accept(l) {
            servers.push(s);
        }
        servers.len() == 8
            && clients
                .iter()
                .all(|&c| t.state(c) == StreamState::Established)
    }));
    let pairs: Vec<(StreamId, StreamId)> = clients
        .iter()
        .map(|&c| {
            let s = *servers
                .iter()
                .find(|&&s| t.peer_addr(s) == t.local_addr(c))
                .unwrap();
            (c, s)
        })
        .collect();
    let mut tx: Vec<Sender> = (0..8).map(|i| Sender::new(50 + i, 300_000)).collect();
    let mut rx: Vec<Receiver> = (0..8).map(|i| Receiver::new(50 + i, 300_000)).collect();
    assert!(drive(&mut t, LIMIT, |t| {
        for (i, &(c, s)) in pairs.iter().enumerate() {
            tx[i].pump(t, c).unwrap();
            rx[i].drain(t, s).unwrap();
        }
        rx.iter().all(Receiver::done)
    }));
    assert!(rx.iter().all(|r| r.bad_bytes == 0));
}

#[test]
fn graceful_close_both_ways() {
    let mut t = loopback();
    let (c, s) = connected(&mut t);
    let mut tx = Sender::new(4, 3 * MIB);
    tx.pump(&mut t, c).unwrap();
    let queued = tx.sent;
    t.close(c);
    assert_eq!(t.state(c), StreamState::Closing);
    assert!(matches!(
        t.send_with(c, &mut |_| 0),
        Err(TransportError::InvalidState(StreamState::Closing))
    ));
    assert_eq!(t.send_capacity(c), 0);
    let mut rx = Receiver::new(4, queued);
    assert!(drive(&mut t, LIMIT, |t| {
        rx.drain(t, s).unwrap();
        rx.done() && t.state(s) == StreamState::PeerClosed
    }));
    assert_eq!(rx.bad_bytes, 0);
    t.send_with(s, &mut |b| {
        b[..2].copy_from_slice(b"ok");
        2
    })
    .unwrap();
    t.close(s);
    let mut got = Vec::new();
    assert!(drive(&mut t, LIMIT, |t| {
        let _ = t.recv_with(c, &mut |d| {
            got.extend_from_slice(d);
            d.len()
        });
        t.state(c) == StreamState::Closed && t.state(s) == StreamState::Closed
    }));
    assert_eq!(got, b"ok");
    t.poll(Instant::now());
    assert!(matches!(
        t.recv_with(c, &mut |d| d.len()),
        Err(TransportError::UnknownStream(_))
    ));
}

#[test]
fn abort_resets_the_peer() {
    let mut t = loopback();
    let (c, s) = connected(&mut t);
    t.abort(c);
    assert_eq!(t.state(c), StreamState::Closed);
    assert!(drive(&mut t, LIMIT, |t| t.state(s) == StreamState::Reset));
    assert!(matches!(
        t.recv_with(s, &mut |d| d.len()),
        Err(TransportError::InvalidState(StreamState::Reset))
    ));
    t.close(s);
    t.poll(Instant::now());
    assert_eq!(t.state(s), StreamState::Closed);
}

#[test]
fn refused_connection_is_reset() {
    let mut t = loopback();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    match t.connect(port) {
        Ok(c) => assert!(drive(&mut t, LIMIT, |t| t.state(c) == StreamState::Reset)),
        Err(TransportError::Io { .. }) => {}
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn listening_twice_on_a_port_is_refused() {
    let mut t = loopback();
    let l = t.listen(0).unwrap();
    let port = t.listener_addr(l).unwrap().port();
    assert!(matches!(t.listen(port), Err(TransportError::AddressInUse(p)) if p == port));
    t.unlisten(l);
    assert_eq!(t.listener_addr(l), None);
    assert_eq!(t.accept(l), None);
}

#[test]
fn misuse_is_local() {
    let mut t = loopback();
    let ghost = StreamId(99);
    assert_eq!(t.state(ghost), StreamState::Closed);
    assert!(matches!(
        t.send_with(ghost, &mut |_| 0),
        Err(TransportError::UnknownStream(_))
    ));
    assert!(matches!(
        t.connect("127.0.0.1:0".parse().unwrap()),
        Err(TransportError::BadAddress(_))
    ));
    let (c, _) = connected(&mut t);
    assert!(matches!(
        t.send_with(c, &mut |b| b.len() + 1),
        Err(TransportError::ClosureOverrun { .. })
    ));
    assert_eq!(t.send_capacity(c), 1 << 20, "overrun queued nothing");
}

#[test]
fn idle_wait_sleeps_and_data_wakes_it() {
    let mut t = loopback();
    let (_c, _s) = connected(&mut t);
    t.poll(Instant::now());
    let start = Instant::now();
    t.wait(Some(Duration::from_millis(60)));
    assert!(
        start.elapsed() >= Duration::from_millis(55),
        "{:?}",
        start.elapsed()
    );

    // Data from another thread's socket ends the wait early.
    let mut server = loopback();
    let l = server.listen(0).unwrap();
    let addr = server.listener_addr(l).unwrap();
    let mut peer = TcpStream::connect(addr).unwrap();
    let mut s = None;
    assert!(drive(&mut server, LIMIT, |t| {
        s = s.or_else(|| t.accept(l));
        s.is_some()
    }));
    server.poll(Instant::now());
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        peer.write_all(b"wake").unwrap();
        peer
    });
    let start = Instant::now();
    server.wait(Some(Duration::from_secs(10)));
    assert!(start.elapsed() < Duration::from_secs(5));
    let _peer = writer.join().unwrap();
    server.poll(Instant::now());
    assert_eq!(server.recv_queued(s.unwrap()), 4);
}

#[test]
fn whole_records_through_small_buffers() {
    const REC: usize = 1000;
    let mut t = KernelTransport::new(KernelConfig {
        bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        send_buffer: 2 * REC + 300,
        recv_buffer: 3 * REC + 77,
        socket_buffers: None,
    });
    let (c, s) = connected(&mut t);
    let pattern = Pattern::new(8);
    let (mut sent, mut got, mut bad) = (0u64, 0u64, 0u64);
    assert!(drive(&mut t, LIMIT, |t| {
        let free = t.send_capacity(c);
        let q = t
            .send_with(c, &mut |buf| {
                let mut w = 0;
                while buf.len() - w >= REC && sent < 2000 {
                    pattern.fill(sent * REC as u64, &mut buf[w..w + REC]);
                    w += REC;
                    sent += 1;
                }
                w
            })
            .unwrap();
        assert!(
            free < REC || sent == 2000 || q >= REC,
            "free {free}, queued {q}"
        );
        t.recv_with(s, &mut |d| {
            let mut r = 0;
            while d.len() - r >= REC {
                bad += pattern.mismatches(got * REC as u64, &d[r..r + REC]);
                r += REC;
                got += 1;
            }
            r
        })
        .unwrap();
        got == 2000
    }));
    assert_eq!(bad, 0);
}

#[test]
fn ipv6_loopback_when_available() {
    let mut t = KernelTransport::new(KernelConfig {
        bind_ip: "::1".parse().unwrap(),
        ..Default::default()
    });
    let Ok(l) = t.listen(0) else {
        println!("skipping: no IPv6 loopback here");
        return;
    };
    let c = t.connect(t.listener_addr(l).unwrap()).unwrap();
    let mut s = None;
    assert!(drive(&mut t, LIMIT, |t| {
        s = s.or_else(|| t.accept(l));
        s.is_some() && t.state(c) == StreamState::Established
    }));
    let (at_s, _) = transfer(&mut t, (c, s.unwrap()), MIB, 0);
    assert_eq!(at_s.bad_bytes, 0);
}

/// Reassembles one direction's TCP payload from a capture by source port.
fn payload_from(bytes: &[u8], src_port: u16) -> Vec<u8> {
    use smoltcp::wire::{EthernetFrame, Ipv4Packet, TcpPacket};
    let (_, _, recs) = parse(bytes).unwrap();
    let mut out = Vec::new();
    for (_, _, f) in recs {
        let eth = EthernetFrame::new_checked(&f[..]).unwrap();
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        if tcp.src_port() == src_port {
            out.extend_from_slice(tcp.payload());
        }
    }
    out
}

#[test]
fn capture_carries_the_exact_bytes_each_way() {
    let buf = SharedBuf::default();
    let mut t = loopback();
    t.set_pcap(Some(PcapSink::new(Box::new(buf.clone())).unwrap()));
    let (c, s) = connected(&mut t);
    let (at_s, at_c) = transfer(&mut t, (c, s), 300_000, 100_000);
    assert_eq!(at_s.bad_bytes + at_c.bad_bytes, 0);
    t.close(c);
    t.close(s);
    assert!(drive(&mut t, LIMIT, |t| t.state(c) == StreamState::Closed
        && t.state(s) == StreamState::Closed));
    drop(t.take_pcap());
    let bytes = buf.0.lock().unwrap().clone();
    // Both transports' views are in one file: each stream recorded its own
    // writes and reads, so each direction appears twice.
    let (_, _, recs) = parse(&bytes).unwrap();
    assert!(recs.len() > 10);
    let mut expect = vec![0u8; 300_000];
    Pattern::new(1).fill(0, &mut expect);
    let ports: std::collections::BTreeSet<u16> = recs
        .iter()
        .map(|(_, _, f)| u16::from_be_bytes([f[34], f[35]]))
        .collect();
    let mut matched = 0;
    for p in ports {
        let data = payload_from(&bytes, p);
        if data.len() == 2 * 300_000 {
            assert_eq!(&data[..300_000], &expect[..]);
            assert_eq!(&data[300_000..], &expect[..]);
            matched += 1;
        }
    }
    assert_eq!(matched, 1, "the client→server direction, seen by both ends");
    crate::pcap_check::tshark_accepts(&bytes, "kernel");
}

#[test]
fn client_capture_alone_is_one_clean_connection() {
    // Server in its own transport without capture: the client's file holds
    // exactly one connection, each direction once.
    let mut server = loopback();
    let l = server.listen(0).unwrap();
    let addr = server.listener_addr(l).unwrap();
    let buf = SharedBuf::default();
    let mut client = loopback();
    client.set_pcap(Some(PcapSink::new(Box::new(buf.clone())).unwrap()));
    let c = client.connect(addr).unwrap();
    let mut s = None;
    let (mut tx, mut at_s) = (Sender::new(5, 500_000), Receiver::new(5, 500_000));
    let (mut tx_s, mut at_c) = (Sender::new(6, 70_000), Receiver::new(6, 70_000));
    assert!(drive(&mut client, LIMIT, |t| {
        server.poll(Instant::now());
        s = s.or_else(|| server.accept(l));
        if t.state(c) == StreamState::Established {
            tx.pump(t, c).unwrap();
            at_c.drain(t, c).unwrap();
        }
        if let Some(s) = s {
            tx_s.pump(&mut server, s).unwrap();
            at_s.drain(&mut server, s).unwrap();
        }
        at_s.done() && at_c.done()
    }));
    client.close(c);
    server.close(s.unwrap());
    assert!(drive(&mut client, LIMIT, |t| {
        server.poll(Instant::now());
        t.state(c) == StreamState::Closed
    }));
    drop(client.take_pcap());
    let bytes = buf.0.lock().unwrap().clone();
    let cport = {
        let (_, _, recs) = parse(&bytes).unwrap();
        u16::from_be_bytes([recs[0].2[34], recs[0].2[35]])
    };
    let mut want = vec![0u8; 500_000];
    Pattern::new(5).fill(0, &mut want);
    assert_eq!(payload_from(&bytes, cport), want);
    let mut back = vec![0u8; 70_000];
    Pattern::new(6).fill(0, &mut back);
    assert_eq!(payload_from(&bytes, addr.port()), back);
    crate::pcap_check::tshark_accepts(&bytes, "kernel-client");
}

#[test]
fn waker_ends_a_wait_and_listen_port_names_the_bound_port() {
    let mut t = loopback();
    let l = t.listen(0).unwrap();
    assert_eq!(t.listen_port(l), t.listener_addr(l).map(|a| a.port()));
    assert_ne!(t.listen_port(l), Some(0));
    let wake = t.waker().expect("eventfd waker");
    let th = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        wake();
    });
    let start = Instant::now();
    t.wait(Some(Duration::from_secs(10)));
    assert!(start.elapsed() < Duration::from_secs(5), "woken early");
    th.join().unwrap();
    // The wake was consumed: the next wait runs to its timeout.
    let start = Instant::now();
    t.wait(Some(Duration::from_millis(15)));
    assert!(start.elapsed() >= Duration::from_millis(15));
}

#[test]
fn flush_writes_staged_bytes_and_nothing_else() {
    let mut t = loopback();
    let (c, s) = connected(&mut t);
    assert!(!t.flush(Instant::now()), "nothing staged");
    let queued = t.send_with(c, &mut |b| {
        b[..5].copy_from_slice(b"hello");
        5
    });
    assert_eq!(queued.unwrap(), 5);
    assert_eq!(t.poll_delay(Instant::now()), Some(Duration::ZERO));
    assert!(
        t.flush(Instant::now()),
        "the staged bytes went to the kernel"
    );
    assert_eq!(t.poll_delay(Instant::now()), None, "nothing left to do");
    assert!(!t.flush(Instant::now()));
    // A flush does not read: the bytes show up at the other end's poll.
    let mut got = Vec::new();
    assert!(drive(&mut t, LIMIT, |t| {
        t.recv_with(s, &mut |d| {
            got.extend_from_slice(d);
            d.len()
        })
        .unwrap();
        got.len() == 5
    }));
    assert_eq!(got, b"hello");
}

#[test]
fn a_close_staged_behind_a_flush_still_completes() {
    let mut t = loopback();
    let (c, s) = connected(&mut t);
    t.send_with(c, &mut |b| {
        b[..3].copy_from_slice(b"bye");
        3
    })
    .unwrap();
    t.close(c);
    t.flush(Instant::now());
    assert_eq!(
        t.poll_delay(Instant::now()),
        Some(Duration::ZERO),
        "the FIN is still due"
    );
    let mut got = Vec::new();
    assert!(drive(&mut t, LIMIT, |t| {
        let _ = t.recv_with(s, &mut |d| {
            got.extend_from_slice(d);
            d.len()
        });
        got == b"bye" && t.state(s) == StreamState::PeerClosed
    }));
}

#[test]
fn corked_flushes_never_strand_bytes() {
    // Small writes in a row: a flush may leave them staged behind
    // unacknowledged data, but then the transport says work is due, and
    // the next polls deliver every byte in order.
    let mut t = loopback();
    let (c, s) = connected(&mut t);
    let pattern = Pattern::new(3);
    let (mut sent, rec) = (0u64, 64u64);
    for _ in 0..200 {
        // One record per post, however often the closure is called.
        let mut left = rec as usize;
        let q = t.send_with(c, &mut |b| {
            let n = left.min(b.len());
            pattern.fill(sent + rec - left as u64, &mut b[..n]);
            left -= n;
            n
        });
        assert_eq!(q.unwrap(), rec as usize);
        sent += rec;
        t.flush(Instant::now());
        let staged = t.send_capacity(c) < (1 << 20);
        if staged {
            assert_eq!(t.poll_delay(Instant::now()), Some(Duration::ZERO));
        }
    }
    let mut rx = Receiver::new(3, sent);
    assert!(drive(&mut t, LIMIT, |t| {
        rx.drain(t, s).unwrap();
        rx.done()
    }));
    assert_eq!(rx.bad_bytes, 0);
}

/// A transport listening on loopback, and a plain socket connected to it
/// that the test drives by hand (a peer that may never answer).
fn with_raw_peer(t: &mut KernelTransport) -> (StreamId, std::net::TcpStream) {
    let l = t.listen(0).unwrap();
    let peer = std::net::TcpStream::connect(t.listener_addr(l).unwrap()).unwrap();
    let mut s = None;
    assert!(drive(t, LIMIT, |t| {
        s = s.or_else(|| t.accept(l));
        s.is_some()
    }));
    (s.unwrap(), peer)
}

#[test]
fn a_closed_stream_whose_peer_never_closes_is_released_after_the_linger() {
    let mut t = loopback();
    let (s, mut peer) = with_raw_peer(&mut t);
    t.send_with(s, &mut |b| {
        b[..3].copy_from_slice(b"bye");
        3
    })
    .unwrap();
    t.close(s);
    peer.set_nonblocking(true).unwrap();
    let (mut got, mut fin) = (Vec::new(), false);
    assert!(drive(&mut t, LIMIT, |_| {
        let mut buf = [0u8; 8];
        match peer.read(&mut buf) {
            Ok(0) => fin = true,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => assert!(is_transient(&e), "{e}"),
        }
        fin
    }));
    assert_eq!(got, b"bye", "bytes before the close, then the FIN");
    let mut got = [0u8; 8];
    peer.set_nonblocking(false).unwrap();
    peer.set_read_timeout(Some(LIMIT)).unwrap();
    // The peer says nothing more and keeps its end open.
    let now = Instant::now();
    t.poll(now);
    assert_eq!(t.state(s), StreamState::Closing);
    assert_eq!(t.stream_count(), 1, "lingering while the peer may answer");
    assert!(t.poll_delay(now).is_some_and(|d| d <= CLOSE_LINGER));
    t.poll(now + CLOSE_LINGER);
    assert_eq!(t.stream_count(), 0, "released once the linger is over");
    assert_eq!(t.state(s), StreamState::Closed);
    // The socket is gone too: what the peer sends now is refused.
    let refused = |r: io::Result<usize>| {
        r.is_err_and(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            )
        })
    };
    assert!(
        (0..100).any(|_| {
            if refused(peer.write(b"late")) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
            refused(peer.read(&mut got))
        }),
        "the released socket resets the late peer"
    );
}

#[test]
fn a_closed_stream_nobody_reads_is_released_and_resets_its_peer() {
    let mut t = KernelTransport::new(KernelConfig {
        bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        send_buffer: 64 << 10,
        recv_buffer: 64 << 10,
        socket_buffers: Some(64 << 10),
    });
    let (s, mut peer) = with_raw_peer(&mut t);
    // The peer floods and never reads: the stream's receive buffer fills,
    // so its FIN could never be seen, and what it sends is never taken.
    peer.set_nonblocking(true).unwrap();
    let junk = vec![0x55u8; 64 << 10];
    let mut tx = Sender::new(5, 16 * MIB);
    for _ in 0..200 {
        let _ = peer.write(&junk);
        let _ = tx.pump(&mut t, s);
        t.poll(Instant::now());
    }
    assert!(t.recv_queued(s) > 0);
    t.close(s);
    let now = Instant::now();
    t.poll(now);
    assert_eq!(t.stream_count(), 1);
    t.poll(now + CLOSE_LINGER);
    assert_eq!(t.stream_count(), 0, "released with its bytes undelivered");
    peer.set_nonblocking(false).unwrap();
    peer.set_read_timeout(Some(LIMIT)).unwrap();
    let mut buf = vec![0u8; 64 << 10];
    let reset = loop {
        match peer.read(&mut buf) {
            Ok(0) => break false,
            Ok(_) => {}
            Err(e) => break e.kind() == io::ErrorKind::ConnectionReset,
        }
    };
    assert!(reset, "undelivered bytes end in a reset, not a FIN");
}

#[test]
fn streams_in_start_up_hold_small_buffers() {
    let mut t = loopback();
    let (c, s) = connected(&mut t);
    for id in [c, s] {
        let st = t.streams.get(id.0).unwrap();
        assert!(st.tx.allocated() <= 4 << 10 && st.rx.allocated() <= 4 << 10);
        assert_eq!(t.send_capacity(id), 1 << 20, "the whole bound is offered");
    }
    // A bulk transfer grows them to what it needs, at most the bound.
    transfer(&mut t, (c, s), 4 * MIB, 0);
    let st = t.streams.get(s.0).unwrap();
    assert!(st.rx.allocated() > 4 << 10 && st.rx.allocated() <= 1 << 20);
}

/// Whether `fd` polls readable right now.
fn readable(fd: &OwnedFd) -> bool {
    use std::os::fd::AsFd;
    crate::poll_readable(&[fd.as_fd()], Some(Duration::ZERO)).unwrap()[0]
}

/// Drives `ts` the way an event loop does: one `poll` each, then a sleep
/// in poll(2) on their readiness descriptors alone, at most until the
/// nearest `poll_delay` (bounded, so a missed edge fails slowly instead of
/// hanging). Counts the sleeps a descriptor ended.
fn drive_by_readiness(
    ts: &mut [&mut KernelTransport],
    fds: &[OwnedFd],
    wakes: &mut usize,
    mut step: impl FnMut(&mut [&mut KernelTransport]) -> bool,
) -> bool {
    use std::os::fd::AsFd;
    let deadline = Instant::now() + LIMIT;
    while Instant::now() < deadline {
        if step(ts) {
            return true;
        }
        let now = Instant::now();
        for t in ts.iter_mut() {
            t.poll(now);
        }
        if step(ts) {
            return true;
        }
        let delay = ts
            .iter_mut()
            .filter_map(|t| t.poll_delay(Instant::now()))
            .min()
            .unwrap_or(LIMIT)
            .min(deadline.saturating_duration_since(Instant::now()));
        let borrowed: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
        if crate::poll_readable(&borrowed, Some(delay))
            .unwrap()
            .contains(&true)
        {
            *wakes += 1;
        }
    }
    false
}

#[test]
fn an_event_loop_on_the_readiness_descriptors_alone_connects_and_transfers() {
    let (mut client, mut server) = (loopback(), loopback());
    let l = server.listen(0).unwrap();
    let addr = server.listener_addr(l).unwrap();
    // Asked for before the listener's first connection and after the
    // listener exists: both kinds of registration are exercised.
    let fds = [
        client.readiness_fd().unwrap(),
        server.readiness_fd().unwrap(),
    ];
    assert!(!readable(&fds[0]) && !readable(&fds[1]), "nothing due yet");
    let c = client.connect(addr).unwrap();
    let mut wakes = 0;
    let mut s = None;
    assert!(drive_by_readiness(
        &mut [&mut client, &mut server],
        &fds,
        &mut wakes,
        |ts| {
            s = s.or_else(|| ts[1].accept(l));
            s.is_some() && ts[0].state(c) == StreamState::Established
        }
    ));
    let s = s.unwrap();

    // Idle and established: neither descriptor is readable, so a loop
    // sleeps instead of spinning.
    client.poll(Instant::now());
    server.poll(Instant::now());
    assert!(!readable(&fds[0]) && !readable(&fds[1]));

    let total = 4 * MIB;
    let (mut tx_c, mut at_s) = (Sender::new(1, total), Receiver::new(1, total));
    let (mut tx_s, mut at_c) = (Sender::new(2, total), Receiver::new(2, total));
    assert!(drive_by_readiness(
        &mut [&mut client, &mut server],
        &fds,
        &mut wakes,
        |ts| {
            tx_c.pump(&mut *ts[0], c).unwrap();
            tx_s.pump(&mut *ts[1], s).unwrap();
            at_s.drain(&mut *ts[1], s).unwrap();
            at_c.drain(&mut *ts[0], c).unwrap();
            at_s.done() && at_c.done()
        }
    ));
    assert_eq!(at_s.bad_bytes + at_c.bad_bytes, 0);

    client.close(c);
    server.close(s);
    assert!(drive_by_readiness(
        &mut [&mut client, &mut server],
        &fds,
        &mut wakes,
        |ts| ts[0].stream_count() == 0 && ts[1].stream_count() == 0
    ));
    assert!(
        wakes > 0,
        "the descriptors woke the loop, not only timeouts"
    );
}

#[test]
fn the_readiness_descriptor_follows_wakes_unread_bytes_and_a_full_buffer() {
    let mut t = KernelTransport::new(KernelConfig {
        bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        recv_buffer: 4096,
        ..Default::default()
    });
    let (s, mut peer) = with_raw_peer(&mut t);
    let fd = t.readiness_fd().unwrap();
    t.poll(Instant::now());
    assert!(!readable(&fd));

    // A wake from another thread makes it readable; the next poll clears it.
    let waker = t.waker().unwrap();
    std::thread::spawn(move || waker()).join().unwrap();
    assert!(readable(&fd));
    t.poll(Instant::now());
    assert!(!readable(&fd));

    // Bytes from the peer: readable until a poll reads them.
    peer.write_all(&[5; 100]).unwrap();
    assert!(crate::poll_readable(&[std::os::fd::AsFd::as_fd(&fd)], Some(LIMIT)).unwrap()[0]);
    t.poll(Instant::now());
    assert_eq!(t.recv_queued(s), 100);
    assert!(!readable(&fd), "read out, even if not yet consumed");

    // More than the receive buffer holds: once it is full the socket
    // leaves the set (its bytes wait in the kernel, no spinning)...
    peer.write_all(&[6; 10_000]).unwrap();
    let deadline = Instant::now() + LIMIT;
    while t.recv_queued(s) < 4096 {
        assert!(Instant::now() < deadline, "the buffer never filled");
        crate::poll_readable(
            &[std::os::fd::AsFd::as_fd(&fd)],
            Some(Duration::from_millis(10)),
        )
        .unwrap();
        t.poll(Instant::now());
    }
    assert!(!readable(&fd), "a full buffer is not a reason to poll");
    // ...and consuming makes room, so it is watched (and readable) again.
    let took = t.recv_with(s, &mut |d| d.len()).unwrap();
    assert_eq!(took, 4096);
    assert!(readable(&fd), "the rest waits in the kernel");

    // Drain the rest; then nothing is due.
    let mut got = took;
    while got < 10_100 {
        assert!(Instant::now() < deadline, "bytes stuck at {got}");
        t.poll(Instant::now());
        got += t.recv_with(s, &mut |d| d.len()).unwrap();
    }
    t.poll(Instant::now());
    assert!(!readable(&fd));
}

#[test]
fn staged_bytes_the_socket_cannot_take_wait_for_it_to_be_writable() {
    let mut t = KernelTransport::new(KernelConfig {
        bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        socket_buffers: Some(4096),
        ..Default::default()
    });
    let (s, mut peer) = with_raw_peer(&mut t);
    let fd = t.readiness_fd().unwrap();
    // The peer reads nothing: staged bytes fill both kernels' buffers.
    let mut tx = Sender::new(3, 4 * MIB);
    let deadline = Instant::now() + LIMIT;
    loop {
        assert!(Instant::now() < deadline, "the socket never filled");
        tx.pump(&mut t, s).unwrap();
        t.poll(Instant::now());
        if t.send_capacity(s) < 1 << 20 && !readable(&fd) {
            break;
        }
    }
    // Staged bytes and a full socket: nothing to do until the peer reads.
    assert!(t.send_capacity(s) < 1 << 20, "bytes are still staged");
    let reader = std::thread::spawn(move || {
        let mut at = Receiver::new(3, 4 * MIB);
        let mut buf = vec![0u8; 64 << 10];
        while !at.done() {
            let n = peer.read(&mut buf).unwrap();
            assert!(n > 0, "closed early");
            at.take(&buf[..n]);
        }
        at
    });
    let mut wakes = 0;
    assert!(drive_by_readiness(&mut [&mut t], &[fd], &mut wakes, |ts| {
        tx.pump(&mut *ts[0], s).unwrap();
        tx.done() && ts[0].send_capacity(s) == 1 << 20
    }));
    assert!(wakes > 0, "writability woke the loop");
    let at = reader.join().unwrap();
    assert_eq!(at.bad_bytes, 0);
}

/// Stages one record of `len` bytes of `pattern` from `offset`, whole or
/// not at all (as an FPDU is); the bytes queued.
fn stage_record(
    t: &mut KernelTransport,
    s: StreamId,
    pattern: &Pattern,
    offset: u64,
    len: usize,
) -> usize {
    t.send_with(s, &mut |b| {
        if b.len() < len {
            return 0;
        }
        pattern.fill(offset, &mut b[..len]);
        len
    })
    .unwrap()
}

#[test]
fn make_room_writes_the_staging_out_within_a_budget_per_poll() {
    let mut t = KernelTransport::new(KernelConfig {
        bind_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        send_buffer: 16 << 10,
        ..Default::default()
    });
    // A plain socket as the peer, read by hand between rounds: the kernel
    // never runs out of window, so only the budget can refuse.
    let (c, mut peer) = with_raw_peer(&mut t);
    peer.set_read_timeout(Some(LIMIT)).unwrap();
    let mut rx = Receiver::new(9, u64::MAX);
    let read_up_to = |peer: &mut std::net::TcpStream, rx: &mut Receiver, n: u64| {
        let mut buf = vec![0u8; 64 << 10];
        while rx.received < n {
            let want = buf.len().min((n - rx.received) as usize);
            let got = peer.read(&mut buf[..want]).unwrap();
            assert!(got > 0, "peer closed");
            rx.take(&buf[..got]);
        }
    };
    t.poll(Instant::now());
    let pattern = Pattern::new(9);
    let rec = 6 << 10;
    let mut sent = 0u64;
    // Two records fill the 16 KiB staging; a third does not fit until
    // make_room writes the first two out.
    for _ in 0..2 {
        assert_eq!(stage_record(&mut t, c, &pattern, sent, rec), rec);
        sent += rec as u64;
    }
    assert_eq!(stage_record(&mut t, c, &pattern, sent, rec), 0, "full");
    assert!(t.make_room(c), "the staged bytes went to the kernel");
    assert_eq!(t.send_capacity(c), 16 << 10, "all room free again");
    assert!(!t.make_room(c), "nothing staged: no room to make");
    read_up_to(&mut peer, &mut rx, sent);
    // Keep going: the budget (from the start of the last poll) runs out,
    // and make_room refuses until the next poll.
    let mut written = sent;
    let mut refused = false;
    for _ in 0..100 {
        while stage_record(&mut t, c, &pattern, sent, rec) == rec {
            sent += rec as u64;
        }
        if !t.make_room(c) {
            refused = true;
            break;
        }
        written = sent;
        read_up_to(&mut peer, &mut rx, written);
    }
    assert!(refused, "make_room never refused");
    assert!(
        written >= MAKE_ROOM_BUDGET as u64 && written < MAKE_ROOM_BUDGET as u64 + (16 << 10),
        "{written} bytes written before the budget held"
    );
    assert_eq!(
        t.send_capacity(c),
        (16 << 10) % rec,
        "the staging stays full"
    );
    // The next poll renews the budget and writes the rest.
    t.poll(Instant::now());
    read_up_to(&mut peer, &mut rx, sent);
    assert_eq!(rx.bad_bytes, 0);
    assert_eq!(stage_record(&mut t, c, &pattern, sent, rec), rec);
    assert_eq!(
        stage_record(&mut t, c, &pattern, sent + rec as u64, rec),
        rec
    );
    assert!(t.make_room(c), "a poll renews the budget");
}

#[test]
fn a_post_after_a_write_in_the_same_turn_waits_for_the_next_poll() {
    let mut t = loopback();
    let (c, s) = connected(&mut t);
    let pattern = Pattern::new(4);
    t.poll(Instant::now());
    // Written since the poll began: in flight, so a flush holds what is
    // staged next without asking the kernel; the next poll writes it.
    assert_eq!(stage_record(&mut t, c, &pattern, 0, 100), 100);
    assert!(t.make_room(c));
    assert_eq!(stage_record(&mut t, c, &pattern, 100, 100), 100);
    t.flush(Instant::now());
    assert_eq!(t.send_capacity(c), (1 << 20) - 100, "held");
    assert_eq!(t.poll_delay(Instant::now()), Some(Duration::ZERO));
    t.poll(Instant::now());
    assert_eq!(t.send_capacity(c), 1 << 20, "written by the poll");
    let mut rx = Receiver::new(4, 200);
    assert!(drive(&mut t, LIMIT, |t| {
        rx.drain(t, s).unwrap();
        rx.done()
    }));
    assert_eq!(rx.bad_bytes, 0);
}

/// `read` calls the transport has made on `s`'s socket.
fn reads(t: &KernelTransport, s: StreamId) -> u64 {
    t.streams.get(s.0).unwrap().reads
}

#[test]
fn with_the_readiness_descriptor_a_poll_reads_only_the_streams_it_reports() {
    let mut t = loopback();
    let mut ends: Vec<(StreamId, std::net::TcpStream)> =
        (0..4).map(|_| with_raw_peer(&mut t)).collect();
    // Before the descriptor exists every poll tries every stream.
    let before = reads(&t, ends[0].0);
    t.poll(Instant::now());
    assert!(reads(&t, ends[0].0) > before);

    let fd = t.readiness_fd().unwrap();
    t.poll(Instant::now());
    let idle: Vec<u64> = ends.iter().map(|(s, _)| reads(&t, *s)).collect();
    for _ in 0..5 {
        t.poll(Instant::now());
    }
    ends[2].1.write_all(&[7; 300]).unwrap();
    assert!(crate::poll_readable(&[std::os::fd::AsFd::as_fd(&fd)], Some(LIMIT)).unwrap()[0]);
    t.poll(Instant::now());
    assert_eq!(t.recv_queued(ends[2].0), 300, "the ready stream is read");
    for (i, (s, _)) in ends.iter().enumerate() {
        if i != 2 {
            assert_eq!(reads(&t, *s), idle[i], "stream {i} was idle");
        }
    }
    // A wake names no stream: nothing is read, and it is consumed.
    t.waker().unwrap()();
    assert!(readable(&fd));
    t.poll(Instant::now());
    assert!(!readable(&fd));
    assert_eq!(reads(&t, ends[0].0), idle[0]);
}

#[test]
fn more_ready_streams_than_one_wait_names_are_all_read() {
    let mut t = loopback();
    let n = READY_EVENTS + 6;
    let mut ends: Vec<(StreamId, std::net::TcpStream)> =
        (0..n).map(|_| with_raw_peer(&mut t)).collect();
    let fd = t.readiness_fd().unwrap();
    t.poll(Instant::now());
    for (i, (_, peer)) in ends.iter_mut().enumerate() {
        peer.write_all(&[i as u8; 10]).unwrap();
    }
    // Every byte written is in the kernel's queues before the poll.
    let deadline = Instant::now() + LIMIT;
    while ends
        .iter()
        .any(|(s, _)| sys::unread(&t.streams.get(s.0).unwrap().sock).unwrap_or(0) < 10)
    {
        assert!(Instant::now() < deadline, "bytes never arrived");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(readable(&fd));
    t.poll(Instant::now());
    for (i, (s, _)) in ends.iter().enumerate() {
        assert_eq!(t.recv_queued(*s), 10, "stream {i} read in one poll");
    }
}
