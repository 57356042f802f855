//! RFC 7306 between two connections that agreed to it: immediate data,
//! atomics, their limits, and every error with its TERMINATE on the wire.

use ddp::memory::{Access, STag};

use super::errors::{assert_terminate, assert_terminated, attach, fpdu};
use super::transport::ulpdus;
use super::util::{pattern, Pair, Setup, Side};
use crate::completion::{WcOpcode, WcStatus};
use crate::opcode::Opcode;
use crate::term::TermCode;
use crate::wire::{AtomicOp, AtomicRequestRepr, AtomicResponseRepr, Body, Control, MessageRepr};
use crate::work_request::{AtomicArgs, PostError, SendOp, SendWr, Sge};
use ddp::wire::{SegmentRepr, UntaggedRepr};

fn agreed() -> Setup {
    Setup {
        rfc7306: true,
        ..Setup::default()
    }
}

fn post(side: &mut Side, wr_id: u64, op: SendOp, sgl: Vec<Sge>) -> Result<(), PostError> {
    side.conn.post_send(SendWr {
        wr_id,
        op,
        sgl,
        signaled: true,
        fence: false,
        inline: Vec::new(),
    })
}

/// An 8-byte target at b holding `value`, with `access`.
fn target(p: &mut Pair, value: u64, access: Access) -> Sge {
    let t = p.b.register(access, value.to_ne_bytes().to_vec());
    p.b.sge(t)
}

/// An 8-byte sink at a for the original value.
fn sink(p: &mut Pair) -> Sge {
    let s = p.a.register(Access::LOCAL_WRITE, vec![0xee; 8]);
    p.a.sge(s)
}

fn atomic(p: &mut Pair, wr_id: u64, t: Sge, args: AtomicArgs) -> Sge {
    let s = sink(p);
    let op = SendOp::Atomic {
        remote_stag: t.stag,
        remote_to: t.to,
        args,
    };
    post(&mut p.a, wr_id, op, vec![s]).unwrap();
    s
}

fn value(side: &Side, s: Sge) -> u64 {
    u64::from_ne_bytes(side.bytes(s.stag).try_into().unwrap())
}

fn ops(side: &Side) -> Vec<(u64, WcStatus, WcOpcode, Option<u32>)> {
    side.completions()
        .iter()
        .map(|c| (c.wr_id, c.status, c.opcode, c.imm_data))
        .collect()
}

#[test]
fn write_with_immediate_data_completes_one_receive_after_the_data() {
    let mut p = Pair::new(agreed());
    let src = p.a.register(Access::NONE, pattern(3000, 3));
    let dst = p.b.register(Access::REMOTE_WRITE, vec![0; 3000]);
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 16]);
    let (s, d, rs) = (p.a.sge(src), p.b.sge(dst), p.b.sge(r));
    p.b.recv(7, vec![rs]);
    let op = SendOp::WriteImm {
        remote_stag: d.stag,
        remote_to: d.to,
        imm: 0xfeed_f00d,
    };
    post(&mut p.a, 1, op, vec![s]).unwrap();
    p.drive();
    assert_eq!(p.b.bytes(dst), &pattern(3000, 3)[..]);
    assert_eq!(p.b.bytes(r), &[0; 16], "the receive buffer is not written");
    assert_eq!(
        ops(&p.b),
        vec![(7, WcStatus::Success, WcOpcode::RecvImm, Some(0xfeed_f00d))]
    );
    assert_eq!(p.b.completions()[0].byte_len, 0);
    assert_eq!(
        ops(&p.a),
        vec![(1, WcStatus::Success, WcOpcode::RdmaWrite, None)]
    );
    // The Write's segments, then the 8-byte Immediate Data on queue 0.
    let u = ulpdus(&p.a.wire, true);
    let last = u.last().unwrap();
    assert_eq!(
        last,
        &[
            0x41, 0x48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xfe, 0xed, 0xf0, 0x0d, 0,
            0, 0, 0
        ]
    );
    assert!(u[..u.len() - 1].iter().all(|s| s[0] & 0x80 != 0));
}

