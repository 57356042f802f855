//! Every operation, every size boundary, scatter/gather, deep queues, both
//! directions at once; data checked byte for byte, guard bytes around it.

use verbs::{wr, Access, VerbsError, WcOpcode, WcStatus};

use super::{assert_exactly, assert_wc, guarded, holding, MakeNet, REMOTE, SIZES};
use crate::common::capture::fpdus;
use crate::common::{connect, pattern, Opts, Pair};

/// Sends of every size land exactly in a larger receive buffer.
pub fn send_every_size(make: MakeNet) {
    let p = connect(make(), Opts::default());
    for (i, &size) in SIZES.iter().enumerate() {
        let id = i as u64;
        let data = pattern(size, i as u8);
        let src = holding(&p.client_pd, 8, &data, 8, Access::NONE);
        let dst = guarded(&p.server_pd, size + 64, Access::LOCAL_WRITE);
        p.server_qp
            .post_recv(wr::recv(id, vec![dst.sge(16, size + 32).unwrap()]))
            .unwrap();
        p.client_qp
            .post_send(wr::send(id, vec![src.sge(8, size).unwrap()]))
            .unwrap();
        let r = p.server_completions(1);
        assert_wc(&r[0], id, WcStatus::Success, WcOpcode::Recv, size as u32);
        assert!(!r[0].solicited && r[0].invalidated.is_none());
        assert_eq!(r[0].qp_num, p.server_qp.num());
        let s = p.client_completions(1);
        assert_wc(&s[0], id, WcStatus::Success, WcOpcode::Send, size as u32);
        assert_exactly(&dst, 16, &data, &format!("{}: send of {size}", p.name));
    }
}

/// RDMA Writes of every size land exactly at the named offset; a Send
/// after each tells the target (Writes are placed before a later Send).
pub fn write_every_size(make: MakeNet) {
    let p = connect(make(), Opts::default());
    for (i, &size) in SIZES.iter().enumerate() {
        let id = i as u64;
        let data = pattern(size, 100 + i as u8);
        let src = holding(&p.client_pd, 3, &data, 5, Access::NONE);
        let dst = guarded(&p.server_pd, size + 64, REMOTE);
        p.server_qp.post_recv(wr::recv(id, vec![])).unwrap();
        p.client_qp
            .post_send(wr::write(
                id,
                vec![src.sge(3, size).unwrap()],
                dst.rkey(),
                dst.addr() + 32,
            ))
            .unwrap();
        p.client_qp.post_send(wr::send(1000 + id, vec![])).unwrap();
        let r = p.server_completions(1);
        assert_wc(&r[0], id, WcStatus::Success, WcOpcode::Recv, 0);
        assert_exactly(&dst, 32, &data, &format!("{}: write of {size}", p.name));
        let s = p.client_completions(2);
        assert_wc(
            &s[0],
            id,
            WcStatus::Success,
            WcOpcode::RdmaWrite,
            size as u32,
        );
        assert_wc(&s[1], 1000 + id, WcStatus::Success, WcOpcode::Send, 0);
    }
}

/// RDMA Reads of every size fetch exactly the named bytes.
pub fn read_every_size(make: MakeNet) {
    let p = connect(make(), Opts::default());
    for (i, &size) in SIZES.iter().enumerate() {
        let id = i as u64;
        let data = pattern(size, 200 + i as u8);
        let src = holding(&p.server_pd, 40, &data, 9, Access::REMOTE_READ);
        let sink = guarded(&p.client_pd, size + 64, Access::LOCAL_WRITE);
        p.client_qp
            .post_send(wr::read(
                id,
                sink.sge(16, size).unwrap(),
                src.rkey(),
                src.addr() + 40,
            ))
            .unwrap();
        let c = p.client_completions(1);
        assert_wc(
            &c[0],
            id,
            WcStatus::Success,
            WcOpcode::RdmaRead,
            size as u32,
        );
        assert_exactly(&sink, 16, &data, &format!("{}: read of {size}", p.name));
        assert!(
            p.server_cq.poll_one().unwrap().is_none(),
            "a READ completes nothing at the source"
        );
    }
}

