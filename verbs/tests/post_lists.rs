//! List posts (`post_send_list`, `post_recv_list`): the same ordering,
//! completions and refusals as posting one by one, through the verbs API on
//! the memory link with progress threads.

mod common;

use std::time::Duration;

use rdmap::work_request::PostError;
use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{
    wr, AcceptParams, Access, CompletionQueue, ConnectParams, Device, ListenOptions,
    ProtectionDomain, QpInit, QueuePair, SrqInit, VerbsError, WcOpcode, WcStatus, WorkCompletion,
};

const PORT: u16 = 4793;
const LONG: Duration = Duration::from_secs(10);

struct Pair {
    cqp: QueuePair,
    sqp: QueuePair,
    cpd: ProtectionDomain,
    spd: ProtectionDomain,
    /// The client's send completions (and receives, when `shared`).
    ccq: CompletionQueue,
    /// The server's send completions.
    scq: CompletionQueue,
    /// The server's receive completions.
    srcq: CompletionQueue,
    _threads: (verbs::ProgressThread, verbs::ProgressThread),
    _devices: (Device, Device),
}

/// Connected; `init` shapes the client's queue pair.
fn pair(init: impl Fn(QpInit) -> QpInit) -> Pair {
    let (cfg, client, server, _threads) = common::linked_devices();
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let ccq = client.create_cq(256);
    let (scq, srcq) = (server.create_cq(256), server.create_cq(256));
    let cqp = client.create_qp(&cpd, init(QpInit::new(&ccq))).unwrap();
    let sqp = server
        .create_qp(&spd, QpInit::with_cqs(&scq, &srcq))
        .unwrap();
    let listener = server.listen(PORT, ListenOptions::default()).unwrap();
    cqp.connect(cfg.endpoint_b(PORT), ConnectParams::default())
        .unwrap();
    let req = listener.request(LONG).expect("a request");
    req.accept(&sqp, AcceptParams::default()).unwrap();
    cqp.wait_established(LONG).unwrap();
    Pair {
        cqp,
        sqp,
        cpd,
        spd,
        ccq,
        scq,
        srcq,
        _threads,
        _devices: (client, server),
    }
}

/// Exactly `n` completions from `cq`, then none more for a while.
fn take(cq: &CompletionQueue, n: usize) -> Vec<WorkCompletion> {
    let mut got = Vec::new();
    while got.len() < n {
        match cq.wait_one(LONG).unwrap() {
            Some(wc) => got.push(wc),
            None => panic!("{} of {n} completions", got.len()),
        }
    }
    assert_eq!(
        cq.wait_one(Duration::from_millis(50)).unwrap(),
        None,
        "no completion beyond the {n} expected"
    );
    got
}

#[test]
fn a_list_of_sends_lands_in_a_list_of_receives_in_order() {
    let p = pair(|i| i);
    const N: usize = 12;
    const LEN: usize = 100;
    let src = p
        .cpd
        .register_vec(
            (0..N * LEN).map(|i| (i / LEN) as u8 + 1).collect(),
            Access::LOCAL_WRITE,
        )
        .unwrap();
    let sink = p.spd.register(N * LEN, Access::LOCAL_WRITE).unwrap();
    // Receives in reverse slot order: a receive takes the message its
    // position in the list says, whatever its buffer.
    p.sqp
        .post_recv_list((0..N).map(|i| {
            let slot = N - 1 - i;
            wr::recv(100 + i as u64, vec![sink.sge(slot * LEN, LEN).unwrap()])
        }))
        .unwrap();
    p.cqp
        .post_send_list((0..N).map(|i| wr::send(i as u64, vec![src.sge(i * LEN, LEN).unwrap()])))
        .unwrap();
    let sent = take(&p.ccq, N);
    assert_eq!(
        sent.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        (0..N as u64).collect::<Vec<_>>()
    );
    assert!(sent
        .iter()
        .all(|w| w.is_success() && w.opcode == WcOpcode::Send && w.byte_len == LEN as u32));
    let received = take(&p.srcq, N);
    assert_eq!(
        received.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        (100..100 + N as u64).collect::<Vec<_>>()
    );
    assert!(received
        .iter()
        .all(|w| w.is_success() && w.opcode == WcOpcode::Recv));
    let bytes = sink.to_vec();
    for i in 0..N {
        let slot = N - 1 - i;
        assert!(
            bytes[slot * LEN..(slot + 1) * LEN]
                .iter()
                .all(|&b| b == i as u8 + 1),
            "message {i} in slot {slot}"
        );
    }
    assert!(p.scq.is_empty());
}

