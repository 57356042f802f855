//! Solicited notification by Send with Solicited Event and Immediate Data,
//! fenced and inline work requests, through the verbs API on the memory
//! link with progress threads.

mod common;

use std::time::Duration;

use rdmap::work_request::PostError;
use verbs::{
    wr, AcceptParams, Access, CompletionQueue, ConnectParams, Device, EventChannel, ListenOptions,
    NotifyOn, QpInit, QueuePair, VerbsError, WcOpcode,
};

const PORT: u16 = 4792;
const LONG: Duration = Duration::from_secs(10);

struct Pair {
    client: Device,
    server: Device,
    cqp: QueuePair,
    sqp: QueuePair,
    ccq: CompletionQueue,
    scq: CompletionQueue,
    sch: EventChannel,
    _threads: (verbs::ProgressThread, verbs::ProgressThread),
}

/// Connected with RFC 7306 agreed; the server's queue has a channel.
fn pair(init: impl Fn(QpInit) -> QpInit) -> Pair {
    let (cfg, client, server, _threads) = common::linked_devices();
    let sch = EventChannel::new().unwrap();
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let ccq = client.create_cq(64);
    let scq = server.create_cq_with_channel(64, &sch);
    let cqp = client.create_qp(&cpd, init(QpInit::new(&ccq))).unwrap();
    let sqp = server.create_qp(&spd, QpInit::new(&scq)).unwrap();
    let listener = server
        .listen(PORT, ListenOptions::default().with_rfc7306(true))
        .unwrap();
    cqp.connect(cfg.endpoint_b(PORT), ConnectParams::default().rfc7306(true))
        .unwrap();
    let req = listener.request(LONG).expect("a request");
    req.accept(&sqp, AcceptParams::default()).unwrap();
    cqp.wait_established(LONG).unwrap();
    Pair {
        client,
        server,
        cqp,
        sqp,
        ccq,
        scq,
        sch,
        _threads,
    }
}

#[test]
fn solicited_immediate_data_fires_a_solicited_arm() {
    let p = pair(|i| i);
    for i in 0..2 {
        p.sqp.post_recv(wr::recv(i, vec![])).unwrap();
    }
    p.scq.req_notify(NotifyOn::Solicited).unwrap();
    p.cqp.post_send(wr::send_imm(1, vec![], 10)).unwrap();
    let plain = p.scq.wait_one(LONG).unwrap().expect("immediate data");
    assert_eq!(
        (plain.opcode, plain.imm_data, plain.solicited),
        (WcOpcode::RecvImm, Some(10), false)
    );
    assert!(
        !p.sch.ack(),
        "plain immediate data does not fire a solicited arm"
    );
    p.cqp
        .post_send(wr::send_solicited_imm(2, vec![], 11))
        .unwrap();
    assert!(p.sch.wait(LONG).unwrap(), "solicited immediate data fires");
    let wc = p.scq.poll_one().unwrap().expect("queued before the fire");
    assert_eq!(
        (wc.opcode, wc.imm_data, wc.solicited),
        (WcOpcode::RecvImm, Some(11), true)
    );
    assert_eq!(
        p.ccq.wait_one(LONG).unwrap().map(|w| w.is_success()),
        Some(true)
    );
    drop((p.client, p.server));
}

#[test]
fn a_fenced_write_carries_what_the_read_before_it_fetched() {
    // The client reads a word from the server, then writes its sink back
    // to another server buffer: fenced, the Write sends the fetched bytes.
    let p = pair(|i| i);
    let (cpd, spd) = (p.cqp.pd(), p.sqp.pd());
    let src = spd
        .register_vec(b"fetched!".to_vec(), Access::REMOTE_READ)
        .unwrap();
    let back = spd
        .register(8, Access::REMOTE_WRITE | Access::REMOTE_READ)
        .unwrap();
    let sink = cpd.register(8, Access::LOCAL_WRITE).unwrap();
    p.cqp
        .post_send(wr::read(1, sink.sge_all(), src.rkey(), src.addr()))
        .unwrap();
    p.cqp
        .post_send(wr::write(2, vec![sink.sge_all()], back.rkey(), back.addr()).fenced())
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(p.ccq.wait_one(LONG).unwrap().expect("completion"));
    }
    assert!(got.iter().all(|w| w.is_success()), "{got:?}");
    // The Write's completion means it left; one more round trip (a Read of
    // the target) sees it placed.
    let check = cpd.register(8, Access::LOCAL_WRITE).unwrap();
    p.cqp
        .post_send(wr::read(3, check.sge_all(), back.rkey(), back.addr()))
        .unwrap();
    let wc = p.ccq.wait_one(LONG).unwrap().expect("the check");
    assert!(wc.is_success(), "{wc:?}");
    let mut b = [0u8; 8];
    check.read(0, &mut b).unwrap();
    assert_eq!(&b, b"fetched!");
}

