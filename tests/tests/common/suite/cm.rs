//! The connection manager end to end: many connections on one listener,
//! the backlog, unlistening, private data and IRD/ORD in both directions,
//! peer-to-peer RTRs, MPA revision 1, CRC policies, markers, and the local
//! misuse errors of the API.

use std::time::Instant;

use verbs::{
    wr, AcceptParams, Access, CmEvent, ConnectParams, CrcPolicy, Device, DisconnectReason,
    ListenOptions, QpInit, QpState, QueuePair, Rtr, RtrSet, SendOp, SendWr, VerbsError, WcOpcode,
    WcStatus,
};

use super::{assert_exactly, assert_wc, guarded, holding, MakeNet, REMOTE};
use crate::common::capture::fpdus;
use crate::common::{connect, pattern, try_connect, Net, Opts, LIMIT};

/// Drives both devices until `done`, or panics at the limit.
fn drive(net: &Net, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < LIMIT, "{}: stuck", net.name);
        let a = net.client.progress();
        let b = net.server.progress();
        if !(a || b) {
            std::thread::yield_now();
        }
    }
}

fn qp_on(dev: &Device) -> (QueuePair, verbs::CompletionQueue, verbs::ProtectionDomain) {
    let pd = dev.alloc_pd();
    let cq = dev.create_cq(256);
    let qp = dev.create_qp(&pd, QpInit::new(&cq)).unwrap();
    (qp, cq, pd)
}

/// Eight queue pairs of one device connect to one listener, four at a
/// time (a burst beyond the smoltcp transport's armed listening sockets,
/// `TcpTuning::backlog`, is refused at the TCP level); each connection
/// carries its own traffic.
pub fn many_connections_one_listener(make: MakeNet) {
    const N: usize = 8;
    let net = make();
    let listener = net
        .server
        .listen(net.listen_port, ListenOptions::default())
        .unwrap();
    let addr = net.addr(listener.port());
    let clients: Vec<_> = (0..N).map(|_| qp_on(&net.client)).collect();
    let connect = |i: usize| {
        let params = ConnectParams::default().private_data(vec![i as u8; 3]);
        clients[i].0.connect(addr, params).unwrap();
    };
    (0..4).for_each(connect);
    let mut servers: Vec<Option<(QueuePair, verbs::CompletionQueue, verbs::ProtectionDomain)>> =
        (0..N).map(|_| None).collect();
    let mut up = [false; N];
    let mut s_up = [false; N];
    let mut second_wave = false;
    drive(&net, || {
        if !second_wave && up[..4].iter().all(|&x| x) {
            (4..N).for_each(connect);
            second_wave = true;
        }
        while let Some(req) = listener.try_request() {
            let i = req.private_data[0] as usize;
            let s = qp_on(&net.server);
            req.accept(&s.0, AcceptParams::default()).unwrap();
            servers[i] = Some(s);
        }
        for (i, (qp, _, _)) in clients.iter().enumerate() {
            if let Some(ev) = qp.try_event() {
                assert!(
                    matches!(ev, CmEvent::Established(_)),
                    "{}: {ev:?}",
                    net.name
                );
                up[i] = true;
            }
        }
        for (i, s) in servers.iter().enumerate() {
            if let Some((qp, _, _)) = s {
                if let Some(ev) = qp.try_event() {
                    assert!(matches!(ev, CmEvent::Established(_)), "{ev:?}");
                    s_up[i] = true;
                }
            }
        }
        up.iter().all(|&x| x) && s_up.iter().all(|&x| x)
    });
    let mut bufs = Vec::new();
    for (i, (qp, _, pd)) in clients.iter().enumerate() {
        let (sqp, _, spd) = servers[i].as_ref().unwrap();
        let rx = guarded(spd, 5000, Access::LOCAL_WRITE);
        let src = holding(pd, 0, &pattern(5000, i as u8), 0, Access::NONE);
        sqp.post_recv(wr::recv(i as u64, vec![rx.sge_all()]))
            .unwrap();
        qp.post_send(wr::send(i as u64, vec![src.sge_all()]))
            .unwrap();
        bufs.push(rx);
    }
    let mut got = [false; N];
    drive(&net, || {
        for (i, s) in servers.iter().enumerate() {
            if let Some(w) = s.as_ref().unwrap().1.poll_one().unwrap() {
                assert_eq!(
                    (w.wr_id, w.status, w.byte_len),
                    (i as u64, WcStatus::Success, 5000)
                );
                assert_eq!(w.qp_num, s.as_ref().unwrap().0.num());
                got[i] = true;
            }
        }
        got.iter().all(|&x| x)
    });
    for (i, rx) in bufs.iter().enumerate() {
        assert_exactly(rx, 0, &pattern(5000, i as u8), &format!("connection {i}"));
    }
}

