//! The peer vanishes in the middle of a transfer (its host stops
//! answering: nothing it had in flight arrives, nothing more leaves it).
//! On the surviving side every work request still outstanding completes,
//! once, with a flush or error status (a Write or Send already handed to
//! TCP may report success, as its completion only says it left), every
//! queue pair ends in the error state, and all of it within a bounded
//! number of progress rounds and of virtual time: the TCP user timeout,
//! not the test's patience, decides.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::fabric::{Fabric, Link};
use common::suite::{guarded, REMOTE};
use common::{pattern, MemoryLinkConfig, Side, GUARD};
use verbs::{
    wr, Access, CmEvent, CompletionQueue, Device, DisconnectReason, ListenOptions, MemoryRegion,
    QpInit, QpState, WcOpcode, WcStatus, WorkCompletion,
};

const QPS: usize = 16;
/// Large enough that no transfer finishes before the peer vanishes.
const BULK: usize = 1 << 20;
/// Receives each side posts per queue pair.
const RECVS: u64 = 4;
/// Progress rounds the survivor gets to complete everything.
const ROUNDS: usize = 1_000_000;
/// Virtual time the survivor gets: the TCP user timeout (30 s) with room
/// for the retransmission timer's backoff.
const DETECT_WITHIN: Duration = Duration::from_secs(120);

/// Work request ids: queue pair index times 16 plus the kind.
fn id(qp: usize, kind: u64) -> u64 {
    qp as u64 * 16 + kind
}
const WRITE: u64 = 1;
const READ: u64 = 2;
const SEND: u64 = 3;
const RECV: u64 = 8;

/// The regions one side uses on one queue pair.
struct Regions {
    src: MemoryRegion,
    dst: MemoryRegion,
    sink: MemoryRegion,
    rx: MemoryRegion,
}

/// Both sides post Writes, Reads, Sends and receives on every queue pair.
fn post_everything(f: &Fabric, links: &[Link]) -> Vec<(Regions, Regions)> {
    links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut regions = Vec::new();
            for (qp, pd) in [(&l.client, &f.client_pd), (&l.server, &f.server_pd)] {
                regions.push(Regions {
                    src: pd
                        .register_vec(pattern(BULK, i as u8), Access::REMOTE_READ)
                        .unwrap(),
                    dst: guarded(pd, BULK, REMOTE),
                    sink: guarded(pd, BULK, Access::LOCAL_WRITE),
                    rx: guarded(pd, 64, Access::LOCAL_WRITE),
                });
                let r = regions.last().unwrap_or_else(|| unreachable!());
                for k in 0..RECVS {
                    qp.post_recv(wr::recv(id(i, RECV + k), vec![r.rx.sge_all()]))
                        .unwrap();
                }
            }
            let server = regions.pop().unwrap_or_else(|| unreachable!());
            let client = regions.pop().unwrap_or_else(|| unreachable!());
            for (qp, ours, theirs) in [(&l.client, &client, &server), (&l.server, &server, &client)]
            {
                qp.post_send(wr::write(
                    id(i, WRITE),
                    vec![ours.src.sge_all()],
                    theirs.dst.rkey(),
                    theirs.dst.addr(),
                ))
                .unwrap();
                qp.post_send(wr::read(
                    id(i, READ),
                    ours.sink.sge_all(),
                    theirs.src.rkey(),
                    theirs.src.addr(),
                ))
                .unwrap();
                qp.post_send(wr::send(id(i, SEND), vec![ours.src.sge(0, 64).unwrap()]))
                    .unwrap();
            }
            (client, server)
        })
        .collect()
}

fn drain(cq: &CompletionQueue, into: &mut Vec<WorkCompletion>) {
    while let Some(w) = cq.poll_one().expect("cq poll") {
        into.push(w);
    }
}

