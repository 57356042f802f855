//! Error paths: each ends in the right completion status on both sides,
//! the TERMINATE the RFCs call for (seen in the connection events and
//! decoded from the capture), and every outstanding work request flushed.

use ddp::error::TermCode;
use verbs::{
    wr, Access, CmEvent, ConnectParams, DisconnectReason, QpInit, QpState, STag, VerbsError,
    WcOpcode, WcStatus, WorkCompletion,
};

use super::{assert_wc, guarded, holding, MakeNet, REMOTE};
use crate::common::capture::terminates;
use crate::common::{connect, pattern, try_connect, Opts, Pair, Side, GUARD, LIMIT};

/// Receives posted on both sides before an error, which must all flush.
const SPARE_RECVS: u64 = 3;

fn post_spare_recvs(p: &Pair) {
    for side in [Side::Client, Side::Server] {
        let mr = guarded(p.pd(side), 64, Access::LOCAL_WRITE);
        for i in 0..SPARE_RECVS {
            p.qp(side)
                .post_recv(wr::recv(900 + i, vec![mr.sge(0, 64).unwrap()]))
                .unwrap();
        }
    }
}

fn terminated(by_peer: bool, code: TermCode) -> DisconnectReason {
    DisconnectReason::Terminated {
        by_peer,
        layer: code.layer.bits(),
        etype: code.etype,
        code: code.code,
    }
}

/// `detector` found a protocol error with `code`: it reports having sent
/// the TERMINATE, the other side reports receiving it, the capture shows
/// exactly it, and both queue pairs are in the error state.
#[track_caller]
pub fn expect_terminate(p: &Pair, detector: Side, code: TermCode) {
    let other = match detector {
        Side::Client => Side::Server,
        Side::Server => Side::Client,
    };
    assert_eq!(
        p.disconnected(detector),
        terminated(false, code),
        "{}: {detector:?} detects",
        p.name
    );
    assert_eq!(
        p.disconnected(other),
        terminated(true, code),
        "{}: {other:?} is told",
        p.name
    );
    for side in [Side::Client, Side::Server] {
        assert_eq!(p.qp(side).state(), QpState::Error, "{side:?}");
    }
    if let Some(cap) = &p.capture {
        let (events, summary) = cap.decode();
        let seen = terminates(&events);
        assert_eq!(
            seen.len(),
            1,
            "{}: one TERMINATE on the wire: {seen:?}",
            p.name
        );
        let t = seen[0];
        assert_eq!(t.from_client, detector == Side::Client);
        assert_eq!(
            (t.layer, t.etype, t.code),
            (code.layer.bits(), code.etype, code.code),
            "{}: TERMINATE on the wire",
            p.name
        );
        assert_eq!(summary.crc_errors(), 0);
        assert_eq!(summary.malformed(), 0);
    }
}

/// Collects completions from `side` until each of `ids` has completed
/// once, then checks nothing else arrives; returns them by id.
#[track_caller]
pub fn expect_completions(p: &Pair, side: Side, ids: &[u64]) -> Vec<WorkCompletion> {
    let mut got = p.completions(p.cq(side), ids.len());
    got.extend(p.settle(p.cq(side), 50));
    let mut seen: Vec<u64> = got.iter().map(|w| w.wr_id).collect();
    seen.sort_unstable();
    let mut want = ids.to_vec();
    want.sort_unstable();
    assert_eq!(
        seen, want,
        "{}: {side:?} completes each request once",
        p.name
    );
    got.sort_by_key(|w| w.wr_id);
    got
}

