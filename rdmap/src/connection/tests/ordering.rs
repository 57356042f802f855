//! Completion order, ORD/IRD limits, unsignaled requests.

use ddp::memory::Access;

use super::transport::ulpdus;
use super::util::{pattern, Pair, Setup};
use crate::completion::{WcOpcode, WcStatus};
use crate::opcode::Opcode;
use crate::wire::Control;
use crate::work_request::{PostError, SendOp, SendWr};

#[test]
fn a_send_after_a_read_completes_after_it() {
    let mut p = Pair::new(Setup::default());
    let src = p.b.register(Access::REMOTE_READ, pattern(100_000, 1));
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 100_000]);
    let msg = p.a.register(Access::NONE, vec![1; 10]);
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 10]);
    let rs = p.b.sge(r);
    p.b.recv(1, vec![rs]);
    let (k, s, m) = (p.a.sge(sink), p.b.sge(src), p.a.sge(msg));
    p.a.read(1, k, s);
    p.a.send(2, vec![m]);
    p.drive();
    let order: Vec<u64> = p.a.completions().iter().map(|c| c.wr_id).collect();
    assert_eq!(order, vec![1, 2]);
}

/// Counts READ requests minus completed READ responses along a's stream as
/// the peer would see them: never more than ORD outstanding.
fn max_outstanding(a_wire: &[u8], b_wire: &[u8]) -> usize {
    let requests = ulpdus(a_wire, true)
        .iter()
        .filter(|u| Control(u[1]).opcode() == Opcode::ReadRequest)
        .count();
    let last_responses = ulpdus(b_wire, true)
        .iter()
        .filter(|u| Control(u[1]).opcode() == Opcode::ReadResponse && u[0] & 0x40 != 0)
        .count();
    assert_eq!(requests, last_responses);
    requests
}

#[test]
fn reads_beyond_ord_wait_instead_of_failing() {
    let mut p = Pair::new(Setup {
        ord: 2,
        ird: 2,
        ..Setup::default()
    });
    let src = p.b.register(Access::REMOTE_READ, pattern(64 * 20, 1));
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 64 * 20]);
    for i in 0..20u64 {
        let mut k = p.a.sge(sink);
        let mut s = p.b.sge(src);
        k.to += i * 64;
        k.len = 64;
        s.to += i * 64;
        p.a.read(i, k, s);
    }
    // Only ORD requests go out before responses come back.
    let mut buf = vec![0u8; 1 << 16];
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut buf);
    let first = ulpdus(&buf[..n], true);
    assert_eq!(first.len(), 2);
    p.inject_to_b(&buf[..n]);
    p.a.wire.extend_from_slice(&buf[..n]);
    p.drive();
    assert!(p.a.bytes(sink) == &pattern(64 * 20, 1)[..]);
    let ids: Vec<u64> = p.a.completions().iter().map(|c| c.wr_id).collect();
    assert_eq!(ids, (0..20).collect::<Vec<_>>());
    assert_eq!(max_outstanding(&p.a.wire, &p.b.wire), 20);
    assert_eq!(
        p.b.conn.state(),
        crate::connection::State::Established,
        "IRD was never exceeded"
    );
}

#[test]
fn many_outstanding_reads() {
    let mut p = Pair::new(Setup {
        ord: 32,
        ird: 32,
        ..Setup::default()
    });
    let size = 3000usize;
    let src = p.b.register(Access::REMOTE_READ, pattern(size * 64, 3));
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; size * 64]);
    for i in 0..64u64 {
        let mut k = p.a.sge(sink);
        let mut s = p.b.sge(src);
        k.to += i * size as u64;
        k.len = size as u32;
        s.to += i * size as u64;
        p.a.read(i, k, s);
    }
    p.drive();
    assert!(p.a.bytes(sink) == &pattern(size * 64, 3)[..]);
    assert!(p
        .a
        .completions()
        .iter()
        .all(|c| c.status == WcStatus::Success));
    assert_eq!(p.a.completions().len(), 64);
}