#[test]
fn send_with_immediate_data_consumes_a_receive_per_message() {
    let mut p = Pair::new(agreed());
    let src = p.a.register(Access::NONE, pattern(100, 9));
    let (r1, r2, r3) = (
        p.b.register(Access::LOCAL_WRITE, vec![0; 100]),
        p.b.register(Access::LOCAL_WRITE, vec![0; 4]),
        p.b.register(Access::LOCAL_WRITE, vec![0; 4]),
    );
    for (id, r) in [(11, r1), (12, r2), (13, r3)] {
        let s = p.b.sge(r);
        p.b.recv(id, vec![s]);
    }
    let s = p.a.sge(src);
    let with_data = SendOp::SendImm {
        solicited: false,
        imm: 5,
    };
    post(&mut p.a, 1, with_data, vec![s]).unwrap();
    let bare_se = SendOp::SendImm {
        solicited: true,
        imm: 6,
    };
    post(&mut p.a, 2, bare_se, vec![]).unwrap();
    p.drive();
    assert_eq!(
        ops(&p.b),
        vec![
            (11, WcStatus::Success, WcOpcode::Recv, None),
            (12, WcStatus::Success, WcOpcode::RecvImm, Some(5)),
            (13, WcStatus::Success, WcOpcode::RecvImm, Some(6)),
        ]
    );
    assert_eq!(p.b.bytes(r1), &pattern(100, 9)[..]);
    let solicited: Vec<_> = p.b.completions().iter().map(|c| c.solicited).collect();
    assert_eq!(solicited, vec![false, false, true]);
    assert_eq!(
        ops(&p.a),
        vec![
            (1, WcStatus::Success, WcOpcode::Send, None),
            (2, WcStatus::Success, WcOpcode::Send, None),
        ]
    );
    // MSNs 1, 2, 3 on queue 0; the solicited one is opcode 9.
    let u = ulpdus(&p.a.wire, true);
    let heads: Vec<_> = u.iter().map(|s| (s[1], s[13])).collect();
    assert_eq!(heads, vec![(0x43, 1), (0x48, 2), (0x49, 3)]);
}

#[test]
fn immediate_data_without_a_receive_is_a_ddp_error() {
    let mut p = Pair::new(agreed());
    let op = SendOp::SendImm {
        solicited: false,
        imm: 1,
    };
    post(&mut p.a, 1, op, vec![]).unwrap();
    p.drive();
    let imm = ulpdus(&p.a.wire, true).remove(0);
    assert_terminate(&p.b, [0x12, 0x02, 0xc0, 0x00], &attach(26, &imm[..18]));
    assert_terminated(&p.a, true, TermCode::DDP_UT_NO_BUFFER);
    // Complete once handed to TCP, as a Send is.
    assert_eq!(
        ops(&p.a),
        vec![(1, WcStatus::Success, WcOpcode::Send, None)]
    );
    assert!(p.b.completions().is_empty());
}

#[test]
fn fetch_add_and_compare_swap() {
    let mut p = Pair::new(agreed());
    let t = target(&mut p, 40, Access::REMOTE_ATOMIC);
    let s1 = atomic(&mut p, 1, t, AtomicArgs::fetch_add(2));
    let s2 = atomic(&mut p, 2, t, AtomicArgs::cmp_swap(42, 100));
    let s3 = atomic(&mut p, 3, t, AtomicArgs::cmp_swap(42, 7));
    let s4 = atomic(&mut p, 4, t, AtomicArgs::swap(u64::MAX));
    let s5 = atomic(&mut p, 5, t, AtomicArgs::fetch_add(1));
    p.drive();
    let got: Vec<_> = [s1, s2, s3, s4, s5]
        .iter()
        .map(|&s| value(&p.a, s))
        .collect();
    assert_eq!(got, vec![40, 42, 100, 100, u64::MAX]);
    assert_eq!(value(&p.b, t), 0, "the last add wrapped");
    let c: Vec<_> = ops(&p.a).iter().map(|c| (c.0, c.1, c.2)).collect();
    use WcOpcode::*;
    assert_eq!(
        c,
        vec![
            (1, WcStatus::Success, FetchAdd),
            (2, WcStatus::Success, CmpSwap),
            (3, WcStatus::Success, CmpSwap),
            (4, WcStatus::Success, Swap),
            (5, WcStatus::Success, FetchAdd),
        ]
    );
    assert!(p.a.completions().iter().all(|c| c.byte_len == 8));
    assert!(p.b.completions().is_empty(), "atomics take no receive");
    assert!(p.a.conn.is_idle() && p.b.conn.is_idle());
}

