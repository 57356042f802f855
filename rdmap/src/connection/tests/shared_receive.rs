//! Queue 0 drawing on a shared pool (a verbs shared receive queue): Sends
//! and Immediate Data land in the pool's buffers in posting order, an
//! empty pool is answered like an empty receive queue, and an error or a
//! close flushes only the buffer the connection was filling.

use ddp::memory::Access;
use ddp::untagged::SharedBuffers;

use super::errors::{assert_terminate, assert_terminated, attach};
use super::transport::ulpdus;
use super::util::{config, pattern, Pair, Setup, PD};
use crate::completion::{WcOpcode, WcStatus};
use crate::connection::Role;
use crate::term::TermCode;
use crate::work_request::{PostError, RecvWr, SendOp, SendWr};

/// b receives from a shared pool of `depth` buffers.
fn shared_pair(setup: Setup, depth: usize) -> Pair {
    let a = config(Role::Initiator, &setup);
    let mut b = config(Role::Responder, &setup);
    b.shared_receive = true;
    let mut p = Pair::with_configs(setup, a, b);
    p.b.srq = Some(SharedBuffers::new(PD, depth, 2));
    p
}

#[test]
fn sends_land_in_the_pools_buffers_in_posting_order() {
    let mut p = shared_pair(Setup::default(), 8);
    let bufs: Vec<_> = (0..3)
        .map(|_| p.b.register(Access::LOCAL_WRITE, vec![0; 32]))
        .collect();
    for (i, &r) in bufs.iter().enumerate() {
        let sge = p.b.sge(r);
        p.b.srq
            .as_mut()
            .unwrap()
            .post(100 + i as u64, &[sge])
            .unwrap();
    }
    for i in 0..2u8 {
        let src = p.a.register(Access::NONE, pattern(20, i));
        let s = p.a.sge(src);
        p.a.send(u64::from(i), vec![s]);
    }
    p.drive();
    let got: Vec<_> =
        p.b.completions()
            .iter()
            .map(|c| (c.wr_id, c.status, c.byte_len))
            .collect();
    assert_eq!(
        got,
        vec![(100, WcStatus::Success, 20), (101, WcStatus::Success, 20)]
    );
    assert_eq!(&p.b.bytes(bufs[0])[..20], &pattern(20, 0)[..]);
    assert_eq!(&p.b.bytes(bufs[1])[..20], &pattern(20, 1)[..]);
    assert_eq!(p.b.srq.as_ref().unwrap().posted(), 1);
}

#[test]
fn immediate_data_takes_a_pool_buffer() {
    let mut p = shared_pair(
        Setup {
            rfc7306: true,
            ..Setup::default()
        },
        4,
    );
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
    let sge = p.b.sge(r);
    p.b.srq.as_mut().unwrap().post(9, &[sge]).unwrap();
    p.a.conn
        .post_send(SendWr {
            wr_id: 1,
            op: SendOp::SendImm {
                solicited: true,
                imm: 0xfeed,
            },
            sgl: vec![],
            signaled: true,
            fence: false,
            inline: Vec::new(),
        })
        .unwrap();
    p.drive();
    let c = p.b.completions();
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].wr_id, c[0].opcode, c[0].imm_data, c[0].solicited),
        (9, WcOpcode::RecvImm, Some(0xfeed), true)
    );
    assert_eq!(p.b.srq.as_ref().unwrap().posted(), 0);
}

#[test]
fn an_empty_pool_is_answered_as_an_empty_receive_queue() {
    let mut p = shared_pair(Setup::default(), 4);
    let src = p.a.register(Access::NONE, pattern(10, 1));
    let s = p.a.sge(src);
    p.a.send(1, vec![s]);
    p.drive();
    let send = ulpdus(&p.a.wire, true).remove(0);
    assert_terminate(&p.b, [0x12, 0x02, 0xc0, 0x00], &attach(28, &send[..18]));
    assert_terminated(&p.a, true, TermCode::DDP_UT_NO_BUFFER);
    assert!(p.b.completions().is_empty());
}

#[test]
fn an_error_flushes_only_the_buffer_being_filled() {
    let mut p = shared_pair(Setup::default(), 4);
    let small = p.b.register(Access::LOCAL_WRITE, vec![0; 4]);
    let spare = p.b.register(Access::LOCAL_WRITE, vec![0; 64]);
    let (s1, s2) = (p.b.sge(small), p.b.sge(spare));
    let pool = p.b.srq.as_mut().unwrap();
    pool.post(1, &[s1]).unwrap();
    pool.post(2, &[s2]).unwrap();
    let src = p.a.register(Access::NONE, pattern(10, 1));
    let s = p.a.sge(src);
    p.a.send(1, vec![s]);
    p.drive();
    assert_terminated(&p.b, false, TermCode::DDP_UT_TOO_LONG);
    let c = p.b.completions();
    assert_eq!(c.len(), 1, "only the buffer the Send failed in");
    assert_eq!((c[0].wr_id, c[0].status), (1, WcStatus::LocLenErr));
    assert_eq!(p.b.srq.as_ref().unwrap().posted(), 1, "buffer 2 stays");
    p.b.conn.close();
    assert!(
        p.b.conn.poll_event().is_none(),
        "a close flushes no pool buffer"
    );
}

#[test]
fn a_shared_connection_refuses_its_own_receives() {
    let mut p = shared_pair(Setup::default(), 4);
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
    let sge = p.b.sge(r);
    let e = p.b.conn.post_recv(RecvWr {
        wr_id: 1,
        sgl: vec![sge],
    });
    assert_eq!(e, Err(PostError::SharedReceiveQueue));
}