#[test]
fn reads_with_ord_zero_are_refused_at_posting() {
    let mut p = Pair::new(Setup {
        ord: 0,
        ird: 0,
        ..Setup::default()
    });
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 8]);
    let k = p.a.sge(sink);
    let err = p.a.conn.post_send(SendWr {
        wr_id: 1,
        op: SendOp::Read {
            remote_stag: k.stag,
            remote_to: 0,
        },
        sgl: vec![k],
        signaled: true,
        fence: false,
        inline: Vec::new(),
    });
    assert_eq!(err, Err(PostError::NoReadCredit));
}

#[test]
fn read_takes_one_sink_sge() {
    let mut p = Pair::new(Setup::default());
    let sink = p.a.register(Access::LOCAL_WRITE, vec![0; 8]);
    let k = p.a.sge(sink);
    let err = p.a.conn.post_send(SendWr {
        wr_id: 1,
        op: SendOp::Read {
            remote_stag: k.stag,
            remote_to: 0,
        },
        sgl: vec![k, k],
        signaled: true,
        fence: false,
        inline: Vec::new(),
    });
    assert_eq!(err, Err(PostError::ReadSgl(2)));
}

#[test]
fn unsignaled_successes_are_silent() {
    let mut p = Pair::new(Setup::default());
    let dst = p.b.register(Access::REMOTE_WRITE, vec![0; 30]);
    let d = p.b.sge(dst);
    for i in 0..3u64 {
        let src = p.a.register(Access::NONE, vec![i as u8 + 1; 10]);
        let s = p.a.sge(src);
        let mut w = d;
        w.to += i * 10;
        p.a.conn
            .post_send(SendWr {
                wr_id: i,
                op: SendOp::Write {
                    remote_stag: w.stag,
                    remote_to: w.to,
                },
                sgl: vec![s],
                signaled: i == 2,
                fence: false,
                inline: Vec::new(),
            })
            .unwrap();
    }
    p.drive();
    let c = p.a.completions();
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].wr_id, c[0].opcode), (2, WcOpcode::RdmaWrite));
    let mut expect = vec![1u8; 10];
    expect.extend_from_slice(&[2; 10]);
    expect.extend_from_slice(&[3; 10]);
    assert!(p.b.bytes(dst) == &expect[..]);
}

#[test]
fn send_queue_depth_is_enforced() {
    let mut p = Pair::new(Setup {
        sq_depth: 4,
        ..Setup::default()
    });
    for i in 0..4 {
        p.a.send(i, vec![]);
    }
    let err = p.a.conn.post_send(SendWr {
        wr_id: 9,
        op: SendOp::Send {
            solicited: false,
            invalidate: None,
        },
        sgl: vec![],
        signaled: true,
        fence: false,
        inline: Vec::new(),
    });
    assert!(matches!(err, Err(PostError::QueueFull { .. })));
}

#[test]
fn receive_queue_depth_is_enforced() {
    let mut p = Pair::new(Setup {
        rq_depth: 2,
        ..Setup::default()
    });
    p.b.recv(1, vec![]);
    p.b.recv(2, vec![]);
    let err = p.b.conn.post_recv(crate::work_request::RecvWr {
        wr_id: 3,
        sgl: vec![],
    });
    assert!(matches!(err, Err(PostError::QueueFull { .. })));
}

#[test]
fn too_many_sges_are_refused() {
    let mut p = Pair::new(Setup::default());
    let src = p.a.register(Access::NONE, vec![0; 8]);
    let s = p.a.sge(src);
    let err = p.a.conn.post_send(SendWr {
        wr_id: 1,
        op: SendOp::Send {
            solicited: false,
            invalidate: None,
        },
        sgl: vec![s; 7],
        signaled: true,
        fence: false,
        inline: Vec::new(),
    });
    assert_eq!(err, Err(PostError::TooManySges { n: 7, max: 6 }));
}