#[test]
fn masked_operations_touch_only_their_fields() {
    let mut p = Pair::new(agreed());
    let t = target(&mut p, 0x0000_0005_ffff_ffff, Access::REMOTE_ATOMIC);
    // Two 32-bit counters in one word: the low one wraps on its own.
    let add = AtomicArgs {
        add_swap_mask: 1 << 31,
        ..AtomicArgs::fetch_add(0x0000_0001_0000_0001)
    };
    atomic(&mut p, 1, t, add);
    p.drive();
    assert_eq!(value(&p.b, t), 0x0000_0006_0000_0000);
    let swap_low_byte = AtomicArgs {
        add_swap_mask: 0xff,
        ..AtomicArgs::swap(0xabcd)
    };
    atomic(&mut p, 2, t, swap_low_byte);
    p.drive();
    assert_eq!(value(&p.b, t), 0x0000_0006_0000_00cd);
}

#[test]
fn atomics_and_reads_share_ord_and_complete_in_order() {
    let setup = Setup {
        ird: 1,
        ord: 1,
        ..agreed()
    };
    let mut p = Pair::new(setup);
    let t = target(&mut p, 1, Access::REMOTE_ATOMIC | Access::REMOTE_READ);
    let rsink = p.a.register(Access::LOCAL_WRITE, vec![0; 8]);
    let rs = p.a.sge(rsink);
    let s1 = atomic(&mut p, 1, t, AtomicArgs::fetch_add(1));
    p.a.read(2, rs, t);
    let s3 = atomic(&mut p, 3, t, AtomicArgs::fetch_add(1));
    // One round: only the first request may leave (ORD 1).
    p.step();
    let sent: Vec<_> = ulpdus(&p.a.wire, true).iter().map(|u| u[1]).collect();
    assert_eq!(sent, vec![0x4a]);
    p.drive();
    assert_eq!((value(&p.a, s1), value(&p.a, s3)), (1, 2));
    assert_eq!(p.a.bytes(rsink), &2u64.to_ne_bytes());
    let ids: Vec<_> = ops(&p.a).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(
        ids,
        vec![
            (1, WcStatus::Success),
            (2, WcStatus::Success),
            (3, WcStatus::Success)
        ]
    );
    // Queue 1 carried all three requests, MSN 1, 2, 3.
    let q1: Vec<_> = ulpdus(&p.a.wire, true)
        .iter()
        .map(|u| (u[9], u[13]))
        .collect();
    assert_eq!(q1, vec![(1, 1), (1, 2), (1, 3)]);
}

#[test]
fn posting_checks() {
    let mut plain = Pair::new(Setup::default());
    let s = sink(&mut plain);
    let t = Sge {
        stag: STag(0x100),
        to: 0x1000,
        len: 8,
    };
    let fa = SendOp::Atomic {
        remote_stag: t.stag,
        remote_to: t.to,
        args: AtomicArgs::fetch_add(1),
    };
    let imm = SendOp::WriteImm {
        remote_stag: t.stag,
        remote_to: 0,
        imm: 1,
    };
    for op in [
        fa,
        imm,
        SendOp::SendImm {
            solicited: true,
            imm: 1,
        },
    ] {
        assert_eq!(
            post(&mut plain.a, 1, op, vec![s]),
            Err(PostError::Rfc7306NotAgreed)
        );
    }
    plain.drive();
    assert!(plain.a.wire.is_empty(), "nothing went on the wire");

    let mut p = Pair::new(agreed());
    let s = sink(&mut p);
    let mut long = s;
    long.len = 16;
    assert_eq!(
        post(&mut p.a, 1, fa, vec![long]),
        Err(PostError::AtomicSink { sges: 1, len: 16 })
    );
    assert_eq!(
        post(&mut p.a, 1, fa, vec![]),
        Err(PostError::AtomicSink { sges: 0, len: 0 })
    );
    let odd = SendOp::Atomic {
        remote_stag: t.stag,
        remote_to: 0x1004,
        args: AtomicArgs::fetch_add(1),
    };
    assert_eq!(
        post(&mut p.a, 1, odd, vec![s]),
        Err(PostError::AtomicAlignment(0x1004))
    );
}