/// More connections than the backlog while the application takes none:
/// the extra ones are refused at once, the others wait and succeed.
pub fn backlog_refuses_the_excess(make: MakeNet) {
    let net = make();
    let opts = ListenOptions::default().with_backlog(2);
    let listener = net.server.listen(net.listen_port, opts).unwrap();
    let addr = net.addr(listener.port());
    let clients: Vec<_> = (0..5).map(|_| qp_on(&net.client)).collect();
    let mut outcome: Vec<Option<CmEvent>> = vec![None; 5];
    for (qp, _, _) in &clients {
        qp.connect(addr, ConnectParams::default()).unwrap();
    }
    // Without taking requests: three fail, two wait in start-up.
    drive(&net, || {
        for (i, (qp, _, _)) in clients.iter().enumerate() {
            if let Some(ev) = qp.try_event() {
                outcome[i] = Some(ev);
            }
        }
        outcome.iter().filter(|o| o.is_some()).count() == 3
    });
    for ev in outcome.iter().flatten() {
        assert!(
            matches!(ev, CmEvent::ConnectFailed(_)),
            "{}: {ev:?}",
            net.name
        );
    }
    let mut accepted = Vec::new();
    drive(&net, || {
        while let Some(req) = listener.try_request() {
            let s = qp_on(&net.server);
            req.accept(&s.0, AcceptParams::default()).unwrap();
            accepted.push(s);
        }
        for (i, (qp, _, _)) in clients.iter().enumerate() {
            if outcome[i].is_none() {
                if let Some(ev) = qp.try_event() {
                    assert!(matches!(ev, CmEvent::Established(_)), "{ev:?}");
                    outcome[i] = Some(ev);
                }
            }
        }
        outcome.iter().all(Option::is_some)
    });
    assert_eq!(accepted.len(), 2);
}