/// Send with Solicited Event sets the flag on the receive; a plain Send
/// does not.
pub fn solicited_event(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let src = holding(&p.client_pd, 0, b"wake up", 0, Access::NONE);
    let dst = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
    for id in 0..4u64 {
        p.server_qp
            .post_recv(wr::recv(id, vec![dst.sge(16 * id as usize, 16).unwrap()]))
            .unwrap();
    }
    p.client_qp
        .post_send(wr::send_solicited(0, vec![src.sge_all()]))
        .unwrap();
    p.client_qp
        .post_send(wr::send(1, vec![src.sge_all()]))
        .unwrap();
    p.client_qp
        .post_send(wr::send_solicited(2, vec![]))
        .unwrap();
    p.client_qp.post_send(wr::send(3, vec![])).unwrap();
    let r = p.server_completions(4);
    let got: Vec<_> = r
        .iter()
        .map(|w| (w.wr_id, w.solicited, w.byte_len))
        .collect();
    assert_eq!(
        got,
        [(0, true, 7), (1, false, 7), (2, true, 0), (3, false, 0)]
    );
    assert!(p.client_completions(4).iter().all(|w| w.is_success()));
}

/// Send with Invalidate: the named STag of a region registered with
/// `REMOTE_INVALIDATE` is invalidated before the receive completes, which
/// reports it; the region stays registered, invalid, until the program
/// re-registers it under a fresh STag, which the peer can write again.
pub fn send_with_invalidate(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let target = guarded(&p.server_pd, 256, REMOTE | Access::REMOTE_INVALIDATE);
    let rx = guarded(&p.server_pd, 64, Access::LOCAL_WRITE);
    let src = holding(&p.client_pd, 0, b"done with it", 0, Access::NONE);
    // First use the region, then invalidate it with the message.
    let data = pattern(100, 9);
    let wsrc = holding(&p.client_pd, 0, &data, 0, Access::NONE);
    p.client_qp
        .post_send(wr::write(
            1,
            vec![wsrc.sge_all()],
            target.rkey(),
            target.addr(),
        ))
        .unwrap();
    p.server_qp
        .post_recv(wr::recv(2, vec![rx.sge_all()]))
        .unwrap();
    p.client_qp
        .post_send(wr::send_invalidate(3, vec![src.sge_all()], target.rkey()))
        .unwrap();
    let r = p.server_completions(1);
    assert_wc(&r[0], 2, WcStatus::Success, WcOpcode::Recv, 12);
    assert_eq!(r[0].invalidated, Some(target.rkey()));
    assert!(!target.is_valid());
    assert_exactly(&target, 0, &data, "written before the invalidate");
    let c = p.client_completions(2);
    assert!(c.iter().all(|w| w.is_success()), "{c:?}");
    assert_eq!(p.server.region_count(), 2, "invalid, not deregistered");
    let old = target.rkey();
    let fresh = target.reregister().unwrap();
    assert_ne!(fresh, old);
    let again = pattern(50, 4);
    let asrc = holding(&p.client_pd, 0, &again, 0, Access::NONE);
    p.client_qp
        .post_send(wr::write(4, vec![asrc.sge_all()], fresh, target.addr()))
        .unwrap();
    // A Send after the Write: its arrival means the Write has landed.
    p.server_qp
        .post_recv(wr::recv(5, vec![rx.sge_all()]))
        .unwrap();
    p.client_qp.post_send(wr::send(6, vec![])).unwrap();
    let c = p.client_completions(2);
    assert!(c.iter().all(|w| w.is_success()), "{c:?}");
    assert!(p.server_completions(1)[0].is_success());
    let mut got = [0u8; 50];
    target.read(0, &mut got).unwrap();
    assert_eq!(&got[..], &again[..], "valid again under its fresh STag");
}

