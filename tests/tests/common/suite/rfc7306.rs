//! RFC 7306 end to end: immediate data and atomics between queue pairs
//! whose applications agreed to them, the typed refusal when they did
//! not, and each error with its TERMINATE decoded from the capture.

use ddp::error::TermCode;
use rdmap::work_request::PostError;
use verbs::{wr, Access, STag, VerbsError, WcOpcode, WcStatus};

use super::errors::{expect_completions, expect_terminate};
use super::{assert_exactly, assert_wc, guarded, holding, MakeNet, REMOTE};
use crate::common::{connect, pattern, Opts, Pair, Side};

/// Both sides agreed to RFC 7306.
pub fn agreed() -> Opts {
    let mut o = Opts::default();
    o.connect = o.connect.rfc7306(true);
    o.listen = o.listen.with_rfc7306(true);
    o
}

fn native(v: u64) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

fn read_u64(mr: &verbs::MemoryRegion) -> u64 {
    let mut b = [0u8; 8];
    mr.with_bytes(|x| b.copy_from_slice(&x[..8]));
    u64::from_ne_bytes(b)
}

/// RDMA Write with Immediate Data: the data lands, then one receive
/// completes with the value and no bytes; the receive buffer is untouched.
pub fn write_with_immediate(make: MakeNet) {
    let p = connect(make(), agreed());
    for (i, &size) in [0usize, 1, 1440, 70_000].iter().enumerate() {
        let id = i as u64;
        let data = pattern(size, 30 + i as u8);
        let src = holding(&p.client_pd, 0, &data, 0, Access::NONE);
        let dst = guarded(&p.server_pd, size + 64, REMOTE);
        let rx = guarded(&p.server_pd, 16, Access::LOCAL_WRITE);
        p.server_qp
            .post_recv(wr::recv(id, vec![rx.sge_all()]))
            .unwrap();
        let imm = 0x5eed_0000 + id as u32;
        p.client_qp
            .post_send(wr::write_imm(
                id,
                vec![src.sge_all()],
                dst.rkey(),
                dst.addr() + 32,
                imm,
            ))
            .unwrap();
        let r = p.server_completions(1);
        assert_wc(&r[0], id, WcStatus::Success, WcOpcode::RecvImm, 0);
        assert_eq!(r[0].imm_data, Some(imm));
        assert_exactly(&dst, 32, &data, &format!("{}: write_imm of {size}", p.name));
        assert_exactly(&rx, 0, &[], "the receive buffer");
        let s = p.client_completions(1);
        assert_wc(
            &s[0],
            id,
            WcStatus::Success,
            WcOpcode::RdmaWrite,
            size as u32,
        );
        assert_eq!(s[0].imm_data, None);
    }
}

/// Send with Immediate Data: the data takes one receive, the immediate
/// data the next; with Solicited Event the second is solicited.
pub fn send_with_immediate(make: MakeNet) {
    let p = connect(make(), agreed());
    let data = pattern(3000, 5);
    let src = holding(&p.client_pd, 0, &data, 0, Access::NONE);
    let dst = guarded(&p.server_pd, 3000, Access::LOCAL_WRITE);
    p.server_qp
        .post_recv(wr::recv(1, vec![dst.sge_all()]))
        .unwrap();
    for id in 2..=3 {
        p.server_qp.post_recv(wr::recv(id, vec![])).unwrap();
    }
    p.client_qp
        .post_send(wr::send_imm(10, vec![src.sge_all()], 77))
        .unwrap();
    p.client_qp
        .post_send(wr::send_solicited_imm(11, vec![], 78))
        .unwrap();
    let r = p.server_completions(3);
    let got: Vec<_> = r
        .iter()
        .map(|w| (w.wr_id, w.opcode, w.byte_len, w.imm_data, w.solicited))
        .collect();
    assert_eq!(
        got,
        [
            (1, WcOpcode::Recv, 3000, None, false),
            (2, WcOpcode::RecvImm, 0, Some(77), false),
            (3, WcOpcode::RecvImm, 0, Some(78), true),
        ]
    );
    assert_exactly(&dst, 0, &data, "send_imm data");
    let s = p.client_completions(2);
    assert_wc(&s[0], 10, WcStatus::Success, WcOpcode::Send, 3000);
    assert_wc(&s[1], 11, WcStatus::Success, WcOpcode::Send, 0);
}

