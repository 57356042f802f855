//! A region whose last handle was dropped is deregistered: the peer's
//! Write to it is refused with a TERMINATE, as after `deregister()`.

mod common;

use std::time::Duration;

use verbs::{
    wr, AcceptParams, Access, CmEvent, ConnectParams, DisconnectReason, ListenOptions, QpInit,
    QpState,
};

const PORT: u16 = 4791;
const LONG: Duration = Duration::from_secs(10);

#[test]
fn a_write_to_a_dropped_region_is_terminated() {
    let (cfg, client, server, _threads) = common::linked_devices();
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let (ccq, scq) = (client.create_cq(16), server.create_cq(16));
    let cqp = client.create_qp(&cpd, QpInit::new(&ccq)).unwrap();
    let sqp = server.create_qp(&spd, QpInit::new(&scq)).unwrap();
    let listener = server.listen(PORT, ListenOptions::default()).unwrap();
    cqp.connect(cfg.endpoint_b(PORT), ConnectParams::default())
        .unwrap();
    listener
        .request(LONG)
        .unwrap()
        .accept(&sqp, AcceptParams::default())
        .unwrap();
    cqp.wait_established(LONG).unwrap();
    sqp.wait_established(LONG).unwrap();

    // A region the client could write, then forgotten: no deregister().
    let forgotten = spd
        .register(4096, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
        .unwrap();
    let (rkey, addr) = (forgotten.rkey(), forgotten.addr());
    assert_eq!(server.region_count(), 1);
    drop(forgotten);
    assert_eq!(server.region_count(), 0, "the drop deregistered it");

    let src = cpd.register_vec(vec![1; 100], Access::NONE).unwrap();
    cqp.post_send(wr::write(1, vec![src.sge_all()], rkey, addr))
        .unwrap();
    let told = cqp.wait_event(LONG).expect("the client hears of it");
    let detected = sqp.wait_event(LONG).expect("the server refuses it");
    // DDP: tagged buffer error, invalid STag (RFC 5041 section 7.2).
    let code = |by_peer| DisconnectReason::Terminated {
        by_peer,
        layer: 1,
        etype: 1,
        code: 0,
    };
    assert_eq!(told, CmEvent::Disconnected { reason: code(true) });
    assert_eq!(
        detected,
        CmEvent::Disconnected {
            reason: code(false)
        }
    );
    assert_eq!(cqp.state(), QpState::Error);
}
