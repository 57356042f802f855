//! Shared receive queues end to end: several queue pairs drawing on one,
//! completions on the receiving queue pair, the limit event, the
//! TERMINATE for a Send that finds it empty, and what happens to its work
//! requests when queue pairs or the queue itself go away.

use std::collections::HashMap;

use ddp::error::TermCode;
use rdmap::work_request::PostError;
use verbs::{
    wr, Access, EventChannel, MemoryRegion, SrqEvent, SrqInit, VerbsError, WcOpcode, WcStatus,
};

use super::errors::expect_terminate;
use super::rfc7306::agreed;
use super::{assert_exactly, guarded, holding, MakeNet};
use crate::common::{connect, pattern, Opts, Pair, Side};

/// RFC 7306 agreed (for Immediate Data), the server on a shared receive
/// queue of `init`.
fn opts(init: SrqInit) -> Opts {
    let mut o = agreed();
    o.server_srq = Some(init);
    o
}

fn srq(p: &Pair) -> &verbs::SharedReceiveQueue {
    p.server_srq
        .as_ref()
        .expect("the server's shared receive queue")
}

/// Posts `ids` to the pair's shared receive queue, each with a 4 KiB
/// buffer of guard bytes; returns the buffers by id.
fn post_buffers(p: &Pair, ids: impl IntoIterator<Item = u64>) -> HashMap<u64, MemoryRegion> {
    ids.into_iter()
        .map(|id| {
            let mr = guarded(&p.server_pd, 4096, Access::LOCAL_WRITE);
            srq(p).post_recv(wr::recv(id, vec![mr.sge_all()])).unwrap();
            (id, mr)
        })
        .collect()
}

/// Three connections on one shared receive queue: each queue pair's
/// messages take its work requests in posting order, complete with that
/// queue pair's number, in its own order, and land whole; Immediate Data
/// takes one too. The queue pairs refuse receives of their own.
pub fn several_queue_pairs_share_one(make: MakeNet) {
    let o = opts(SrqInit::new(32, 2));
    let p = connect(make(), o.clone());
    let more = [p.another_connection(&o), p.another_connection(&o)];
    let conns: Vec<_> = [(&p.client_qp, &p.server_qp)]
        .into_iter()
        .chain(more.iter().map(|(c, s)| (c, s)))
        .collect();
    for (_, server) in &conns {
        let e = server.post_recv(wr::recv(1, vec![])).unwrap_err();
        assert!(
            matches!(e, VerbsError::Post(PostError::SharedReceiveQueue)),
            "{e:?}"
        );
        assert_eq!(server.query().srq, Some(srq(&p).num()));
    }
    let bufs = post_buffers(&p, 0..9);
    assert_eq!(srq(&p).query().unwrap().qps, 3);
    // Each client: two Sends of its own pattern, then Immediate Data.
    for (i, (client, _)) in conns.iter().enumerate() {
        for j in 0..2u8 {
            let data = pattern(1000 + 700 * usize::from(j), 10 * i as u8 + j);
            let src = holding(&p.client_pd, 0, &data, 0, Access::NONE);
            client
                .post_send(wr::send(u64::from(j), vec![src.sge_all()]))
                .unwrap();
        }
        client
            .post_send(wr::send_imm(2, vec![], 0x1000 + i as u32))
            .unwrap();
    }
    let got = p.server_completions(9);
    assert_eq!(p.settle(&p.server_cq, 20), vec![]);
    let mut ids: Vec<u64> = got.iter().map(|w| w.wr_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..9).collect::<Vec<_>>(), "each work request once");
    for (i, (_, server)) in conns.iter().enumerate() {
        let mine: Vec<_> = got.iter().filter(|w| w.qp_num == server.num()).collect();
        assert_eq!(mine.len(), 3, "{}: queue pair {i}", p.name);
        // Posting order across the queue: a queue pair's messages take
        // ever later work requests.
        assert!(mine.windows(2).all(|w| w[0].wr_id < w[1].wr_id), "{mine:?}");
        for (j, wc) in mine[..2].iter().enumerate() {
            let data = pattern(1000 + 700 * j, 10 * i as u8 + j as u8);
            assert_eq!(
                (wc.status, wc.opcode, wc.byte_len as usize),
                (WcStatus::Success, WcOpcode::Recv, data.len())
            );
            assert_exactly(&bufs[&wc.wr_id], 0, &data, "a shared buffer");
        }
        assert_eq!(
            (mine[2].opcode, mine[2].imm_data),
            (WcOpcode::RecvImm, Some(0x1000 + i as u32))
        );
        assert_exactly(&bufs[&mine[2].wr_id], 0, &[], "immediate data's buffer");
    }
    let a = srq(&p).query().unwrap();
    assert_eq!((a.posted, a.max_wr, a.max_sge, a.qps), (0, 32, 2, 3));
    drop(p.client_completions(9));
}