fn vanishing(gone: Side) {
    let mut cfg = MemoryLinkConfig::default();
    cfg.tuning.backlog = QPS;
    let listen = ListenOptions::default().with_backlog(QPS);
    let f = Fabric::memory(&cfg, listen, 1 << 14);
    let links = f.connect(QPS, QpInit::new);
    let regions = post_everything(&f, &links);
    let (survivor, cq): (&Device, &CompletionQueue) = match gone {
        Side::Client => (&f.server, &f.server_cq),
        Side::Server => (&f.client, &f.client_cq),
    };
    let survivors_qp = |l: &Link| match gone {
        Side::Client => l.server.num(),
        Side::Server => l.client.num(),
    };
    let surviving_dst = |r: &(Regions, Regions)| match gone {
        Side::Client => r.1.dst.with_bytes(|b| (b[0], b[BULK - 1])),
        Side::Server => r.0.dst.with_bytes(|b| (b[0], b[BULK - 1])),
    };
    // Until the transfers are under way, but not finished.
    let mut before = Vec::new();
    f.drive_until("the first Write under way", || {
        drain(cq, &mut before);
        surviving_dst(&regions[0]).0 != GUARD
    });
    assert!(
        regions.iter().all(|r| surviving_dst(r).1 == GUARD),
        "a Write finished before the peer vanished"
    );
    // The peer is gone: from here on only the survivor runs.
    let vanished_at = f.virtual_elapsed();
    let expected = QPS * (3 + RECVS as usize);
    let mut after = Vec::new();
    let mut rounds = 0;
    while before.len() + after.len() < expected {
        assert!(
            rounds < ROUNDS,
            "{} of {expected} completions after {ROUNDS} rounds",
            before.len() + after.len()
        );
        assert!(
            f.virtual_elapsed() - vanished_at < DETECT_WITHIN,
            "{} of {expected} completions after {DETECT_WITHIN:?} of virtual time",
            before.len() + after.len()
        );
        f.step_alone(survivor);
        drain(cq, &mut after);
        rounds += 1;
    }
    let took = f.virtual_elapsed() - vanished_at;
    // Nothing more comes.
    for _ in 0..100 {
        f.step_alone(survivor);
    }
    drain(cq, &mut after);
    let all: HashMap<(u32, u64), &WorkCompletion> = before
        .iter()
        .chain(&after)
        .map(|w| ((w.qp_num, w.wr_id), w))
        .collect();
    assert_eq!(
        all.len(),
        before.len() + after.len(),
        "every work request completes once"
    );
    assert_eq!(all.len(), expected);
    for w in &after {
        let ok = match w.opcode {
            // Completion of a Write or Send says it was handed to TCP.
            WcOpcode::RdmaWrite | WcOpcode::Send => true,
            _ => w.status != WcStatus::Success,
        };
        assert!(ok, "completed after the peer vanished: {w:?}");
    }
    let flushed = after
        .iter()
        .filter(|w| w.status == WcStatus::WrFlushErr)
        .count();
    for (i, l) in links.iter().enumerate() {
        let qp = match gone {
            Side::Client => &l.server,
            Side::Server => &l.client,
        };
        assert_eq!(qp.state(), QpState::Error, "queue pair {i}");
        let mut ended = false;
        while let Some(ev) = qp.try_event() {
            if let CmEvent::Disconnected { reason } = ev {
                assert!(
                    matches!(
                        reason,
                        DisconnectReason::Reset | DisconnectReason::PeerClosed
                    ),
                    "queue pair {i}: {reason:?}"
                );
                ended = true;
            }
        }
        assert!(ended, "queue pair {i} reported the end");
        for k in [WRITE, READ, SEND, RECV] {
            assert!(all.contains_key(&(survivors_qp(l), id(i, k))));
        }
    }
    println!(
        "{gone:?} vanished: {} completions before, {} after ({flushed} flushed) within {rounds} rounds and {took:?} of virtual time",
        before.len(),
        after.len()
    );
}

#[test]
fn the_client_vanishes_and_the_server_completes_everything() {
    vanishing(Side::Client);
}

#[test]
fn the_server_vanishes_and_the_client_completes_everything() {
    vanishing(Side::Server);
}