/// Fetch and Add and Compare and Swap return the value before and leave
/// the one after; the target keeps guard bytes around the 8 it holds.
pub fn atomics(make: MakeNet) {
    let p = connect(make(), agreed());
    let target = holding(&p.server_pd, 8, &native(1000), 8, Access::REMOTE_ATOMIC);
    let at = target.addr() + 8;
    let sinks: Vec<_> = (0..4)
        .map(|_| guarded(&p.client_pd, 8, Access::LOCAL_WRITE))
        .collect();
    let qp = &p.client_qp;
    qp.post_send(wr::fetch_add(1, sinks[0].sge_all(), target.rkey(), at, 5))
        .unwrap();
    qp.post_send(wr::cmp_swap(
        2,
        sinks[1].sge_all(),
        target.rkey(),
        at,
        1005,
        7,
    ))
    .unwrap();
    qp.post_send(wr::cmp_swap(
        3,
        sinks[2].sge_all(),
        target.rkey(),
        at,
        1005,
        9,
    ))
    .unwrap();
    qp.post_send(wr::fetch_add(
        4,
        sinks[3].sge_all(),
        target.rkey(),
        at,
        u64::MAX,
    ))
    .unwrap();
    let c = p.client_completions(4);
    let ops: Vec<_> = c
        .iter()
        .map(|w| (w.wr_id, w.status, w.opcode, w.byte_len))
        .collect();
    assert_eq!(
        ops,
        [
            (1, WcStatus::Success, WcOpcode::FetchAdd, 8),
            (2, WcStatus::Success, WcOpcode::CmpSwap, 8),
            (3, WcStatus::Success, WcOpcode::CmpSwap, 8),
            (4, WcStatus::Success, WcOpcode::FetchAdd, 8),
        ]
    );
    let got: Vec<_> = sinks.iter().map(read_u64).collect();
    assert_eq!(got, [1000, 1005, 7, 7], "{}: originals", p.name);
    assert_exactly(&target, 8, &native(6), "the target after the atomics");
    assert!(
        p.server_cq.poll_one().unwrap().is_none(),
        "no completion at the target"
    );
}

/// Many atomics in flight from both directions at once, each side adding
/// to the other's counter: every original value is seen exactly once.
pub fn many_atomics_both_ways(make: MakeNet) {
    const N: u64 = 100;
    let p = connect(make(), agreed());
    let counters = [
        guarded(&p.client_pd, 8, Access::REMOTE_ATOMIC),
        guarded(&p.server_pd, 8, Access::REMOTE_ATOMIC),
    ];
    for c in &counters {
        c.write(0, &native(0)).unwrap();
    }
    let sinks = [
        guarded(&p.client_pd, 8 * N as usize, Access::LOCAL_WRITE),
        guarded(&p.server_pd, 8 * N as usize, Access::LOCAL_WRITE),
    ];
    for i in 0..N {
        for (side, (qp, other)) in [(&p.client_qp, &counters[1]), (&p.server_qp, &counters[0])]
            .into_iter()
            .enumerate()
        {
            let sink = sinks[side].sge(8 * i as usize, 8).unwrap();
            qp.post_send(wr::fetch_add(i, sink, other.rkey(), other.addr(), 1))
                .unwrap();
        }
    }
    let c = p.client_completions(N as usize);
    let s = p.server_completions(N as usize);
    assert!(c
        .iter()
        .chain(&s)
        .all(|w| w.is_success() && w.opcode == WcOpcode::FetchAdd));
    for (side, sink) in sinks.iter().enumerate() {
        let mut seen: Vec<u64> = sink.with_bytes(|b| {
            b.chunks(8)
                .map(|w| u64::from_ne_bytes(w.try_into().unwrap()))
                .collect()
        });
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..N).collect::<Vec<_>>(),
            "side {side}: each original once"
        );
    }
    assert_eq!((read_u64(&counters[0]), read_u64(&counters[1])), (N, N));
}