/// a sends one atomic to a target b registered with `access`; returns
/// the pair after driving and the request as it went out.
fn refused(access: Access, to_offset: u64) -> (Pair, Vec<u8>) {
    let mut p = Pair::new(agreed());
    let mut t = target(&mut p, 9, access);
    t.to += to_offset;
    atomic(&mut p, 1, t, AtomicArgs::fetch_add(1));
    p.drive();
    let req = ulpdus(&p.a.wire, true).remove(0);
    (p, req)
}

#[test]
fn atomic_without_the_right_is_an_access_violation() {
    let (p, req) = refused(Access::REMOTE_WRITE | Access::REMOTE_READ, 0);
    assert_eq!(req.len(), 18 + 52);
    assert_terminate(&p.b, [0x01, 0x02, 0xc0, 0x00], &attach(70, &req[..18]));
    assert_terminated(&p.a, true, TermCode::RDMAP_ACCESS_RIGHTS);
    assert_eq!(ops(&p.a)[0].1, WcStatus::RemAccessErr);
    assert_eq!(value(&p.b, p.b.sge(STag::new(1, 0))), 9, "target untouched");
}

#[test]
fn atomic_past_the_region_is_a_bounds_violation() {
    let (p, req) = refused(Access::REMOTE_ATOMIC, 8);
    assert_terminate(&p.b, [0x01, 0x01, 0xc0, 0x00], &attach(70, &req[..18]));
    assert_eq!(ops(&p.a)[0].1, WcStatus::RemAccessErr);
}

/// A crafted Atomic Request from a (no post-time checks), as a peer could
/// send it.
fn crafted_request(msn: u32, r: AtomicRequestRepr) -> Vec<u8> {
    let m = MessageRepr {
        ddp: SegmentRepr::Untagged(UntaggedRepr::new(
            true,
            Control::new(Opcode::AtomicRequest).0,
            0,
            1,
            msn,
            0,
        )),
        body: Body::AtomicRequest(r),
    };
    let mut out = vec![0; m.buffer_len()];
    m.emit(&mut out).unwrap();
    out
}

fn request_to(t: Sge, op: AtomicOp) -> AtomicRequestRepr {
    AtomicRequestRepr {
        op,
        reserved: 0,
        request_id: 0,
        stag: t.stag,
        to: t.to,
        add_swap_data: 1,
        add_swap_mask: 0,
        compare_data: 0,
        compare_mask: 0,
    }
}

#[test]
fn misaligned_and_unknown_atomics_are_refused() {
    let mut p = Pair::new(agreed());
    let r = p.b.register(Access::REMOTE_ATOMIC, vec![0; 16]);
    let mut t = p.b.sge(r);
    t.to += 4;
    let u = crafted_request(1, request_to(t, AtomicOp::FetchAdd));
    p.inject_to_b(&fpdu(&u));
    p.drive();
    assert_terminate(&p.b, [0x01, 0x01, 0xc0, 0x00], &attach(70, &u[..18]));
    assert_eq!(p.b.bytes(r), &[0; 16]);

    let mut p = Pair::new(agreed());
    let t = target(&mut p, 3, Access::REMOTE_ATOMIC);
    let u = crafted_request(1, request_to(t, AtomicOp::Unknown(0xc)));
    p.inject_to_b(&fpdu(&u));
    p.drive();
    assert_terminate(&p.b, [0x02, 0xff, 0xc0, 0x00], &attach(70, &u[..18]));
    assert_eq!(value(&p.b, t), 3);
}