/// Scatter/gather: a Send gathered from three regions lands across three
/// receive SGEs split at other points; a Write gathers the same way.
pub fn scatter_gather(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let parts = [pattern(100, 1), pattern(3000, 2), pattern(7, 3)];
    let whole: Vec<u8> = parts.concat();
    let srcs: Vec<_> = parts
        .iter()
        .enumerate()
        .map(|(i, d)| holding(&p.client_pd, i * 5, d, 11, Access::NONE))
        .collect();
    let sgl: Vec<_> = srcs
        .iter()
        .enumerate()
        .map(|(i, mr)| mr.sge(i * 5, parts[i].len()).unwrap())
        .collect();
    let splits = [1000usize, 1500, 5000];
    let dsts: Vec<_> = splits
        .iter()
        .map(|&n| guarded(&p.server_pd, n + 8, Access::LOCAL_WRITE))
        .collect();
    let rsgl: Vec<_> = dsts
        .iter()
        .zip(splits)
        .map(|(mr, n)| mr.sge(4, n).unwrap())
        .collect();
    p.server_qp.post_recv(wr::recv(1, rsgl)).unwrap();
    p.client_qp.post_send(wr::send(2, sgl.clone())).unwrap();
    let r = p.server_completions(1);
    assert_wc(
        &r[0],
        1,
        WcStatus::Success,
        WcOpcode::Recv,
        whole.len() as u32,
    );
    assert_exactly(&dsts[0], 4, &whole[..1000], "first receive SGE");
    assert_exactly(&dsts[1], 4, &whole[1000..2500], "second receive SGE");
    assert_exactly(&dsts[2], 4, &whole[2500..], "third receive SGE");

    let target = guarded(&p.server_pd, whole.len() + 20, REMOTE);
    p.client_qp
        .post_send(wr::write(3, sgl, target.rkey(), target.addr() + 10))
        .unwrap();
    p.server_qp.post_recv(wr::recv(4, vec![])).unwrap();
    p.client_qp.post_send(wr::send(5, vec![])).unwrap();
    p.server_completions(1);
    assert_exactly(&target, 10, &whole, "gathered write");
    let c = p.client_completions(3);
    let ids: Vec<_> = c.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(
        ids,
        [
            (2, WcStatus::Success),
            (3, WcStatus::Success),
            (5, WcStatus::Success)
        ]
    );
    // More SGEs than the queue pair allows is a local error at posting.
    let seven: Vec<_> = (0..7).map(|_| srcs[0].sge(0, 1).unwrap()).collect();
    assert!(matches!(
        p.client_qp.post_send(wr::send(6, seven.clone())),
        Err(VerbsError::Post(rdmap::PostError::TooManySges {
            n: 7,
            max: 6
        }))
    ));
    assert!(matches!(
        p.server_qp.post_recv(wr::recv(7, seven)),
        Err(VerbsError::Post(rdmap::PostError::TooManySges {
            n: 7,
            max: 6
        }))
    ));
}