#[test]
fn a_list_longer_than_the_send_queue_stops_at_the_first_refused() {
    let p = pair(|i| i.with_depths(4, 128));
    let sink = p.spd.register(64, Access::REMOTE_WRITE).unwrap();
    let src = p.cpd.register(8, Access::LOCAL_WRITE).unwrap();
    // Nothing is transmitted before the whole list is queued: the fifth
    // finds the queue full.
    let err = p
        .cqp
        .post_send_list((0..7).map(|i| wr::write(i, vec![src.sge_all()], sink.rkey(), sink.addr())))
        .unwrap_err();
    assert_eq!(err.posted, 4);
    assert!(
        matches!(
            err.error,
            VerbsError::Post(PostError::QueueFull { depth: 4, .. })
        ),
        "{:?}",
        err.error
    );
    let done = take(&p.ccq, 4);
    assert_eq!(
        done.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert!(done.iter().all(|w| w.is_success()));
    // The queue is usable again, and an empty list posts nothing.
    p.cqp.post_send_list(std::iter::empty()).unwrap();
    p.cqp
        .post_send_list((7..9).map(|i| wr::write(i, vec![src.sge_all()], sink.rkey(), sink.addr())))
        .unwrap();
    let done = take(&p.ccq, 2);
    assert_eq!(done.iter().map(|w| w.wr_id).collect::<Vec<_>>(), [7, 8]);
}

#[test]
fn a_refused_receive_ends_the_list_and_those_before_it_are_posted() {
    let p = pair(|i| i);
    let sink = p.spd.register(64, Access::LOCAL_WRITE).unwrap();
    let one = sink.sge(0, 8).unwrap();
    let err = p
        .sqp
        .post_recv_list([
            wr::recv(1, vec![one]),
            wr::recv(2, vec![one]),
            wr::recv(3, vec![one; 7]),
            wr::recv(4, vec![one]),
        ])
        .unwrap_err();
    assert_eq!(err.posted, 2);
    assert!(
        matches!(
            err.error,
            VerbsError::Post(PostError::TooManySges { n: 7, .. })
        ),
        "{:?}",
        err.error
    );
    // Two Sends take the two posted receives; a third finds none.
    p.cqp
        .post_send_list((0..2).map(|i| wr::send(i, vec![])))
        .unwrap();
    let got = take(&p.srcq, 2);
    assert_eq!(got.iter().map(|w| w.wr_id).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(take(&p.ccq, 2).len(), 2);
}

#[test]
fn lists_on_a_disconnected_queue_pair_are_flushed_one_by_one() {
    let p = pair(|i| i);
    p.cqp.disconnect();
    let src = p.cpd.register(8, Access::LOCAL_WRITE).unwrap();
    // Wait until the queue pair is closed for good, then post.
    while p.cqp.state() != verbs::QpState::Error {
        std::thread::sleep(Duration::from_millis(1));
    }
    p.cqp
        .post_send_list((0..3).map(|i| wr::send(i, vec![src.sge_all()])))
        .unwrap();
    p.cqp
        .post_recv_list((10..13).map(|i| wr::recv(i, vec![src.sge_all()])))
        .unwrap();
    let got = take(&p.ccq, 6);
    let mut ids: Vec<u64> = got.iter().map(|w| w.wr_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2, 10, 11, 12]);
    assert!(got.iter().all(|w| w.status == WcStatus::WrFlushErr));
}

#[test]
fn a_queue_pair_on_a_shared_receive_queue_refuses_a_receive_list() {
    let cfg = MemoryLinkConfig::default();
    let (a, _b) = MemoryLink::pair(&cfg).unwrap();
    let device = Device::new(Box::new(a));
    let pd = device.alloc_pd();
    let cq = device.create_cq(8);
    let srq = device.create_srq(&pd, SrqInit::new(8, 1)).unwrap();
    let qp = device
        .create_qp(&pd, QpInit::new(&cq).with_srq(&srq))
        .unwrap();
    let err = qp
        .post_recv_list([wr::recv(1, vec![]), wr::recv(2, vec![])])
        .unwrap_err();
    assert_eq!(err.posted, 0);
    assert!(matches!(
        err.error,
        VerbsError::Post(PostError::SharedReceiveQueue)
    ));
}

#[test]
fn a_receive_list_before_connecting_is_bounded_by_the_receive_queue() {
    let cfg = MemoryLinkConfig::default();
    let (a, _b) = MemoryLink::pair(&cfg).unwrap();
    let device = Device::new(Box::new(a));
    let pd = device.alloc_pd();
    let cq = device.create_cq(8);
    let qp = device
        .create_qp(&pd, QpInit::new(&cq).with_depths(4, 3))
        .unwrap();
    let err = qp
        .post_recv_list((0..5).map(|i| wr::recv(i, vec![])))
        .unwrap_err();
    assert_eq!(err.posted, 3);
    assert!(matches!(
        err.error,
        VerbsError::Post(PostError::QueueFull { depth: 3, .. })
    ));
    // Not connected: a send list is refused whole.
    let err = qp
        .post_send_list((0..2).map(|i| wr::send(i, vec![])))
        .unwrap_err();
    assert_eq!(err.posted, 0);
    assert!(matches!(err.error, VerbsError::NotConnected));
}

/// Caller-driven devices (no progress threads), so the test decides which
/// side runs when; the client's queue pair reports both directions into
/// one queue.
#[test]
fn one_queue_for_both_directions_keeps_the_order_completions_happened_in() {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg).unwrap();
    let (client, server) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let (ccq, scq) = (client.create_cq(16), server.create_cq(16));
    let cqp = client.create_qp(&cpd, QpInit::new(&ccq)).unwrap();
    let sqp = server.create_qp(&spd, QpInit::new(&scq)).unwrap();
    let listener = server.listen(PORT + 1, ListenOptions::default()).unwrap();
    cqp.connect(cfg.endpoint_b(PORT + 1), ConnectParams::default())
        .unwrap();
    let both = || {
        client.progress();
        server.progress();
    };
    let mut req = None;
    for _ in 0..10_000 {
        both();
        req = listener.try_request();
        if req.is_some() {
            break;
        }
    }
    req.expect("a request")
        .accept(&sqp, AcceptParams::default())
        .unwrap();
    let mut established = false;
    for _ in 0..10_000 {
        both();
        if let Some(ev) = cqp.try_event() {
            assert!(matches!(ev, verbs::CmEvent::Established(_)), "{ev:?}");
            established = true;
            break;
        }
    }
    assert!(established);
    let src = spd
        .register_vec(b"response".to_vec(), Access::REMOTE_READ)
        .unwrap();
    let msg = spd
        .register_vec(b"send".to_vec(), Access::LOCAL_WRITE)
        .unwrap();
    let sink = cpd.register(16, Access::LOCAL_WRITE).unwrap();
    // The client's receive and Read go first; the server's Send is queued
    // on its stream before the server reads the Read Request, so the Send
    // arrives ahead of the Read Response.
    cqp.post_recv(wr::recv(1, vec![sink.sge(0, 8).unwrap()]))
        .unwrap();
    cqp.post_send(wr::read(2, sink.sge(8, 8).unwrap(), src.rkey(), src.addr()))
        .unwrap();
    for _ in 0..10 {
        if !client.progress() {
            break;
        }
    }
    sqp.post_send(wr::send(3, vec![msg.sge_all()])).unwrap();
    for _ in 0..100 {
        if !server.progress() {
            break;
        }
    }
    // One client turn takes both: the receive completes first, then the Read.
    client.progress();
    let mut wcs = [WorkCompletion::FILLER; 4];
    let n = ccq.poll(&mut wcs).unwrap();
    let got: Vec<(u64, WcOpcode)> = wcs[..n].iter().map(|w| (w.wr_id, w.opcode)).collect();
    assert_eq!(got, [(1, WcOpcode::Recv), (2, WcOpcode::RdmaRead)]);
    assert!(wcs[..n].iter().all(|w| w.is_success()));
    assert_eq!(&sink.to_vec()[..12], b"send\0\0\0\0resp");
}