/// Dropping a listener resets connections still in start-up (offered or
/// not) at once instead of leaving them to time out; the port can be
/// listened on again.
pub fn unlisten_resets_pending_startups(make: MakeNet) {
    let net = make();
    let listener = net
        .server
        .listen(net.listen_port, ListenOptions::default())
        .unwrap();
    let port = listener.port();
    let (qp, _, _) = qp_on(&net.client);
    let mut params = ConnectParams::default();
    params.mpa.timeout = std::time::Duration::from_secs(30);
    qp.connect(net.addr(port), params).unwrap();
    // Wait until the request has arrived (and leave it unanswered).
    let mut offered = None;
    drive(&net, || {
        offered = offered.take().or_else(|| listener.try_request());
        offered.is_some()
    });
    std::mem::forget(offered);
    let start = Instant::now();
    drop(listener);
    let mut ev = None;
    drive(&net, || {
        ev = qp.try_event();
        ev.is_some()
    });
    assert!(
        matches!(ev, Some(CmEvent::ConnectFailed(_))),
        "{}: {ev:?}",
        net.name
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    let again = net.server.listen(port, ListenOptions::default());
    assert!(again.is_ok(), "{}: port free again", net.name);
}

/// A request dropped without an answer is rejected, with no private data.
pub fn unanswered_request_is_rejected(make: MakeNet) {
    let net = make();
    let listener = net
        .server
        .listen(net.listen_port, ListenOptions::default())
        .unwrap();
    let (qp, _, _) = qp_on(&net.client);
    qp.connect(net.addr(listener.port()), ConnectParams::default())
        .unwrap();
    let mut ev = None;
    drive(&net, || {
        drop(listener.try_request());
        ev = qp.try_event();
        ev.is_some()
    });
    assert_eq!(
        ev,
        Some(CmEvent::Rejected {
            private_data: Vec::new()
        }),
        "{}",
        net.name
    );
}

/// Private data and IRD/ORD travel both ways; each side's ORD is limited
/// by the other's IRD.
pub fn private_data_and_ird_ord(make: MakeNet) {
    let net = make();
    let listener = net
        .server
        .listen(net.listen_port, ListenOptions::default())
        .unwrap();
    let (cqp, _, _) = qp_on(&net.client);
    let (sqp, _, _) = qp_on(&net.server);
    let params = ConnectParams::default()
        .private_data(b"hello".to_vec())
        .ird(8)
        .ord(3);
    cqp.connect(net.addr(listener.port()), params).unwrap();
    let (mut c, mut s) = (None, None);
    let mut answered = false;
    drive(&net, || {
        if !answered {
            if let Some(req) = listener.try_request() {
                assert_eq!(req.private_data, b"hello");
                assert_eq!((req.ird, req.ord), (Some(8), Some(3)));
                assert_eq!(req.revision, 2);
                assert!(req.crc, "CRC is asked for by default");
                assert!(!req.markers && req.p2p.is_empty());
                assert!(req.peer_addr.is_some());
                let accept = AcceptParams::default()
                    .private_data(b"welcome".to_vec())
                    .ird(2)
                    .ord(5);
                req.accept(&sqp, accept).unwrap();
                answered = true;
            }
        }
        if let Some(CmEvent::Established(i)) = cqp.try_event() {
            c = Some(i);
        }
        if let Some(CmEvent::Established(i)) = sqp.try_event() {
            s = Some(i);
        }
        c.is_some() && s.is_some()
    });
    let (c, s) = (c.unwrap(), s.unwrap());
    assert_eq!(c.private_data, b"welcome");
    assert_eq!(s.private_data, b"hello");
    assert_eq!((c.ird, c.ord), (8, 2));
    assert_eq!((s.ird, s.ord), (2, 5));
    assert_eq!(c.peer_addr, s.local_addr);
    assert_eq!(s.peer_addr, c.local_addr);
    assert!(c.crc && s.crc && c.revision == 2);
    assert_eq!(cqp.state(), QpState::Rts);
}

/// Peer-to-peer mode with each RTR kind: the initiator sends the
/// zero-length RTR first (it completes nothing anywhere), and the
/// responder may send first.
pub fn peer_to_peer_each_rtr(make: MakeNet) {
    for rtr in [Rtr::Write, Rtr::Read, Rtr::Send] {
        let mut opts = Opts::default();
        opts.connect.mpa.p2p = RtrSet::only(rtr);
        opts.listen.mpa.p2p = RtrSet::ALL;
        let p = connect(make(), opts);
        assert_eq!(
            (p.client_info.rtr, p.server_info.rtr),
            (Some(rtr), Some(rtr))
        );
        // The server speaks first.
        let rx = guarded(&p.client_pd, 64, Access::LOCAL_WRITE);
        p.client_qp
            .post_recv(wr::recv(1, vec![rx.sge_all()]))
            .unwrap();
        let src = holding(&p.server_pd, 0, b"server first", 0, REMOTE);
        p.server_qp
            .post_send(wr::send(2, vec![src.sge_all()]))
            .unwrap();
        let c = p.client_completions(1);
        assert_wc(&c[0], 1, WcStatus::Success, WcOpcode::Recv, 12);
        let s = p.server_completions(1);
        assert_wc(&s[0], 2, WcStatus::Success, WcOpcode::Send, 12);
        // Nothing else completed: the RTR took no receive and no READ slot.
        assert!(p.settle(&p.client_cq, 20).is_empty());
        assert!(p.settle(&p.server_cq, 20).is_empty());
        // Then ordinary traffic the other way, including READs.
        let srx = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
        p.server_qp
            .post_recv(wr::recv(3, vec![srx.sge_all()]))
            .unwrap();
        p.client_qp
            .post_send(wr::send(4, vec![rx.sge(0, 5).unwrap()]))
            .unwrap();
        let sink = guarded(&p.client_pd, 12, Access::LOCAL_WRITE);
        p.client_qp
            .post_send(wr::read(5, sink.sge_all(), src.rkey(), src.addr()))
            .unwrap_or_else(|e| panic!("{rtr:?}: {e}"));
        assert!(p.server_completions(1)[0].is_success());
        let c = p.client_completions(2);
        assert!(c.iter().all(|w| w.is_success()), "{c:?}");
        if let Some(cap) = &p.capture {
            let (events, _) = cap.decode();
            let first = fpdus(&events).into_iter().next().expect("an FPDU");
            let want = match rtr {
                Rtr::Write => rdmap::Opcode::RdmaWrite,
                Rtr::Read => rdmap::Opcode::ReadRequest,
                Rtr::Send => rdmap::Opcode::Send,
            };
            assert_eq!(first.opcode, Some(want), "{}: the RTR goes first", p.name);
            assert_eq!(first.payload_len, if rtr == Rtr::Read { 28 } else { 0 });
        }
    }
}

/// A listener with default options grants peer-to-peer to an initiator
/// that asks, as siw does (WRITE if offered, else READ); naming kinds
/// narrows it, and an initiator offering none of them is rejected.
pub fn peer_to_peer_granted_by_default(make: MakeNet) {
    let cxgb_style = RtrSet {
        send: false,
        write: true,
        read: true,
    };
    for (offered, granted) in [
        (cxgb_style, Rtr::Write),
        (RtrSet::only(Rtr::Read), Rtr::Read),
        (RtrSet::only(Rtr::Send), Rtr::Send),
    ] {
        let mut opts = Opts::default();
        opts.connect.mpa.p2p = offered;
        let p = connect(make(), opts);
        assert_eq!(
            (p.client_info.rtr, p.server_info.rtr),
            (Some(granted), Some(granted)),
            "{}: {offered:?}",
            p.name
        );
    }
    let mut opts = Opts::default();
    opts.connect.mpa.p2p = RtrSet::only(Rtr::Write);
    opts.listen.mpa.p2p = RtrSet::only(Rtr::Read);
    match try_connect(make(), opts) {
        Err(e) => assert!(matches!(e.1, CmEvent::Rejected { .. }), "{:?}", e.1),
        Ok(p) => panic!("{}: connected with {:?}", p.name, p.client_info.rtr),
    }
}

/// Without the RTR of peer-to-peer mode the responder may not send first
/// (RFC 5044 section 7.1.2): its Send waits for the initiator's first FPDU.
pub fn responder_waits_for_the_first_fpdu(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let rx = guarded(&p.client_pd, 64, Access::LOCAL_WRITE);
    p.client_qp
        .post_recv(wr::recv(1, vec![rx.sge_all()]))
        .unwrap();
    p.server_qp.post_send(wr::send(2, vec![])).unwrap();
    assert!(
        p.settle(&p.client_cq, 200).is_empty(),
        "{}: nothing yet",
        p.name
    );
    let srx = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(3, vec![srx.sge_all()]))
        .unwrap();
    p.client_qp.post_send(wr::send(4, vec![])).unwrap();
    let c = p.client_completions(2);
    assert!(c.iter().all(|w| w.is_success()), "{c:?}");
    assert!(c.iter().any(|w| w.wr_id == 1));
}

