//! Connection churn on one endpoint: thousands of connect / transfer /
//! disconnect cycles over the memory link (virtual time), each with its
//! own queue pairs and memory regions. Whatever a cycle allocates must be
//! gone when it ends: resident memory stays flat after a warm-up and the
//! region tables return to where they started.

mod common;

use common::fabric::Fabric;
use common::suite::{assert_exactly, guarded, REMOTE};
use common::{pattern, MemoryLinkConfig};
use verbs::{wr, Access, ListenOptions, QpInit, WcOpcode, WcStatus};

/// Cycles in all; bounded so the test ends.
const CYCLES: u64 = 5000;
/// Cycles before the first measurement (allocator pools, rings and
/// tables reach their working size).
const WARM_UP: u64 = 500;
/// Growth after the warm-up that still counts as flat. A leak of one
/// region, queue pair or TCP socket per cycle passes only if it
/// is under 8 KiB a cycle (the regions of a cycle alone are 8.1 KiB): generous against allocator slack,
/// tight against anything a cycle keeps.
const GROWTH_LIMIT: u64 = (CYCLES - WARM_UP) * 8 * 1024;

/// Resident set size of this process, in bytes.
fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

#[test]
fn thousands_of_connect_transfer_disconnect_cycles_leave_memory_flat() {
    let f = Fabric::memory(&MemoryLinkConfig::default(), ListenOptions::default(), 1024);
    let regions = (f.client.region_count(), f.server.region_count());
    let mut warm = None;
    for cycle in 0..CYCLES {
        let data = pattern(4096, cycle as u8);
        let src = f
            .client_pd
            .register_vec(data.clone(), Access::NONE)
            .unwrap();
        let sink = guarded(&f.server_pd, 4096, REMOTE);
        let rx = guarded(&f.server_pd, 64, Access::LOCAL_WRITE);
        let links = f.connect(1, QpInit::new);
        let l = &links[0];
        l.server.post_recv(wr::recv(1, vec![rx.sge_all()])).unwrap();
        l.client
            .post_send(wr::write(2, vec![src.sge_all()], sink.rkey(), sink.addr()))
            .unwrap();
        l.client
            .post_send(wr::send(3, vec![src.sge(0, 64).unwrap()]))
            .unwrap();
        let sent = f.completions(&f.client_cq, 2);
        assert!(
            sent.iter().all(|w| w.status == WcStatus::Success),
            "{sent:?}"
        );
        let got = f.completions(&f.server_cq, 1);
        assert_eq!(
            (got[0].status, got[0].opcode, got[0].byte_len),
            (WcStatus::Success, WcOpcode::Recv, 64)
        );
        // The Send follows the Write, so the Write has landed.
        assert_exactly(&sink, 0, &data, "write");
        assert_exactly(&rx, 0, &data[..64], "send");
        f.disconnect(&links);
        drop(links);
        // Regions live until deregistered, as with ibv_dereg_mr.
        for mr in [src, sink, rx] {
            mr.deregister();
        }
        if cycle + 1 == WARM_UP {
            warm = Some(resident());
        }
    }
    let (before, after) = (warm.unwrap_or(0), resident());
    println!(
        "resident memory: {} KiB after {WARM_UP} cycles, {} KiB after {CYCLES} ({:+} KiB); {:?} of virtual time",
        before / 1024,
        after / 1024,
        (after as i64 - before as i64) / 1024,
        f.virtual_elapsed()
    );
    assert_eq!(
        (f.client.region_count(), f.server.region_count()),
        regions,
        "every region of every cycle deregistered"
    );
    assert!(
        after.saturating_sub(before) < GROWTH_LIMIT,
        "resident memory grew by {} bytes over {} cycles",
        after - before,
        CYCLES - WARM_UP
    );
}