#[test]
fn queue_pair_sizes_beyond_the_device_limits_are_refused() {
    let cfg = MemoryLinkConfig::default();
    let (a, _b) = MemoryLink::pair(&cfg).unwrap();
    let device = Device::new(Box::new(a));
    let pd = device.alloc_pd();
    let cq = device.create_cq(8);
    let attr = device.query();
    let max = attr.max_qp_wr;
    for (sq, rq, field) in [
        (usize::MAX, 1, "sq_depth"),
        (1, usize::MAX, "rq_depth"),
        (max + 1, 1, "sq_depth"),
        (1, max + 1, "rq_depth"),
    ] {
        let err = device
            .create_qp(&pd, QpInit::new(&cq).with_depths(sq, rq))
            .unwrap_err();
        assert!(
            matches!(err, VerbsError::QpSize { field: f, max: m, .. } if f == field && m == max),
            "{sq}/{rq}: {err:?}"
        );
    }
    let err = device
        .create_qp(&pd, QpInit::new(&cq).with_max_sge(attr.max_sge + 1, 1))
        .unwrap_err();
    assert!(
        matches!(
            err,
            VerbsError::QpSize {
                field: "max_send_sge",
                ..
            }
        ),
        "{err:?}"
    );
    // The limits themselves are accepted.
    let qp = device
        .create_qp(
            &pd,
            QpInit::new(&cq)
                .with_depths(max, max)
                .with_max_sge(attr.max_sge, attr.max_sge),
        )
        .unwrap();
    assert_eq!(qp.query().cap.sq_depth, max);
}