/// Many requests of every kind outstanding at once: completions come in
/// posting order on each queue, every byte lands.
pub fn many_outstanding(make: MakeNet) {
    let p = connect(make(), Opts::default());
    const N: usize = 120;
    let sizes: Vec<usize> = (0..N).map(|i| (i * 977) % 9000).collect();
    let recv_buf = guarded(&p.server_pd, N * 9000, Access::LOCAL_WRITE);
    let write_target = guarded(&p.server_pd, N * 9000, REMOTE);
    let read_source_bytes = pattern(N * 9000, 77);
    let read_source = holding(&p.server_pd, 0, &read_source_bytes, 0, Access::REMOTE_READ);
    let sink = guarded(&p.client_pd, N * 9000, Access::LOCAL_WRITE);
    let src_bytes = pattern(N * 9000, 55);
    let src = holding(&p.client_pd, 0, &src_bytes, 0, Access::NONE);
    for i in 0..N {
        if i % 3 == 0 {
            p.server_qp
                .post_recv(wr::recv(
                    i as u64,
                    vec![recv_buf.sge(i * 9000, 9000).unwrap()],
                ))
                .unwrap();
        }
    }
    for (i, &n) in sizes.iter().enumerate() {
        let off = i * 9000;
        let w = match i % 3 {
            0 => wr::send(i as u64, vec![src.sge(off, n).unwrap()]),
            1 => wr::write(
                i as u64,
                vec![src.sge(off, n).unwrap()],
                write_target.rkey(),
                write_target.addr() + off as u64,
            ),
            _ => wr::read(
                i as u64,
                sink.sge(off, n).unwrap(),
                read_source.rkey(),
                read_source.addr() + off as u64,
            ),
        };
        p.client_qp.post_send(w).unwrap();
    }
    let c = p.client_completions(N);
    let ids: Vec<u64> = c.iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, (0..N as u64).collect::<Vec<_>>(), "posting order");
    assert!(c.iter().all(|w| w.is_success()), "{c:?}");
    let r = p.server_completions(N / 3);
    let rids: Vec<u64> = r.iter().map(|w| w.wr_id).collect();
    assert_eq!(rids, (0..N as u64).step_by(3).collect::<Vec<_>>());
    for (i, &n) in sizes.iter().enumerate() {
        let off = i * 9000;
        let (mr, want) = match i % 3 {
            0 => (&recv_buf, &src_bytes[off..off + n]),
            1 => (&write_target, &src_bytes[off..off + n]),
            _ => (&sink, &read_source_bytes[off..off + n]),
        };
        if i % 3 == 0 {
            assert_eq!(r[i / 3].byte_len as usize, n);
        }
        let got = mr.with_bytes(|b| b[off..off + 9000].to_vec());
        assert_eq!(&got[..n], want, "request {i}");
        assert!(
            got[n..].iter().all(|&b| b == crate::common::GUARD),
            "request {i} overran"
        );
    }
}

/// A full send queue refuses posts (READs stay queued until answered);
/// once answered, posting works again. A full receive queue refuses too.
pub fn queue_limits(make: MakeNet) {
    let opts = Opts {
        sq_depth: 16,
        rq_depth: 8,
        ..Opts::default()
    };
    let p = connect(make(), opts);
    let src = holding(
        &p.server_pd,
        0,
        &pattern(16 * 64, 5),
        0,
        Access::REMOTE_READ,
    );
    let sink = guarded(&p.client_pd, 16 * 64, Access::LOCAL_WRITE);
    // The server is not driven while posting: every READ stays outstanding.
    for i in 0..16 {
        p.client_qp
            .post_send(wr::read(
                i,
                sink.sge(i as usize * 64, 64).unwrap(),
                src.rkey(),
                src.addr() + i * 64,
            ))
            .unwrap();
    }
    let full = p.client_qp.post_send(wr::send(99, vec![]));
    assert!(
        matches!(
            full,
            Err(VerbsError::Post(rdmap::PostError::QueueFull {
                queue: "send",
                depth: 16
            }))
        ),
        "{full:?}"
    );
    let c = p.client_completions(16);
    assert!(c
        .iter()
        .enumerate()
        .all(|(i, w)| w.wr_id == i as u64 && w.is_success()));
    assert_eq!(sink.to_vec(), src.to_vec());
    p.server_qp.post_recv(wr::recv(1, vec![])).unwrap();
    p.client_qp.post_send(wr::send(100, vec![])).unwrap();
    assert!(p.client_completions(1)[0].is_success());
    assert!(p.server_completions(1)[0].is_success());
    for i in 0..8 {
        p.server_qp.post_recv(wr::recv(10 + i, vec![])).unwrap();
    }
    assert!(matches!(
        p.server_qp.post_recv(wr::recv(20, vec![])),
        Err(VerbsError::Post(rdmap::PostError::QueueFull {
            queue: "receive",
            ..
        }))
    ));
}