#[test]
fn atomics_beyond_ird_terminate_the_stream() {
    let setup = Setup {
        ird: 2,
        ord: 2,
        ..agreed()
    };
    let mut p = Pair::new(setup);
    let t = target(&mut p, 0, Access::REMOTE_ATOMIC);
    // Three requests arrive before the responder can answer any.
    let frames: Vec<u8> = (1..=3)
        .flat_map(|msn| fpdu(&crafted_request(msn, request_to(t, AtomicOp::FetchAdd))))
        .collect();
    let third = crafted_request(3, request_to(t, AtomicOp::FetchAdd));
    let n = p.b.conn.handle_bytes(&mut p.b.mem, &frames);
    assert_eq!(n, frames.len());
    p.drive();
    assert_terminate(&p.b, [0x02, 0x07, 0xc0, 0x00], &attach(70, &third[..18]));
    assert_eq!(value(&p.b, t), 2, "the two within IRD were carried out");
}

#[test]
fn unsolicited_and_mismatched_atomic_responses() {
    let resp = |id: u32| {
        let m = MessageRepr {
            ddp: SegmentRepr::Untagged(UntaggedRepr::new(
                true,
                Control::new(Opcode::AtomicResponse).0,
                0,
                3,
                1,
                0,
            )),
            body: Body::AtomicResponse(AtomicResponseRepr {
                request_id: id,
                original: 0,
            }),
        };
        let mut out = vec![0; m.buffer_len()];
        m.emit(&mut out).unwrap();
        out
    };
    let mut p = Pair::new(agreed());
    let u = resp(0);
    p.inject_to_b(&fpdu(&u));
    p.drive();
    assert_terminate(&p.b, [0x02, 0x06, 0xc0, 0x00], &attach(30, &u[..18]));

    // a has one atomic outstanding whose request never arrived; a
    // response with another identifier is a remote operation error.
    let mut p = Pair::new(agreed());
    let t = target(&mut p, 0, Access::REMOTE_ATOMIC);
    atomic(&mut p, 4, t, AtomicArgs::fetch_add(1));
    let mut lost = vec![0u8; 4096];
    assert!(p.a.conn.poll_transmit(&p.a.mem, &mut lost) > 0);
    let u = resp(77);
    p.inject_to_a(&fpdu(&u));
    p.drive();
    assert_terminate(&p.a, [0x02, 0xff, 0xc0, 0x00], &attach(30, &u[..18]));
    assert_terminated(&p.a, false, TermCode::RDMAP_OPERATION_UNSPECIFIED);
    assert_eq!(
        ops(&p.a),
        vec![(4, WcStatus::WrFlushErr, WcOpcode::FetchAdd, None)]
    );
    assert_eq!(value(&p.b, t), 0);
}

#[test]
fn chunked_delivery_of_every_new_message() {
    for seed in 1..6 {
        let mut p = Pair::new(agreed()).chunked(seed, 7);
        let t = target(&mut p, 10, Access::REMOTE_ATOMIC);
        let dst = p.b.register(Access::REMOTE_WRITE, vec![0; 500]);
        let d = p.b.sge(dst);
        let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
        let rs = p.b.sge(r);
        p.b.recv(1, vec![rs]);
        let src = p.a.register(Access::NONE, pattern(500, 4));
        let s = p.a.sge(src);
        let op = SendOp::WriteImm {
            remote_stag: d.stag,
            remote_to: d.to,
            imm: 99,
        };
        post(&mut p.a, 1, op, vec![s]).unwrap();
        let k = atomic(&mut p, 2, t, AtomicArgs::cmp_swap(10, 20));
        p.drive();
        assert_eq!(value(&p.a, k), 10);
        assert_eq!(value(&p.b, t), 20);
        assert_eq!(p.b.bytes(dst), &pattern(500, 4)[..]);
        assert_eq!(
            ops(&p.b),
            vec![(1, WcStatus::Success, WcOpcode::RecvImm, Some(99))]
        );
    }
}
