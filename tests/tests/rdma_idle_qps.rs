//! Thousands of idle queue pairs on one device cost little and stand in
//! no one's way: 4096 connect over the memory link (virtual time), the
//! resident memory each idle one adds stays within a bound, and one busy
//! queue pair beside them still moves every byte of its Writes. Its
//! goodput against a device of its own is printed by
//! `cargo run --release -p iwarp-verbs --example idle_qps`.

mod common;

use common::fabric::Fabric;
use common::suite::{assert_exactly, guarded, REMOTE};
use common::{pattern, MemoryLinkConfig};
use std::time::Duration;

use verbs::{wr, Access, ListenOptions, MpaOptions, QpInit, QpState, WcOpcode, WcStatus};

const IDLE: usize = 4096;
/// Queue pairs connected at once.
const BATCH: usize = 64;
/// Writes of the busy queue pair, each of `WRITE` bytes, `DEPTH` at once.
const WRITES: usize = 256;
const WRITE: usize = 64 * 1024;
const DEPTH: usize = 8;
/// Resident bytes an idle queue pair (one end of a connection) may add
/// once idle a second, the target for smoltcp: mostly the socket's slot in the socket set,
/// the receive ring's page the MPA exchange touched and the queue pair's
/// own state; queues take memory as work is posted, not as deep as they
/// may grow (see docs/scaling.md).
const IDLE_BOUND: usize = 16 * 1024;

/// Resident set size of the process, from `/proc/self/statm`.
fn resident_bytes() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[test]
fn thousands_of_idle_queue_pairs_leave_the_busy_one_its_bytes() {
    let mut cfg = MemoryLinkConfig::default();
    cfg.tuning.backlog = BATCH;
    // Idle queue pairs send nothing, not even a first FPDU: the server
    // must not give up on it while thousands connect (seconds of virtual
    // time).
    let mut mpa = MpaOptions::default();
    mpa.first_fpdu_timeout = Duration::from_secs(3600);
    let listen = ListenOptions::default().with_backlog(BATCH).with_mpa(mpa);
    let f = Fabric::memory(&cfg, listen, 4 * DEPTH);
    let busy = f.connect(1, QpInit::new).pop().unwrap();
    let before = resident_bytes();
    let idle: Vec<_> = (0..IDLE / BATCH)
        .flat_map(|_| f.connect(BATCH, QpInit::new))
        .collect();
    // Let the last handshakes' acknowledgements settle, and the streams
    // stay idle past the one to two seconds after which they give back what their
    // sending took (the send ring's page the MPA exchange touched).
    let settled = f.virtual_elapsed() + Duration::from_millis(2500);
    while f.virtual_elapsed() < settled {
        f.step();
    }
    let after = resident_bytes();
    if let (Some(b), Some(a)) = (before, after) {
        // Both ends are in this process: two queue pairs per connection.
        let per_qp = a.saturating_sub(b) / (2 * IDLE);
        println!("{IDLE} idle queue pairs: {per_qp} resident bytes each (bound {IDLE_BOUND})");
        assert!(
            per_qp <= IDLE_BOUND,
            "an idle queue pair holds {per_qp} bytes"
        );
    } else {
        eprintln!("no /proc/self/statm: resident memory not checked");
    }

    let data = pattern(WRITE, 7);
    let src = f
        .client_pd
        .register_vec(data.clone(), Access::NONE)
        .unwrap();
    let dst = guarded(&f.server_pd, WRITE, REMOTE);
    let post = |i: usize| {
        busy.client
            .post_send(wr::write(
                i as u64,
                vec![src.sge_all()],
                dst.rkey(),
                dst.addr(),
            ))
            .unwrap();
    };
    let (mut posted, mut done) = (0, 0);
    while posted < DEPTH {
        post(posted);
        posted += 1;
    }
    while done < WRITES {
        for wc in f.completions(&f.client_cq, 1) {
            assert_eq!(
                (wc.status, wc.opcode, wc.byte_len as usize, wc.qp_num),
                (
                    WcStatus::Success,
                    WcOpcode::RdmaWrite,
                    WRITE,
                    busy.client.num()
                )
            );
            done += 1;
            if posted < WRITES {
                post(posted);
                posted += 1;
            }
        }
    }
    assert_exactly(&dst, 0, &data, "write");
    assert_eq!(f.client_cq.poll_one().unwrap(), None);
    // The idle ones are still there, connected, with nothing to say.
    for l in &idle {
        assert_eq!(l.client.state(), QpState::Rts);
        assert_eq!(l.server.state(), QpState::Rts);
        assert!(l.client.try_event().is_none() && l.server.try_event().is_none());
    }
    println!(
        "{} MiB written beside {IDLE} idle queue pairs in {:?} of virtual time",
        (WRITES * WRITE) >> 20,
        f.virtual_elapsed()
    );
}