/// More READs than ORD allows are queued, not refused, and leave one at a
/// time as responses return: the wire never carries more than ORD
/// outstanding Read Requests.
pub fn reads_beyond_ord(make: MakeNet) {
    let mut opts = Opts::default();
    opts.connect.ord = 2;
    opts.accept.ird = 2;
    let p = connect(make(), opts);
    assert_eq!(p.client_info.ord, 2);
    const N: usize = 40;
    let data = pattern(N * 5000, 3);
    let src = holding(&p.server_pd, 0, &data, 0, Access::REMOTE_READ);
    let sink = guarded(&p.client_pd, N * 5000, Access::LOCAL_WRITE);
    for i in 0..N {
        p.client_qp
            .post_send(wr::read(
                i as u64,
                sink.sge(i * 5000, 5000).unwrap(),
                src.rkey(),
                src.addr() + (i * 5000) as u64,
            ))
            .unwrap();
    }
    let c = p.client_completions(N);
    assert!(c
        .iter()
        .enumerate()
        .all(|(i, w)| w.wr_id == i as u64 && w.is_success()));
    assert_exactly(&sink, 0, &data, "all reads");
    if let Some(cap) = &p.capture {
        let (events, _) = cap.decode();
        let mut outstanding = 0i64;
        let mut max = 0;
        let mut requests = 0;
        for f in fpdus(&events) {
            match f.opcode {
                Some(rdmap::Opcode::ReadRequest) => {
                    outstanding += 1;
                    requests += 1;
                    max = max.max(outstanding);
                }
                Some(rdmap::Opcode::ReadResponse) => {
                    if let Some(ddp::wire::SegmentRepr::Tagged(t)) = f.ddp {
                        if t.last {
                            outstanding -= 1;
                        }
                    }
                }
                _ => {}
            }
        }
        assert_eq!(requests, N);
        assert_eq!(max, 2, "{}: at most ORD Read Requests on the wire", p.name);
    }
}

/// Sends queue up behind a Write larger than the transport's buffers and
/// complete after it, in order.
pub fn sends_queue_behind_a_large_write(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let big = pattern(24 << 20, 8);
    let src = holding(&p.client_pd, 0, &big, 0, Access::NONE);
    let dst = guarded(&p.server_pd, big.len(), REMOTE);
    let rx = guarded(&p.server_pd, 100 * 16, Access::LOCAL_WRITE);
    for i in 0..100u64 {
        p.server_qp
            .post_recv(wr::recv(i, vec![rx.sge(i as usize * 16, 16).unwrap()]))
            .unwrap();
    }
    p.client_qp
        .post_send(wr::write(0, vec![src.sge_all()], dst.rkey(), dst.addr()))
        .unwrap();
    let msgs = holding(&p.client_pd, 0, &pattern(100 * 16, 1), 0, Access::NONE);
    for i in 1..=100u64 {
        p.client_qp
            .post_send(wr::send(
                i,
                vec![msgs.sge((i - 1) as usize * 16, 16).unwrap()],
            ))
            .unwrap();
    }
    let c = p.client_completions(101);
    assert!(c
        .iter()
        .enumerate()
        .all(|(i, w)| w.wr_id == i as u64 && w.is_success()));
    let r = p.server_completions(100);
    assert!(r
        .iter()
        .enumerate()
        .all(|(i, w)| w.wr_id == i as u64 && w.byte_len == 16));
    assert_exactly(&rx, 0, &pattern(100 * 16, 1), "sends");
    // The last Send was received, so the Write before it was placed.
    assert_exactly(&dst, 0, &big, "large write");
}