/// MPA revision 1 (RFC 5044, no IRD/ORD exchange) carries RDMA too.
pub fn mpa_revision_1(make: MakeNet) {
    let mut opts = Opts::default();
    opts.connect.mpa.revision = 1;
    opts.listen.mpa.revision = 1;
    let p = connect(make(), opts);
    assert_eq!((p.client_info.revision, p.server_info.revision), (1, 1));
    let src = holding(&p.server_pd, 0, &pattern(10_000, 1), 0, REMOTE);
    let sink = guarded(&p.client_pd, 10_000, Access::LOCAL_WRITE);
    p.client_qp
        .post_send(wr::read(1, sink.sge_all(), src.rkey(), src.addr()))
        .unwrap();
    assert!(p.client_completions(1)[0].is_success());
    assert_exactly(&sink, 0, &pattern(10_000, 1), "read over MPA rev 1");
}

/// CRC is used when either side asks; a side that never uses it refuses a
/// side that requires it: a responder with a reject reply (which reaches
/// the initiator before the stream closes), an initiator by failing.
pub fn crc_policies(make: MakeNet) {
    use CrcPolicy::*;
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Refused {
        ByResponder,
        ByInitiator,
    }
    use Refused::*;
    for (client, server, want) in [
        (Off, Off, Ok(false)),
        (Off, Preferred, Ok(true)),
        (Preferred, Off, Ok(true)),
        (Required, Required, Ok(true)),
        (Never, Never, Ok(false)),
        (Required, Never, Err(ByResponder)),
        (Never, Required, Err(ByInitiator)),
    ] {
        let mut opts = Opts::default();
        opts.connect.mpa.crc = client;
        opts.listen.mpa.crc = server;
        match (try_connect(make(), opts), want) {
            (Ok(p), Ok(crc)) => {
                assert_eq!(
                    (p.client_info.crc, p.server_info.crc),
                    (crc, crc),
                    "{client:?}/{server:?}"
                );
                let rx = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
                p.server_qp
                    .post_recv(wr::recv(1, vec![rx.sge_all()]))
                    .unwrap();
                p.client_qp.post_send(wr::send(2, vec![])).unwrap();
                assert!(p.server_completions(1)[0].is_success());
            }
            (Err(e), Err(by)) => {
                let got = match e.1 {
                    CmEvent::Rejected { .. } => ByResponder,
                    CmEvent::ConnectFailed(_) => ByInitiator,
                    other => panic!("{client:?}/{server:?}: {other:?}"),
                };
                assert_eq!(got, by, "{}: {client:?}/{server:?}: {:?}", e.0, e.1);
            }
            (Ok(_), Err(_)) => panic!("{client:?}/{server:?} connected"),
            (Err(e), Ok(_)) => panic!("{client:?}/{server:?}: {:?}", e.1),
        }
    }
}

