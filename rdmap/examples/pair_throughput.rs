//! Throughput of two connections joined in memory (no TCP): how fast the
//! protocol machinery itself frames, checks, places and completes.
//!
//!     cargo run --release -p iwarp-rdmap --example pair_throughput

use std::time::Instant;

use ddp::memory::{Access, PdId, RegionTable, STag};
use rdmap::{Connection, ConnectionConfig, Event, RecvWr, SendOp, SendWr, Sge, WcStatus};

const PD: PdId = PdId(1);
const MSG: usize = 1 << 20;
const TOTAL: usize = 1 << 30;

fn negotiated(role: mpa::Role, crc: bool) -> mpa::Negotiated {
    mpa::Negotiated {
        rev: 2,
        crc,
        markers_tx: false,
        markers_rx: false,
        ird: 16,
        ord: 16,
        rtr: None,
        peer_private_data: Vec::new(),
        role,
        peer_ird_ord: None,
    }
}

#[derive(Clone, Copy)]
enum Op {
    Write,
    Read,
    Send,
}

fn run(op: Op, crc: bool, mss: usize) -> f64 {
    let mut cfg_a = ConnectionConfig::new(negotiated(mpa::Role::Initiator, crc), PD, mss);
    let mut cfg_b = ConnectionConfig::new(negotiated(mpa::Role::Responder, crc), PD, mss);
    cfg_a.sq_depth = 64;
    cfg_b.rq_depth = 64;
    let mut a = Connection::new(cfg_a);
    let mut b = Connection::new(cfg_b);
    let (mut ma, mut mb) = (RegionTable::new(), RegionTable::new());
    let data: Vec<u8> = (0..MSG).map(|i| i as u8).collect();
    ma.register(STag(0x100), PD, 0, Access::ALL, data.clone(), false);
    mb.register(STag(0x200), PD, 0, Access::ALL, data, false);
    let local = Sge {
        stag: STag(0x100),
        to: 0,
        len: MSG as u32,
    };
    let messages = TOTAL / MSG;
    let mut posted = 0;
    let mut done = 0;
    let mut buf_ab = vec![0u8; 256 * 1024];
    let mut buf_ba = vec![0u8; 256 * 1024];
    let start = Instant::now();
    while done < messages {
        while posted < messages && posted - done < 16 {
            if let Op::Send = op {
                b.post_recv(RecvWr::new(
                    posted as u64,
                    vec![Sge {
                        stag: STag(0x200),
                        to: 0,
                        len: MSG as u32,
                    }],
                ))
                .unwrap();
            }
            let op = match op {
                Op::Write => SendOp::Write {
                    remote_stag: STag(0x200),
                    remote_to: 0,
                },
                Op::Read => SendOp::Read {
                    remote_stag: STag(0x200),
                    remote_to: 0,
                },
                Op::Send => SendOp::Send {
                    solicited: false,
                    invalidate: None,
                },
            };
            a.post_send(SendWr::new(posted as u64, op, vec![local]))
                .unwrap();
            posted += 1;
        }
        let n = a.poll_transmit(&ma, &mut buf_ab);
        assert_eq!(b.handle_bytes(&mut mb, &buf_ab[..n]), n);
        let m = b.poll_transmit(&mb, &mut buf_ba);
        assert_eq!(a.handle_bytes(&mut ma, &buf_ba[..m]), m);
        while let Some(e) = a.poll_event() {
            match e {
                Event::Completion(c) => {
                    assert_eq!(c.status, WcStatus::Success);
                    done += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        while b.poll_event().is_some() {}
    }
    let secs = start.elapsed().as_secs_f64();
    TOTAL as f64 / secs / 1e6
}

fn main() {
    for (name, op) in [("WRITE", Op::Write), ("READ", Op::Read), ("SEND", Op::Send)] {
        for crc in [false, true] {
            for mss in [1448, 8948] {
                let mbps = run(op, crc, mss);
                println!(
                    "{name:5} crc={:<5} mss={mss:5}: {mbps:8.0} MB/s ({} MiB in 1 MiB messages)",
                    crc,
                    TOTAL >> 20
                );
            }
        }
    }
}
