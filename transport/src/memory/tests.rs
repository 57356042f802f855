//! The memory link end to end: handshakes, bulk transfers under faults,
//! listener re-arming, closes, determinism, the ring-wrap paths, threads.

use super::*;
use crate::testutil::{parse, SharedBuf};
use crate::testutil::{Pattern, Receiver, Sender};
use crate::{StreamId, StreamState, TcpLossStats, TcpTuning, Transport, TransportError};
use capture::pcap::PcapSink;

const PORT: u16 = 7174;
const MIB: u64 = 1 << 20;

/// Connects A to a listener on B under virtual time.
pub(super) fn connected(cfg: MemoryLinkConfig) -> (MemoryNet, Instant, StreamId, StreamId) {
    let mut net = MemoryNet::new(cfg).unwrap();
    let l = net.b.listen(PORT).unwrap();
    let ca = net.a.connect(net.config().endpoint_b(PORT)).unwrap();
    assert_eq!(net.a.state(ca), StreamState::Connecting);
    let mut now = Instant::now();
    let mut cb = None;
    let ok = net.run_virtual(&mut now, 10_000, Duration::from_secs(60), |n| {
        if cb.is_none() {
            cb = n.b.accept(l);
        }
        cb.is_some() && n.a.state(ca) == StreamState::Established
    });
    assert!(ok, "handshake did not complete");
    (net, now, ca, cb.unwrap())
}

pub(super) struct Outcome {
    pub(super) at_b: Receiver,
    pub(super) at_a: Receiver,
    pub(super) virtual_time: Duration,
}

/// Sends `ab` bytes A→B and `ba` bytes B→A at once, on virtual time.
pub(super) fn transfer(
    net: &mut MemoryNet,
    now: &mut Instant,
    (sa, sb): (StreamId, StreamId),
    ab: u64,
    ba: u64,
) -> Outcome {
    let start = *now;
    let (mut tx_a, mut at_b) = (Sender::new(1, ab), Receiver::new(1, ab));
    let (mut tx_b, mut at_a) = (Sender::new(2, ba), Receiver::new(2, ba));
    let ok = net.run_virtual(now, 2_000_000, Duration::from_secs(3600), |n| {
        tx_a.pump(&mut n.a, sa).unwrap();
        tx_b.pump(&mut n.b, sb).unwrap();
        at_b.drain(&mut n.b, sb).unwrap();
        at_a.drain(&mut n.a, sa).unwrap();
        at_b.done() && at_a.done()
    });
    assert!(
        ok,
        "transfer stalled: A→B {}/{}, B→A {}/{}",
        at_b.received, ab, at_a.received, ba
    );
    Outcome {
        at_b,
        at_a,
        virtual_time: now.saturating_duration_since(start),
    }
}

fn faulty(faults: FaultConfig, seed: u64) -> MemoryLinkConfig {
    MemoryLinkConfig {
        faults,
        seed,
        ..Default::default()
    }
}

#[test]
fn handshake_reports_addresses_and_mss() {
    let (net, _, ca, cb) = connected(MemoryLinkConfig::default());
    let cfg = net.config().clone();
    assert_eq!(net.b.state(cb), StreamState::Established);
    assert_eq!(net.a.peer_addr(ca), Some(cfg.endpoint_b(PORT)));
    assert_eq!(net.b.local_addr(cb), Some(cfg.endpoint_b(PORT)));
    assert_eq!(net.b.peer_addr(cb), net.a.local_addr(ca));
    assert_eq!(net.a.mss(ca), 1460);
    assert_eq!(net.a.send_capacity(ca), cfg.tuning.tx_buffer);
    assert_eq!(net.b.recv_queued(cb), 0);
}

#[test]
fn bulk_both_directions_clean() {
    let (mut net, mut now, ca, cb) = connected(MemoryLinkConfig::default());
    let out = transfer(&mut net, &mut now, (ca, cb), 8 * MIB, 6 * MIB);
    assert_eq!(out.at_b.received, 8 * MIB);
    assert_eq!(out.at_a.received, 6 * MIB);
    assert_eq!(out.at_b.bad_bytes + out.at_a.bad_bytes, 0);
    assert_eq!(net.a.device().stats().lost, 0);
}