/// The limit fires once when a receive leaves fewer than it posted, on
/// the event channel too, then stays quiet until armed again.
pub fn limit_event_fires_once(make: MakeNet) {
    let p = connect(make(), opts(SrqInit::new(8, 1)));
    let ch = EventChannel::new().unwrap();
    srq(&p).watch_events(&ch);
    let _bufs = post_buffers(&p, 0..6);
    srq(&p).modify_limit(4).unwrap();
    assert_eq!(srq(&p).query().unwrap().srq_limit, 4);
    let send = |id: u64| {
        p.client_qp.post_send(wr::send(id, vec![])).unwrap();
        p.server_completions(1);
    };
    send(0);
    send(1);
    p.settle(&p.server_cq, 10);
    assert_eq!(srq(&p).try_event(), None, "4 posted is not below 4");
    assert!(!ch.ack());
    send(2);
    p.settle(&p.server_cq, 10);
    assert!(ch.ack(), "the channel fired");
    assert_eq!(srq(&p).try_event(), Some(SrqEvent::LimitReached));
    assert_eq!(srq(&p).try_event(), None, "once");
    assert_eq!(srq(&p).query().unwrap().srq_limit, 0, "disarmed");
    send(3);
    p.settle(&p.server_cq, 10);
    assert_eq!(srq(&p).try_event(), None, "not again while disarmed");
    srq(&p).modify_limit(2).unwrap();
    send(4);
    p.settle(&p.server_cq, 10);
    assert_eq!(
        srq(&p).try_event(),
        Some(SrqEvent::LimitReached),
        "re-armed"
    );
    assert!(matches!(
        srq(&p).modify_limit(9),
        Err(VerbsError::SrqSize {
            field: "srq_limit",
            ..
        })
    ));
    p.client_completions(5);
}

/// A Send that finds the shared receive queue empty is answered as with
/// an empty receive queue: TERMINATE, DDP untagged buffer error, no
/// buffer available (1/2/0x02), seen on the wire.
pub fn empty_terminates(make: MakeNet) {
    let p = connect(make(), opts(SrqInit::new(4, 1)));
    let data = pattern(100, 3);
    let src = holding(&p.client_pd, 0, &data, 0, Access::NONE);
    p.client_qp
        .post_send(wr::send(1, vec![src.sge_all()]))
        .unwrap();
    expect_terminate(&p, Side::Server, TermCode::DDP_UT_NO_BUFFER);
    assert_eq!(p.settle(&p.server_cq, 10), vec![], "nothing to complete");
}