/// The spare receives of `side`, flushed.
#[track_caller]
fn assert_spares_flushed(wcs: &[WorkCompletion]) {
    for w in wcs
        .iter()
        .filter(|w| (900..900 + SPARE_RECVS).contains(&w.wr_id))
    {
        assert_wc(w, w.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
    }
}

/// A request the peer refused with `code`: runs `post` on the client
/// (which returns the failing request's id), checks the TERMINATE from the
/// server and that every other request flushed. Returns the completion of
/// the failing request.
fn refused_by_server(
    make: MakeNet,
    code: TermCode,
    post: impl FnOnce(&Pair) -> u64,
) -> WorkCompletion {
    let p = connect(make(), Opts::default());
    post_spare_recvs(&p);
    let id = post(&p);
    expect_terminate(&p, Side::Server, code);
    let mut ids = vec![id];
    ids.extend(900..900 + SPARE_RECVS);
    let c = expect_completions(&p, Side::Client, &ids);
    assert_spares_flushed(&c);
    let s = expect_completions(
        &p,
        Side::Server,
        &(900..900 + SPARE_RECVS).collect::<Vec<_>>(),
    );
    assert_spares_flushed(&s);
    // Later posts flush at once instead of going anywhere.
    p.client_qp.post_send(wr::send(5000, vec![])).unwrap();
    p.client_qp.post_recv(wr::recv(5001, vec![])).unwrap();
    let late = p.completions(&p.client_cq, 2);
    assert!(
        late.iter().all(|w| w.status == WcStatus::WrFlushErr),
        "{late:?}"
    );
    c.into_iter()
        .find(|w| w.wr_id == id)
        .unwrap_or_else(|| unreachable!())
}

/// A Write's completion only says it left; the TERMINATE that follows is
/// what reports the refusal (as siw does). If the Write was still queued
/// when the TERMINATE came, it carries the remote error instead.
#[track_caller]
fn assert_write_outcome(w: &WorkCompletion, remote: WcStatus) {
    assert_eq!(w.opcode, WcOpcode::RdmaWrite);
    assert!(w.status == WcStatus::Success || w.status == remote, "{w:?}");
}

fn write_to(p: &Pair, stag: STag, to: u64, len: usize) -> u64 {
    let src = holding(&p.client_pd, 0, &pattern(len, 1), 0, Access::NONE);
    p.client_qp
        .post_send(wr::write(1, vec![src.sge_all()], stag, to))
        .unwrap();
    1
}

fn read_from(p: &Pair, stag: STag, to: u64, len: usize) -> u64 {
    let sink = guarded(&p.client_pd, len, Access::LOCAL_WRITE);
    p.client_qp
        .post_send(wr::read(2, sink.sge_all(), stag, to))
        .unwrap();
    2
}

pub fn write_to_invalid_stag(make: MakeNet) {
    let w = refused_by_server(make, TermCode::DDP_T_INVALID_STAG, |p| {
        write_to(p, STag::new(0x00ab_cdef, 0x12), 0x1000, 100)
    });
    assert_write_outcome(&w, WcStatus::RemAccessErr);
}

pub fn read_from_invalid_stag(make: MakeNet) {
    let w = refused_by_server(make, TermCode::RDMAP_INVALID_STAG, |p| {
        read_from(p, STag::new(0x00ab_cdef, 0x12), 0x1000, 100)
    });
    assert_wc(&w, 2, WcStatus::RemAccessErr, WcOpcode::RdmaRead, 0);
}

pub fn write_to_deregistered_stag(make: MakeNet) {
    let w = refused_by_server(make, TermCode::DDP_T_INVALID_STAG, |p| {
        let mr = guarded(&p.server_pd, 4096, REMOTE);
        let (stag, to) = (mr.rkey(), mr.addr());
        mr.deregister();
        write_to(p, stag, to, 100)
    });
    assert_write_outcome(&w, WcStatus::RemAccessErr);
}

pub fn read_from_deregistered_stag(make: MakeNet) {
    let w = refused_by_server(make, TermCode::RDMAP_INVALID_STAG, |p| {
        let mr = guarded(&p.server_pd, 4096, REMOTE);
        let (stag, to) = (mr.rkey(), mr.addr());
        mr.deregister();
        // Registrations until one reuses the slot (they are handed out in
        // random order): it has another key, and the old STag is still
        // refused.
        let mut again = Vec::new();
        while !again
            .iter()
            .any(|m: &verbs::MemoryRegion| m.rkey().index() == stag.index())
        {
            assert!(again.len() <= verbs::mr::INDEX_BATCH, "slot never reused");
            again.push(guarded(&p.server_pd, 64, REMOTE));
        }
        assert!(again.iter().all(|m| m.rkey() != stag));
        let n = read_from(p, stag, to, 100);
        drop(again);
        n
    });
    assert_wc(&w, 2, WcStatus::RemAccessErr, WcOpcode::RdmaRead, 0);
}

pub fn write_out_of_bounds(make: MakeNet) {
    let w = refused_by_server(make, TermCode::DDP_T_BASE_BOUNDS, |p| {
        let mr = guarded(&p.server_pd, 4096, REMOTE);
        let id = write_to(p, mr.rkey(), mr.addr() + 4096 - 50, 100);
        // Nothing of the refused segment is placed, not even the part
        // that would have fitted.
        p.drive_until(|p| p.server_qp.state() == QpState::Error);
        assert!(mr.to_vec().iter().all(|&b| b == GUARD), "partial placement");
        id
    });
    assert_write_outcome(&w, WcStatus::RemAccessErr);
}

pub fn write_below_the_base(make: MakeNet) {
    let w = refused_by_server(make, TermCode::DDP_T_BASE_BOUNDS, |p| {
        let mr = guarded(&p.server_pd, 4096, REMOTE);
        let (stag, to) = (mr.rkey(), mr.addr() - 1);
        write_to(p, stag, to, 10)
    });
    assert_write_outcome(&w, WcStatus::RemAccessErr);
}

pub fn read_out_of_bounds(make: MakeNet) {
    let w = refused_by_server(make, TermCode::RDMAP_BASE_BOUNDS, |p| {
        let mr = guarded(&p.server_pd, 4096, REMOTE);
        let (stag, to) = (mr.rkey(), mr.addr() + 4000);
        read_from(p, stag, to, 100)
    });
    assert_wc(&w, 2, WcStatus::RemAccessErr, WcOpcode::RdmaRead, 0);
}

pub fn write_without_remote_write(make: MakeNet) {
    let w = refused_by_server(make, TermCode::RDMAP_ACCESS_RIGHTS, |p| {
        let mr = guarded(
            &p.server_pd,
            4096,
            Access::LOCAL_WRITE | Access::REMOTE_READ,
        );
        let (stag, to) = (mr.rkey(), mr.addr());
        write_to(p, stag, to, 100)
    });
    assert_write_outcome(&w, WcStatus::RemAccessErr);
}

pub fn read_without_remote_read(make: MakeNet) {
    let w = refused_by_server(make, TermCode::RDMAP_ACCESS_RIGHTS, |p| {
        let mr = guarded(
            &p.server_pd,
            4096,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        );
        let (stag, to) = (mr.rkey(), mr.addr());
        read_from(p, stag, to, 100)
    });
    assert_wc(&w, 2, WcStatus::RemAccessErr, WcOpcode::RdmaRead, 0);
}

pub fn write_to_another_pd(make: MakeNet) {
    let w = refused_by_server(make, TermCode::DDP_T_STAG_NOT_ASSOCIATED, |p| {
        let other = p.server.alloc_pd();
        let mr = guarded(&other, 4096, REMOTE);
        let (stag, to) = (mr.rkey(), mr.addr());
        write_to(p, stag, to, 100)
    });
    assert_write_outcome(&w, WcStatus::RemAccessErr);
}

pub fn read_from_another_pd(make: MakeNet) {
    let w = refused_by_server(make, TermCode::RDMAP_STAG_NOT_ASSOCIATED, |p| {
        let other = p.server.alloc_pd();
        let mr = guarded(&other, 4096, REMOTE);
        let (stag, to) = (mr.rkey(), mr.addr());
        read_from(p, stag, to, 100)
    });
    assert_wc(&w, 2, WcStatus::RemAccessErr, WcOpcode::RdmaRead, 0);
}

/// A Send longer than the posted receive: the receive fails with a length
/// error, the Send's peer is told (DDP untagged, message too long).
pub fn receive_too_small(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let rx = guarded(&p.server_pd, 100, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(1, vec![rx.sge(0, 50).unwrap()]))
        .unwrap();
    p.server_qp
        .post_recv(wr::recv(2, vec![rx.sge(50, 50).unwrap()]))
        .unwrap();
    let src = holding(&p.client_pd, 0, &pattern(3000, 1), 0, Access::NONE);
    p.client_qp
        .post_send(wr::send(3, vec![src.sge_all()]))
        .unwrap();
    expect_terminate(&p, Side::Server, TermCode::DDP_UT_TOO_LONG);
    let s = expect_completions(&p, Side::Server, &[1, 2]);
    assert_wc(&s[0], 1, WcStatus::LocLenErr, WcOpcode::Recv, 0);
    assert_wc(&s[1], 2, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
    assert!(
        rx.to_vec()[50..].iter().all(|&b| b == GUARD),
        "second buffer untouched"
    );
    let c = expect_completions(&p, Side::Client, &[3]);
    assert!(
        matches!(c[0].status, WcStatus::Success | WcStatus::RemInvReqErr),
        "{c:?}"
    );
}

/// A Send with no receive posted: DDP untagged "no buffer".
pub fn send_without_receive(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let src = holding(&p.client_pd, 0, b"anyone there?", 0, Access::NONE);
    p.client_qp
        .post_send(wr::send(1, vec![src.sge_all()]))
        .unwrap();
    expect_terminate(&p, Side::Server, TermCode::DDP_UT_NO_BUFFER);
    let c = expect_completions(&p, Side::Client, &[1]);
    assert!(
        matches!(c[0].status, WcStatus::Success | WcStatus::RemInvReqErr),
        "{c:?}"
    );
}

/// A local buffer that fails its check while sending: the request fails
/// with a local protection error and the stream ends (siw: RDMAP local
/// catastrophic, sent to the peer).
pub fn local_protection_error(make: MakeNet) {
    let p = connect(make(), Opts::default());
    post_spare_recvs(&p);
    let src = holding(&p.client_pd, 0, b"gone", 0, Access::NONE);
    let sge = src.sge_all();
    src.deregister();
    p.client_qp.post_send(wr::send(1, vec![sge])).unwrap();
    expect_terminate(
        &p,
        Side::Client,
        TermCode::new(ddp::error::Layer::Rdmap, 0, 0xff),
    );
    let mut ids = vec![1];
    ids.extend(900..900 + SPARE_RECVS);
    let c = expect_completions(&p, Side::Client, &ids);
    assert_wc(&c[0], 1, WcStatus::LocProtErr, WcOpcode::Send, 0);
    assert_spares_flushed(&c);
}

/// A READ whose local sink lacks local write access fails locally.
pub fn read_into_read_only_sink(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let src = guarded(&p.server_pd, 64, REMOTE);
    let sink = guarded(&p.client_pd, 64, Access::REMOTE_READ);
    p.client_qp
        .post_send(wr::read(1, sink.sge_all(), src.rkey(), src.addr()))
        .unwrap();
    expect_terminate(
        &p,
        Side::Client,
        TermCode::new(ddp::error::Layer::Rdmap, 0, 0xff),
    );
    let c = expect_completions(&p, Side::Client, &[1]);
    assert_wc(&c[0], 1, WcStatus::LocProtErr, WcOpcode::RdmaRead, 0);
}

/// Disconnecting with work outstanding: every posted request on both
/// sides completes exactly once, with a flush status.
pub fn disconnect_with_work_outstanding(make: MakeNet) {
    let mut opts = Opts::default();
    opts.connect.ord = 4;
    opts.accept.ird = 4;
    let p = connect(make(), opts);
    let big = holding(&p.client_pd, 0, &pattern(8 << 20, 1), 0, Access::NONE);
    let target = guarded(&p.server_pd, 8 << 20, REMOTE);
    let src = holding(&p.server_pd, 0, &pattern(1 << 20, 2), 0, REMOTE);
    let sink = guarded(&p.client_pd, 1 << 20, Access::LOCAL_WRITE);
    let rx = guarded(&p.client_pd, 64, Access::LOCAL_WRITE);
    let srx = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
    let mut client_ids = Vec::new();
    for i in 0..5u64 {
        p.client_qp
            .post_recv(wr::recv(100 + i, vec![rx.sge_all()]))
            .unwrap();
        client_ids.push(100 + i);
    }
    for i in 0..5u64 {
        p.server_qp
            .post_recv(wr::recv(200 + i, vec![srx.sge_all()]))
            .unwrap();
    }
    // The server is not driven: none of this can finish before the close.
    p.client_qp
        .post_send(wr::write(
            1,
            vec![big.sge_all()],
            target.rkey(),
            target.addr(),
        ))
        .unwrap();
    for i in 0..4u64 {
        p.client_qp
            .post_send(wr::read(
                2 + i,
                sink.sge(0, 1 << 20).unwrap(),
                src.rkey(),
                src.addr(),
            ))
            .unwrap();
    }
    p.client_qp
        .post_send(wr::send(6, vec![rx.sge(0, 8).unwrap()]))
        .unwrap();
    client_ids.extend(1..=6);
    p.client_qp.disconnect();
    assert_eq!(p.client_qp.state(), QpState::Error);
    let c = expect_completions(&p, Side::Client, &client_ids);
    for w in &c {
        assert_eq!(w.status, WcStatus::WrFlushErr, "{w:?}");
        assert_eq!(w.byte_len, 0);
    }
    assert_eq!(
        p.disconnected(Side::Client),
        DisconnectReason::Local,
        "{}",
        p.name
    );
    assert_eq!(p.disconnected(Side::Server), DisconnectReason::PeerClosed);
    let s = expect_completions(&p, Side::Server, &(200..205).collect::<Vec<_>>());
    assert!(s.iter().all(|w| w.status == WcStatus::WrFlushErr), "{s:?}");
    // Posting after the disconnect completes at once with a flush.
    p.client_qp.post_send(wr::send(7, vec![])).unwrap();
    let late = p.completions(&p.client_cq, 1);
    assert_wc(&late[0], 7, WcStatus::WrFlushErr, WcOpcode::Send, 0);
    if let Some(cap) = &p.capture {
        let (events, _) = cap.decode();
        assert!(
            terminates(&events).is_empty(),
            "a disconnect is no TERMINATE"
        );
    }
}

/// A connect to a port nobody listens on fails.
pub fn connect_refused(make: MakeNet) {
    let net = make();
    let pd = net.client.alloc_pd();
    let cq = net.client.create_cq(16);
    let qp = net.client.create_qp(&pd, QpInit::new(&cq)).unwrap();
    let rx = guarded(&pd, 16, Access::LOCAL_WRITE);
    qp.post_recv(wr::recv(1, vec![rx.sge_all()])).unwrap();
    // Reserve a port on the server side by listening, then stop.
    let port = {
        let l = net
            .server
            .listen(net.listen_port, Default::default())
            .unwrap();
        l.port()
    };
    qp.connect(net.addr(port), ConnectParams::default())
        .unwrap();
    assert_eq!(qp.state(), QpState::Connecting);
    let start = std::time::Instant::now();
    let ev = loop {
        net.server.progress();
        if let Some(ev) = qp.try_event() {
            break ev;
        }
        assert!(start.elapsed() < LIMIT, "{}: no outcome", net.name);
    };
    assert!(
        matches!(ev, CmEvent::ConnectFailed(_)),
        "{}: {ev:?}",
        net.name
    );
    assert_eq!(qp.state(), QpState::Error);
    let wc = cq
        .poll_one()
        .unwrap()
        .expect("the early receive is flushed");
    assert_wc(&wc, 1, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
    assert!(matches!(qp.post_send(wr::send(2, vec![])), Ok(())));
    let wc = cq.poll_one().unwrap().expect("late posts flush");
    assert_wc(&wc, 2, WcStatus::WrFlushErr, WcOpcode::Send, 0);
    assert!(matches!(
        qp.connect(net.addr(port), ConnectParams::default()),
        Err(VerbsError::AlreadyConnected)
    ));
}

/// The server rejects with private data; the client sees it.
pub fn reject_with_private_data(make: MakeNet) {
    let net = make();
    let client_pd = net.client.alloc_pd();
    let cq = net.client.create_cq(16);
    let qp = net.client.create_qp(&client_pd, QpInit::new(&cq)).unwrap();
    let rx = guarded(&client_pd, 16, Access::LOCAL_WRITE);
    qp.post_recv(wr::recv(1, vec![rx.sge_all()])).unwrap();
    let listener = net
        .server
        .listen(net.listen_port, Default::default())
        .unwrap();
    let params = ConnectParams::default().private_data(b"let me in".to_vec());
    qp.connect(net.addr(listener.port()), params).unwrap();
    let start = std::time::Instant::now();
    let mut rejected = false;
    let ev = loop {
        net.server.progress();
        if !rejected {
            if let Some(req) = listener.try_request() {
                assert_eq!(req.private_data, b"let me in");
                assert_eq!(req.revision, 2);
                req.reject(b"go away").unwrap();
                rejected = true;
            }
        }
        if let Some(ev) = qp.try_event() {
            break ev;
        }
        assert!(start.elapsed() < LIMIT, "{}: no outcome", net.name);
    };
    assert_eq!(
        ev,
        CmEvent::Rejected {
            private_data: b"go away".to_vec()
        },
        "{}",
        net.name
    );
    assert_eq!(qp.state(), QpState::Error);
    let wc = cq
        .poll_one()
        .unwrap()
        .expect("the early receive is flushed");
    assert_wc(&wc, 1, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
    if let Some(cap) = &net.capture {
        let (_, summary) = cap.decode();
        let kinds: Vec<_> = summary.connections.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [iwarp_decode::ConnectionKind::Rejected],
            "{}",
            net.name
        );
    }
    // The devices go on: a later connection is accepted.
    drop(qp);
    drop(listener);
    let again = try_connect(
        crate::common::Net {
            client: net.client.clone(),
            server: net.server.clone(),
            server_ip: net.server_ip,
            listen_port: net.listen_port,
            capture: None,
            virtual_start: None,
            name: net.name.clone(),
        },
        Opts::default(),
    );
    assert!(again.is_ok(), "a later connection still works");
}

/// A server that never answers the MPA request: the initiator times out.
pub fn initiator_times_out(make: MakeNet) {
    let net = make();
    let pd = net.client.alloc_pd();
    let cq = net.client.create_cq(16);
    let qp = net.client.create_qp(&pd, QpInit::new(&cq)).unwrap();
    let listener = net
        .server
        .listen(net.listen_port, Default::default())
        .unwrap();
    let mut params = ConnectParams::default();
    params.mpa.timeout = std::time::Duration::from_millis(300);
    let start = std::time::Instant::now();
    qp.connect(net.addr(listener.port()), params).unwrap();
    // The server's transport runs, its application never looks.
    let ev = loop {
        net.server.progress();
        if let Some(ev) = qp.try_event() {
            break ev;
        }
        assert!(start.elapsed() < LIMIT, "{}: no outcome", net.name);
    };
    let elapsed = start.elapsed();
    match ev {
        CmEvent::ConnectFailed(why) => assert_eq!(why, verbs::ConnectError::Timeout),
        other => panic!("{}: {other:?}", net.name),
    }
    assert!(
        elapsed >= std::time::Duration::from_millis(300),
        "not before the timeout: {elapsed:?}"
    );
    assert_eq!(qp.state(), QpState::Error);
}

/// Peer-to-peer mode (RFC 6581): the initiator's RTR lets the server send
/// first; without it the responder may not send before the client does.
pub fn p2p() -> Opts {
    let mut o = Opts::default();
    o.connect.mpa.p2p = verbs::RtrSet::ALL;
    o.listen.mpa.p2p = verbs::RtrSet::ALL;
    o
}

/// Work the server has outstanding towards the client: a large Write, a
/// large READ, and receives. Returns the ids and the Write's target.
fn server_busy_with_client(p: &Pair) -> (Vec<u64>, verbs::MemoryRegion) {
    let n = 16 << 20;
    let target = guarded(&p.client_pd, n, REMOTE);
    let read_src = holding(&p.client_pd, 0, &pattern(n, 2), 0, REMOTE);
    let src = holding(&p.server_pd, 0, &pattern(n, 1), 0, Access::NONE);
    let sink = guarded(&p.server_pd, n, Access::LOCAL_WRITE);
    let rx = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
    for i in 0..3u64 {
        p.server_qp
            .post_recv(wr::recv(10 + i, vec![rx.sge_all()]))
            .unwrap();
    }
    p.server_qp
        .post_send(wr::read(
            1,
            sink.sge_all(),
            read_src.rkey(),
            read_src.addr(),
        ))
        .unwrap();
    p.server_qp
        .post_send(wr::write(
            2,
            vec![src.sge_all()],
            target.rkey(),
            target.addr(),
        ))
        .unwrap();
    p.server_qp.post_send(wr::send(3, vec![])).unwrap();
    (vec![1, 2, 3, 10, 11, 12], target)
}

/// The client's host stops answering in the middle of a transfer (frozen,
/// unplugged): the server's TCP gives up after its user timeout (30 s of
/// virtual time here) and every request it had outstanding is flushed.
pub fn peer_goes_silent_mid_transfer(make: MakeNet) {
    let p = connect(make(), p2p());
    let (ids, target) = server_busy_with_client(&p);
    p.drive_until(|_| target.with_bytes(|b| b[0] != GUARD));
    let ev = p.event_alone(Side::Server);
    assert_eq!(
        ev,
        CmEvent::Disconnected {
            reason: DisconnectReason::Reset
        },
        "{}",
        p.name
    );
    assert!(p.virtual_elapsed() >= std::time::Duration::from_secs(30));
    let mut got = Vec::new();
    while let Some(w) = p.server_cq.poll_one().unwrap() {
        got.push(w);
    }
    got.sort_by_key(|w| w.wr_id);
    assert_eq!(got.iter().map(|w| w.wr_id).collect::<Vec<_>>(), ids);
    // The Write may have left completely before the silence; the READ
    // cannot have been answered, the receives never matched.
    for w in &got {
        if w.wr_id != 2 {
            assert_eq!(w.status, WcStatus::WrFlushErr, "{w:?}");
        }
    }
}

/// The client's process ends in the middle of a transfer (its device and
/// queue pair are dropped): the server sees the stream end (kernel TCP:
/// the kernel closes the sockets; a userspace stack vanishes with the
/// process, so the server's TCP times out) and flushes every request it
/// had outstanding.
pub fn peer_exits_mid_transfer(make: MakeNet) {
    let p = connect(make(), p2p());
    assert!(p.client_info.rtr.is_some());
    let (ids, target) = server_busy_with_client(&p);
    p.drive_until(|_| target.with_bytes(|b| b[0] != GUARD));
    drop(target);
    let server = p.end_client();
    let ev = server.event();
    let name = &server.name;
    assert!(
        matches!(
            ev,
            CmEvent::Disconnected {
                reason: DisconnectReason::PeerClosed | DisconnectReason::Reset
            }
        ),
        "{name}: {ev:?}"
    );
    let mut got = Vec::new();
    while let Some(w) = server.cq.poll_one().unwrap() {
        got.push(w);
    }
    got.sort_by_key(|w| w.wr_id);
    assert_eq!(
        got.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        ids,
        "{name}"
    );
    for w in &got {
        if w.wr_id != 2 {
            assert_eq!(w.status, WcStatus::WrFlushErr, "{name}: {w:?}");
        }
    }
}

/// A Send with Invalidate naming a region without remote rights: the
/// receive fails (remote invalid request) and the stream is terminated
/// (RDMAP remote operation error, cannot invalidate); the region stays.
pub fn invalidate_a_local_only_region(make: MakeNet) {
    invalidate_refused(
        make,
        false,
        Access::LOCAL_WRITE,
        TermCode::RDMAP_OPERATION_CANNOT_INVALIDATE,
    );
}

/// A Send with Invalidate naming a region with every remote right but
/// not `REMOTE_INVALIDATE`: refused as a local-only one is, so one peer
/// cannot take a shared region away from the others.
pub fn invalidate_a_region_not_opted_in(make: MakeNet) {
    invalidate_refused(
        make,
        false,
        REMOTE,
        TermCode::RDMAP_OPERATION_CANNOT_INVALIDATE,
    );
}

/// The same for a region of another protection domain: RDMAP remote
/// protection error, cannot invalidate.
pub fn invalidate_a_region_of_another_pd(make: MakeNet) {
    invalidate_refused(
        make,
        true,
        REMOTE | Access::REMOTE_INVALIDATE,
        TermCode::RDMAP_PROTECTION_CANNOT_INVALIDATE,
    );
}

fn invalidate_refused(make: MakeNet, other_pd: bool, access: Access, code: TermCode) {
    let p = connect(make(), Opts::default());
    let pd = if other_pd {
        p.server.alloc_pd()
    } else {
        p.server_pd.clone()
    };
    let victim = guarded(&pd, 64, access);
    let rx = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(1, vec![rx.sge_all()]))
        .unwrap();
    p.client_qp
        .post_send(wr::send_invalidate(2, vec![], victim.rkey()))
        .unwrap();
    expect_terminate(&p, Side::Server, code);
    let s = expect_completions(&p, Side::Server, &[1]);
    assert_wc(&s[0], 1, WcStatus::RemInvReqErr, WcOpcode::Recv, 0);
    assert!(victim.is_valid(), "{}: not invalidated", p.name);
}

/// After a peer's Send with Invalidate, the STag is dead: a later Write
/// naming it is refused (invalid STag) and nothing lands.
pub fn write_after_remote_invalidate(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let target = guarded(&p.server_pd, 64, REMOTE | Access::REMOTE_INVALIDATE);
    let rx = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(1, vec![rx.sge_all()]))
        .unwrap();
    p.client_qp
        .post_send(wr::send_invalidate(2, vec![], target.rkey()))
        .unwrap();
    let r = p.server_completions(1);
    assert_eq!(r[0].invalidated, Some(target.rkey()));
    write_to(&p, target.rkey(), target.addr(), 16);
    expect_terminate(&p, Side::Server, TermCode::DDP_T_INVALID_STAG);
    assert!(target.to_vec().iter().all(|&b| b == GUARD));
}

/// Declares one `#[test]` per error case above, each on a fresh `Net` from
/// `$net`, so every transport's test file runs the same list.
#[macro_export]
macro_rules! error_cases {
    ($net:expr) => {
        $crate::suite_tests!(errors, $net;
    write_to_invalid_stag,
    read_from_invalid_stag,
    write_to_deregistered_stag,
    read_from_deregistered_stag,
    write_out_of_bounds,
    write_below_the_base,
    read_out_of_bounds,
    write_without_remote_write,
    read_without_remote_read,
    write_to_another_pd,
    read_from_another_pd,
    receive_too_small,
    send_without_receive,
    local_protection_error,
    read_into_read_only_sink,
    disconnect_with_work_outstanding,
    connect_refused,
    reject_with_private_data,
    initiator_times_out,
    invalidate_a_local_only_region,
    invalidate_a_region_not_opted_in,
    invalidate_a_region_of_another_pd,
    write_after_remote_invalidate,
        );
    };
}
