//! Hundreds of queue pairs at once on one endpoint, all moving data over
//! the memory link (virtual time): every work request completes once, on
//! its own queue pair, and every byte lands where it was sent.

mod common;

use std::collections::HashMap;

use common::fabric::Fabric;
use common::suite::{assert_exactly, guarded, REMOTE};
use common::{pattern, MemoryLinkConfig};
use verbs::{wr, Access, ListenOptions, MemoryRegion, QpInit, WcOpcode, WcStatus, WorkCompletion};

const QPS: usize = 256;
/// Queue pairs connected at once.
const BATCH: usize = 32;
/// Bytes each Write and Read moves: several FPDUs, so segments of many
/// queue pairs interleave on the link.
const BULK: usize = 16 * 1024;
/// Bytes of each Send.
const SMALL: usize = 64;
/// Sends per queue pair.
const SENDS: usize = 2;

/// What one queue pair moves, and where it must land.
struct Traffic {
    /// Client: the Write's source and the Read's source.
    write_src: MemoryRegion,
    read_src: MemoryRegion,
    /// Server: the Write's target, the Read's sink, the Sends' buffers.
    write_dst: MemoryRegion,
    read_dst: MemoryRegion,
    recv: Vec<MemoryRegion>,
    data: Vec<u8>,
}

/// Work request ids: the queue pair's index times 16 plus the kind.
fn id(qp: usize, kind: u64) -> u64 {
    qp as u64 * 16 + kind
}

const WRITE: u64 = 1;
const READ: u64 = 2;
const SEND: u64 = 3;
const RECV: u64 = 8;

#[test]
fn hundreds_of_queue_pairs_move_data_at_once() {
    // smoltcp has no accept queue: a SYN finds an armed listening socket
    // or is refused. Connect in batches of what the server keeps armed
    // and lets through MPA start-up at once.
    let mut cfg = MemoryLinkConfig::default();
    cfg.tuning.backlog = BATCH;
    let listen = ListenOptions::default().with_backlog(BATCH);
    let f = Fabric::memory(&cfg, listen, 4 * QPS * 8);
    let links: Vec<_> = (0..QPS / BATCH)
        .flat_map(|_| f.connect(BATCH, QpInit::new))
        .collect();
    let traffic: Vec<Traffic> = (0..QPS)
        .map(|i| {
            let data = pattern(BULK, i as u8);
            Traffic {
                write_src: f
                    .client_pd
                    .register_vec(data.clone(), Access::NONE)
                    .unwrap(),
                read_src: f
                    .client_pd
                    .register_vec(data.iter().rev().copied().collect(), Access::REMOTE_READ)
                    .unwrap(),
                write_dst: guarded(&f.server_pd, BULK, REMOTE),
                read_dst: guarded(&f.server_pd, BULK, Access::LOCAL_WRITE),
                recv: (0..SENDS)
                    .map(|_| guarded(&f.server_pd, SMALL, Access::LOCAL_WRITE))
                    .collect(),
                data,
            }
        })
        .collect();
    // Everything is posted before anything is driven.
    for (i, (l, t)) in links.iter().zip(&traffic).enumerate() {
        for (k, rx) in t.recv.iter().enumerate() {
            l.server
                .post_recv(wr::recv(id(i, RECV + k as u64), vec![rx.sge_all()]))
                .unwrap();
        }
        l.client
            .post_send(wr::write(
                id(i, WRITE),
                vec![t.write_src.sge_all()],
                t.write_dst.rkey(),
                t.write_dst.addr(),
            ))
            .unwrap();
        for k in 0..SENDS {
            l.client
                .post_send(wr::send(
                    id(i, SEND + k as u64),
                    vec![t.write_src.sge(k * SMALL, SMALL).unwrap()],
                ))
                .unwrap();
        }
        l.server
            .post_send(wr::read(
                id(i, READ),
                t.read_dst.sge_all(),
                t.read_src.rkey(),
                t.read_src.addr(),
            ))
            .unwrap();
    }
    let client = f.completions(&f.client_cq, QPS * (1 + SENDS));
    let server = f.completions(&f.server_cq, QPS * (1 + SENDS));
    let by_id = |wcs: Vec<WorkCompletion>| {
        let n = wcs.len();
        let map: HashMap<u64, WorkCompletion> = wcs.into_iter().map(|w| (w.wr_id, w)).collect();
        assert_eq!(map.len(), n, "every work request completes once");
        map
    };
    let (client, server) = (by_id(client), by_id(server));
    for (i, (l, t)) in links.iter().zip(&traffic).enumerate() {
        let check = |map: &HashMap<u64, WorkCompletion>, kind, opcode, len, qp: u32| {
            let w = map
                .get(&id(i, kind))
                .unwrap_or_else(|| panic!("queue pair {i}: no completion of kind {kind}"));
            assert_eq!(
                (w.status, w.opcode, w.byte_len as usize, w.qp_num),
                (WcStatus::Success, opcode, len, qp),
                "queue pair {i}, kind {kind}"
            );
        };
        check(&client, WRITE, WcOpcode::RdmaWrite, BULK, l.client.num());
        check(&server, READ, WcOpcode::RdmaRead, BULK, l.server.num());
        for k in 0..SENDS as u64 {
            check(&client, SEND + k, WcOpcode::Send, SMALL, l.client.num());
            check(&server, RECV + k, WcOpcode::Recv, SMALL, l.server.num());
        }
        assert_exactly(&t.write_dst, 0, &t.data, "write");
        let reversed: Vec<u8> = t.data.iter().rev().copied().collect();
        assert_exactly(&t.read_dst, 0, &reversed, "read");
        for (k, rx) in t.recv.iter().enumerate() {
            assert_exactly(rx, 0, &t.data[k * SMALL..(k + 1) * SMALL], "send");
        }
    }
    // Nothing more arrives.
    assert_eq!(f.client_cq.poll_one().unwrap(), None);
    assert_eq!(f.server_cq.poll_one().unwrap(), None);
    println!(
        "{QPS} queue pairs: {} work requests, {} MiB placed, {:?} of virtual time",
        client.len() + server.len(),
        (QPS * (2 * BULK + SENDS * SMALL)) >> 20,
        f.virtual_elapsed()
    );
    f.disconnect(&links);
}