#[test]
fn bulk_survives_one_percent_loss() {
    let f = FaultConfig {
        loss: 0.01,
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(faulty(f, 3));
    let out = transfer(&mut net, &mut now, (ca, cb), 4 * MIB, 4 * MIB);
    assert_eq!(out.at_b.bad_bytes + out.at_a.bad_bytes, 0);
    assert!(net.a.device().stats().lost > 10);
    assert!(net.b.device().stats().lost > 10);
}

#[test]
fn bulk_survives_five_percent_loss() {
    let f = FaultConfig {
        loss: 0.05,
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(faulty(f, 4));
    let out = transfer(&mut net, &mut now, (ca, cb), 3 * MIB, 2 * MIB);
    assert_eq!(out.at_b.bad_bytes + out.at_a.bad_bytes, 0);
    let st = net.a.device().stats();
    assert!(st.lost * 100 > st.frames_sent * 3, "{st:?}");
}

#[test]
fn checksums_catch_raw_corruption() {
    let f = FaultConfig {
        corrupt: 0.02,
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(faulty(f, 5));
    let out = transfer(&mut net, &mut now, (ca, cb), 4 * MIB, 2 * MIB);
    assert_eq!(out.at_b.bad_bytes + out.at_a.bad_bytes, 0);
    assert!(net.a.device().stats().corrupted > 20);
}

#[test]
fn fixed_up_corruption_reaches_the_byte_stream() {
    // With the TCP checksum recomputed, TCP delivers the damage: only an
    // upper-layer CRC (MPA's) can notice. This proves the option works.
    let f = FaultConfig {
        corrupt: 0.01,
        fix_tcp_checksum: true,
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(faulty(f, 6));
    let out = transfer(&mut net, &mut now, (ca, cb), 2 * MIB, 0);
    let corrupted = net.a.device().stats().corrupted;
    assert!(corrupted > 5);
    assert!(out.at_b.bad_bytes > 0);
    // One flipped bit per corrupted data frame; retransmissions of the
    // same range may overwrite nothing (first copy wins), so at most that.
    assert!(
        out.at_b.bad_bytes <= corrupted,
        "{} > {corrupted}",
        out.at_b.bad_bytes
    );
}

#[test]
fn latency_and_jitter_reorder_but_deliver_exactly() {
    let f = FaultConfig {
        latency: Duration::from_millis(5),
        jitter: Duration::from_millis(2),
        loss: 0.005,
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(faulty(f, 7));
    let out = transfer(&mut net, &mut now, (ca, cb), 3 * MIB, MIB);
    assert_eq!(out.at_b.bad_bytes + out.at_a.bad_bytes, 0);
    // 5 ms each way: the transfer needs at least a few round trips.
    assert!(out.virtual_time > Duration::from_millis(20));
}

#[test]
fn hosts_polled_at_each_deadline_take_no_frame_late() {
    let f = FaultConfig {
        latency: Duration::from_millis(1),
        ..Default::default()
    }
    .rate_bps(Some(100_000_000));
    let (mut net, mut now, ca, cb) = connected(faulty(f, 3));
    transfer(&mut net, &mut now, (ca, cb), MIB / 4, 0);
    // Virtual time steps to each frame's instant: every frame either way
    // was taken the moment it fell due, and each is counted once.
    for (sender, receiver) in [(&net.a, &net.b), (&net.b, &net.a)] {
        let late = sender.device().link_counters().taken_late;
        assert_eq!(late.count(), receiver.device().stats().frames_received);
        assert_eq!(late.quantile(1.0), Some(Duration::ZERO));
    }
    // A poll a millisecond after the next frame fell due counts it so.
    net.a.send_with(ca, &mut |b| b.len().min(100)).unwrap();
    net.a.poll(now);
    let due = now + net.b.poll_delay(now).unwrap();
    net.b.poll(due + Duration::from_millis(1));
    let late = net.a.device().link_counters().taken_late;
    let worst = late.quantile(1.0).unwrap();
    assert!(worst >= Duration::from_micros(900), "{worst:?}");
}

#[test]
fn large_mtus_carry_data() {
    for mtu in [9000, MAX_MTU] {
        let cfg = MemoryLinkConfig {
            mtu,
            ..Default::default()
        };
        let (mut net, mut now, ca, cb) = connected(cfg);
        assert_eq!(net.a.mss(ca), mtu - 40);
        let out = transfer(&mut net, &mut now, (ca, cb), 4 * MIB, MIB);
        assert_eq!(out.at_b.bad_bytes + out.at_a.bad_bytes, 0);
        let st = net.a.device().stats();
        // Big frames: far fewer frames than at 1500.
        assert!(st.frames_sent < 4 * MIB / 1000, "mtu {mtu}: {st:?}");
    }
}

#[test]
fn bad_mtus_are_refused() {
    for mtu in [0, 575, MAX_MTU + 1] {
        let cfg = MemoryLinkConfig {
            mtu,
            ..Default::default()
        };
        assert!(matches!(
            MemoryLink::pair(&cfg),
            Err(TransportError::BadAddress(_))
        ));
    }
    let cfg = MemoryLinkConfig {
        addr_a: Ipv4Addr::new(10, 77, 0, 255),
        ..Default::default()
    };
    assert!(MemoryLink::pair(&cfg).is_err());
}

/// Runs one faulty transfer and returns everything observable about it.
fn fingerprint(seed: u64) -> (Vec<u8>, LinkStats, LinkStats, Duration) {
    let f = FaultConfig {
        loss: 0.02,
        corrupt: 0.01,
        jitter: Duration::from_micros(300),
        ..Default::default()
    };
    let mut net = MemoryNet::new(faulty(f, seed)).unwrap();
    let buf = SharedBuf::default();
    let sink = PcapSink::with_wall_base(Box::new(buf.clone()), Duration::from_secs(1)).unwrap();
    net.a.device_mut().set_pcap(Some(sink));
    let l = net.b.listen(PORT).unwrap();
    let ca = net.a.connect(net.config().endpoint_b(PORT)).unwrap();
    // A fixed virtual epoch: Instants differ between runs, offsets do not.
    let mut now = Instant::now();
    let mut cb = None;
    assert!(
        net.run_virtual(&mut now, 10_000, Duration::from_secs(60), |n| {
            cb = cb.or_else(|| n.b.accept(l));
            cb.is_some()
        })
    );
    let out = transfer(&mut net, &mut now, (ca, cb.unwrap()), MIB, MIB / 2);
    assert_eq!(out.at_b.bad_bytes, 0);
    drop(net.a.device_mut().take_pcap());
    let bytes = buf.0.lock().unwrap().clone();
    (
        bytes,
        net.a.device().stats(),
        net.b.device().stats(),
        out.virtual_time,
    )
}

#[test]
fn same_seed_replays_exactly() {
    let one = fingerprint(42);
    let two = fingerprint(42);
    assert!(one.1.frames_sent > 500);
    assert_eq!(one.1, two.1);
    assert_eq!(one.2, two.2);
    assert_eq!(one.3, two.3);
    assert_eq!(one.0, two.0, "captures differ");
    let other = fingerprint(43);
    assert_ne!(one.0, other.0);
}

#[test]
fn listener_rearms_for_many_connections() {
    let cfg = MemoryLinkConfig {
        tuning: TcpTuning {
            backlog: 2,
            rx_buffer: 64 * 1024,
            tx_buffer: 64 * 1024,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut net = MemoryNet::new(cfg).unwrap();
    let l = net.b.listen(PORT).unwrap();
    let mut now = Instant::now();
    let mut pairs = Vec::new();
    // Three waves of two simultaneous connections: more than the backlog in
    // total, never more than it at once.
    for _wave in 0..3 {
        let mut wave: Vec<StreamId> = (0..2)
            .map(|_| net.a.connect(net.config().endpoint_b(PORT)).unwrap())
            .collect();
        let mut accepted = Vec::new();
        assert!(
            net.run_virtual(&mut now, 10_000, Duration::from_secs(30), |n| {
                while let Some(s) = n.b.accept(l) {
                    accepted.push(s);
                }
                accepted.len() == 2
                    && wave
                        .iter()
                        .all(|&c| n.a.state(c) == StreamState::Established)
            })
        );
        // Match accepted streams to clients by address.
        for c in wave.drain(..) {
            let local = net.a.local_addr(c);
            let s = *accepted
                .iter()
                .find(|&&s| net.b.peer_addr(s) == local)
                .unwrap();
            pairs.push((c, s));
        }
    }
    assert_eq!(pairs.len(), 6);
    // Each connection carries its own stream, verified at the other end.
    let mut tx: Vec<Sender> = (0..6).map(|i| Sender::new(100 + i, 200_000)).collect();
    let mut rx: Vec<Receiver> = (0..6).map(|i| Receiver::new(100 + i, 200_000)).collect();
    assert!(
        net.run_virtual(&mut now, 1_000_000, Duration::from_secs(600), |n| {
            for (i, &(c, s)) in pairs.iter().enumerate() {
                tx[i].pump(&mut n.a, c).unwrap();
                rx[i].drain(&mut n.b, s).unwrap();
            }
            rx.iter().all(|r| r.done())
        })
    );
    assert!(rx.iter().all(|r| r.bad_bytes == 0));
}

#[test]
fn syns_beyond_the_backlog_are_refused() {
    let cfg = MemoryLinkConfig {
        tuning: TcpTuning {
            backlog: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut net = MemoryNet::new(cfg).unwrap();
    let l = net.b.listen(PORT).unwrap();
    let c: Vec<StreamId> = (0..3)
        .map(|_| net.a.connect(net.config().endpoint_b(PORT)).unwrap())
        .collect();
    let mut now = Instant::now();
    net.run_virtual(&mut now, 10_000, Duration::from_secs(5), |n| {
        c.iter().all(|&s| n.a.state(s) != StreamState::Connecting)
    });
    let states: Vec<StreamState> = c.iter().map(|&s| net.a.state(s)).collect();
    let est = states
        .iter()
        .filter(|&&s| s == StreamState::Established)
        .count();
    let reset = states.iter().filter(|&&s| s == StreamState::Reset).count();
    assert!(est >= 1, "{states:?}");
    assert!(reset >= 1, "{states:?}");
    assert!(net.b.accept(l).is_some());
}

#[test]
fn sockets_held_for_a_listener_never_exceed_the_backlog() {
    // Forty handshakes, one after the other, to a listener whose owner
    // accepts none: only the backlog's worth of sockets (each with its
    // rings) is ever held for it; the rest are refused.
    let cfg = MemoryLinkConfig {
        tuning: TcpTuning {
            backlog: 4,
            rx_buffer: 16 * 1024,
            tx_buffer: 16 * 1024,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut net = MemoryNet::new(cfg).unwrap();
    let _l = net.b.listen(PORT).unwrap();
    let mut now = Instant::now();
    let mut states = Vec::new();
    for _ in 0..40 {
        let c = net.a.connect(net.config().endpoint_b(PORT)).unwrap();
        net.run_virtual(&mut now, 10_000, Duration::from_secs(5), |n| {
            n.a.state(c) != StreamState::Connecting
        });
        states.push(net.a.state(c));
        assert!(net.b.socket_count() <= 4, "{}", net.b.socket_count());
    }
    let est = states
        .iter()
        .filter(|&&s| s == StreamState::Established)
        .count();
    assert_eq!(est, 4, "{states:?}");
}

#[test]
fn graceful_close_delivers_everything_then_frees_sockets() {
    let (mut net, mut now, ca, cb) = connected(MemoryLinkConfig::default());
    let sockets_before = net.a.socket_count();
    // More than the send ring holds, so some is left unsent at close.
    let mut tx = Sender::new(9, 3 * MIB);
    let mut rx = Receiver::new(9, 3 * MIB);
    // Queue what fits, close right behind it.
    tx.pump(&mut net.a, ca).unwrap();
    let queued = tx.sent;
    assert!(!tx.done());
    net.a.close(ca);
    assert_eq!(net.a.state(ca), StreamState::Closing);
    assert!(matches!(
        tx.pump(&mut net.a, ca),
        Err(TransportError::InvalidState(StreamState::Closing))
    ));
    rx.total = queued;
    assert!(
        net.run_virtual(&mut now, 100_000, Duration::from_secs(60), |n| {
            rx.drain(&mut n.b, cb).unwrap();
            rx.done() && n.b.state(cb) == StreamState::PeerClosed
        })
    );
    assert_eq!(rx.bad_bytes, 0);
    // B may still send after A's FIN.
    let n = net.b.send_with(cb, &mut |b| {
        b[..3].copy_from_slice(b"bye");
        3
    });
    assert_eq!(n.unwrap(), 3);
    net.b.close(cb);
    let mut got = Vec::new();
    assert!(
        net.run_virtual(&mut now, 100_000, Duration::from_secs(60), |n| {
            let _ = n.a.recv_with(ca, &mut |d| {
                got.extend_from_slice(d);
                d.len()
            });
            n.a.state(ca) == StreamState::Closed && n.b.state(cb) == StreamState::Closed
        })
    );
    assert_eq!(got, b"bye");
    net.poll(now);
    assert!(net.a.socket_count() < sockets_before);
    assert!(matches!(
        net.a.send_with(ca, &mut |_| 0),
        Err(TransportError::UnknownStream(_))
    ));
}

#[test]
fn abort_resets_the_peer_and_releases_the_id() {
    let (mut net, mut now, ca, cb) = connected(MemoryLinkConfig::default());
    net.a.abort(ca);
    assert_eq!(net.a.state(ca), StreamState::Closed);
    assert!(
        net.run_virtual(&mut now, 10_000, Duration::from_secs(5), |n| {
            n.b.state(cb) == StreamState::Reset
        })
    );
    assert!(matches!(
        net.b.send_with(cb, &mut |_| 0),
        Err(TransportError::InvalidState(StreamState::Reset))
    ));
    assert!(matches!(
        net.b.recv_with(cb, &mut |d| d.len()),
        Err(TransportError::InvalidState(StreamState::Reset))
    ));
    // Closing a reset stream releases it.
    net.b.close(cb);
    net.poll(now);
    assert_eq!(net.b.state(cb), StreamState::Closed);
}

#[test]
fn connecting_to_a_closed_port_is_reset() {
    let mut net = MemoryNet::new(MemoryLinkConfig::default()).unwrap();
    let c = net.a.connect(net.config().endpoint_b(9)).unwrap();
    let mut now = Instant::now();
    assert!(
        net.run_virtual(&mut now, 10_000, Duration::from_secs(5), |n| {
            n.a.state(c) == StreamState::Reset
        })
    );
}

#[test]
fn unlisten_refuses_later_connections() {
    let mut net = MemoryNet::new(MemoryLinkConfig::default()).unwrap();
    let l = net.b.listen(PORT).unwrap();
    net.b.unlisten(l);
    assert_eq!(net.b.accept(l), None);
    let c = net.a.connect(net.config().endpoint_b(PORT)).unwrap();
    let mut now = Instant::now();
    assert!(
        net.run_virtual(&mut now, 10_000, Duration::from_secs(5), |n| {
            n.a.state(c) == StreamState::Reset
        })
    );
    // The port is free again.
    assert!(net.b.listen(PORT).is_ok());
}

#[test]
fn misuse_is_reported_as_local_errors() {
    let mut net = MemoryNet::new(MemoryLinkConfig::default()).unwrap();
    assert!(matches!(
        net.b.listen(0),
        Err(TransportError::BadAddress(_))
    ));
    net.b.listen(PORT).unwrap();
    assert!(matches!(
        net.b.listen(PORT),
        Err(TransportError::AddressInUse(PORT))
    ));
    assert!(matches!(
        net.a.connect("[::1]:80".parse().unwrap()),
        Err(TransportError::Unsupported(_))
    ));
    assert!(matches!(
        net.a.connect("10.77.0.2:0".parse().unwrap()),
        Err(TransportError::BadAddress(_))
    ));
    let ghost = StreamId(12345);
    assert_eq!(net.a.state(ghost), StreamState::Closed);
    assert_eq!(net.a.send_capacity(ghost), 0);
    assert_eq!(net.a.local_addr(ghost), None);
    assert!(matches!(
        net.a.recv_with(ghost, &mut |d| d.len()),
        Err(TransportError::UnknownStream(_))
    ));
    net.a.close(ghost);
    net.a.abort(ghost);
    // Sending before the handshake completes is a state error, not a panic.
    let c = net.a.connect(net.config().endpoint_b(PORT)).unwrap();
    assert!(matches!(
        net.a.send_with(c, &mut |b| b.len()),
        Err(TransportError::InvalidState(StreamState::Connecting))
    ));
    assert_eq!(net.a.recv_with(c, &mut |d| d.len()).unwrap(), 0);
}

#[test]
fn closures_claiming_too_much_are_refused() {
    let (mut net, _, ca, cb) = connected(MemoryLinkConfig::default());
    assert!(matches!(
        net.a.send_with(ca, &mut |b| b.len() + 1),
        Err(TransportError::ClosureOverrun { .. })
    ));
    assert_eq!(net.a.send_capacity(ca), net.config().tuning.tx_buffer);
    let n = net.a.send_with(ca, &mut |b| {
        b[..4].copy_from_slice(b"ping");
        4
    });
    assert_eq!(n.unwrap(), 4);
    let mut now = Instant::now();
    net.run_virtual(&mut now, 1000, Duration::from_secs(1), |n| {
        n.b.recv_queued(cb) == 4
    });
    assert!(matches!(
        net.b.recv_with(cb, &mut |d| d.len() + 1),
        Err(TransportError::ClosureOverrun { .. })
    ));
    assert_eq!(net.b.recv_queued(cb), 4, "nothing consumed");
}

/// Records of `REC` bytes: a producer that only ever writes whole records,
/// a consumer that only ever takes whole records — the FPDU contract.
const REC: usize = 1000;

#[test]
fn whole_records_cross_ring_wraps_intact() {
    // Rings that are not a multiple of the record size force wraps mid-record.
    let cfg = MemoryLinkConfig {
        tuning: TcpTuning {
            rx_buffer: 4 * REC + 333,
            tx_buffer: 3 * REC + 517,
            ..Default::default()
        },
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(cfg);
    let total_records = 500u64;
    let pattern = Pattern::new(77);
    let (mut sent, mut got, mut bad) = (0u64, 0u64, 0u64);
    let mut calls_with_room = 0;
    assert!(
        net.run_virtual(&mut now, 1_000_000, Duration::from_secs(600), |n| {
            let free = n.a.send_capacity(ca);
            let queued =
                n.a.send_with(ca, &mut |buf| {
                    let mut w = 0;
                    while buf.len() - w >= REC && sent < total_records {
                        pattern.fill(sent * REC as u64, &mut buf[w..w + REC]);
                        w += REC;
                        sent += 1;
                    }
                    w
                })
                .unwrap();
            if free >= REC && sent < total_records {
                calls_with_room += 1;
                // Whenever a record fits in the free space, one is queued.
                assert!(queued >= REC, "free {free} but queued {queued}");
            }
            n.b.recv_with(cb, &mut |data| {
                let mut r = 0;
                while data.len() - r >= REC {
                    bad += pattern.mismatches(got * REC as u64, &data[r..r + REC]);
                    r += REC;
                    got += 1;
                }
                r
            })
            .unwrap();
            got == total_records
        })
    );
    assert_eq!(bad, 0);
    assert!(calls_with_room > 100);
}

/// Sends `total` records of `rec` bytes through rings of the given sizes,
/// as a framer does (whole records or nothing), checking every byte, and
/// returns each buffer length offered right after a refused one. The
/// receiver takes one record per round, so that neither ring drains (a
/// drained ring starts over at its beginning and would not wrap).
fn records_across_wraps(rec: usize, total: u64, rx: usize, tx: usize) -> Vec<(usize, usize)> {
    let cfg = MemoryLinkConfig {
        tuning: TcpTuning {
            rx_buffer: rx,
            tx_buffer: tx,
            ..Default::default()
        },
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(cfg);
    let pattern = Pattern::new(91);
    let (mut sent, mut got, mut bad) = (0u64, 0u64, 0u64);
    let mut retries = Vec::new();
    assert!(
        net.run_virtual(&mut now, 1_000_000, Duration::from_secs(600), |n| {
            let mut refused = None;
            n.a.send_with(ca, &mut |buf| {
                if let Some(short) = refused.take() {
                    retries.push((short, buf.len()));
                }
                let mut w = 0;
                while buf.len() - w >= rec && sent < total {
                    pattern.fill(sent * rec as u64, &mut buf[w..w + rec]);
                    w += rec;
                    sent += 1;
                }
                if w == 0 && sent < total {
                    refused = Some(buf.len());
                }
                w
            })
            .unwrap();
            n.b.recv_with(cb, &mut |data| {
                if data.len() < rec {
                    return 0;
                }
                bad += pattern.mismatches(got * rec as u64, &data[..rec]);
                got += 1;
                rec
            })
            .unwrap();
            got == total
        })
    );
    assert_eq!(bad, 0);
    retries
}

#[test]
fn after_a_short_tail_the_wrap_scratch_is_two_segments_longer() {
    // The ring's tail is too short for a record: the next offer is a
    // scratch just past it, so only what straddles the wrap is copied.
    let mss = 1460;
    let retries = records_across_wraps(REC, 400, 4 * REC + 333, 3 * REC + 517);
    assert!(retries.len() > 20, "{} wraps", retries.len());
    for (short, offered) in retries {
        assert!(short < REC);
        assert!(
            offered >= REC && offered <= short + 2 * mss,
            "{short} -> {offered}"
        );
    }
}

#[test]
fn records_longer_than_two_segments_still_cross_wraps() {
    // 5000-byte records: the narrow scratch is refused too, the wide one
    // (as much as is free) takes them.
    let rec = 5000;
    let retries = records_across_wraps(rec, 200, 4 * rec + 333, 3 * rec + 517);
    assert!(retries
        .iter()
        .any(|&(short, offered)| offered == short + 2 * 1460));
    assert!(retries.iter().any(|&(_, offered)| offered >= rec));
}

#[test]
fn flush_pushes_an_idle_stream_and_corks_behind_unacknowledged_data() {
    let (mut net, mut now, ca, cb) = connected(MemoryLinkConfig::default());
    // Let the handshake's last ACK settle so A has nothing outstanding.
    net.poll(now);
    let sent = |n: &MemoryNet| n.a.device().stats().frames_sent;
    let put = |n: &mut MemoryNet, tag: u8| {
        let q = n.a.send_with(ca, &mut |b| {
            b[..100].fill(tag);
            100
        });
        assert_eq!(q.unwrap(), 100);
    };
    let before = sent(&net);
    assert!(!net.a.flush_due(), "nothing queued");
    put(&mut net, 0);
    assert!(net.a.flush_due(), "idle stream: due at once");
    assert!(net.a.flush(now), "idle stream: pushed at once");
    assert!(!net.a.flush_due());
    assert_eq!(sent(&net), before + 1);
    // While that segment is unacknowledged, small writes are corked...
    for tag in 1..=10 {
        put(&mut net, tag);
        assert!(!net.a.flush_due(), "corked: the flush is not due");
        assert!(!net.a.flush(now));
    }
    assert_eq!(sent(&net), before + 1);
    // ...and the next poll sends them together in one segment.
    net.a.poll(now);
    assert_eq!(sent(&net), before + 2);
    let mut got = Vec::new();
    assert!(
        net.run_virtual(&mut now, 1000, Duration::from_secs(5), |n| {
            n.b.recv_with(cb, &mut |d| {
                got.extend_from_slice(d);
                d.len()
            })
            .unwrap();
            got.len() == 1100
        })
    );
    let want: Vec<u8> = (0..=10u8).flat_map(|t| [t; 100]).collect();
    assert_eq!(got, want);
    // Everything acknowledged: the next write is pushed at once again.
    assert!(
        net.run_virtual(&mut now, 1000, Duration::from_secs(5), |n| {
            n.a.send_capacity(ca) == n.a.tuning().tx_buffer
        })
    );
    let before = sent(&net);
    put(&mut net, 11);
    assert!(net.a.flush(now));
    assert_eq!(sent(&net), before + 1);
}

#[test]
fn a_flush_with_nothing_queued_sends_nothing() {
    let (mut net, now, _ca, _cb) = connected(MemoryLinkConfig::default());
    net.poll(now);
    let before = net.a.device().stats().frames_sent;
    assert!(!net.a.flush(now));
    assert_eq!(net.a.device().stats().frames_sent, before);
}

#[test]
fn hosts_in_two_threads_wait_instead_of_spinning() {
    let cfg = MemoryLinkConfig::default();
    let (mut a, mut b) = MemoryLink::pair(&cfg).unwrap();
    let l = b.listen(PORT).unwrap();
    let total = 4 * MIB;
    let deadline = Instant::now() + Duration::from_secs(60);
    let server = std::thread::spawn(move || {
        let mut rx = Receiver::new(5, total);
        let mut s = None;
        let mut waits = 0u64;
        while Instant::now() < deadline && !rx.done() {
            let now = Instant::now();
            let moved = b.poll(now);
            if s.is_none() {
                s = b.accept(l);
            }
            if let Some(s) = s {
                rx.drain(&mut b, s).unwrap();
            }
            if !moved {
                let d = b.poll_delay(Instant::now());
                b.wait(Some(d.unwrap_or(Duration::from_millis(50))));
                waits += 1;
            }
        }
        // Keep acknowledging until the client is satisfied.
        for _ in 0..100 {
            b.poll(Instant::now());
            b.wait(Some(Duration::from_millis(1)));
        }
        (rx.received, rx.bad_bytes, waits)
    });
    let c = a.connect(cfg.endpoint_b(PORT)).unwrap();
    let mut tx = Sender::new(5, total);
    while Instant::now() < deadline && !tx.done() {
        let moved = a.poll(Instant::now());
        if a.state(c) == StreamState::Established {
            tx.pump(&mut a, c).unwrap();
        }
        if !moved {
            let d = a.poll_delay(Instant::now());
            a.wait(Some(d.unwrap_or(Duration::from_millis(50))));
        }
    }
    for _ in 0..200 {
        a.poll(Instant::now());
        a.wait(Some(Duration::from_millis(1)));
    }
    let (received, bad, waits) = server.join().unwrap();
    assert_eq!(received, total);
    assert_eq!(bad, 0);
    assert!(waits > 0, "the server never slept");
}

#[test]
fn capture_holds_valid_tcp_frames() {
    use smoltcp::wire::{EthernetFrame, IpAddress, Ipv4Packet, TcpPacket};
    let buf = SharedBuf::default();
    let (mut net, mut now, ca, cb) = connected(MemoryLinkConfig::default());
    let before = net.a.device().stats();
    net.a
        .device_mut()
        .set_pcap(Some(PcapSink::new(Box::new(buf.clone())).unwrap()));
    transfer(&mut net, &mut now, (ca, cb), 200_000, 50_000);
    let recorded = net.a.device().pcap().unwrap().frames();
    drop(net.a.device_mut().take_pcap());
    let (_, linktype, recs) = parse(&buf.0.lock().unwrap()).unwrap();
    assert_eq!(linktype, 1);
    assert_eq!(recs.len() as u64, recorded);
    let st = net.a.device().stats();
    assert_eq!(
        recorded,
        st.frames_sent + st.frames_received - before.frames_sent - before.frames_received
    );
    let mut payload = 0;
    for (_, orig, frame) in &recs {
        assert_eq!(*orig as usize, frame.len());
        let eth = EthernetFrame::new_checked(&frame[..]).unwrap();
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert!(ip.verify_checksum());
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(tcp.verify_checksum(
            &IpAddress::Ipv4(ip.src_addr()),
            &IpAddress::Ipv4(ip.dst_addr())
        ));
        payload += tcp.payload().len();
    }
    assert_eq!(payload, 250_000);
    crate::pcap_check::tshark_accepts(&buf.0.lock().unwrap(), "memory");
}

/// A stream that sent and went idle is checked for idleness on a deadline
/// of its own, so a device that sleeps until it is due still gives back
/// the stream's sending memory within two checks; then that deadline is
/// gone.
#[test]
fn a_stream_gone_idle_is_released_on_a_deadline() {
    let (mut net, mut now, ca, cb) = connected(MemoryLinkConfig::default());
    let q = net.a.send_with(ca, &mut |b| {
        b[..1000].fill(7);
        1000
    });
    assert_eq!(q.unwrap(), 1000);
    let mut got = 0;
    assert!(
        net.run_virtual(&mut now, 1000, Duration::from_secs(5), |n| {
            got += n.b.recv_with(cb, &mut |d| d.len()).unwrap();
            got == 1000 && n.a.send_capacity(ca) == n.a.tuning().tx_buffer
        })
    );
    // Everything acknowledged: the idle check is the first thing due.
    let check = Duration::from_secs(1);
    let start = now;
    let mut wakes = 0;
    while let Some(d) = net.a.poll_delay(now).filter(|&d| d <= check) {
        now += d.max(Duration::from_micros(100));
        net.poll(now);
        wakes += 1;
        assert!(wakes < 100, "still due after {:?}", now - start);
    }
    assert!(wakes >= 1, "no idle check was due");
    assert!(now - start <= 2 * check, "{:?}", now - start);
}

#[test]
fn idle_link_has_no_deadline() {
    let mut net = MemoryNet::new(MemoryLinkConfig::default()).unwrap();
    let now = Instant::now();
    assert!(!net.poll(now));
    assert_eq!(net.poll_delay(now), None);
    net.b.listen(PORT).unwrap();
    assert_eq!(net.poll_delay(now), None);
}

mod framing {
    //! Length-prefixed records of random sizes through rings of random
    //! sizes: the producer only writes whole records, the consumer only
    //! takes whole records, as MPA framing does.
    use super::*;
    use crate::rng::SplitMix64;
    use proptest::prelude::*;

    /// Record `i`'s payload length, from the seed.
    fn lengths(seed: u64, n: usize, max: usize) -> Vec<usize> {
        let mut r = SplitMix64::new(seed);
        (0..n).map(|_| 1 + r.below(max as u64) as usize).collect()
    }

    fn payload_byte(record: usize, i: usize) -> u8 {
        (record.wrapping_mul(31) ^ i.wrapping_mul(7)) as u8
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn random_records_through_random_rings(
            rx in 600usize..20_000,
            tx in 600usize..20_000,
            seed in any::<u64>(),
            loss in prop_oneof![Just(0.0), Just(0.02)],
        ) {
            let max_payload = rx.min(tx) - 2;
            let lens = lengths(seed, 150, max_payload.min(4000));
            let cfg = MemoryLinkConfig {
                tuning: TcpTuning { rx_buffer: rx, tx_buffer: tx, ..Default::default() },
                faults: FaultConfig { loss, ..Default::default() },
                seed,
                ..Default::default()
            };
            let (mut net, mut now, ca, cb) = connected(cfg);
            let (mut next_out, mut next_in, mut errors) = (0usize, 0usize, 0usize);
            let ok = net.run_virtual(&mut now, 2_000_000, Duration::from_secs(3600), |n| {
                n.a.send_with(ca, &mut |buf| {
                    let mut w = 0;
                    while next_out < lens.len() && buf.len() - w >= 2 + lens[next_out] {
                        let len = lens[next_out];
                        buf[w..w + 2].copy_from_slice(&(len as u16).to_be_bytes());
                        for i in 0..len {
                            buf[w + 2 + i] = payload_byte(next_out, i);
                        }
                        w += 2 + len;
                        next_out += 1;
                    }
                    w
                }).unwrap();
                n.b.recv_with(cb, &mut |data| {
                    let mut r = 0;
                    while data.len() - r >= 2 {
                        let len = usize::from(u16::from_be_bytes([data[r], data[r + 1]]));
                        if data.len() - r < 2 + len {
                            break;
                        }
                        if lens.get(next_in) != Some(&len)
                            || (0..len).any(|i| data[r + 2 + i] != payload_byte(next_in, i))
                        {
                            errors += 1;
                        }
                        r += 2 + len;
                        next_in += 1;
                    }
                    r
                }).unwrap();
                next_in == lens.len()
            });
            prop_assert!(ok, "stalled at record {next_in} of {}", lens.len());
            prop_assert_eq!(errors, 0);
        }
    }
}

#[test]
fn poll_delay_points_at_the_next_delayed_frame() {
    let cfg = MemoryLinkConfig {
        faults: FaultConfig {
            latency: Duration::from_millis(10),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut net = MemoryNet::new(cfg).unwrap();
    net.b.listen(PORT).unwrap();
    let t0 = Instant::now();
    net.a.connect(net.config().endpoint_b(PORT)).unwrap();
    // A sends its ARP request now; it reaches B 10 ms later.
    assert!(net.a.poll(t0));
    let d = net.b.poll_delay(t0).unwrap();
    assert_eq!(d, Duration::from_millis(10));
    assert!(!net.b.poll(t0 + Duration::from_millis(9)), "not due yet");
    assert!(net.b.poll(t0 + Duration::from_millis(10)), "due now");
}

#[test]
fn full_queue_drops_are_counted_and_recovered() {
    // A tiny queue forces tail drops on a burst; TCP still delivers.
    let cfg = MemoryLinkConfig {
        queue_frames: 16,
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(cfg);
    let out = transfer(&mut net, &mut now, (ca, cb), MIB, 0);
    assert_eq!(out.at_b.bad_bytes, 0);
    assert!(net.a.device().overflow_drops() > 0);
}

#[test]
fn waker_ends_a_wait_and_listen_port_is_the_port() {
    let (mut a, mut b) = MemoryLink::pair(&MemoryLinkConfig::default()).unwrap();
    let l = b.listen(7174).unwrap();
    assert_eq!(b.listen_port(l), Some(7174));
    let wake = a.waker().expect("memory links can be woken");
    let th = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        wake();
    });
    let start = Instant::now();
    a.wait(Some(Duration::from_secs(10)));
    assert!(start.elapsed() < Duration::from_secs(5), "woken early");
    th.join().unwrap();
    let start = Instant::now();
    a.wait(Some(Duration::from_millis(15)));
    assert!(
        start.elapsed() >= Duration::from_millis(15),
        "wake consumed"
    );
}

#[test]
fn a_closed_stream_whose_peer_never_closes_is_released_after_the_linger() {
    let (mut net, mut now, ca, cb) = connected(MemoryLinkConfig::default());
    net.b
        .send_with(cb, &mut |b| {
            b[..3].copy_from_slice(b"bye");
            3
        })
        .unwrap();
    net.b.close(cb);
    // A takes the bytes and the FIN, then neither reads nor closes again.
    let mut got = Vec::new();
    assert!(
        net.run_virtual(&mut now, 10_000, Duration::from_secs(5), |n| {
            let _ = n.a.recv_with(ca, &mut |d| {
                got.extend_from_slice(d);
                d.len()
            });
            n.a.state(ca) == StreamState::PeerClosed
        })
    );
    assert_eq!(got, b"bye");
    assert_eq!(net.b.state(cb), StreamState::Closing, "FIN-WAIT-2");
    assert_eq!(net.b.stream_count(), 1);
    let closed_at = now;
    assert!(
        net.run_virtual(&mut now, 100_000, 2 * crate::CLOSE_LINGER, |n| {
            n.b.stream_count() == 0
        }),
        "a closed stream outlived its linger"
    );
    assert!(now.saturating_duration_since(closed_at) >= crate::CLOSE_LINGER);
    assert_eq!(net.b.state(cb), StreamState::Closed);
    assert!(
        net.run_virtual(&mut now, 10_000, Duration::from_secs(5), |n| {
            n.a.state(ca) == StreamState::Reset
        }),
        "the silent peer is reset"
    );
}

#[test]
fn loss_stats_count_resends_and_outlive_the_socket() {
    // A clean link resends nothing.
    let (mut net, mut now, ca, cb) = connected(MemoryLinkConfig::default());
    transfer(&mut net, &mut now, (ca, cb), MIB, 0);
    let clean = net.a.tcp_loss_stats().unwrap();
    assert_eq!(clean.sent_bytes, MIB);
    let nothing_resent = TcpLossStats {
        sent_bytes: clean.sent_bytes,
        ..TcpLossStats::default()
    };
    assert_eq!(clean, nothing_resent);
    // 2% loss: the sender's resends and recoveries are counted...
    let f = FaultConfig {
        loss: 0.02,
        ..Default::default()
    };
    let (mut net, mut now, ca, cb) = connected(faulty(f, 6));
    transfer(&mut net, &mut now, (ca, cb), 2 * MIB, 0);
    let live = net.a.tcp_loss_stats().unwrap();
    assert!(net.a.device().stats().lost > 10);
    assert!(live.retransmitted_segments > 10, "{live:?}");
    assert!(
        live.retransmitted_bytes >= live.retransmitted_segments,
        "{live:?}"
    );
    assert!(live.fast_recoveries + live.timeouts > 0, "{live:?}");
    // ...and still there once both ends closed and the socket is freed.
    let sockets_before = net.a.socket_count();
    net.a.close(ca);
    net.b.close(cb);
    assert!(
        net.run_virtual(&mut now, 100_000, Duration::from_secs(60), |n| {
            n.a.state(ca) == StreamState::Closed && n.b.state(cb) == StreamState::Closed
        })
    );
    net.poll(now);
    assert!(net.a.socket_count() < sockets_before);
    let after = net.a.tcp_loss_stats().unwrap();
    assert!(after.retransmitted_segments >= live.retransmitted_segments);
    assert!(after.timeouts >= live.timeouts);
}
