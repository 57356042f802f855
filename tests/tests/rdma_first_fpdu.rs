//! The initiator's hold on its first FPDU (`MpaOptions::first_fpdu_delay`),
//! which keeps a siw responder from overlooking an FPDU that lands right
//! after its MPA Reply.

mod common;

use std::time::{Duration, Instant};

use common::*;
use verbs::{wr, Access, RtrSet};

const HOLD: Duration = Duration::from_millis(300);

fn drive_for(p: &Pair, d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        if !p.progress() {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// Drives until the server's CQ has a completion; returns the time taken.
fn time_to_server_completion(p: &Pair) -> Duration {
    let start = Instant::now();
    let wc = p.server_completions(1);
    assert!(wc[0].is_success(), "{wc:?}");
    start.elapsed()
}

fn pair(hold: Duration, p2p: bool) -> Pair {
    let mut o = Opts::default();
    o.connect.mpa.first_fpdu_delay = hold;
    if p2p {
        o.connect.mpa.p2p = RtrSet::ALL;
        o.listen.mpa.p2p = RtrSet::ALL;
    }
    connect(Net::memory(&MemoryLinkConfig::default()), o)
}

#[test]
fn first_send_waits_out_the_hold() {
    // The hold starts when the client takes the Reply, inside `pair`.
    let started = Instant::now();
    let p = pair(HOLD, false);
    let c = p
        .client_pd
        .register_vec(pattern(64, 3), Access::LOCAL_WRITE)
        .unwrap();
    let s = p.server_pd.register(64, Access::LOCAL_WRITE).unwrap();
    p.server_qp
        .post_recv(wr::recv(1, vec![s.sge_all()]))
        .unwrap();
    p.client_qp
        .post_send(wr::send(2, vec![c.sge_all()]))
        .unwrap();
    drive_for(&p, HOLD / 3);
    assert!(
        p.server_cq.is_empty(),
        "the Send left before the hold ended"
    );
    time_to_server_completion(&p);
    assert!(started.elapsed() >= HOLD);
    assert_eq!(s.to_vec(), pattern(64, 3));
}

#[test]
fn no_hold_sends_at_once() {
    let p = pair(Duration::ZERO, false);
    let c = p
        .client_pd
        .register_vec(pattern(64, 4), Access::LOCAL_WRITE)
        .unwrap();
    let s = p.server_pd.register(64, Access::LOCAL_WRITE).unwrap();
    p.server_qp
        .post_recv(wr::recv(1, vec![s.sge_all()]))
        .unwrap();
    p.client_qp
        .post_send(wr::send(2, vec![c.sge_all()]))
        .unwrap();
    assert!(time_to_server_completion(&p) < HOLD);
}

#[test]
fn peer_to_peer_rtr_is_held_too() {
    // In peer-to-peer mode the responder may send once the RTR arrives: a
    // server Send reaching the client proves the RTR went, and it must not
    // have gone before the hold ended.
    let started = Instant::now();
    let p = pair(HOLD, true);
    let s = p
        .server_pd
        .register_vec(pattern(32, 5), Access::LOCAL_WRITE)
        .unwrap();
    let c = p.client_pd.register(32, Access::LOCAL_WRITE).unwrap();
    p.client_qp
        .post_recv(wr::recv(1, vec![c.sge_all()]))
        .unwrap();
    p.server_qp
        .post_send(wr::send(2, vec![s.sge_all()]))
        .unwrap();
    let wc = p.client_completions(1);
    assert!(wc[0].is_success(), "{wc:?}");
    assert!(
        started.elapsed() >= HOLD,
        "the RTR left before the hold ended"
    );
    assert_eq!(c.to_vec(), pattern(32, 5));
}