#[test]
fn read_responses_interleave_with_sends_not_with_writes() {
    let mut p = Pair::new(Setup::default());
    let big = 30_000;
    // b reads from a while a sends and writes to b.
    let a_src = p.a.register(Access::REMOTE_READ, pattern(big, 1));
    let b_sink = p.b.register(Access::LOCAL_WRITE, vec![0; big]);
    let b_recv = p.b.register(Access::LOCAL_WRITE, vec![0; big]);
    let b_win = p.b.register(Access::REMOTE_WRITE, vec![0; big]);
    let (s, k, r, w) = (
        p.a.sge(a_src),
        p.b.sge(b_sink),
        p.b.sge(b_recv),
        p.b.sge(b_win),
    );
    let r0 = p.b.register(Access::LOCAL_WRITE, vec![]);
    let r0 = p.b.sge(r0);
    p.b.recv(0, vec![r0]);
    p.b.recv(1, vec![r]);
    p.a.send(0, vec![]);
    p.drive();
    p.b.read(1, k, s);
    p.drive_until_b_sent_read();
    p.a.send(2, vec![s]);
    p.a.write(3, vec![s], w);
    p.drive();
    assert!(p.b.bytes(b_sink) == &pattern(big, 1)[..]);
    assert!(p.b.bytes(b_recv) == &pattern(big, 1)[..]);
    assert!(p.b.bytes(b_win) == &pattern(big, 1)[..]);
    // On a's wire: Read Response segments and Send segments alternate, and
    // a tagged message never starts while another is incomplete.
    let ops: Vec<(Opcode, bool)> = ulpdus(&p.a.wire, true)
        .iter()
        .map(|u| (Control(u[1]).opcode(), u[0] & 0x40 != 0))
        .collect();
    let mut tagged_open: Option<Opcode> = None;
    let mut interleaved = false;
    let mut prev = None;
    for (op, last) in ops {
        if op.is_tagged() {
            if let Some(open) = tagged_open {
                assert_eq!(open, op, "two tagged messages interleaved");
            }
            tagged_open = if last { None } else { Some(op) };
        }
        if prev == Some(Opcode::ReadResponse) && op == Opcode::Send {
            interleaved = true;
        }
        prev = Some(op);
    }
    assert!(
        interleaved,
        "the Send shared the wire with the Read Response"
    );
}

/// A Read's response segments leave in one `poll_transmit` when nothing
/// on the send queue may go between them: each TO follows the last, only
/// the last has L set (that a Send still alternates with them is
/// `read_responses_interleave_with_sends_not_with_writes`).
#[test]
fn read_response_segments_go_as_one_run() {
    use ddp::wire::{parse_segment, SegmentRepr};

    let mut p = Pair::new(Setup::default());
    let len = 10_000;
    let src = p.a.register(Access::REMOTE_READ, pattern(len, 5));
    let sink = p.b.register(Access::LOCAL_WRITE, vec![0; len]);
    let (s, k) = (p.a.sge(src), p.b.sge(sink));
    // a speaks first: the responder, b, sends nothing before that.
    let r0 = p.b.register(Access::LOCAL_WRITE, vec![]);
    let r0 = p.b.sge(r0);
    p.b.recv(0, vec![r0]);
    p.a.send(0, vec![]);
    p.drive();
    p.b.read(1, k, s);
    // b's Read Request to a.
    let mut out = vec![0u8; 64 * 1024];
    let n = p.b.conn.poll_transmit(&p.b.mem, &mut out);
    assert!(n > 0);
    let used = p.a.conn.handle_bytes_shared(&mut p.a.mem, None, &out[..n]);
    assert_eq!(used, n);
    // One call: every segment of the response.
    let n = p.a.conn.poll_transmit(&p.a.mem, &mut out);
    let segs = ulpdus(&out[..n], true);
    assert!(segs.len() >= 7, "{} segments", segs.len());
    let mut at = 0u64;
    for (i, u) in segs.iter().enumerate() {
        let (SegmentRepr::Tagged(t), payload) = parse_segment(u).expect("parses") else {
            panic!("untagged segment in a Read Response");
        };
        assert_eq!(t.stag, k.stag);
        assert_eq!(t.to, k.to + at);
        assert_eq!(t.last, i == segs.len() - 1);
        at += payload.len() as u64;
    }
    assert_eq!(at, len as u64);
    let used = p.b.conn.handle_bytes_shared(&mut p.b.mem, None, &out[..n]);
    assert_eq!(used, n);
    assert_eq!(p.b.bytes(sink), &pattern(len, 5)[..]);
}

impl Pair {
    /// Runs until b's Read Request is in a's hands.
    fn drive_until_b_sent_read(&mut self) {
        for _ in 0..100 {
            let before = self.b.wire.len();
            self.step();
            if self.b.wire.len() > before {
                return;
            }
        }
        panic!("b never sent");
    }
}
