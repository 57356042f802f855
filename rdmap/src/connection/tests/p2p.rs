//! Peer-to-peer start-up (RFC 6581 RTR) and the rule that the initiator
//! sends the first FPDU.

use ddp::memory::Access;
use mpa::Rtr;

use super::transport::ulpdus;
use super::util::{pattern, Pair, Setup};
use crate::completion::WcStatus;
use crate::connection::State;

fn p2p(rtr: Rtr) -> Pair {
    Pair::new(Setup {
        rtr: Some(rtr),
        ..Setup::default()
    })
}

#[test]
fn responder_sends_nothing_before_the_first_fpdu() {
    let mut p = Pair::new(Setup::default());
    assert_eq!(p.b.conn.state(), State::AwaitingFirstFpdu);
    let src = p.b.register(Access::NONE, vec![1; 8]);
    let s = p.b.sge(src);
    p.b.send(1, vec![s]);
    let mut buf = vec![0u8; 4096];
    assert_eq!(p.b.conn.poll_transmit(&p.b.mem, &mut buf), 0);
    assert!(!p.b.conn.wants_write());
    // Once a's first FPDU arrives, b's Send goes.
    let r = p.a.register(Access::LOCAL_WRITE, vec![0; 8]);
    let rs = p.a.sge(r);
    p.a.recv(1, vec![rs]);
    let r = p.b.register(Access::LOCAL_WRITE, vec![]);
    let rs = p.b.sge(r);
    p.b.recv(1, vec![rs]);
    p.a.send(9, vec![]);
    p.drive();
    assert_eq!(p.b.conn.state(), State::Established);
    assert_eq!(p.a.bytes(ddp::memory::STag::new(1, 0)), &[1u8; 8][..]);
}

#[test]
fn a_responder_told_to_may_send_first() {
    // perftest's ib_write_lat server writes before its client sent
    // anything; siw lets it, and so does this opt-in.
    let setup = Setup::default();
    let a = super::util::config(mpa::Role::Initiator, &setup);
    let mut b = super::util::config(mpa::Role::Responder, &setup);
    b.responder_sends_first = true;
    b.first_fpdu_deadline = Some(std::time::Instant::now());
    let mut p = Pair::with_configs(setup, a, b);
    assert_eq!(p.b.conn.state(), State::Established);
    assert_eq!(p.b.conn.poll_timeout(), None, "no first-FPDU deadline");
    let r = p.a.register(Access::LOCAL_WRITE, vec![0; 8]);
    let rs = p.a.sge(r);
    p.a.recv(1, vec![rs]);
    let src = p.b.register(Access::NONE, vec![7; 8]);
    let s = p.b.sge(src);
    p.b.send(1, vec![s]);
    p.drive();
    assert_eq!(p.a.bytes(r), &[7u8; 8][..]);
    assert!(p
        .a
        .completions()
        .iter()
        .any(|c| c.status == WcStatus::Success));
}

#[test]
fn write_rtr_is_sent_first_and_swallowed() {
    let mut p = p2p(Rtr::Write);
    p.drive();
    let a = ulpdus(&p.a.wire, true);
    // siw's RTR: zero-length tagged Write to STag 1, TO 0 (rping-cxgb.pcap).
    assert_eq!(
        a,
        vec![vec![0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]]
    );
    assert!(p.b.wire.is_empty());
    assert!(p.a.events.is_empty() && p.b.events.is_empty());
    assert_eq!(p.b.conn.state(), State::Established);
    assert!(p.a.conn.is_idle());
}

#[test]
fn the_cxgb_capture_rtr_fpdu_byte_for_byte() {
    // rping-cxgb.pcap frame 8, CRC on.
    let mut p = p2p(Rtr::Write);
    p.drive();
    assert_eq!(
        p.a.wire,
        [
            0x00, 0x0e, 0xc1, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0xeb, 0xd3, 0x4c, 0x5f
        ]
    );
}

#[test]
fn send_rtr_takes_no_receive_buffer() {
    let mut p = p2p(Rtr::Send);
    let r = p.b.register(Access::LOCAL_WRITE, vec![0; 8]);
    let rs = p.b.sge(r);
    p.b.recv(1, vec![rs]);
    p.drive();
    assert!(p.b.events.is_empty(), "the RTR completed nothing");
    let a = ulpdus(&p.a.wire, true);
    assert_eq!(a.len(), 1);
    assert_eq!(
        a[0],
        vec![0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    );
    // The first real Send carries MSN 2 and lands in the posted buffer.
    let src = p.a.register(Access::NONE, vec![5; 8]);
    let s = p.a.sge(src);
    p.a.send(2, vec![s]);
    p.drive();
    assert_eq!(p.b.bytes(r), &[5u8; 8][..]);
    assert_eq!(p.b.completions()[0].wr_id, 1);
    let a = ulpdus(&p.a.wire, true);
    assert_eq!(&a[1][10..14], &[0, 0, 0, 2]);
}

#[test]
fn read_rtr_is_answered_with_a_zero_length_response() {
    let mut p = Pair::new(Setup {
        rtr: Some(Rtr::Read),
        ird: 0,
        ord: 0,
        ..Setup::default()
    });
    p.drive();
    let a = ulpdus(&p.a.wire, true);
    assert_eq!(a.len(), 1);
    let mut rr = vec![0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
    rr.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    rr.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(a[0], rr);
    let b = ulpdus(&p.b.wire, true);
    assert_eq!(
        b,
        vec![vec![0xc1, 0x42, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]]
    );
    assert!(p.a.events.is_empty() && p.b.events.is_empty());
    assert!(p.a.conn.is_idle() && p.b.conn.is_idle());
    assert_eq!(p.b.conn.state(), State::Established);
}

#[test]
fn work_posted_before_the_rtr_goes_after_it() {
    for rtr in [Rtr::Write, Rtr::Send, Rtr::Read] {
        let mut p = p2p(rtr);
        let src = p.a.register(Access::REMOTE_READ, pattern(5000, 1));
        let dst = p.b.register(Access::LOCAL_WRITE, vec![0; 5000]);
        let sink = p.b.register(Access::LOCAL_WRITE, vec![0; 5000]);
        let (s, d, k) = (p.a.sge(src), p.b.sge(dst), p.b.sge(sink));
        p.b.recv(1, vec![d]);
        p.a.send(1, vec![s]);
        p.b.read(2, k, s);
        p.drive();
        assert!(p.b.bytes(dst) == &pattern(5000, 1)[..], "{rtr:?}");
        assert!(p.b.bytes(sink) == &pattern(5000, 1)[..], "{rtr:?}");
        let first = &ulpdus(&p.a.wire, true)[0];
        assert!(first.len() <= 18 + 28, "{rtr:?}: RTR first");
        assert!(p
            .a
            .completions()
            .iter()
            .all(|c| c.status == WcStatus::Success));
        assert_eq!(p.b.completions().len(), 2);
    }
}