/// Without agreement on both sides nothing RFC 7306 goes on the wire: a
/// queue pair that did not agree refuses the post, and one whose peer did
/// not agree gets the peer's TERMINATE (unexpected opcode).
pub fn not_agreed(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let target = guarded(&p.server_pd, 8, Access::REMOTE_ATOMIC);
    let sink = guarded(&p.client_pd, 8, Access::LOCAL_WRITE);
    let posts = [
        wr::fetch_add(1, sink.sge_all(), target.rkey(), target.addr(), 1),
        wr::write_imm(2, vec![], target.rkey(), target.addr(), 1),
        wr::send_imm(3, vec![], 1),
    ];
    for w in posts {
        match p.client_qp.post_send(w) {
            Err(VerbsError::Post(PostError::Rfc7306NotAgreed)) => {}
            other => panic!("{}: {other:?}", p.name),
        }
    }

    // Only the client agreed: its Immediate Data reaches a server that
    // did not.
    let mut one_sided = Opts::default();
    one_sided.connect = one_sided.connect.rfc7306(true);
    let p = connect(make(), one_sided);
    p.server_qp.post_recv(wr::recv(1, vec![])).unwrap();
    p.client_qp.post_send(wr::send_imm(5, vec![], 9)).unwrap();
    expect_terminate(&p, Side::Server, TermCode::RDMAP_UNEXPECTED_OPCODE);
    let s = expect_completions(&p, Side::Server, &[1]);
    assert_eq!(s[0].status, WcStatus::WrFlushErr);
}

/// An atomic the server refuses: its TERMINATE, and the request's status.
fn refused_atomic(
    make: MakeNet,
    code: TermCode,
    status: WcStatus,
    target: impl FnOnce(&Pair) -> (STag, u64),
) {
    let p = connect(make(), agreed());
    let sink = guarded(&p.client_pd, 8, Access::LOCAL_WRITE);
    let (stag, to) = target(&p);
    p.client_qp
        .post_send(wr::fetch_add(1, sink.sge_all(), stag, to, 1))
        .unwrap();
    expect_terminate(&p, Side::Server, code);
    let c = expect_completions(&p, Side::Client, &[1]);
    assert_wc(&c[0], 1, status, WcOpcode::FetchAdd, 0);
    assert_exactly(&sink, 0, &[], "the sink");
}

pub fn atomic_without_remote_atomic(make: MakeNet) {
    refused_atomic(
        make,
        TermCode::RDMAP_ACCESS_RIGHTS,
        WcStatus::RemAccessErr,
        |p| {
            let t = guarded(&p.server_pd, 8, REMOTE);
            (t.rkey(), t.addr())
        },
    );
}

pub fn atomic_out_of_bounds(make: MakeNet) {
    refused_atomic(
        make,
        TermCode::RDMAP_BASE_BOUNDS,
        WcStatus::RemAccessErr,
        |p| {
            let t = guarded(&p.server_pd, 8, Access::REMOTE_ATOMIC);
            (t.rkey(), t.addr() + 8)
        },
    );
}

pub fn atomic_to_invalid_stag(make: MakeNet) {
    refused_atomic(
        make,
        TermCode::RDMAP_INVALID_STAG,
        WcStatus::RemAccessErr,
        |p| {
            let t = guarded(&p.server_pd, 8, Access::REMOTE_ATOMIC);
            (STag(t.rkey().0 ^ 0x5a), t.addr())
        },
    );
}

/// Immediate Data with no receive posted: DDP's "no buffer" error.
pub fn immediate_without_receive(make: MakeNet) {
    let p = connect(make(), agreed());
    p.client_qp.post_send(wr::send_imm(1, vec![], 3)).unwrap();
    expect_terminate(&p, Side::Server, TermCode::DDP_UT_NO_BUFFER);
    let c = expect_completions(&p, Side::Client, &[1]);
    assert_eq!(c[0].opcode, WcOpcode::Send);
}

/// Declares one `#[test]` per case above, each on fresh `Net`s from
/// `$net`, so every transport's test file runs the same list.
#[macro_export]
macro_rules! rfc7306_cases {
    ($net:expr) => {
        $crate::suite_tests!(rfc7306, $net;
            write_with_immediate,
            send_with_immediate,
            atomics,
            many_atomics_both_ways,
            not_agreed,
            atomic_without_remote_atomic,
            atomic_out_of_bounds,
            atomic_to_invalid_stag,
            immediate_without_receive,
        );
    };
}
