//! Random workloads in both directions against a trivial model: every byte
//! lands where it was aimed, every signaled request completes successfully
//! in posting order, receives complete in order with their lengths.

use ddp::memory::{Access, STag};
use proptest::prelude::*;

use super::util::{pattern, Pair, Setup, Side};
use crate::completion::{WcOpcode, WcStatus};
use crate::work_request::{SendOp, SendWr, Sge};

#[derive(Debug, Clone, Copy)]
enum Kind {
    Send,
    Write,
    Read,
}

#[derive(Debug, Clone, Copy)]
struct Op {
    /// Posted by the initiator (else the responder).
    from_a: bool,
    kind: Kind,
    len: usize,
    signaled: bool,
}

fn op() -> impl Strategy<Value = Op> {
    (
        any::<bool>(),
        prop_oneof![Just(Kind::Send), Just(Kind::Write), Just(Kind::Read)],
        prop_oneof![0usize..64, 0usize..5000, 0usize..40_000],
        any::<bool>(),
    )
        .prop_map(|(from_a, kind, len, signaled)| Op {
            from_a,
            kind,
            len,
            signaled,
        })
}

/// What one op should leave behind: the region that must end up equal to
/// `expect`, on which side.
struct Check {
    on_a: bool,
    stag: STag,
    expect: Vec<u8>,
}

fn sides(p: &mut Pair, from_a: bool) -> (&mut Side, &mut Side) {
    if from_a {
        (&mut p.a, &mut p.b)
    } else {
        (&mut p.b, &mut p.a)
    }
}

fn run(ops: &[Op], setup: Setup, chunk: Option<(u64, usize)>, tx_room: usize) {
    let mut p = Pair::new(setup);
    if let Some((seed, max)) = chunk {
        p = p.chunked(seed, max);
    }
    p.tx_room = tx_room;
    // The responder sends only after the initiator's first FPDU.
    p.a.conn
        .post_send(SendWr {
            wr_id: u64::MAX,
            op: SendOp::Write {
                remote_stag: STag(0x0bad_0000),
                remote_to: 0,
            },
            sgl: vec![],
            signaled: false,
            fence: false,
            inline: Vec::new(),
        })
        .unwrap();
    let mut checks = Vec::new();
    let mut expect_sq = (Vec::new(), Vec::new());
    let mut expect_rq = (Vec::new(), Vec::new());
    for (i, o) in ops.iter().enumerate() {
        let id = i as u64;
        let data = pattern(o.len, i as u8);
        let (me, peer) = sides(&mut p, o.from_a);
        let (op, sgl) = match o.kind {
            Kind::Send => {
                let src = me.register(Access::NONE, data.clone());
                let dst = peer.register(Access::LOCAL_WRITE, vec![0; o.len]);
                let d = peer.sge(dst);
                peer.recv(id, vec![d]);
                checks.push(Check {
                    on_a: !o.from_a,
                    stag: dst,
                    expect: data,
                });
                let rq = if o.from_a {
                    &mut expect_rq.1
                } else {
                    &mut expect_rq.0
                };
                rq.push((id, o.len as u32));
                (
                    SendOp::Send {
                        solicited: false,
                        invalidate: None,
                    },
                    me.sge(src),
                )
            }
            Kind::Write => {
                let src = me.register(Access::NONE, data.clone());
                let dst = peer.register(Access::REMOTE_WRITE, vec![0; o.len]);
                let d = peer.sge(dst);
                checks.push(Check {
                    on_a: !o.from_a,
                    stag: dst,
                    expect: data,
                });
                (
                    SendOp::Write {
                        remote_stag: d.stag,
                        remote_to: d.to,
                    },
                    me.sge(src),
                )
            }
            Kind::Read => {
                let src = peer.register(Access::REMOTE_READ, data.clone());
                let dst = me.register(Access::LOCAL_WRITE, vec![0; o.len]);
                let s = peer.sge(src);
                checks.push(Check {
                    on_a: o.from_a,
                    stag: dst,
                    expect: data,
                });
                (
                    SendOp::Read {
                        remote_stag: s.stag,
                        remote_to: s.to,
                    },
                    me.sge(dst),
                )
            }
        };
        let sgl: Vec<Sge> = vec![sgl];
        me.conn
            .post_send(SendWr {
                wr_id: id,
                op,
                sgl,
                signaled: o.signaled,
                fence: false,
                inline: Vec::new(),
            })
            .unwrap();
        if o.signaled {
            let sq = if o.from_a {
                &mut expect_sq.0
            } else {
                &mut expect_sq.1
            };
            sq.push(id);
        }
    }
    p.drive();
    for c in &checks {
        let side = if c.on_a { &p.a } else { &p.b };
        assert!(side.bytes(c.stag) == &c.expect[..], "data of {:?}", c.stag);
    }
    for (side, sq, rq) in [
        (&p.a, &expect_sq.0, &expect_rq.0),
        (&p.b, &expect_sq.1, &expect_rq.1),
    ] {
        let wcs = side.completions();
        assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
        let got_sq: Vec<u64> = wcs
            .iter()
            .filter(|c| c.opcode != WcOpcode::Recv)
            .map(|c| c.wr_id)
            .collect();
        let got_rq: Vec<(u64, u32)> = wcs
            .iter()
            .filter(|c| c.opcode == WcOpcode::Recv)
            .map(|c| (c.wr_id, c.byte_len))
            .collect();
        assert_eq!(&got_sq, sq, "send queue completions in posting order");
        assert_eq!(&got_rq, rq, "receive completions in order");
        assert!(side.conn.is_idle());
        assert!(side.terminated().is_none());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_workloads(ops in proptest::collection::vec(op(), 0..24)) {
        run(&ops, Setup::default(), None, 64 * 1024);
    }

    #[test]
    fn random_workloads_chunked_with_small_windows(
        ops in proptest::collection::vec(op(), 0..16),
        seed in any::<u64>(),
        max in 1usize..4000,
        room in 1500usize..20_000,
        crc in any::<bool>(),
        ord in 1u16..6,
    ) {
        let setup = Setup { crc, ord, ird: ord, ..Setup::default() };
        run(&ops, setup, Some((seed, max)), room);
    }

    #[test]
    fn random_workloads_with_markers_and_small_mss(
        ops in proptest::collection::vec(op(), 0..12),
        mss in 128usize..2000,
    ) {
        let setup = Setup { markers: true, max_fpdu: mss, ..Setup::default() };
        run(&ops, setup, None, 64 * 1024);
    }
}