/// Both sides send, write and read to each other at the same time.
pub fn both_directions_at_once(make: MakeNet) {
    let p = connect(make(), Opts::default());
    const N: usize = 1 << 20;
    struct End<'a> {
        p: &'a Pair,
        client: bool,
    }
    let setup = |e: &End, seed: u8| {
        let (pd, qp) = if e.client {
            (&e.p.client_pd, &e.p.client_qp)
        } else {
            (&e.p.server_pd, &e.p.server_qp)
        };
        let mine = holding(pd, 0, &pattern(3 * N, seed), 0, REMOTE);
        let landing = guarded(pd, 3 * N, REMOTE);
        qp.post_recv(wr::recv(1, vec![landing.sge(0, N).unwrap()]))
            .unwrap();
        (mine, landing)
    };
    let c = End {
        p: &p,
        client: true,
    };
    let s = End {
        p: &p,
        client: false,
    };
    let (c_mine, c_land) = setup(&c, 1);
    let (s_mine, s_land) = setup(&s, 2);
    for (qp, mine, theirs) in [
        (&p.client_qp, &c_mine, &s_land),
        (&p.server_qp, &s_mine, &c_land),
    ] {
        qp.post_send(wr::write(
            10,
            vec![mine.sge(N, N).unwrap()],
            theirs.rkey(),
            theirs.addr() + N as u64,
        ))
        .unwrap();
        qp.post_send(wr::send(11, vec![mine.sge(0, N).unwrap()]))
            .unwrap();
    }
    // Each reads the other's third part into its own landing region.
    p.client_qp
        .post_send(wr::read(
            12,
            c_land.sge(2 * N, N).unwrap(),
            s_mine.rkey(),
            s_mine.addr() + 2 * N as u64,
        ))
        .unwrap();
    p.server_qp
        .post_send(wr::read(
            12,
            s_land.sge(2 * N, N).unwrap(),
            c_mine.rkey(),
            c_mine.addr() + 2 * N as u64,
        ))
        .unwrap();
    for cq in [&p.client_cq, &p.server_cq] {
        let mut wcs = p.completions(cq, 4);
        wcs.sort_by_key(|w| w.wr_id);
        let got: Vec<_> = wcs
            .iter()
            .map(|w| (w.wr_id, w.status, w.byte_len))
            .collect();
        assert_eq!(
            got,
            [
                (1, WcStatus::Success, N as u32),
                (10, WcStatus::Success, N as u32),
                (11, WcStatus::Success, N as u32),
                (12, WcStatus::Success, N as u32)
            ]
        );
    }
    assert_exactly(&c_land, 0, &s_mine.to_vec(), "client landing");
    assert_exactly(&s_land, 0, &c_mine.to_vec(), "server landing");
}

/// Unsignaled Sends and Writes complete silently; signaled ones (and the
/// receives) still report, in order.
pub fn unsignaled_requests(make: MakeNet) {
    let p = connect(make(), Opts::default());
    let src = holding(&p.client_pd, 0, &pattern(20 * 100, 4), 0, Access::NONE);
    let dst = guarded(&p.server_pd, 20 * 100, Access::LOCAL_WRITE);
    let target = guarded(&p.server_pd, 20 * 100, REMOTE);
    for i in 0..20u64 {
        p.server_qp
            .post_recv(wr::recv(i, vec![dst.sge(i as usize * 100, 100).unwrap()]))
            .unwrap();
    }
    for i in 0..20u64 {
        let sge = src.sge(i as usize * 100, 100).unwrap();
        let mut w = if i % 2 == 0 {
            wr::send(i, vec![sge])
        } else {
            let to = target.addr() + i * 100;
            let mut w = wr::write(i, vec![sge], target.rkey(), to);
            w.signaled = false;
            p.client_qp.post_send(w).unwrap();
            wr::send(i, vec![src.sge(i as usize * 100, 100).unwrap()])
        };
        w.signaled = i % 5 == 4;
        p.client_qp.post_send(w).unwrap();
    }
    let r = p.server_completions(20);
    assert!(r
        .iter()
        .enumerate()
        .all(|(i, w)| w.wr_id == i as u64 && w.is_success()));
    assert_exactly(&dst, 0, &src.to_vec(), "all sends");
    let c = p.settle(&p.client_cq, 200);
    let ids: Vec<_> = c.iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, [4, 9, 14, 19], "only the signaled requests report");
    for i in (1..20).step_by(2) {
        let got = target.with_bytes(|b| b[i * 100..i * 100 + 100].to_vec());
        assert_eq!(got, src.with_bytes(|b| b[i * 100..i * 100 + 100].to_vec()));
    }
}
