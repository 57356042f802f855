//! The program's access to a region never holds up the device: a closure
//! over a region's bytes may call into the device, and a slow one does not
//! stall placement, into that region or any other, on any queue pair.

mod common;

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use verbs::{
    wr, AcceptParams, Access, CompletionQueue, ConnectParams, Device, ListenOptions, QpInit,
    QueuePair,
};

const PORT: u16 = 4794;
const LONG: Duration = Duration::from_secs(10);

/// Two connections between one client and one server device.
struct Rig {
    client: Device,
    server: Device,
    ccq: CompletionQueue,
    scq: CompletionQueue,
    cqps: [QueuePair; 2],
    sqps: [QueuePair; 2],
    _threads: (verbs::ProgressThread, verbs::ProgressThread),
}

fn rig() -> Rig {
    let (cfg, client, server, _threads) = common::linked_devices();
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let (ccq, scq) = (client.create_cq(64), server.create_cq(64));
    let listener = server.listen(PORT, ListenOptions::default()).unwrap();
    let connect = || {
        let cqp = client.create_qp(&cpd, QpInit::new(&ccq)).unwrap();
        let sqp = server.create_qp(&spd, QpInit::new(&scq)).unwrap();
        cqp.connect(cfg.endpoint_b(PORT), ConnectParams::default())
            .unwrap();
        let req = listener.request(LONG).expect("a request");
        req.accept(&sqp, AcceptParams::default()).unwrap();
        cqp.wait_established(LONG).unwrap();
        sqp.wait_established(LONG).unwrap();
        (cqp, sqp)
    };
    let (c0, s0) = connect();
    let (c1, s1) = connect();
    Rig {
        client,
        server,
        ccq,
        scq,
        cqps: [c0, c1],
        sqps: [s0, s1],
        _threads,
    }
}

fn wait_ok(cq: &CompletionQueue) -> verbs::WorkCompletion {
    let wc = cq.wait_one(LONG).unwrap().expect("a completion in time");
    assert!(wc.is_success(), "{wc:?}");
    wc
}

#[test]
fn a_closure_may_call_into_the_device() {
    let r = rig();
    let region = r.cqps[0]
        .pd()
        .register_vec(vec![5; 4096], Access::ALL)
        .unwrap();
    let sink = r.sqps[0].pd().register(4096, Access::ALL).unwrap();
    // From inside the closure: an RDMA Write out of the very region the
    // closure is over, waited for to completion.
    let echoed = region.with_bytes_mut(|b| {
        b[..4].copy_from_slice(b"seen");
        r.cqps[0]
            .post_send(wr::write(
                1,
                vec![region.sge_all()],
                sink.rkey(),
                sink.addr(),
            ))
            .unwrap();
        wait_ok(&r.ccq).wr_id
    });
    assert_eq!(echoed, 1);
    assert_eq!(
        &region.to_vec()[..5],
        b"seen\x05",
        "the closure's bytes written back"
    );
    // And reading: a blocking call into the device from inside
    // `with_bytes`, which Reads the region's bytes back from the peer.
    let back = r.cqps[0].pd().register(8, Access::ALL).unwrap();
    let sent = region.with_bytes(|b| {
        r.cqps[0]
            .post_send(wr::read(2, back.sge_all(), sink.rkey(), sink.addr()))
            .unwrap();
        assert_eq!(wait_ok(&r.ccq).wr_id, 2);
        b[..8].to_vec()
    });
    assert_eq!(
        back.to_vec(),
        vec![5; 8],
        "the Write sent the bytes as they were"
    );
    assert_eq!(&sent[..4], b"seen");
    assert!(r.server.stats().thread_turns > 0);
}

#[test]
fn a_slow_closure_stalls_no_placement() {
    let r = rig();
    let spd = r.sqps[0].pd();
    let slow = spd.register(4096, Access::ALL).unwrap();
    let other = spd.register(4096, Access::ALL).unwrap();
    let inbox = spd.register(64, Access::LOCAL_WRITE).unwrap();
    r.sqps[1]
        .post_recv(wr::recv(9, vec![inbox.sge_all()]))
        .unwrap();
    let src = r.cqps[0]
        .pd()
        .register_vec(vec![3; 4096], Access::ALL)
        .unwrap();

    // A reader that sits in its closure until told to leave.
    let (leave, told) = mpsc::channel::<()>();
    let (entered, inside) = mpsc::channel::<()>();
    let reader = {
        let slow = slow.clone();
        thread::spawn(move || {
            slow.with_bytes(|b| {
                entered.send(()).unwrap();
                told.recv_timeout(LONG).ok();
                b[0]
            })
        })
    };
    inside.recv_timeout(LONG).unwrap();
    // Writes into the region being read (connection 0), then into another
    // region and a Send (connection 1): all placed while the reader stays.
    r.cqps[0]
        .post_send(wr::write(1, vec![src.sge_all()], slow.rkey(), slow.addr()))
        .unwrap();
    r.cqps[1]
        .post_send(wr::write(
            2,
            vec![src.sge_all()],
            other.rkey(),
            other.addr(),
        ))
        .unwrap();
    r.cqps[1].post_send(wr::send(3, vec![])).unwrap();
    let wc = wait_ok(&r.scq);
    assert_eq!(wc.wr_id, 9, "the Send behind the Write arrived");
    assert_eq!(other.to_vec(), vec![3; 4096]);
    for _ in 0..3 {
        wait_ok(&r.ccq);
    }
    // Connection 0's Write landed too; a Send behind it on the same
    // connection shows it.
    r.sqps[0]
        .post_recv(wr::recv(10, vec![inbox.sge_all()]))
        .unwrap();
    r.cqps[0].post_send(wr::send(4, vec![])).unwrap();
    assert_eq!(wait_ok(&r.scq).wr_id, 10);
    assert_eq!(slow.to_vec(), vec![3; 4096]);
    leave.send(()).unwrap();
    assert_eq!(
        reader.join().unwrap(),
        0,
        "the reader saw the bytes from before"
    );
    drop(r.client);
}