/// Work requests belong to the queue, not to a queue pair: one that
/// disconnects or is destroyed flushes none of them, and another queue
/// pair still takes them. `destroy` is refused while a queue pair uses
/// the queue and then hands the rest back; a dropped handle keeps the
/// queue for its queue pairs, and what is left when the last goes is
/// counted, not lost silently.
pub fn queue_pairs_going_leave_its_work_requests(make: MakeNet) {
    let o = opts(SrqInit::new(8, 1));
    let mut p = connect(make(), o.clone());
    let (c2, s2) = p.another_connection(&o);
    let _bufs = post_buffers(&p, 0..6);
    p.client_qp.post_send(wr::send(1, vec![])).unwrap();
    let first = p.server_completions(1);
    assert_eq!(first[0].qp_num, p.server_qp.num());
    // The first connection ends from the client: the server's queue pair
    // is flushed, the queue is not.
    p.client_qp.disconnect();
    p.disconnected(Side::Server);
    assert_eq!(
        p.settle(&p.server_cq, 20),
        vec![],
        "no flush of shared work"
    );
    assert_eq!(srq(&p).query().unwrap().posted, 5);
    // The second connection still receives, into the next work requests.
    for id in 0..2 {
        c2.post_send(wr::send(id, vec![])).unwrap();
    }
    let got = p.server_completions(2);
    assert!(got.iter().all(|w| w.qp_num == s2.num() && w.is_success()));
    assert_eq!(got.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![1, 2]);
    // Refused while queue pairs use it; the queue comes back unchanged.
    let busy = p.server_srq.take().unwrap().destroy().unwrap_err();
    assert_eq!(busy.qps, 2);
    let q = busy.srq;
    assert_eq!(q.query().unwrap().posted, 3);
    // Dropped while the second queue pair uses it: it keeps serving.
    let before = p.server.stats();
    drop(q);
    c2.post_send(wr::send(3, vec![])).unwrap();
    let wc = p.server_completions(1);
    assert_eq!((wc[0].wr_id, wc[0].qp_num), (3, s2.num()));
    drop(p.server_qp);
    assert_eq!(p.server.stats().since(&before).srq_wrs_discarded, 0);
    // The last queue pair goes: the two still posted are counted.
    drop(s2);
    assert_eq!(p.server.stats().since(&before).srq_wrs_discarded, 2);
    drop(c2);
}

/// `destroy` of a queue no queue pair uses hands back what is posted, and
/// its sizes are bounded.
pub fn destroy_returns_what_is_posted(make: MakeNet) {
    let net = make();
    let pd = net.server.alloc_pd();
    let q = net.server.create_srq(&pd, SrqInit::new(2, 1)).unwrap();
    let mr = pd.register(64, Access::LOCAL_WRITE).unwrap();
    let two = q
        .post_recv(wr::recv(9, vec![mr.sge_all(), mr.sge_all()]))
        .unwrap_err();
    assert!(
        matches!(
            two,
            VerbsError::Post(PostError::TooManySges { n: 2, max: 1 })
        ),
        "{two:?}"
    );
    for id in [7, 8] {
        q.post_recv(wr::recv(id, vec![mr.sge_all()])).unwrap();
    }
    let full = q.post_recv(wr::recv(9, vec![])).unwrap_err();
    assert!(
        matches!(
            full,
            VerbsError::Post(PostError::QueueFull { depth: 2, .. })
        ),
        "{full:?}"
    );
    assert_eq!(q.destroy().unwrap(), vec![7, 8]);
    for bad in [
        SrqInit::new(0, 1),
        SrqInit::new(verbs::srq::MAX_SRQ_WR + 1, 1),
        SrqInit::new(4, verbs::srq::MAX_SRQ_SGE + 1),
        SrqInit::new(4, 1).with_limit(5),
    ] {
        let e = net.server.create_srq(&pd, bad).unwrap_err();
        assert!(matches!(e, VerbsError::SrqSize { .. }), "{bad:?}: {e:?}");
    }
    let other = net.client.alloc_pd();
    assert!(matches!(
        net.server.create_srq(&other, SrqInit::new(4, 1)),
        Err(VerbsError::WrongDevice)
    ));
}

/// Declares one `#[test]` per case above, each on fresh `Net`s from
/// `$net`, so every transport's test file runs the same list.
#[macro_export]
macro_rules! srq_cases {
    ($net:expr) => {
        $crate::suite_tests!(srq, $net;
            several_queue_pairs_share_one,
            limit_event_fires_once,
            empty_terminates,
            queue_pairs_going_leave_its_work_requests,
            destroy_returns_what_is_posted,
        );
    };
}