#[test]
fn inline_sends_up_to_the_limit() {
    let p = pair(|i| i.with_max_inline_data(16));
    let spd = p.sqp.pd();
    let rx = spd.register(16, Access::LOCAL_WRITE).unwrap();
    p.sqp.post_recv(wr::recv(1, vec![rx.sge_all()])).unwrap();
    assert_eq!(p.cqp.query().cap.max_inline_data, 16);
    match p.cqp.post_send(wr::send_inline(1, &[0; 17])) {
        Err(VerbsError::Post(PostError::InlineTooLong { len: 17, max: 16 })) => {}
        other => panic!("{other:?}"),
    }
    p.cqp
        .post_send(wr::send_inline(2, b"sixteen bytes!!!"))
        .unwrap();
    let wc = p.scq.wait_one(LONG).unwrap().expect("receive");
    assert_eq!((wc.wr_id, wc.byte_len), (1, 16));
    let mut b = [0u8; 16];
    rx.read(0, &mut b).unwrap();
    assert_eq!(&b, b"sixteen bytes!!!");
}

#[test]
fn a_local_invalidate_revokes_the_peers_access() {
    let p = pair(|i| i);
    let (cpd, spd) = (p.cqp.pd(), p.sqp.pd());
    // The server hands out a window, the client writes into it, then the
    // server revokes it with a work request of its own.
    let window = spd.register(8, Access::REMOTE_WRITE).unwrap();
    let src = cpd
        .register_vec(b"12345678".to_vec(), Access::NONE)
        .unwrap();
    p.cqp
        .post_send(wr::write(
            1,
            vec![src.sge_all()],
            window.rkey(),
            window.addr(),
        ))
        .unwrap();
    assert!(p.ccq.wait_one(LONG).unwrap().unwrap().is_success());
    let wrong_pd = p
        .server
        .alloc_pd()
        .register(8, Access::REMOTE_WRITE)
        .unwrap();
    p.sqp
        .post_send(wr::local_invalidate(2, wrong_pd.rkey()))
        .unwrap();
    p.sqp
        .post_send(wr::local_invalidate(3, window.rkey()))
        .unwrap();
    let a = p.scq.wait_one(LONG).unwrap().expect("first invalidate");
    let b = p.scq.wait_one(LONG).unwrap().expect("second invalidate");
    assert_eq!(
        (a.wr_id, a.status, a.opcode),
        (2, verbs::WcStatus::LocProtErr, WcOpcode::LocalInv)
    );
    assert_eq!(
        (b.wr_id, b.status, b.opcode),
        (3, verbs::WcStatus::Success, WcOpcode::LocalInv)
    );
    assert!(!window.is_valid() && wrong_pd.is_valid());
    // The client's next Write to the window ends the connection.
    p.cqp
        .post_send(wr::write(
            4,
            vec![src.sge_all()],
            window.rkey(),
            window.addr(),
        ))
        .unwrap();
    let ev = p.cqp.wait_event(LONG);
    assert!(
        matches!(
            ev,
            Some(verbs::CmEvent::Disconnected {
                reason: verbs::DisconnectReason::Terminated {
                    by_peer: true,
                    layer: 1,
                    etype: 1,
                    code: 0
                }
            })
        ),
        "{ev:?}"
    );
}