/// Markers (RFC 5044 section 6) in both directions: every size still
/// lands exactly, and the capture decodes.
pub fn markers_both_ways(make: MakeNet) {
    let mut opts = Opts::crc();
    opts.connect.mpa.markers = true;
    opts.listen.mpa.markers = true;
    let p = connect(make(), opts);
    assert!(p.client_info.markers_rx && p.client_info.markers_tx);
    assert!(p.server_info.markers_rx && p.server_info.markers_tx);
    for (i, n) in [1usize, 500, 511, 512, 513, 1432, 5000, 70_000, 300_000]
        .into_iter()
        .enumerate()
    {
        let id = i as u64;
        let data = pattern(n, i as u8);
        let src = holding(&p.client_pd, 0, &data, 0, REMOTE);
        let rx = guarded(&p.server_pd, n, Access::LOCAL_WRITE);
        let target = guarded(&p.server_pd, n, REMOTE);
        let sink = guarded(&p.server_pd, n, Access::LOCAL_WRITE);
        p.server_qp
            .post_recv(wr::recv(id, vec![rx.sge_all()]))
            .unwrap();
        p.client_qp
            .post_send(wr::write(
                100 + id,
                vec![src.sge_all()],
                target.rkey(),
                target.addr(),
            ))
            .unwrap();
        p.client_qp
            .post_send(wr::send(200 + id, vec![src.sge_all()]))
            .unwrap();
        p.server_qp
            .post_send(wr::read(300 + id, sink.sge_all(), src.rkey(), src.addr()))
            .unwrap();
        let s = p.server_completions(2);
        assert!(s.iter().all(|w| w.is_success()), "{s:?}");
        assert!(p.client_completions(2).iter().all(|w| w.is_success()));
        assert_exactly(&rx, 0, &data, "send with markers");
        assert_exactly(&target, 0, &data, "write with markers");
        assert_exactly(&sink, 0, &data, "read with markers");
    }
    if let Some(cap) = &p.capture {
        let (_, summary) = cap.decode();
        assert!(summary.is_clean(), "{}: {:?}", p.name, summary.problems());
    }
}

/// More completions than a queue holds: reported once as an overflow,
/// none lost, order kept.
pub fn cq_overflow_is_reported(make: MakeNet) {
    let opts = Opts {
        cq_capacity: 2,
        ..Opts::default()
    };
    let p = connect(make(), opts);
    let rx = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
    for i in 0..4 {
        p.server_qp
            .post_recv(wr::recv(i, vec![rx.sge_all()]))
            .unwrap();
        p.client_qp.post_send(wr::send(10 + i, vec![])).unwrap();
    }
    p.drive_until(|p| p.server_cq.len() == 4);
    assert!(matches!(
        p.server_cq.poll_one(),
        Err(VerbsError::CqOverflow { capacity: 2 })
    ));
    let ids: Vec<_> = (0..4)
        .map(|_| p.server_cq.poll_one().unwrap().unwrap().wr_id)
        .collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    assert!(p.server_cq.poll_one().unwrap().is_none());
}

/// Local misuse is refused at the call, never blamed on the peer.
pub fn local_misuse_is_refused(make: MakeNet) {
    let net = make();
    let (qp, _, pd) = qp_on(&net.client);
    assert!(matches!(
        qp.post_send(wr::send(1, vec![])),
        Err(VerbsError::NotConnected)
    ));
    assert_eq!(qp.state(), QpState::Init);
    let other = net.server.alloc_pd();
    let cq = net.client.create_cq(4);
    assert!(matches!(
        net.client.create_qp(&other, QpInit::new(&cq)),
        Err(VerbsError::WrongDevice)
    ));
    let mr = guarded(&pd, 16, Access::LOCAL_WRITE);
    assert!(matches!(mr.sge(10, 7), Err(VerbsError::OutOfBounds { .. })));
    drop(qp);
    let mut opts = Opts::default();
    opts.connect.ord = 0;
    let p = connect(net, opts);
    assert_eq!(p.client_info.ord, 0);
    let mr = guarded(&p.client_pd, 16, REMOTE);
    let read = |sgl| {
        SendWr::new(
            9,
            SendOp::Read {
                remote_stag: mr.rkey(),
                remote_to: mr.addr(),
            },
            sgl,
        )
    };
    assert!(matches!(
        p.client_qp.post_send(read(vec![mr.sge(0, 8).unwrap()])),
        Err(VerbsError::Post(rdmap::PostError::NoReadCredit))
    ));
    assert!(matches!(
        p.server_qp
            .post_send(read(vec![mr.sge(0, 8).unwrap(), mr.sge(8, 8).unwrap()])),
        Err(VerbsError::Post(rdmap::PostError::ReadSgl(2)))
    ));
    assert!(matches!(
        p.client_qp
            .connect(p.client_info.peer_addr.unwrap(), ConnectParams::default()),
        Err(VerbsError::AlreadyConnected)
    ));
    // Nothing was sent by any of it: the connection is still healthy.
    let rx = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(1, vec![rx.sge_all()]))
        .unwrap();
    p.client_qp.post_send(wr::send(2, vec![])).unwrap();
    assert!(p.server_completions(1)[0].is_success());
    assert_eq!(p.client_qp.try_event(), None);
}

/// Dropping a connected queue pair closes its connection: the peer sees
/// an orderly close.
pub fn dropping_a_queue_pair_closes(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let rx = guarded(&p.server_pd, 8, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(1, vec![rx.sge_all()]))
        .unwrap();
    let crate::common::Pair {
        client,
        client_qp,
        server,
        server_qp,
        server_cq,
        name,
        ..
    } = p;
    drop(client_qp);
    let start = Instant::now();
    let ev = loop {
        client.progress();
        server.progress();
        if let Some(ev) = server_qp.try_event() {
            break ev;
        }
        assert!(start.elapsed() < LIMIT, "{name}: no close");
    };
    assert_eq!(
        ev,
        CmEvent::Disconnected {
            reason: DisconnectReason::PeerClosed
        },
        "{name}"
    );
    let w = server_cq.poll_one().unwrap().expect("flushed receive");
    assert_wc(&w, 1, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
}

/// Accepting onto a queue pair that is already connected fails locally;
/// the request is then rejected rather than left hanging.
pub fn failed_accept_rejects(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let listener = p.listener.as_ref().unwrap();
    let (qp, _, _) = qp_on(&p.client);
    qp.connect(p.client_info.peer_addr.unwrap(), ConnectParams::default())
        .unwrap();
    let mut ev = None;
    let mut tried = false;
    p.drive_until(|p| {
        if !tried {
            if let Some(req) = listener.try_request() {
                let r = req.accept(&p.server_qp, AcceptParams::default());
                assert!(matches!(r, Err(VerbsError::AlreadyConnected)), "{r:?}");
                tried = true;
            }
        }
        ev = qp.try_event();
        ev.is_some()
    });
    assert_eq!(
        ev,
        Some(CmEvent::Rejected {
            private_data: Vec::new()
        }),
        "{}",
        p.name
    );
    // The first connection is unharmed.
    assert_eq!(p.server_qp.state(), QpState::Rts);
    assert_eq!(p.server_qp.try_event(), None);
}
